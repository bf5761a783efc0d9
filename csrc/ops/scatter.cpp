// Writing by index (cl/scatter.cl): scatter (src, value, reduce), scatter_add, scatter_reduce,
// index_add, index_copy, index_fill, index_reduce, index_put (with accumulate), put_ and
// masked_scatter_. Combining updates (add, multiply, max, min) are atomic, so duplicate indices
// accumulate as on the CPU (in an order-dependent rounding, as on CUDA).
#include <ATen/WrapDimUtils.h>
#include <ATen/Dispatch.h>
#include <ATen/ExpandUtils.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ScatterGatherChecks.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "ops/indexing.h"
#include "ops/pointwise.h"
#include "ops/variants.h"

namespace drawbridge::ops {

namespace {

// Element types the combine kernels update with a compare-and-swap of the whole element.
bool has_atomic_update(c10::ScalarType t) {
  return t == c10::kFloat || t == c10::kDouble || t == c10::kHalf || t == c10::kBFloat16 || t == c10::kInt ||
         t == c10::kLong;
}

// The build option that picks the compare-and-swap width for dst's element type.
std::string word_option(const at::Tensor& dst) {
  return dst.element_size() == 8 ? "-DWORD64" : dst.element_size() == 2 ? "-DWORD16" : "";
}

c10::ScalarType atomic_type_for(c10::ScalarType t) {
  return c10::isFloatingType(t) ? (t == c10::kDouble ? c10::kDouble : c10::kFloat)
                                : (t == c10::kLong ? c10::kLong : c10::kInt);
}

const char* combine_kernel(Combine c) {
  switch (c) {
    case Combine::Add: return "scatter_add";
    case Combine::Mul: return "scatter_mul";
    case Combine::Max: return "scatter_max";
    case Combine::Min: return "scatter_min";
    case Combine::Store: return "scatter_store";
  }
  TORCH_INTERNAL_ASSERT(false);
}

// dst viewed with `shape` and stride 0 along dim, the output operand of a scatter.
at::Tensor restrided_target(const at::Tensor& dst, int64_t dim, at::IntArrayRef shape) {
  std::vector<int64_t> strides(dst.strides().begin(), dst.strides().end());
  strides[dim] = 0;
  return dst.as_strided(shape, strides);
}

}  // namespace

at::Tensor index_along(const at::Tensor& index, at::IntArrayRef shape, int64_t dim) {
  std::vector<int64_t> strides(shape.size(), 0);
  strides[dim] = index.dim() == 0 ? 0 : index.stride(0);
  return index.as_strided(shape, strides);
}

namespace {

// One scatter kernel over index's shape: dst restrided as the output, then src (when given) and
// the index; the fill value, when given, follows the arguments every scatter kernel takes.
void launch_scatter(const at::Tensor& dst, int64_t dim, const at::Tensor& index, const at::Tensor* src,
                    const kernels::KernelSpec& spec, IndexBounds bounds, const ElementBits* value = nullptr) {
  // No index fits an empty dimension: raised here, as no view of it can be built.
  if (dst.size(dim) == 0) core::raise_device_assert(bounds.raises);
  at::Tensor idx = index.scalar_type() == c10::kLong ? index : index.to(c10::kLong);
  at::Tensor target = restrided_target(dst, dim, idx.sizes());
  at::TensorIteratorConfig config;
  config.check_all_same_dtype(false).resize_outputs(false).set_check_mem_overlap(false).add_output(target);
  if (src) config.add_const_input(*src);
  config.add_const_input(idx);
  auto iter = config.build();
  c10::DeviceGuard guard(dst.device());
  cl_ulong dim_stride = dst.stride(dim) * dst.element_size();
  cl_long dim_size = dst.size(dim);
  cl_int wrap_negative = bounds.wrap ? 1 : 0;
  cl_mem error = core::checked_device(dst.device().index()).error_flag();
  cl_int code = static_cast<cl_int>(bounds.raises);
  std::vector<runtime::KernelArg> args{{sizeof(dim_stride), &dim_stride},
                                       {sizeof(dim_size), &dim_size},
                                       {sizeof(wrap_negative), &wrap_negative},
                                       {sizeof(error), &error},
                                       {sizeof(code), &code}};
  if (value) args.push_back(value->arg());
  kernels::launch_pointwise_impl(iter, spec, args);
}

}  // namespace

void scatter_along(const at::Tensor& dst, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                   Combine combine, IndexBounds bounds) {
  if (index.numel() == 0) return;
  if (dst.dim() == 0) {
    scatter_along(dst.view({1}), 0, index.reshape({1}), src.reshape({1}), combine, bounds);
    return;
  }
  if (combine != Combine::Store && !has_atomic_update(dst.scalar_type())) {
    // Narrow integers and bool are combined in a 4- or 8-byte copy and converted back once.
    at::Tensor wide = dst.to(atomic_type_for(dst.scalar_type()));
    scatter_along(wide, dim, index, src, combine, bounds);
    dst.copy_(wide);
    return;
  }
  kernels::KernelSpec spec{"scatter.cl", combine_kernel(combine), kernels::compute_type(dst.scalar_type())};
  if (combine == Combine::Store)
    spec.raw = true;
  else
    spec.options = word_option(dst);
  launch_scatter(dst, dim, index, &src, spec, bounds);
}

void scatter_value_along(const at::Tensor& dst, int64_t dim, const at::Tensor& index, const c10::Scalar& value,
                         IndexBounds bounds) {
  if (index.numel() == 0) return;
  if (dst.dim() == 0) {
    scatter_value_along(dst.view({1}), 0, index.reshape({1}), value, bounds);
    return;
  }
  ElementBits bits = element_bits(value, dst.scalar_type());
  launch_scatter(dst, dim, index, nullptr, {"scatter.cl", "scatter_fill", dst.scalar_type(), "", /*raw=*/true},
                 bounds, &bits);
}

namespace {

// ---- scatter, scatter_add, scatter_reduce ---------------------------------------------------

Combine parse_scatter_reduce(c10::string_view reduce) {
  if (reduce == "add") return Combine::Add;
  if (reduce == "multiply") return Combine::Mul;
  TORCH_CHECK(false, "reduce argument must be either add or multiply.");
}

// An out-of-place write by index starts from a copy of self (in place, out is self).
void start_from_self(const at::Tensor& out, const at::Tensor& self) {
  at::native::resize_output(out, self.sizes());
  if (!out.is_same(self)) out.copy_(self);
}

// src restricted to index's shape (scatter reads only that corner of src).
at::Tensor src_corner(const at::Tensor& src, const at::Tensor& index) {
  if (src.dim() == 0) return src.reshape(index.sizes());
  return src.as_strided(index.sizes(), src.strides());
}

// out (a copy of self unless out is self) with src scattered into it.
void scatter_into(const at::Tensor& out, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                  const at::Tensor* src, const c10::Scalar* value, Combine combine, const char* method) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  at::native::scatter_gather_dtype_check(method, self, index, src ? std::optional<at::Tensor>(*src) : std::nullopt);
  at::native::scatter_shape_check(self, dim, index, src ? std::optional<at::Tensor>(*src) : std::nullopt);
  start_from_self(out, self);
  if (index.numel() == 0) return;
  if (src) {
    scatter_along(out, dim, index, src_corner(*src, index), combine, kScatterBounds);
  } else if (combine == Combine::Store) {
    scatter_value_along(out, dim, index, *value, kScatterBounds);
  } else {
    scatter_along(out, dim, index, at::full(index.sizes(), *value, out.options()), combine, kScatterBounds);
  }
}

at::Tensor& scatter_src_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                            at::Tensor& out) {
  scatter_into(out, self, dim, index, &src, nullptr, Combine::Store, "scatter");
  return out;
}

