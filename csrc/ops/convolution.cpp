// Convolution, until its native kernels land: PyTorch routes convolutions of a PrivateUse1
// device to convolution_overrideable, which has no CPU kernel for the boxed fallback to call, so
// these run at::convolution on CPU copies explicitly. They count as fallbacks (warning, report,
// NotImplementedError under DRAWBRIDGE_FALLBACK=error) like any other.
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <torch/library.h>

#include "core/fallback.h"

namespace drawbridge::ops {

namespace {

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       c10::SymIntArrayRef stride, c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation,
                       bool transposed, c10::SymIntArrayRef output_padding, c10::SymInt groups) {
  core::note_fallback("aten::convolution_overrideable");
  std::optional<at::Tensor> cpu_bias;
  if (bias && bias->defined()) cpu_bias = bias->cpu();
  at::Tensor out = at::convolution_symint(input.cpu(), weight.cpu(), cpu_bias, stride, padding, dilation, transposed,
                                          output_padding, groups);
  return out.to(input.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::SymIntArrayRef stride,
    c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed, c10::SymIntArrayRef output_padding,
    c10::SymInt groups, std::array<bool, 3> output_mask) {
  core::note_fallback("aten::convolution_backward_overrideable");
  std::vector<c10::SymInt> bias_sizes{c10::SymInt(weight.size(transposed ? 1 : 0) * (transposed ? groups.guard_int(__FILE__, __LINE__) : 1))};
  auto [gi, gw, gb] = at::convolution_backward_symint(grad_output.cpu(), input.cpu(), weight.cpu(), bias_sizes, stride,
                                                      padding, dilation, transposed, output_padding, groups, output_mask);
  auto back = [&](const at::Tensor& t) { return t.defined() ? t.to(input.device()) : t; };
  return {back(gi), back(gw), back(gb)};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward));
}

}  // namespace drawbridge::ops
