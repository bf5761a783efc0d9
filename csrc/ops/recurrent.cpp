// The fused LSTM and GRU cells that nn.LSTM / nn.GRU call on accelerators (CUDA, XPU and
// PrivateUse1 take this path), forward and backward, composed of native kernels. The workspace
// layouts are CUDA's: LSTM saves its four activated gates (i, f, g, o); GRU saves r, z, n, hx and
// the hidden part of n's pre-activation.
#include <torch/library.h>

#include "ops/pointwise.h"

namespace drawbridge::ops {

namespace {

at::Tensor plus_bias(at::Tensor gates, const std::optional<at::Tensor>& bias) {
  return bias && bias->defined() ? gates.add_(*bias) : gates;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                         const at::Tensor& cx,
                                                         const std::optional<at::Tensor>& input_bias,
                                                         const std::optional<at::Tensor>& hidden_bias) {
  TORCH_CHECK(input_gates.sizes() == hidden_gates.sizes(), "_thnn_fused_lstm_cell: input_gates ",
              input_gates.sizes(), " and hidden_gates ", hidden_gates.sizes(), " must have the same shape");
  at::Tensor gates = plus_bias(plus_bias(input_gates + hidden_gates, input_bias), hidden_bias);
  auto chunks = gates.chunk(4, 1);
  at::Tensor i = chunks[0].sigmoid(), f = chunks[1].sigmoid(), g = chunks[2].tanh(), o = chunks[3].sigmoid();
  at::Tensor cy = f * cx + i * g;
  at::Tensor hy = o * cy.tanh();
  return {hy, cy, at::cat({i, f, g, o}, 1)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell_backward(const std::optional<at::Tensor>& grad_hy,
                                                                  const std::optional<at::Tensor>& grad_cy,
                                                                  const at::Tensor& cx, const at::Tensor& cy,
                                                                  const at::Tensor& workspace, bool has_bias) {
  auto gates = workspace.chunk(4, 1);
  const at::Tensor &i = gates[0], &f = gates[1], &g = gates[2], &o = gates[3];
  at::Tensor tanh_cy = cy.tanh();
  at::Tensor ghy = grad_hy && grad_hy->defined() ? *grad_hy : at::zeros_like(cy);
  at::Tensor gcx = ghy * o * (1 - tanh_cy * tanh_cy);
  if (grad_cy && grad_cy->defined()) gcx.add_(*grad_cy);
  at::Tensor grad_gates = at::cat({gcx * g * i * (1 - i), gcx * cx * f * (1 - f), gcx * i * (1 - g * g),
                                   ghy * tanh_cy * o * (1 - o)},
                                  1);
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {grad_gates, gcx * f, grad_bias};
}

std::tuple<at::Tensor, at::Tensor> gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                            const at::Tensor& hx, const std::optional<at::Tensor>& input_bias,
                                            const std::optional<at::Tensor>& hidden_bias) {
  TORCH_CHECK(input_gates.sizes() == hidden_gates.sizes(), "_thnn_fused_gru_cell: input_gates ", input_gates.sizes(),
              " and hidden_gates ", hidden_gates.sizes(), " must have the same shape");
  auto in = plus_bias(input_gates.clone(), input_bias).chunk(3, 1);
  auto hid = plus_bias(hidden_gates.clone(), hidden_bias).chunk(3, 1);
  at::Tensor r = (in[0] + hid[0]).sigmoid_(), z = (in[1] + hid[1]).sigmoid_();
  at::Tensor n = (in[2] + r * hid[2]).tanh_();
  at::Tensor hy = (hx - n).mul_(z).add_(n);  // (1 - z) n + z hx
  return {hy, at::cat({r, z, n, hx, hid[2]}, 1)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> gru_cell_backward(const at::Tensor& grad_hy,
                                                                                         const at::Tensor& workspace,
                                                                                         bool has_bias) {
  auto parts = workspace.chunk(5, 1);
  const at::Tensor &r = parts[0], &z = parts[1], &n = parts[2], &hx = parts[3], &hn = parts[4];
  at::Tensor grad_n = grad_hy * (1 - z) * (1 - n * n);
  at::Tensor grad_z = grad_hy * (hx - n) * z * (1 - z);
  at::Tensor grad_r = grad_n * hn * r * (1 - r);
  at::Tensor grad_input_gates = at::cat({grad_r, grad_z, grad_n}, 1);
  at::Tensor grad_hidden_gates = at::cat({grad_r, grad_z, grad_n * r}, 1);
  at::Tensor grad_hx = grad_hy * z;
  at::Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : at::Tensor();
  at::Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : at::Tensor();
  return {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(lstm_cell_backward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(gru_cell_backward));
}

}  // namespace drawbridge::ops