at::Tensor& scatter_value_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const c10::Scalar& value,
                              at::Tensor& out) {
  scatter_into(out, self, dim, index, nullptr, &value, Combine::Store, "scatter");
  return out;
}

at::Tensor& scatter_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                               c10::string_view reduce, at::Tensor& out) {
  scatter_into(out, self, dim, index, &src, nullptr, parse_scatter_reduce(reduce), "scatter");
  return out;
}

at::Tensor& scatter_value_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                     const c10::Scalar& value, c10::string_view reduce, at::Tensor& out) {
  scatter_into(out, self, dim, index, nullptr, &value, parse_scatter_reduce(reduce), "scatter");
  return out;
}

at::Tensor& scatter_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                            at::Tensor& out) {
  scatter_into(out, self, dim, index, &src, nullptr, Combine::Add, "scatter_add");
  return out;
}

// The reductions of scatter_reduce and index_reduce: sum, prod, mean, amax, amin.
enum class Reduction { Sum, Prod, Mean, Amax, Amin };

Reduction parse_reduction(c10::string_view reduce, const char* op, bool allow_sum) {
  if (reduce == "sum" && allow_sum) return Reduction::Sum;
  if (reduce == "prod") return Reduction::Prod;
  if (reduce == "mean") return Reduction::Mean;
  if (reduce == "amax") return Reduction::Amax;
  if (reduce == "amin") return Reduction::Amin;
  TORCH_CHECK(false, op, ": reduce argument must be either ", allow_sum ? "sum, " : "",
              "prod, mean, amax or amin, got ", reduce, ".");
}

