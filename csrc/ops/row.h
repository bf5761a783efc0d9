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

// In place: scores' gradient from the probabilities' one, d = p * (d - rowsum(p * d)) over the
// last dim, as softmax's backward; both contiguous float32 of the same shape.
void attention_score_gradients_(at::Tensor& d, const at::Tensor& p);

}  // namespace drawbridge::ops
