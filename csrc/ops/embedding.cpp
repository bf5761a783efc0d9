// embedding's backward, embedding_bag (sum, mean, max) with its backward, and the max_norm
// renormalisation. Gradients are rows summed into the rows of the weight they came from
// (index_add, atomic on the device), skipping padding_idx and, with scale_grad_by_freq, divided by
// how often each index occurs. A bag is reduced with index_add / scatter_reduce over the bag each
// index belongs to (offset2bag, found by binary search in the offsets).
#include <ATen/ops/arange.h>
#include <ATen/ops/bucketize.h>
#include <ATen/ops/full.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/where.h>
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

// ---- embedding_bag --------------------------------------------------------------------------

enum BagMode : int64_t { kSum = 0, kMean = 1, kMax = 2 };

// 1 for the positions that count (not padding_idx), in the weight's dtype.
at::Tensor counted(const at::Tensor& indices, int64_t padding_idx, const at::TensorOptions& like) {
  return padding_idx >= 0 ? (indices != padding_idx).to(like.dtype()) : at::ones(indices.sizes(), like);
}

// Returns (output, offset2bag, bag_size, max_indices), as the CPU's _embedding_bag; max_indices
// holds the winning weight row of each (bag, column) in max mode, -1 for an empty bag.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> embedding_bag_forward(
    const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets, bool scale_grad_by_freq,
    int64_t mode, bool sparse, const std::optional<at::Tensor>& per_sample_weights, bool include_last_offset,
    int64_t padding_idx) {
  TORCH_CHECK(weight.dim() == 2, "weight has to be a 2D Tensor, but got Tensor of dimension ", weight.dim());
  TORCH_CHECK(indices.dim() == 1, "input has to be a 1D or 2D Tensor, but got Tensor of dimension ", indices.dim());
  TORCH_CHECK(offsets.dim() == 1, "offsets has to be a 1D Tensor, but got Tensor of dimension ", offsets.dim());
  for (const at::Tensor* t : {&indices, &offsets})
    TORCH_CHECK(t->scalar_type() == c10::kLong || t->scalar_type() == c10::kInt,
                "embedding_bag: expected indices and offsets to be Long or Int, but got ", t->scalar_type());
  TORCH_CHECK(indices.scalar_type() == offsets.scalar_type(), "embedding_bag: expected indices and offsets to have ",
              "the same dtype, but got ", indices.scalar_type(), " and ", offsets.scalar_type());
  TORCH_CHECK(mode >= kSum && mode <= kMax, "embedding_bag: unknown mode ", mode);
  const bool weighted = per_sample_weights && per_sample_weights->defined();
  TORCH_CHECK(!weighted || mode == kSum, "embedding_bag: per_sample_weights is only supported for mode='sum'");
  TORCH_CHECK(!weighted || per_sample_weights->sizes() == indices.sizes(), "embedding_bag: expected ",
              "per_sample_weights to have the shape of indices ", indices.sizes(), ", got ",
              per_sample_weights->sizes());
  TORCH_CHECK(!include_last_offset || offsets.numel() >= 1, "include_last_offset: number of offsets should be at ",
              "least 1");
  const int64_t bags = include_last_offset ? offsets.numel() - 1 : offsets.numel();
  const int64_t width = weight.size(1);
  at::Tensor index = indices.to(c10::kLong);
  at::Tensor starts = offsets.to(c10::kLong).narrow(0, 0, bags);
  at::Tensor positions = at::arange(index.numel(), index.options());
  at::Tensor offset2bag = at::bucketize(positions, starts, /*out_int32=*/false, /*right=*/true).sub_(1);
  // With include_last_offset the last offset closes the last bag; it is len(indices) (CSR).
  at::Tensor keep = counted(index, padding_idx, weight.options());
  const at::Tensor& bag_of = offset2bag;
  at::Tensor bag_size = at::zeros({bags}, index.options()).index_add_(0, bag_of, keep.to(c10::kLong));
  at::Tensor rows = weight.index_select(0, index);
  at::Tensor output, max_indices;
  // Sums of float16/bfloat16 rows accumulate in float32 and round once, as on the CPU.
  const c10::ScalarType wide = kernels::compute_type(weight.scalar_type());
  if (mode == kMax) {
    at::Tensor lowest = at::full({}, -std::numeric_limits<double>::infinity(), weight.options());
    at::Tensor candidates = at::where(keep.unsqueeze(1).to(c10::kBool), rows, lowest);
    at::Tensor bag_index = bag_of.unsqueeze(1).expand({-1, width});
    output = at::full({bags, width}, -std::numeric_limits<double>::infinity(), weight.options())
                 .scatter_reduce_(0, bag_index, candidates, "amax", /*include_self=*/true);
    // The first position holding its bag's maximum wins, as on the CPU.
    at::Tensor wins = candidates.eq(output.index_select(0, bag_of)).logical_and_(keep.unsqueeze(1).to(c10::kBool));
    const int64_t none = index.numel();
    at::Tensor position = at::where(wins, positions.unsqueeze(1), at::full({}, none, index.options()));
    at::Tensor first = at::full({bags, width}, none, index.options())
                           .scatter_reduce_(0, bag_index, position, "amin", /*include_self=*/true);
    at::Tensor empty = (bag_size == 0).unsqueeze(1);
    max_indices = at::where(empty, at::full({}, -1, index.options()),
                            index.index_select(0, first.clamp_max(std::max<int64_t>(none - 1, 0)).reshape({-1}))
                                .view({bags, width}));
    output.masked_fill_(empty, 0);
  } else {
    at::Tensor scale = (weighted ? keep * per_sample_weights->to(weight.scalar_type()) : keep).to(wide);
    output = at::zeros({bags, width}, weight.options().dtype(wide))
                 .index_add_(0, bag_of, rows.to(wide) * scale.unsqueeze(1));
    if (mode == kMean) output.div_(bag_size.clamp_min(1).unsqueeze(1).to(wide));
    output = output.to(weight.scalar_type());
    max_indices = at::zeros({bags}, index.options());
  }
  return {output, offset2bag, bag_size, max_indices};
}

