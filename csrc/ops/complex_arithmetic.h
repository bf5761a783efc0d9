// Complex multiplication and sign through the real views of complex tensors ((re, im) pairs as
// a real tensor of two-element rows), so that they run on the real kernels: what the backward
// passes of the FFTs and of polar need. The binary and unary op tables send their complex
// arguments here; other complex arithmetic takes the CPU fallback (docs/ops.md).
#pragma once

#include <ATen/core/Tensor.h>

namespace drawbridge::ops {

// a * b where either, or `out`, is complex; into `out` (resized) when defined, as mul.out.
at::Tensor complex_mul(at::Tensor out, const at::Tensor& a, const at::Tensor& b);
// sgn(z) = z / |z|, 0 at 0, of a complex tensor; into `out` when defined.
at::Tensor complex_sgn(at::Tensor out, const at::Tensor& self);

}  // namespace drawbridge::ops
