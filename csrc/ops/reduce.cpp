// Reductions (cl/reduce.cl through kernels/reduce_launcher): sum, mean, prod, amax/amin,
// max/min with indices, argmax/argmin, any/all, var/std, nansum, count_nonzero, vector norms.
#include <cmath>
#include <limits>

#include <ATen/WrapDimUtils.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "core/fallback.h"
#include "kernels/pointwise_launcher.h"
#include "kernels/reduce_launcher.h"
#include "ops/out_arguments.h"
#include "ops/pointwise.h"
#include "ops/variants.h"

namespace drawbridge::ops {

namespace {

using kernels::compute_type;

size_t acc_bytes(c10::ScalarType compute, size_t words = 1) { return c10::elementSize(compute) * words; }
constexpr size_t kValueIndexBytes = 16;  // {ct value; long index}, 8-aligned

// Reduces self into `result` (allocated when undefined) and returns it.
at::Tensor reduce(at::Tensor result, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  c10::ScalarType out_dtype, const char* kernel, c10::ScalarType compute, size_t accumulator_bytes,
                  uint64_t param = 0) {
  c10::DeviceGuard guard(self.device());
  check_dtype(kernel, self.scalar_type(), Dtypes::All);
  if (!result.defined()) result = at::empty({0}, self.options().dtype(out_dtype));
  auto iter = at::native::make_reduction(kernel, result, self, dim, keepdim, self.scalar_type(), out_dtype);
  kernels::launch_reduce(iter, {kernel, compute, accumulator_bytes}, param);
  return result;
}

// ---- sum, mean, prod, nansum ----------------------------------------------------------------

at::Tensor sum_impl(at::Tensor out, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<c10::ScalarType> dtype) {
  auto out_dtype = out.defined() && !dtype ? out.scalar_type() : at::native::get_dtype_from_self(self, dtype, true);
  auto ct = compute_type(out_dtype);
  return reduce(out, self, dim, keepdim, out_dtype, "sum", ct, acc_bytes(ct));
}
at::Tensor sum_all(const at::Tensor& self, std::optional<c10::ScalarType> dtype) {
  return sum_impl({}, self, std::nullopt, false, dtype);
}

at::Tensor nansum_impl(at::Tensor out, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<c10::ScalarType> dtype) {
  auto out_dtype = out.defined() && !dtype ? out.scalar_type() : at::native::get_dtype_from_self(self, dtype, true);
  auto ct = compute_type(out_dtype);
  return reduce(out, self, dim, keepdim, out_dtype, c10::isFloatingType(ct) ? "nansum" : "sum", ct, acc_bytes(ct));
}

at::Tensor mean_impl(at::Tensor out, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<c10::ScalarType> dtype) {
  auto out_dtype = out.defined() && !dtype ? out.scalar_type() : at::native::get_dtype_from_self(self, dtype, false);
  TORCH_CHECK(c10::isFloatingType(out_dtype) || c10::isComplexType(out_dtype),
              "mean(): could not infer output dtype. ", (dtype ? "Optional" : "Input"),
              " dtype must be either a floating point or complex dtype. Got: ", out_dtype);
  auto ct = compute_type(out_dtype);
  return reduce(out, self, dim, keepdim, out_dtype, "mean", ct, acc_bytes(ct));
}

at::Tensor prod_impl(at::Tensor out, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<c10::ScalarType> dtype) {
  auto out_dtype = out.defined() && !dtype ? out.scalar_type() : at::native::get_dtype_from_self(self, dtype, true);
  auto ct = compute_type(out_dtype);
  return reduce(out, self, dim, keepdim, out_dtype, "prod", ct, acc_bytes(ct));
}
at::Tensor prod_dim(const at::Tensor& self, int64_t dim, bool keepdim, std::optional<c10::ScalarType> dtype) {
  return prod_impl({}, self, at::IntArrayRef(dim), keepdim, dtype);
}
at::Tensor& prod_out(const at::Tensor& self, int64_t dim, bool keepdim, std::optional<c10::ScalarType> dtype,
                     at::Tensor& out) {
  prod_impl(out, self, at::IntArrayRef(dim), keepdim, dtype);
  return out;
}
at::Tensor prod_all(const at::Tensor& self, std::optional<c10::ScalarType> dtype) {
  return prod_impl({}, self, std::nullopt, false, dtype);
}

// ---- amax, amin, max, min, argmax, argmin -------------------------------------------------

void check_nonempty(const at::Tensor& self, at::IntArrayRef dims, const char* name) {
  if (self.numel() != 0) return;
  TORCH_CHECK(!dims.empty(), name,
              ": Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with "
              "the 'dim' argument.");
  for (int64_t d : dims) at::native::zero_numel_check_dims(self, d, name);
}

template <bool Max>
at::Tensor amax_impl(at::Tensor out, const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  check_nonempty(self, dim, Max ? "amax()" : "amin()");
  check_dtype(Max ? "amax" : "amin", self.scalar_type(), Dtypes::All);
  auto ct = compute_type(self.scalar_type());
  return reduce(out, self, dim, keepdim, self.scalar_type(), Max ? "amax" : "amin", ct, acc_bytes(ct));
}
template <bool Max>
at::Tensor amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return amax_impl<Max>({}, self, dim, keepdim);
}
template <bool Max>
at::Tensor& amax_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  amax_impl<Max>(out, self, dim, keepdim);
  return out;
}
template <bool Max>
at::Tensor max_all(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0, Max ? "max" : "min",
              "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the "
              "'dim' argument.");
  return amax_impl<Max>({}, self, {}, false);
}

