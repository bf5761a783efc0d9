// Reading by index (cl/index.cl): index_select, gather, advanced indexing (self[indices]),
// take, masked_select, nonzero, and masked_fill_.
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/IndexingUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "ops/indexing.h"
#include "ops/out_arguments.h"
#include "ops/pointwise.h"
#include "ops/variants.h"

namespace drawbridge::ops {

namespace {

// src viewed with `shape` and stride 0 along dim, so that an iterator over the output visits,
// for each output element, the start of the line the index picks from.
at::Tensor restride_dim(const at::Tensor& src, int64_t dim, at::IntArrayRef shape) {
  std::vector<int64_t> strides(src.strides().begin(), src.strides().end());
  strides[dim] = 0;
  return src.as_strided(shape, strides);
}

// out = element at byte offset `positions * step` from `src_view` (the start of each line).
void launch_gather(const at::Tensor& out, const at::Tensor& src_view, const at::Tensor& positions, cl_ulong step,
                   cl_long size, core::DeviceAssert raises) {
  if (out.numel() == 0) return;
  if (size == 0) core::raise_device_assert(raises);  // no index fits an empty dimension
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .resize_outputs(false)
                  .set_check_mem_overlap(false)
                  .add_output(out)
                  .add_const_input(src_view)
                  .add_const_input(positions)
                  .build();
  c10::DeviceGuard guard(out.device());
  cl_mem error = core::checked_device(out.device().index()).error_flag();
  const cl_int code = static_cast<cl_int>(raises);
  kernels::launch_pointwise(iter, {"index.cl", "gather", out.scalar_type(), "", /*raw=*/true}, step, size, error,
                            code);
}

}  // namespace

void gather_along(const at::Tensor& out, const at::Tensor& src, int64_t dim, const at::Tensor& index,
                  core::DeviceAssert raises) {
  if (src.dim() == 0) {
    launch_gather(out, src, index, 0, 1, raises);
    return;
  }
  launch_gather(out, restride_dim(src, dim, out.sizes()), index, src.stride(dim) * src.element_size(), src.size(dim),
                raises);
}

AdvancedIndex advanced_index(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  at::native::checkIndexTensorTypes(indices, /*allow_int=*/true);
  if (self.dim() == 0 && indices.size() == 1) {
    // A 0-d tensor takes only a 0-d mask: x[mask] has one element or none, as a 1-d tensor.
    std::optional<at::Tensor> mask = indices[0];
    TORCH_CHECK_INDEX(mask && mask->defined() && mask->dim() == 0 &&
                          (mask->scalar_type() == c10::kBool || mask->scalar_type() == c10::kByte),
                      "too many indices for tensor of dimension 0");
    return advanced_index(self.view({1}), c10::List<std::optional<at::Tensor>>({mask->view({1})}));
  }
  TORCH_CHECK_INDEX(static_cast<int64_t>(indices.size()) <= std::max<int64_t>(self.dim(), 1),
                    "too many indices for tensor of dimension ", self.dim(), " (got ", indices.size(), ")");
  // Bool masks become the long indices of their nonzero elements.
  std::vector<at::Tensor> expanded = at::native::expandTensors(self, indices, /*ensure_same_device=*/true);
  TORCH_CHECK_INDEX(static_cast<int64_t>(expanded.size()) <= self.dim() || self.dim() == 0,
                    "too many indices for tensor of dimension ", self.dim(), " (got ", expanded.size(), ")");
  try {
    expanded = at::expand_outplace(expanded);
  } catch (std::exception&) {
    std::ostringstream shapes;
    for (const auto& t : expanded)
      if (t.defined()) shapes << t.sizes() << " ";
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                      shapes.str());
  }
  at::Tensor src = self.dim() == 0 ? self.view({1}) : self;
  while (static_cast<int64_t>(expanded.size()) < src.dim()) expanded.emplace_back();
  // Indexed dimensions that are not adjacent move to the front, as NumPy orders the result.
  if (!at::native::hasContiguousSubspace(expanded)) std::tie(src, expanded) = at::native::transposeToFront(src, expanded);
  int64_t before = 0;
  while (before < src.dim() && !expanded[before].defined()) ++before;
  TORCH_CHECK_INDEX(before < src.dim(), "advanced indexing needs at least one index tensor");
  int64_t count = 0;
  while (before + count < src.dim() && expanded[before + count].defined()) ++count;
  TORCH_CHECK_NOT_IMPLEMENTED(count <= 8, "ocl indexing supports at most 8 index tensors; got ", count);
  at::IntArrayRef index_shape = expanded[before].sizes();