Combine combine_for(Reduction r) {
  switch (r) {
    case Reduction::Sum:
    case Reduction::Mean: return Combine::Add;
    case Reduction::Prod: return Combine::Mul;
    case Reduction::Amax: return Combine::Max;
    case Reduction::Amin: return Combine::Min;
  }
  TORCH_INTERNAL_ASSERT(false);
}

// The value a reduction starts from where self does not take part (include_self=False).
c10::Scalar identity_for(Reduction r, c10::ScalarType type) {
  if (r == Reduction::Sum || r == Reduction::Mean) return 0;
  if (r == Reduction::Prod) return 1;
  const bool max = r == Reduction::Amax;
  const double inf = std::numeric_limits<double>::infinity();
  if (c10::isFloatingType(type)) return max ? -inf : inf;
  if (type == c10::kBool) return !max;
  c10::Scalar limit;
  AT_DISPATCH_INTEGRAL_TYPES(type, "reduce_identity", [&] {
    limit = max ? std::numeric_limits<scalar_t>::lowest() : std::numeric_limits<scalar_t>::max();
  });
  return limit;
}

// Reduces `src` (index's shape, positions from `index` along dim) into out, in place; serves
// scatter_reduce and index_reduce, which differ only in how index is laid out.
void reduce_into(const at::Tensor& out, int64_t dim, const at::Tensor& index, const at::Tensor& src, Reduction r,
                 bool include_self) {
  if (index.numel() == 0) return;
  // Positions that receive values start from the identity when self does not take part.
  if (!include_self) scatter_value_along(out, dim, index, identity_for(r, out.scalar_type()), kScatterBounds);
  scatter_along(out, dim, index, src, combine_for(r), kScatterBounds);
  if (r == Reduction::Mean) {
    at::Tensor count = include_self ? at::ones_like(out) : at::zeros_like(out);
    scatter_along(count, dim, index, at::ones(index.sizes(), out.options()), Combine::Add, kScatterBounds);
    count.masked_fill_(count == 0, 1);
    if (c10::isFloatingType(out.scalar_type()))
      out.div_(count);
    else
      out.div_(count, "floor");
  }
}

at::Tensor& scatter_reduce_two_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                   const at::Tensor& src, c10::string_view reduce, bool include_self,
                                   at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  Reduction r = parse_reduction(reduce, "reduce", true);
  at::native::scatter_gather_dtype_check("scatter_reduce", self, index, src);
  at::native::scatter_shape_check(self, dim, index, src);
  start_from_self(out, self);
  reduce_into(out, dim, index, src_corner(src, index), r, include_self);
  return out;
}

// ---- index_add, index_copy, index_fill, index_reduce ----------------------------------------

// Checks shared by index_add/index_copy/index_reduce: a vector index, a source of self's shape
// except along dim where it has one slice per index.
void check_index_source(const char* op, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                        const at::Tensor& source, bool long_only) {
  TORCH_CHECK_INDEX(index.dim() <= 1, op, "(): Index is supposed to be a vector");
  if (long_only) {
    TORCH_CHECK(index.scalar_type() == c10::kLong, op, "(): Expected a long tensor for index, but got ",
                index.scalar_type());
  } else {
    TORCH_CHECK(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt, op,
                "(): Expected dtype int32/int64 for index");
  }
  TORCH_CHECK(self.device() == source.device(), op, "(): expected self and source on one device, but got ",
              self.device(), " and ", source.device());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), op, "(): self (", self.scalar_type(), ") and source (",
              source.scalar_type(), ") must have the same scalar type");
  TORCH_CHECK(dim == 0 || dim < source.dim(), op, "(): Indexing dim ", dim, " is out of bounds of the source tensor");
  int64_t slices = source.dim() == 0 ? 1 : source.size(dim);
  TORCH_CHECK_INDEX(index.numel() == slices, op, "(): Number of indices (", index.numel(),
                    ") should be equal to source.size(dim) (", slices, ")");
  TORCH_CHECK(std::max<int64_t>(self.dim(), 1) == std::max<int64_t>(source.dim(), 1), op,
              "(): self and source must have the same number of dimensions");
  for (int64_t d = 0; d < self.dim(); ++d)
    if (d != dim)
      TORCH_CHECK(self.size(d) == source.size(d), op, "(): self and source must have the same size at dimension ",
                  d, "; self has size ", self.size(d), ", source has size ", source.size(d));
}