template <bool Max>
std::tuple<at::Tensor&, at::Tensor&> max_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& values, at::Tensor& indices) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  at::native::zero_numel_check_dims(self, dim, Max ? "max()" : "min()");
  check_dtype(Max ? "max" : "min", self.scalar_type(), Dtypes::All);
  c10::DeviceGuard guard(self.device());
  if (!values.defined()) values = at::empty({0}, self.options());
  if (!indices.defined()) indices = at::empty({0}, self.options().dtype(c10::kLong));
  auto iter = at::native::make_reduction(Max ? "max" : "min", values, indices, self, at::IntArrayRef(dim), keepdim,
                                         self.scalar_type(), c10::kLong);
  kernels::launch_reduce(iter, {Max ? "max_index" : "min_index", compute_type(self.scalar_type()), kValueIndexBytes});
  return {values, indices};
}
template <bool Max>
std::tuple<at::Tensor, at::Tensor> max_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  at::Tensor values, indices;
  max_dim_out<Max>(self, dim, keepdim, values, indices);
  return {values, indices};
}

template <bool Max>
at::Tensor argmax_impl(at::Tensor out, const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const char* name = Max ? "argmax()" : "argmin()";
  TORCH_CHECK(self.scalar_type() != c10::kBool, name, ": does not support bool input");
  at::Tensor input = self;
  at::Tensor values = at::empty({0}, self.options());  // computed alongside, then dropped
  int64_t d = 0;
  if (dim) {
    d = at::maybe_wrap_dim(*dim, self.dim());
    at::native::zero_numel_check_dims(self, d, name);
  } else {
    TORCH_CHECK_INDEX(self.numel() != 0, name,
                      ": Expected reduction dim to be specified for input.numel() == 0.");
    input = self.reshape({-1});  // indices count through the flattened tensor
  }
  if (!out.defined()) out = at::empty({0}, self.options().dtype(c10::kLong));
  c10::DeviceGuard guard(self.device());
  at::Tensor flat_out = out;
  if (!dim) {
    // Reduce to one element, then give it the shape the caller asked for.
    at::native::resize_output(out, keepdim ? at::DimVector(self.dim(), 1) : at::DimVector{});
    flat_out = out.view({1});
  }
  auto iter = at::native::make_reduction(name, values, flat_out, input, at::IntArrayRef(dim ? d : 0),
                                         dim ? keepdim : true, self.scalar_type(), c10::kLong);
  kernels::launch_reduce(iter, {Max ? "max_index" : "min_index", compute_type(self.scalar_type()), kValueIndexBytes});
  return out;
}
template <bool Max>
at::Tensor argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return argmax_impl<Max>({}, self, dim, keepdim);
}
template <bool Max>
at::Tensor& argmax_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim, at::Tensor& out) {
  argmax_impl<Max>(out, self, dim, keepdim);
  return out;
}

