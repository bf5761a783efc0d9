// embedding's backward: the rows of grad_output summed into the rows of the weight they came
// from (index_add, atomic on the device), skipping padding_idx and, with scale_grad_by_freq,
// divided by how often each index occurs.
#include <torch/library.h>

#include "ops/pointwise.h"

namespace drawbridge::ops {

namespace {

at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices, c10::SymInt num_weights,
                                    c10::SymInt padding_idx, bool scale_grad_by_freq) {
  const int64_t rows = num_weights.expect_int(), padding = padding_idx.expect_int();
  const int64_t width = grad_output.size(-1);
  at::Tensor index = indices.reshape({-1});
  at::Tensor grad = grad_output.reshape({-1, width});
  at::Tensor keep = padding >= 0 ? (index != padding).unsqueeze(1) : at::Tensor();
  if (keep.defined()) grad = grad * keep;
  if (scale_grad_by_freq) {
    at::Tensor counts = at::zeros({rows}, index.options()).index_add_(0, index, at::ones_like(index));
    grad = grad / counts.index_select(0, index).unsqueeze(1).to(grad.scalar_type());
  }
  return at::zeros({rows, width}, grad_output.options()).index_add_(0, index, grad);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));
}

}  // namespace drawbridge::ops
