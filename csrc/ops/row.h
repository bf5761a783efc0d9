// What other ops use of ops/row.cpp's row kernels.
#pragma once

#include <ATen/core/Tensor.h>

namespace drawbridge::ops {

// In place over the last dim of contiguous float32 `scores`: each row's softmax, zeros for a row
// without a finite score; each row's logsumexp (+inf for such a row) into the contiguous float32
// `lse` when it is defined. For scaled_dot_product_attention (ops/attention.cpp).
void attention_probabilities_(at::Tensor& scores, const at::Tensor& lse);

}  // namespace drawbridge::ops