// ---- any, all, count_nonzero -----------------------------------------------------------------

template <bool Any>
at::Tensor any_impl(at::Tensor out, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  // The CPU returns uint8 for uint8 inputs, bool otherwise.
  auto out_dtype = out.defined() ? out.scalar_type() : self.scalar_type() == c10::kByte ? c10::kByte : c10::kBool;
  auto ct = compute_type(self.scalar_type());
  return reduce(out, self, dim, keepdim, out_dtype, Any ? "any" : "all", ct, 1);
}
template <bool Any>
at::Tensor any_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  return any_impl<Any>({}, self, dim, keepdim);
}
template <bool Any>
at::Tensor& any_dims_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, at::Tensor& out) {
  any_impl<Any>(out, self, dim, keepdim);
  return out;
}
template <bool Any>
at::Tensor any_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return any_impl<Any>({}, self, at::IntArrayRef(dim), keepdim);
}
template <bool Any>
at::Tensor& any_dim_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
  any_impl<Any>(out, self, at::IntArrayRef(dim), keepdim);
  return out;
}
template <bool Any>
at::Tensor any_all(const at::Tensor& self) {
  return any_impl<Any>({}, self, std::nullopt, false);
}
template <bool Any>
at::Tensor& any_all_out(const at::Tensor& self, at::Tensor& out) {
  any_impl<Any>(out, self, std::nullopt, false);
  return out;
}

at::Tensor count_nonzero(const at::Tensor& self, at::IntArrayRef dim) {
  auto ct = compute_type(self.scalar_type());
  return reduce({}, self, dim, false, c10::kLong, "count_nonzero", ct, 8);
}

// ---- var, std, var_mean, std_mean -------------------------------------------------------------

at::Tensor var_std(at::Tensor out, const at::Tensor& self, at::OptionalIntArrayRef dim,
                   const std::optional<c10::Scalar>& correction, bool keepdim, bool take_sqrt) {
  const char* name = take_sqrt ? "std" : "var";
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()) || c10::isComplexType(self.scalar_type()), name,
              " only supports floating point and complex dtypes");
  auto ct = compute_type(self.scalar_type());
  double c = correction ? correction->toDouble() : 1.0;
  return reduce(out, self, dim, keepdim, self.scalar_type(), name, ct, acc_bytes(ct, 3), scalar_bits(c, ct));
}
template <bool Sqrt>
at::Tensor var(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction,
               bool keepdim) {
  return var_std({}, self, dim, correction, keepdim, Sqrt);
}
template <bool Sqrt>
at::Tensor& var_out(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction,
                    bool keepdim, at::Tensor& out) {
  var_std(out, self, dim, correction, keepdim, Sqrt);
  return out;
}
template <bool Sqrt>
std::tuple<at::Tensor, at::Tensor> var_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<c10::Scalar>& correction, bool keepdim) {
  return {var_std({}, self, dim, correction, keepdim, Sqrt), mean_impl({}, self, dim, keepdim, std::nullopt)};
}

// ---- vector norms --------------------------------------------------------------------------

