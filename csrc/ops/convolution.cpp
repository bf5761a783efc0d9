// Convolution (PyTorch routes a PrivateUse1 convolution to convolution_overrideable).
//
// Forward and backward of 1-, 2- and 3-d convolutions with stride, padding, dilation and groups
// run natively as im2col + GEMM: an index map built on the device once per shape gathers every
// receptive field into columns (index_select), CLBlast multiplies them by the weights, and the
// backward scatters column gradients back with index_add (col2im). Transposed convolutions still
// run on CPU copies, accounted exactly like the fallback (warning, report, error mode).
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <torch/library.h>

#include "core/fallback.h"
#include "ops/windows.h"

namespace drawbridge::ops {

namespace {

struct ConvGeometry {
  int64_t groups = 1;
  std::vector<int64_t> stride, padding, dilation, kernel, out_size, padded;
};

ConvGeometry geometry(const at::Tensor& input, const at::Tensor& weight, c10::SymIntArrayRef stride,
                      c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, int64_t groups) {
  const int64_t spatial = input.dim() - 2;
  ConvGeometry g;
  g.groups = groups;
  for (int64_t d = 0; d < spatial; ++d) {
    g.stride.push_back(stride[stride.size() == 1 ? 0 : d].expect_int());
    g.padding.push_back(padding[padding.size() == 1 ? 0 : d].expect_int());
    g.dilation.push_back(dilation[dilation.size() == 1 ? 0 : d].expect_int());
    g.kernel.push_back(weight.size(2 + d));
    g.padded.push_back(input.size(2 + d) + 2 * g.padding[d]);
    const int64_t span = g.dilation[d] * (g.kernel[d] - 1) + 1;
    TORCH_CHECK(g.padded[d] >= span, "Calculated padded input size per channel: (", g.padded[d],
                "). Kernel size: (", span, "). Kernel size can't be greater than actual input size");
    g.out_size.push_back((g.padded[d] - span) / g.stride[d] + 1);
  }
  return g;
}

at::Tensor pad_spatial(const at::Tensor& input, const ConvGeometry& g) {
  std::vector<int64_t> pad;
  for (auto it = g.padding.rbegin(); it != g.padding.rend(); ++it) pad.insert(pad.end(), {*it, *it});
  return at::constant_pad_nd(input, pad, 0);
}

// Columns (N, groups, C/groups * K, L) of the padded input.
at::Tensor im2col(const at::Tensor& input, const ConvGeometry& g, const at::Tensor& index) {
  const int64_t n = input.size(0);
  at::Tensor flat = pad_spatial(input, g).reshape({n, -1});
  return flat.index_select(1, index.reshape({-1})).view({n, g.groups, -1, index.size(1)});
}

void check_conv(const at::Tensor& input, const at::Tensor& weight, int64_t groups) {
  TORCH_CHECK(input.dim() >= 3 && input.dim() <= 5, "Expected 3D, 4D or 5D input to convolution, but got input of size: ",
              input.sizes());
  TORCH_CHECK(weight.dim() == input.dim(), "Expected ", input.dim(), "-dimensional weight for ", input.dim(),
              "-dimensional input ", input.sizes(), ", but got ", weight.dim(), "-dimensional weight of size ",
              weight.sizes());
  TORCH_CHECK(groups > 0 && weight.size(0) % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ",
              groups, " at dimension 0, but got weight of size ", weight.sizes(), " instead");
  TORCH_CHECK(input.size(1) == weight.size(1) * groups, "Given groups=", groups, ", weight of size ", weight.sizes(),
              ", expected input", input.sizes(), " to have ", weight.size(1) * groups,
              " channels, but got ", input.size(1), " channels instead");
}

at::Tensor convolution_on_cpu(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                              c10::SymIntArrayRef stride, c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation,
                              bool transposed, c10::SymIntArrayRef output_padding, c10::SymInt groups) {
  core::note_fallback("aten::convolution_overrideable");
  std::optional<at::Tensor> cpu_bias;
  if (bias && bias->defined()) cpu_bias = bias->cpu();
  at::Tensor out = at::convolution_symint(input.cpu(), weight.cpu(), cpu_bias, stride, padding, dilation, transposed,
                                          output_padding, groups);
  return out.to(input.device());
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       c10::SymIntArrayRef stride, c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation,
                       bool transposed, c10::SymIntArrayRef output_padding, c10::SymInt groups) {
  if (transposed)
    return convolution_on_cpu(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  const int64_t group_count = groups.expect_int();
  check_conv(input, weight, group_count);
  ConvGeometry g = geometry(input, weight, stride, padding, dilation, group_count);
  const int64_t n = input.size(0), out_channels = weight.size(0);
  at::Tensor index = window_index(g.kernel, g.stride, g.dilation, g.padded, g.out_size, input.size(1),
                                  input.options().dtype(c10::kLong));
  at::Tensor cols = im2col(input, g, index);
  at::Tensor w = weight.reshape({1, group_count, out_channels / group_count, -1});
  at::Tensor out = at::matmul(w, cols);  // (N, groups, O/groups, L)
  std::vector<int64_t> shape{n, out_channels};
  shape.insert(shape.end(), g.out_size.begin(), g.out_size.end());
  out = out.reshape(shape);
  if (bias && bias->defined()) {
    std::vector<int64_t> bias_shape(shape.size(), 1);
    bias_shape[1] = out_channels;
    out.add_(bias->view(bias_shape));
  }
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::SymIntArrayRef stride,
    c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed, c10::SymIntArrayRef output_padding,
    c10::SymInt groups, std::array<bool, 3> output_mask) {
  const int64_t group_count = groups.expect_int();
  if (transposed) {
    core::note_fallback("aten::convolution_backward_overrideable");
    std::vector<c10::SymInt> bias_sizes{c10::SymInt(weight.size(1) * group_count)};
    auto [gi, gw, gb] = at::convolution_backward_symint(grad_output.cpu(), input.cpu(), weight.cpu(), bias_sizes,
                                                        stride, padding, dilation, transposed, output_padding, groups,
                                                        output_mask);
    auto back = [&](const at::Tensor& t) { return t.defined() ? t.to(input.device()) : t; };
    return {back(gi), back(gw), back(gb)};
  }
  ConvGeometry g = geometry(input, weight, stride, padding, dilation, group_count);
  const int64_t n = input.size(0), out_channels = weight.size(0);
  at::Tensor index = window_index(g.kernel, g.stride, g.dilation, g.padded, g.out_size, input.size(1),
                                  input.options().dtype(c10::kLong));
  at::Tensor go = grad_output.reshape({n, group_count, out_channels / group_count, -1});
  at::Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) {
    // col2im: every column gradient added back where its element came from.
    at::Tensor w = weight.reshape({1, group_count, out_channels / group_count, -1});
    at::Tensor grad_cols = at::matmul(w.transpose(-1, -2), go).reshape({n, -1});
    const int64_t plane = c10::multiply_integers(g.padded);
    at::Tensor grad_padded = at::zeros({n, input.size(1) * plane}, grad_output.options());
    grad_padded.index_add_(1, index.reshape({-1}), grad_cols);
    std::vector<int64_t> padded_shape{n, input.size(1)};
    padded_shape.insert(padded_shape.end(), g.padded.begin(), g.padded.end());
    grad_input = grad_padded.view(padded_shape);
    for (size_t d = 0; d < g.padding.size(); ++d)
      grad_input = grad_input.narrow(2 + d, g.padding[d], input.size(2 + d));
    grad_input = grad_input.contiguous();
  }
  if (output_mask[1]) {
    at::Tensor cols = im2col(input, g, index);
    grad_weight = at::matmul(go, cols.transpose(-1, -2)).sum(0).reshape(weight.sizes());
  }
  if (output_mask[2]) {
    std::vector<int64_t> dims{0};
    for (int64_t d = 2; d < grad_output.dim(); ++d) dims.push_back(d);
    grad_bias = grad_output.sum(dims);
  }
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward));
}

}  // namespace drawbridge::ops