  // Byte offset of each index combination, bounds checked on the device.
  at::Tensor offsets = at::empty(index_shape, self.options().dtype(c10::kLong));
  struct {
    int64_t sizes[8];
    int64_t strides[8];
  } dims = {};
  at::TensorIteratorConfig config;
  config.check_all_same_dtype(false).add_output(offsets);
  std::vector<at::Tensor> longs;
  for (int64_t k = 0; k < count; ++k) {
    dims.sizes[k] = src.size(before + k);
    dims.strides[k] = src.stride(before + k) * src.element_size();
    longs.push_back(expanded[before + k].to(c10::kLong));
    config.add_const_input(longs.back());
  }
  if (offsets.numel() > 0) {
    auto iter = config.build();
    c10::DeviceGuard guard(self.device());
    cl_mem error = core::checked_device(self.device().index()).error_flag();
    kernels::launch_pointwise(iter, {"index.cl", "index_offsets", c10::kLong}, dims, error);
  }

  // The result keeps the dimensions before and after the indexed ones; the index shape replaces them.
  at::DimVector shape(src.sizes().begin(), src.sizes().begin() + before);
  at::DimVector strides(src.strides().begin(), src.strides().begin() + before);
  at::DimVector offsets_shape(before, 1);
  shape.append(index_shape.begin(), index_shape.end());
  strides.append(index_shape.size(), 0);
  offsets_shape.append(index_shape.begin(), index_shape.end());
  shape.append(src.sizes().begin() + before + count, src.sizes().end());
  strides.append(src.strides().begin() + before + count, src.strides().end());
  offsets_shape.append(src.dim() - before - count, 1);
  return {src.as_strided(shape, strides), offsets.view(offsets_shape)};
}

at::Tensor nonzero_coords(const at::Tensor& self) {
  const int64_t n = self.numel();
  const int64_t ndim = self.dim();
  TORCH_CHECK(ndim <= kernels::kMaxDims, "nonzero is not supported for tensors with more than ", kernels::kMaxDims,
              " dimensions");
  if (n == 0) return at::empty({0, ndim}, self.options().dtype(c10::kLong));
  c10::DeviceGuard guard(self.device());
  at::Tensor mask = (self != 0).reshape({-1}).contiguous();
  // Chunks are counted in parallel, then each writes its coordinates from its own start row.
  const int64_t chunk = std::max<int64_t>(4096, (n + 4095) / 4096);
  const int64_t chunks = (n + chunk - 1) / chunk;
  at::Tensor counts = at::empty({chunks}, self.options().dtype(c10::kLong));
  at::Tensor starts = mask.as_strided({chunks}, {chunk});
  cl_ulong chunk_arg = chunk, n_arg = n;
  {
    auto iter = at::TensorIteratorConfig().check_all_same_dtype(false).add_output(counts).add_const_input(starts).build();
    kernels::launch_pointwise(iter, {"index.cl", "nonzero_count", c10::kLong}, chunk_arg, n_arg);
  }
  at::Tensor host_counts = counts.cpu();  // synchronizes: the result's size depends on it
  at::Tensor rows = host_counts.cumsum(0);
  const int64_t total = rows[-1].item<int64_t>();
  at::Tensor out = at::empty({total, ndim}, self.options().dtype(c10::kLong));
  if (total == 0 || ndim == 0) return out;
  at::Tensor first_rows = (rows - host_counts).to(self.device());
  struct {
    uint64_t sizes[kernels::kMaxDims];
  } shape = {};
  for (int64_t d = 0; d < ndim; ++d) shape.sizes[d] = self.size(d);
  auto ref = core::checked_device(self.device().index()).memory().resolve(out.data_ptr());
  cl_ulong out_offset = ref.offset;
  cl_uint ndim_arg = static_cast<cl_uint>(ndim);
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .set_check_mem_overlap(false)
                  .add_output(first_rows)
                  .add_const_input(starts)
                  .build();
  kernels::launch_pointwise(iter, {"index.cl", "nonzero_write", c10::kLong}, chunk_arg, n_arg, ref.mem, out_offset,
                            ndim_arg, shape);
  return out;
}