at::Tensor source_along(const at::Tensor& source) { return source.dim() == 0 ? source.reshape({1}) : source; }

at::Tensor& index_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                          const c10::Scalar& alpha, at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  check_index_source("index_add", self, dim, index, source, false);
  start_from_self(out, self);
  if (index.numel() == 0) return out;
  at::Tensor src = source_along(alpha.equal(1) ? source : source * alpha);
  at::Tensor target = out.dim() == 0 ? out.view({1}) : out;
  scatter_along(target, dim, index_along(index, src.sizes(), dim), src, Combine::Add, kIndexOpBounds);
  return out;
}

at::Tensor& index_copy_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                           at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  check_index_source("index_copy", self, dim, index, source, true);
  start_from_self(out, self);
  if (index.numel() == 0) return out;
  at::Tensor src = source_along(source);
  at::Tensor target = out.dim() == 0 ? out.view({1}) : out;
  scatter_along(target, dim, index_along(index, src.sizes(), dim), src, Combine::Store, kIndexOpBounds);
  return out;
}

at::Tensor& index_fill_(at::Tensor& self, int64_t dim, const at::Tensor& index, const c10::Scalar& value) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_fill_(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == c10::kLong, "index_fill_(): Expected dtype int64 for index.");
  if (index.numel() == 0) return self;
  if (self.dim() > 0 && self.size(dim) == 0) core::raise_device_assert(core::DeviceAssert::index_error);
  if (self.numel() == 0) return self;
  at::Tensor target = self.dim() == 0 ? self.view({1}) : self;
  at::DimVector shape(target.sizes().begin(), target.sizes().end());
  shape[dim] = index.numel();
  scatter_value_along(target, dim, index_along(index, shape, dim), value, {core::DeviceAssert::index_error, true});
  return self;
}
at::Tensor& index_fill_tensor_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  return index_fill_(self, dim, index, value.item());
}

at::Tensor& index_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                             c10::string_view reduce, bool include_self, at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  Reduction r = parse_reduction(reduce, "index_reduce", false);
  check_index_source("index_reduce", self, dim, index, source, false);
  start_from_self(out, self);
  if (index.numel() == 0) return out;
  at::Tensor src = source_along(source);
  at::Tensor target = out.dim() == 0 ? out.view({1}) : out;
  reduce_into(target, dim, index_along(index, src.sizes(), dim), src, r, include_self);
  return out;
}

// ---- index_put, put_, masked_scatter_ ------------------------------------------------------

at::Tensor& index_put_impl_(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                            const at::Tensor& values, bool accumulate, bool unsafe) {
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), "Index put requires the source and destination dtypes match, got ",
              self.scalar_type(), " for the destination and ", values.scalar_type(), " for the source.");
  TORCH_CHECK(values.device() == self.device() || values.dim() == 0, "expected values on ", self.device(),
              " but got ", values.device());
  if (accumulate && !has_atomic_update(self.scalar_type())) {
    at::Tensor wide = self.to(atomic_type_for(self.scalar_type()));
    index_put_impl_(wide, indices, values.to(wide.scalar_type()), accumulate, unsafe);
    self.copy_(wide);
    return self;
  }
  AdvancedIndex info = advanced_index(self, indices);
  TORCH_CHECK_INDEX(at::is_expandable_to(values.sizes(), info.target.sizes()), "shape mismatch: value tensor of shape ",
                    values.sizes(), " cannot be broadcast to indexing result of shape ", info.target.sizes());
  if (info.target.numel() == 0) return self;
  at::Tensor source = values.to(self.device());  // raw kernels read every operand from memory
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .resize_outputs(false)
                  .set_check_mem_overlap(false)
                  .add_output(info.target)
                  .add_const_input(source)
                  .add_const_input(info.offsets)
                  .build();
  c10::DeviceGuard guard(self.device());
  cl_mem error = core::checked_device(self.device().index()).error_flag();
  cl_ulong step = 1;  // the offsets are in bytes and already checked
  cl_long size = std::numeric_limits<int64_t>::max();
  cl_int wrap = 0, code = static_cast<cl_int>(core::DeviceAssert::index_error);
  kernels::KernelSpec spec{"scatter.cl", combine_kernel(accumulate ? Combine::Add : Combine::Store),
                          kernels::compute_type(self.scalar_type())};
  if (!accumulate)
    spec.raw = true;
  else
    spec.options = word_option(self);
  kernels::launch_pointwise(iter, spec, step, size, wrap, error, code);
  return self;
}

