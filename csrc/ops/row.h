// What other ops use of ops/row.cpp's row kernels.
#pragma once

#include <ATen/core/Tensor.h>

namespace drawbridge::ops {

// In place over the last dim of contiguous float32 `scores` (..., rows, keys): each row's softmax,
// zeros for a row without a finite score; each row's logsumexp (+inf for such a row) into the
// float32 `lse` (..., rows) when it is defined, whose last dim is contiguous. With causal_keys > 0, row i sees only its first
// causal_keys + i keys (the others get probability 0). For scaled_dot_product_attention
// (ops/attention.cpp).
void attention_probabilities_(at::Tensor& scores, const at::Tensor& lse, int64_t causal_keys);

// Layer norm over the last dim of contiguous `x` (float32, float16 or bfloat16) into `out` of its
// shape and dtype: out = (x - mean) * rstd * weight + bias, weight and bias (either may be
// undefined) contiguous of x's dtype and of the last dim's size; each row's mean and rstd into the
// contiguous float32 `mean` and `rstd`, one per row. For native_layer_norm (ops/normalization.cpp).
void layer_norm_rows(const at::Tensor& out, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                     double eps, const at::Tensor& mean, const at::Tensor& rstd);

// The input's gradient of layer_norm_rows into `grad_input`, from `grad` and `x` (of x's dtype and
// shape), layer_norm_rows' mean and rstd, and the weight (may be undefined).
void layer_norm_backward_rows(const at::Tensor& grad_input, const at::Tensor& grad, const at::Tensor& x,
                              const at::Tensor& mean, const at::Tensor& rstd, const at::Tensor& weight);

// Batch norm over the channels (dim 1) of contiguous `x` (N, C, spatial...; float32, float16 or
// bfloat16) into `out` of its shape and dtype: out = (x - mean) * invstd * weight + bias, weight
// and bias (either may be undefined) contiguous of x's dtype, invstd = rsqrt(var + eps). In
// training each channel's mean, biased variance and invstd go into the contiguous float32 `mean`,
// `var` and `invstd` (C each); with given_stats (evaluation), `mean` and `var` are read instead
// and `invstd` is not used. For native_batch_norm (ops/normalization.cpp).
void batch_norm_channels(const at::Tensor& out, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                         double eps, const at::Tensor& mean, const at::Tensor& var, const at::Tensor& invstd,
                         bool given_stats);

// Its backward from the saved mean and invstd: the float32 per-channel sums grad_bias = sum(grad)
// and grad_weight = sum(grad * xhat) (contiguous, C each), and, where `grad_input` is defined
// (contiguous, of x's dtype and shape), the input's gradient. grad is contiguous of x's dtype.
void batch_norm_backward_channels(const at::Tensor& grad_input, const at::Tensor& grad, const at::Tensor& x,
                                  const at::Tensor& mean, const at::Tensor& invstd, const at::Tensor& weight,
                                  const at::Tensor& grad_weight, const at::Tensor& grad_bias);

// In place: scores' gradient from the probabilities' one, d = p * (d - rowsum(p * d)) over the
// last dim, as softmax's backward; both contiguous float32 of the same shape.
void attention_score_gradients_(at::Tensor& d, const at::Tensor& p);

}  // namespace drawbridge::ops