at::Tensor vector_norm_impl(at::Tensor out, const at::Tensor& self, const c10::Scalar& ord,
                            at::OptionalIntArrayRef dim, bool keepdim, std::optional<c10::ScalarType> dtype) {
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()),
              "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ", self.scalar_type());
  auto out_dtype = out.defined() && !dtype ? out.scalar_type() : dtype.value_or(self.scalar_type());
  double p = ord.toDouble();
  if (self.numel() == 0 && p < 0)
    TORCH_CHECK(false, "linalg.vector_norm cannot compute the ", p, " norm on an empty tensor because the operation "
                "does not have an identity");
  auto ct = compute_type(out_dtype);
  const char* kernel = p == 2 ? "norm_2" : p == 1 ? "norm_1" : p == 0 ? "norm_0"
                       : std::isinf(p) ? (p > 0 ? "norm_inf" : "norm_neginf") : "norm_p";
  return reduce(out, self, dim, keepdim, out_dtype, kernel, ct, acc_bytes(ct), scalar_bits(p, ct));
}
at::Tensor vector_norm(const at::Tensor& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<c10::ScalarType> dtype) {
  return vector_norm_impl({}, self, ord, dim, keepdim, dtype);
}
at::Tensor& vector_norm_out(const at::Tensor& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim,
                            bool keepdim, std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  vector_norm_impl(out, self, ord, dim, keepdim, dtype);
  return out;
}

// torch.norm's overloads are the same vector norms (p = None means 2).
at::Tensor norm_dim(const at::Tensor& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim, bool keepdim) {
  return vector_norm_impl({}, self, p.value_or(2), dim, keepdim, std::nullopt);
}
at::Tensor& norm_dim_out(const at::Tensor& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim,
                         bool keepdim, at::Tensor& out) {
  vector_norm_impl(out, self, p.value_or(2), dim, keepdim, std::nullopt);
  return out;
}
at::Tensor norm_dim_dtype(const at::Tensor& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim,
                          bool keepdim, c10::ScalarType dtype) {
  return vector_norm_impl({}, self, p.value_or(2), dim, keepdim, dtype);
}
at::Tensor& norm_dim_dtype_out(const at::Tensor& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim,
                               bool keepdim, c10::ScalarType dtype, at::Tensor& out) {
  vector_norm_impl(out, self, p.value_or(2), dim, keepdim, dtype);
  return out;
}

// torch.equal: same shape and every element equal (one reduction and one scalar read).
bool equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. Got: ",
              self.device(), " and ", other.device());
  if (!self.sizes().equals(other.sizes())) return false;
  if (self.numel() == 0) return true;
  return self.eq(other).all().item<bool>();
}

// aminmax: both extremes, by the two reductions.
std::tuple<at::Tensor&, at::Tensor&> aminmax_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                                                 at::Tensor& min, at::Tensor& max) {
  TORCH_CHECK(self.numel() > 0 || dim, "aminmax(): cannot compute aminmax over an empty dimension as the operation has ",
              "no identity.");
  if (dim && self.dim() > 0) {
    const int64_t d = at::maybe_wrap_dim(*dim, self.dim());
    TORCH_CHECK_INDEX(self.size(d) > 0, "aminmax: Expected reduction dim ", d, " to have non-zero size.");
  }
  for (const at::Tensor* out : {&min, &max})
    TORCH_CHECK(out->scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ", self.scalar_type(),
                ", but got ", out->scalar_type(), " instead");
  at::Tensor lo = dim ? at::amin(self, {*dim}, keepdim) : at::amin(self.reshape({-1}), {0}, false);
  at::Tensor hi = dim ? at::amax(self, {*dim}, keepdim) : at::amax(self.reshape({-1}), {0}, false);
  if (!dim && keepdim) {
    at::DimVector ones(self.dim(), 1);
    lo = lo.view(ones);
    hi = hi.view(ones);
  }
  assign_out(min, lo);
  assign_out(max, hi);
  return {min, max};
}
std::tuple<at::Tensor, at::Tensor> aminmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  at::Tensor min = at::empty({0}, self.options()), max = at::empty({0}, self.options());
  aminmax_out(self, dim, keepdim, min, max);
  return {min, max};
}