// put_: self as a flat vector, written at `index` (negative indices count from the end).
at::Tensor& put_(at::Tensor& self, const at::Tensor& index, const at::Tensor& source, bool accumulate) {
  TORCH_CHECK(index.scalar_type() == c10::kLong, "put_(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "put_(): self and source expected to have the same dtype, ",
              "but got self.dtype = ", self.scalar_type(), " and source.dtype = ", source.scalar_type());
  TORCH_CHECK(index.numel() == source.numel(), "put_(): Expected source and index to have the same number of elements, ",
              "but got source.numel() = ", source.numel(), ", index.numel() = ", index.numel());
  if (index.numel() == 0) return self;
  TORCH_CHECK_INDEX(self.numel() > 0, "put_(): Tried to put elements into an empty tensor");
  at::Tensor flat = self.is_contiguous() ? self.view({-1}) : self.contiguous().view({-1});
  index_put_impl_(flat, c10::List<std::optional<at::Tensor>>({index.reshape({-1})}), source.reshape({-1}), accumulate,
                  false);
  if (!self.is_contiguous()) self.copy_(flat.view(self.sizes()));
  return self;
}

// masked_scatter_: the elements of self where mask is true take source's elements in order.
at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "masked_scatter_: expected self and source to have same dtypes but got ",
              self.scalar_type(), " and ", source.scalar_type());
  at::Tensor target = self.dim() == 0 ? self.view({1}) : self;
  at::Tensor where = mask.dim() == 0 && self.dim() == 0 ? mask.view({1}) : mask;
  where = where.expand(target.sizes());
  at::Tensor coords = nonzero_coords(where);
  const int64_t count = coords.size(0);
  TORCH_CHECK(source.numel() >= count, "masked_scatter: expected source to have at least as many elements as ones in ",
              "mask, but got ", source.numel(), " < ", count);
  if (count == 0) return self;
  c10::List<std::optional<at::Tensor>> indices;
  for (int64_t d = 0; d < target.dim(); ++d) indices.push_back(coords.select(1, d));
  index_put_impl_(target, indices, source.reshape({-1}).narrow(0, 0, count), false, false);
  return self;
}

}  // namespace

// Scatter and index ops move elements whatever their dtype: complex ones too.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  constexpr auto any = ComplexArgs::Native;
  register_from_out<&scatter_src_out>(m, "scatter.src", "scatter_.src", "scatter.src_out", any);
  register_from_out<&scatter_value_out>(m, "scatter.value", "scatter_.value", "scatter.value_out", any);
  register_from_out<&scatter_reduce_out>(m, "scatter.reduce", "scatter_.reduce", "scatter.reduce_out", any);
  register_from_out<&scatter_value_reduce_out>(m, "scatter.value_reduce", "scatter_.value_reduce",
                                               "scatter.value_reduce_out", any);
  register_from_out<&scatter_add_out>(m, "scatter_add", "scatter_add_", "scatter_add.out", any);
  register_from_out<&scatter_reduce_two_out>(m, "scatter_reduce.two", "scatter_reduce_.two",
                                             "scatter_reduce.two_out", any);
  register_from_out<&index_add_out>(m, "index_add", "index_add_", "index_add.out", any);
  register_from_out<&index_copy_out>(m, "index_copy", "index_copy_", "index_copy.out", any);
  register_from_out<&index_reduce_out>(m, "index_reduce", "index_reduce_", "index_reduce.out", any);
  m.impl("index_fill_.int_Scalar", TORCH_FN(index_fill_));
  m.impl("index_fill_.int_Tensor", TORCH_FN(index_fill_tensor_));
  m.impl("_index_put_impl_", TORCH_FN(index_put_impl_));
  m.impl("put_", TORCH_FN(put_));
  m.impl("masked_scatter_", TORCH_FN(masked_scatter_));
}

}  // namespace drawbridge::ops
