// out= variants: a result computed into a fresh tensor, then written into the caller's.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>

namespace drawbridge::ops {

// Resizes out as PyTorch's out= rules allow (a warning when a non-empty out changes shape) and
// copies result into it (converting the dtype where out's differs).
inline at::Tensor& assign_out(at::Tensor& out, const at::Tensor& result) {
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

}  // namespace drawbridge::ops
