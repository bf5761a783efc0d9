// out= variants: a result computed into a fresh tensor, then written into the caller's.
#pragma once

#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>

namespace drawbridge::ops {

// The CPU's rule for out= arguments: out may not have several elements at one address, nor share
// memory with an input (even where our kernel would read a fresh copy), and the op raises
// "unsupported operation" instead.
inline void check_out_overlap(const at::Tensor& out, at::ArrayRef<at::Tensor> inputs) {
  at::assert_no_internal_overlap(out);
  for (const at::Tensor& input : inputs) at::assert_no_overlap(out, input);
}

// Resizes out as PyTorch's out= rules allow (a warning when a non-empty out changes shape) and
// copies result into it (converting the dtype where out's differs). `inputs` are the op's tensor
// arguments, which out must not overlap.
inline at::Tensor& assign_out(at::Tensor& out, const at::Tensor& result, at::ArrayRef<at::Tensor> inputs = {}) {
  check_out_overlap(out, inputs);
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

// The same for ops with several outputs: results[i] into outs[i], the out tensors returned.
template <typename... Results>
std::tuple<std::conditional_t<true, at::Tensor&, Results>...> assign_outs(
    std::tuple<std::conditional_t<true, at::Tensor&, Results>...> outs, const std::tuple<Results...>& results,
    at::ArrayRef<at::Tensor> inputs = {}) {
  std::apply([&](auto&... out) {
    std::apply([&](const auto&... result) { (assign_out(out, result, inputs), ...); }, results);
  }, outs);
  return outs;
}

}  // namespace drawbridge::ops
