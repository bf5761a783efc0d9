// Indexing along one dimension: index_select, gather (cl/index.cl, gather), masked_fill_, and
// advanced indexing with one index tensor.
// Out-of-range indices are caught on the device (see Device::error_flag) and raised at the next
// synchronization, never read or written.
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "core/fallback.h"
#include "ops/pointwise.h"

namespace drawbridge::ops {

namespace {

// src viewed with the shape of `like` and stride 0 along dim, so that an iterator over `like`
// visits, for each output element, the start of the line the index picks from.
at::Tensor restride_dim(const at::Tensor& src, int64_t dim, at::IntArrayRef shape) {
  std::vector<int64_t> strides(src.strides().begin(), src.strides().end());
  strides[dim] = 0;
  return src.as_strided(shape, strides);
}

void launch_gather(const at::Tensor& out, const at::Tensor& src_restrided, const at::Tensor& index, int64_t dim,
                   const at::Tensor& src) {
  if (out.numel() == 0) return;
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .resize_outputs(false)
                  .set_check_mem_overlap(false)
                  .add_output(out)
                  .add_const_input(src_restrided)
                  .add_const_input(index)
                  .build();
  c10::DeviceGuard guard(out.device());
  auto& dev = core::checked_device(out.device().index());
  cl_mem error = dev.error_flag();
  cl_ulong dim_stride = static_cast<cl_ulong>(src.stride(dim) * src.element_size());
  cl_long dim_size = src.dim() == 0 ? 1 : src.size(dim);
  kernels::launch_pointwise(iter, {"index.cl", "gather", out.scalar_type(), "", /*raw=*/true}, dim_stride, dim_size,
                            error);
}

at::Tensor& index_select_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "index_select(): self and result must have the same scalar type");
  TORCH_CHECK(index.device() == self.device(), "index_select(): expected index on ", self.device(), " but got ",
              index.device());
  at::DimVector shape(self.sizes().begin(), self.sizes().end());
  if (self.dim() > 0) shape[dim] = index.numel();
  at::native::resize_output(out, shape);
  if (out.numel() == 0) return out;
  if (self.dim() == 0) {
    // A 0-d tensor indexed by a one-element index: the index must be 0.
    launch_gather(out, self, index.reshape({}), 0, self.reshape({1}));
    return out;
  }
  // The index, viewed with the output's shape: it varies along dim only.
  std::vector<int64_t> index_strides(shape.size(), 0);
  index_strides[dim] = index.dim() == 0 ? 0 : index.stride(0);
  at::Tensor index_view = index.as_strided(shape, index_strides);
  launch_gather(out, restride_dim(self, dim, shape), index_view, dim, self);
  return out;
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  at::Tensor out = at::empty({0}, self.options());
  return index_select_out(self, dim, index, out);
}

at::Tensor& gather_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad,
                       at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  if (index.numel() == 0) {  // as on the CPU: an empty index needs no further checks
    at::native::resize_output(out, index.sizes());
    return out;
  }
  TORCH_CHECK(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt,
              "gather(): Expected dtype int32/int64 for index");
  TORCH_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(self.dim(), 1),
              "Index tensor must have the same number of dimensions as input tensor");
  for (int64_t d = 0; d < index.dim(); ++d)
    if (d != dim)
      TORCH_CHECK(index.size(d) <= self.size(d), "Size does not match at dimension ", d,
                  " expected index ", index.sizes(), " to be no larger than self ", self.sizes(), " apart from dimension ",
                  dim);
  at::native::resize_output(out, index.sizes());
  if (out.numel() == 0) return out;
  if (self.dim() == 0) {
    launch_gather(out, self, index, 0, self.reshape({1}));
    return out;
  }
  launch_gather(out, restride_dim(self, dim, index.sizes()), index, dim, self);
  return out;
}

at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad) {
  at::Tensor out = at::empty({0}, self.options());
  return gather_out(self, dim, index, sparse_grad, out);
}

at::Tensor& masked_fill_(at::Tensor& self, const at::Tensor& mask, const c10::Scalar& value) {
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  if (self.numel() == 0) return self;
  auto iter = at::TensorIteratorConfig()
                  .set_check_mem_overlap(false)
                  .check_all_same_dtype(false)
                  .resize_outputs(false)
                  .add_output(self)
                  .add_const_input(self)
                  .add_const_input(mask)
                  .build();
  c10::DeviceGuard guard(self.device());
  ElementBits bits = element_bits(value, self.scalar_type());
  kernels::launch_pointwise_impl(iter, {"index.cl", "masked_fill", self.scalar_type(), "", /*raw=*/true}, {bits.arg()});
  return self;
}

at::Tensor& masked_fill_tensor_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  return masked_fill_(self, mask, value.item());
}

// Advanced indexing, self[indices]. One integer index tensor (the rest None, as in x[ids] or
// x[:, ids]) is an index_select along its dimension; every other form runs on the CPU and counts
// as a fallback.
at::Tensor index(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  int64_t dim = -1, defined = 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    std::optional<at::Tensor> t = indices[i];
    if (t && t->defined()) {
      dim = static_cast<int64_t>(i);
      ++defined;
    }
  }
  TORCH_CHECK_INDEX(static_cast<int64_t>(indices.size()) <= self.dim(), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", indices.size(), ")");
  if (defined == 1) {
    at::Tensor idx = *indices.get(dim);
    if ((idx.scalar_type() == c10::kLong || idx.scalar_type() == c10::kInt) && idx.device() == self.device()) {
      // Negative indices count from the end, as in Python.
      at::Tensor wrapped = at::where(idx < 0, idx + self.size(dim), idx);
      at::Tensor flat = self.index_select(dim, wrapped.reshape({-1}));
      at::DimVector shape(self.sizes().begin(), self.sizes().begin() + dim);
      shape.append(idx.sizes().begin(), idx.sizes().end());
      shape.append(self.sizes().begin() + dim + 1, self.sizes().end());
      return flat.view(shape);
    }
  }
  core::note_fallback("aten::index.Tensor");
  c10::List<std::optional<at::Tensor>> cpu_indices;
  for (size_t i = 0; i < indices.size(); ++i) {
    std::optional<at::Tensor> t = indices[i];
    cpu_indices.push_back(t && t->defined() ? std::optional<at::Tensor>(t->cpu()) : std::nullopt);
  }
  return at::index(self.cpu(), cpu_indices).to(self.device());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("index_select", TORCH_FN(index_select));
  m.impl("index_select.out", TORCH_FN(index_select_out));
  m.impl("gather", TORCH_FN(gather));
  m.impl("gather.out", TORCH_FN(gather_out));
  m.impl("masked_fill_.Scalar", TORCH_FN(masked_fill_));
  m.impl("masked_fill_.Tensor", TORCH_FN(masked_fill_tensor_));
  m.impl("index.Tensor", TORCH_FN(index));
}

}  // namespace drawbridge::ops