at::Tensor trace(const at::Tensor& self) {
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  return self.diagonal().sum();
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  register_variants<&sum_impl>(m, "sum.dim_IntList", nullptr, "sum.IntList_out");
  core::register_real_kernel<&sum_all>(m, "sum");
  register_variants<&nansum_impl>(m, "nansum", nullptr, "nansum.out");
  register_variants<&mean_impl>(m, "mean.dim", nullptr, "mean.out");
  core::register_real_kernel<&prod_dim>(m, "prod.dim_int");
  core::register_real_kernel<&prod_out>(m, "prod.int_out");
  core::register_real_kernel<&prod_all>(m, "prod");
  core::register_real_kernel<&amax<true>>(m, "amax");
  core::register_real_kernel<&amax_out<true>>(m, "amax.out");
  core::register_real_kernel<&amax<false>>(m, "amin");
  core::register_real_kernel<&amax_out<false>>(m, "amin.out");
  core::register_real_kernel<&max_all<true>>(m, "max");
  core::register_real_kernel<&max_all<false>>(m, "min");
  core::register_real_kernel<&max_dim<true>>(m, "max.dim");
  core::register_real_kernel<&max_dim_out<true>>(m, "max.dim_max");
  core::register_real_kernel<&max_dim<false>>(m, "min.dim");
  core::register_real_kernel<&max_dim_out<false>>(m, "min.dim_min");
  core::register_real_kernel<&argmax<true>>(m, "argmax");
  core::register_real_kernel<&argmax_out<true>>(m, "argmax.out");
  core::register_real_kernel<&argmax<false>>(m, "argmin");
  core::register_real_kernel<&argmax_out<false>>(m, "argmin.out");
  core::register_real_kernel<&any_dims<true>>(m, "any.dims");
  core::register_real_kernel<&any_dims_out<true>>(m, "any.dims_out");
  core::register_real_kernel<&any_dim<true>>(m, "any.dim");
  core::register_real_kernel<&any_dim_out<true>>(m, "any.out");
  core::register_real_kernel<&any_all<true>>(m, "any");
  core::register_real_kernel<&any_all_out<true>>(m, "any.all_out");
  core::register_real_kernel<&any_dims<false>>(m, "all.dims");
  core::register_real_kernel<&any_dims_out<false>>(m, "all.dims_out");
  core::register_real_kernel<&any_dim<false>>(m, "all.dim");
  core::register_real_kernel<&any_dim_out<false>>(m, "all.out");
  core::register_real_kernel<&any_all<false>>(m, "all");
  core::register_real_kernel<&any_all_out<false>>(m, "all.all_out");
  core::register_real_kernel<&count_nonzero>(m, "count_nonzero.dim_IntList");
  core::register_real_kernel<&var<false>>(m, "var.correction");
  core::register_real_kernel<&var_out<false>>(m, "var.correction_out");
  core::register_real_kernel<&var<true>>(m, "std.correction");
  core::register_real_kernel<&var_out<true>>(m, "std.correction_out");
  core::register_real_kernel<&var_mean<false>>(m, "var_mean.correction");
  core::register_real_kernel<&var_mean<true>>(m, "std_mean.correction");
  core::register_real_kernel<&vector_norm>(m, "linalg_vector_norm");
  core::register_real_kernel<&vector_norm_out>(m, "linalg_vector_norm.out");
  core::register_real_kernel<&norm_dim>(m, "norm.ScalarOpt_dim");
  core::register_real_kernel<&norm_dim_out>(m, "norm.out");
  core::register_real_kernel<&norm_dim_dtype>(m, "norm.ScalarOpt_dim_dtype");
  core::register_real_kernel<&norm_dim_dtype_out>(m, "norm.dtype_out");
  core::register_real_kernel<&equal>(m, "equal");
  core::register_real_kernel<&aminmax>(m, "aminmax");
  core::register_real_kernel<&aminmax_out>(m, "aminmax.out");
  core::register_real_kernel<&trace>(m, "trace");
}

}  // namespace drawbridge::ops