namespace {

at::Tensor& index_select_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "index_select(): self and result must have the same scalar type");
  TORCH_CHECK(index.device() == self.device(), "index_select(): expected index on ", self.device(), " but got ",
              index.device());
  check_out_overlap(out, {self, index});
  at::DimVector shape(self.sizes().begin(), self.sizes().end());
  if (self.dim() > 0) shape[dim] = index.numel();
  at::native::resize_output(out, shape);
  if (out.numel() == 0) return out;
  // A 0-d tensor indexed by a one-element index: the index must be 0.
  gather_along(out, self, dim, self.dim() == 0 ? index.reshape({}) : index_along(index, shape, dim),
               core::DeviceAssert::index_error);
  return out;
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
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "gather(): Expected out tensor to have dtype ",
              self.scalar_type(), ", but got ", out.scalar_type(), " instead");
  check_out_overlap(out, {self, index});
  at::native::resize_output(out, index.sizes());
  if (out.numel() == 0) return out;
  gather_along(out, self, dim, index, core::DeviceAssert::index_runtime_error);
  return out;
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

at::Tensor index_tensor(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  AdvancedIndex info = advanced_index(self, indices);
  at::Tensor out = at::empty(info.target.sizes(), self.options());
  launch_gather(out, info.target, info.offsets, 1, std::numeric_limits<int64_t>::max(), core::DeviceAssert::index_error);
  return out;
}

at::Tensor& index_out(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices, at::Tensor& out) {
  at::Tensor result = index_tensor(self, indices);
  return assign_out(out, result, {self});
}

// take: self as a flat vector indexed by `index` (negative indices count from the end).
at::Tensor take_flat(const at::Tensor& self, const at::Tensor& index) {
  TORCH_CHECK(index.scalar_type() == c10::kLong, "take(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK_INDEX(self.numel() > 0 || index.numel() == 0, "take(): tried to take from an empty tensor");
  return index_tensor(self.reshape({-1}), c10::List<std::optional<at::Tensor>>({index})).view(index.sizes());
}
at::Tensor& take_out(const at::Tensor& self, const at::Tensor& index, at::Tensor& out) {
  at::Tensor result = take_flat(self, index);
  return assign_out(out, result, {self, index});
}

at::Tensor select_masked(const at::Tensor& self, const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_select: expected BoolTensor for mask");
  auto [values, where] = at::expand_outplace(self, mask);
  return index_tensor(values->contiguous(), c10::List<std::optional<at::Tensor>>({where->contiguous()}));
}
at::Tensor& masked_select_out(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out) {
  at::Tensor result = select_masked(self, mask);
  return assign_out(out, result, {self, mask});
}

at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == c10::kLong, "nonzero: Expected out tensor to have scalar type Long but got ",
              out.scalar_type());
  at::Tensor result = nonzero_coords(self);
  return assign_out(out, result, {self});
}

// nonzero with a fixed row count: the coordinates cut to `size` rows or padded with fill_value.
at::Tensor& nonzero_static_out(const at::Tensor& self, int64_t size, int64_t fill_value, at::Tensor& out) {
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer");
  at::Tensor found = nonzero_coords(self);
  const int64_t kept = std::min(size, found.size(0));
  at::Tensor result = at::full({size, self.dim()}, fill_value, found.options());
  if (kept > 0) result.narrow(0, 0, kept).copy_(found.narrow(0, 0, kept));
  return assign_out(out, result, {self});
}
at::Tensor nonzero_static(const at::Tensor& self, int64_t size, int64_t fill_value) {
  at::Tensor out = at::empty({0}, self.options().dtype(c10::kLong));
  return nonzero_static_out(self, size, fill_value, out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nonzero_static", TORCH_FN(nonzero_static));
  m.impl("nonzero_static.out", TORCH_FN(nonzero_static_out));
  register_from_out<&index_select_out>(m, "index_select", nullptr, "index_select.out", ComplexArgs::Native);
  register_from_out<&gather_out>(m, "gather", nullptr, "gather.out", ComplexArgs::Native);
  m.impl("masked_fill_.Scalar", TORCH_FN(masked_fill_));
  m.impl("masked_fill_.Tensor", TORCH_FN(masked_fill_tensor_));
  m.impl("index.Tensor", TORCH_FN(index_tensor));
  m.impl("index.Tensor_out", TORCH_FN(index_out));
  m.impl("take", TORCH_FN(take_flat));
  m.impl("take.out", TORCH_FN(take_out));
  m.impl("masked_select", TORCH_FN(select_masked));
  m.impl("masked_select.out", TORCH_FN(masked_select_out));
  m.impl("nonzero", TORCH_FN(nonzero_coords));
  m.impl("nonzero.out", TORCH_FN(nonzero_out));
}

}  // namespace drawbridge::ops