at::Tensor embedding_bag_dense_backward(const at::Tensor& grad, const at::Tensor& indices,
                                        const at::Tensor& offset2bag, const at::Tensor& bag_size,
                                        const at::Tensor& max_indices, c10::SymInt num_weights,
                                        bool scale_grad_by_freq, int64_t mode,
                                        const std::optional<at::Tensor>& per_sample_weights, int64_t padding_idx) {
  const int64_t rows = num_weights.expect_int(), width = grad.size(1);
  at::Tensor index = indices.to(c10::kLong);
  at::Tensor grad_weight = at::zeros({rows, width}, grad.options());
  if (mode == kMax) {
    at::Tensor winner = max_indices.reshape({-1});
    at::Tensor columns = at::arange(width, winner.options()).repeat({grad.size(0)});
    at::Tensor valid = winner >= 0;
    at::Tensor flat = at::where(valid, winner * width + columns, columns);
    grad_weight.view({-1}).index_add_(0, flat, grad.reshape({-1}) * valid.to(grad.scalar_type()));
    return grad_weight;
  }
  const at::Tensor& bag_of = offset2bag;
  at::Tensor scale = counted(index, padding_idx, grad.options());
  if (per_sample_weights && per_sample_weights->defined()) scale = scale * per_sample_weights->to(grad.scalar_type());
  if (mode == kMean) scale = scale / bag_size.index_select(0, bag_of).clamp_min(1).to(grad.scalar_type());
  if (scale_grad_by_freq) {
    at::Tensor counts = at::zeros({rows}, index.options()).index_add_(0, index, at::ones_like(index));
    scale = scale / counts.index_select(0, index).to(grad.scalar_type());
  }
  return grad_weight.index_add_(0, index, grad.index_select(0, bag_of) * scale.unsqueeze(1));
}

at::Tensor embedding_bag_backward(const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& offsets,
                                  const at::Tensor& offset2bag, const at::Tensor& bag_size,
                                  const at::Tensor& max_indices, c10::SymInt num_weights, bool scale_grad_by_freq,
                                  int64_t mode, bool sparse, const std::optional<at::Tensor>& per_sample_weights,
                                  int64_t padding_idx) {
  TORCH_CHECK_NOT_IMPLEMENTED(!sparse, "embedding_bag(sparse=True) on ocl: sparse gradients are not supported; ",
                              "use sparse=False");
  return embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, max_indices, num_weights,
                                      scale_grad_by_freq, mode, per_sample_weights, padding_idx);
}

// d output[bag] / d per_sample_weights[i] = weight[indices[i]]: the gradient is a row dot product.
at::Tensor embedding_bag_per_sample_weights_backward(const at::Tensor& grad, const at::Tensor& weight,
                                                     const at::Tensor& indices, const at::Tensor& offsets,
                                                     const at::Tensor& offset2bag, int64_t mode, int64_t padding_idx) {
  TORCH_CHECK(mode == kSum, "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  at::Tensor index = indices.to(c10::kLong);
  at::Tensor dots = (grad.index_select(0, offset2bag) * weight.index_select(0, index)).sum(1);
  return dots.mul_(counted(index, padding_idx, grad.options()));
}

// embedding(max_norm=): rows that are looked up and whose norm exceeds max_norm are scaled in
// place to max_norm / (norm + 1e-7), as on the CPU.
at::Tensor& embedding_renorm(at::Tensor& self, const at::Tensor& indices, double max_norm, double norm_type) {
  TORCH_CHECK(self.dim() == 2, "embedding_renorm_: weight must be 2-D, got ", self.dim(), "-D");
  TORCH_CHECK(indices.scalar_type() == c10::kLong || indices.scalar_type() == c10::kInt,
              "embedding_renorm_: expected indices to be Long or Int, but got ", indices.scalar_type());
  if (indices.numel() == 0) return self;
  // A repeated index reads the same row and writes the same scaled row, so no need to dedupe.
  at::Tensor rows = indices.reshape({-1}).to(c10::kLong);
  at::Tensor picked = self.index_select(0, rows);
  at::Tensor norms = at::linalg_vector_norm(picked, norm_type, {1}, /*keepdim=*/true);
  at::Tensor scale = at::where(norms > max_norm, max_norm / (norms + 1e-7), at::ones_like(norms));
  return self.index_copy_(0, rows, picked.mul_(scale));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));
  m.impl("_embedding_bag", TORCH_FN(embedding_bag_forward));
  m.impl("_embedding_bag_forward_only", TORCH_FN(embedding_bag_forward));
  m.impl("_embedding_bag_backward", TORCH_FN(embedding_bag_backward));
  m.impl("_embedding_bag_dense_backward", TORCH_FN(embedding_bag_dense_backward));
  m.impl("_embedding_bag_per_sample_weights_backward", TORCH_FN(embedding_bag_per_sample_weights_backward));
  m.impl("embedding_renorm_", TORCH_FN(embedding_renorm));
}

}  // namespace drawbridge::ops
