// Ranges: arange and linspace (cl/range.cl), logspace, eye, and triu/tril indices.
#include <cmath>
#include <utility>

#include <ATen/native/RangeUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "ops/pointwise.h"

namespace drawbridge::ops {

namespace {

// Double where the device has it (the CPU's accumulate type), else float.
c10::ScalarType double_or_float(const at::Tensor& out) {
  return core::checked_device(out.device().index()).properties().fp64 ? c10::kDouble : c10::kFloat;
}

at::Tensor& arange_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step, at::Tensor& out) {
  int64_t size = 0;
  AT_DISPATCH_V2(out.scalar_type(), "arange_ocl", AT_WRAP([&] {
    size = at::native::compute_arange_size<scalar_t>(start, end, step);
  }), AT_EXPAND(AT_ALL_TYPES), at::kHalf, at::kBFloat16);
  if (out.numel() != size) at::native::resize_output(out, {size});
  c10::DeviceGuard guard(out.device());
  auto iter = at::TensorIterator::borrowing_nullary_op(out);
  c10::ScalarType ct = c10::isFloatingType(out.scalar_type()) ? double_or_float(out) : c10::kLong;
  run_pointwise(iter, "range.cl", "arange", ct, scalar_bits(start, ct), scalar_bits(step, ct));
  return out;
}

// As the CPU takes them: converted to `type` first (an int64 linspace from 4.3 starts at 4 and
// steps from there; an endpoint out of the type's range raises).
std::pair<c10::Scalar, c10::Scalar> endpoints_as(c10::ScalarType type, const c10::Scalar& start,
                                                 const c10::Scalar& end) {
  std::pair<c10::Scalar, c10::Scalar> converted;
  AT_DISPATCH_V2(type, "linspace_ocl", AT_WRAP([&] {
    converted = {c10::Scalar(start.to<scalar_t>()), c10::Scalar(end.to<scalar_t>())};
  }), AT_EXPAND(AT_ALL_TYPES), at::kHalf, at::kBFloat16);
  return converted;
}

// linspace with endpoints already converted to the type the steps are counted in.
void linspace_from(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, at::Tensor& out) {
  auto iter = at::TensorIterator::borrowing_nullary_op(out);
  // As the CPU: floating outputs step in their own (compute) type, integer outputs in double.
  const bool floating = c10::isFloatingType(out.scalar_type());
  c10::ScalarType ct = floating ? kernels::compute_type(out.scalar_type()) : double_or_float(out);
  double step = (end.toDouble() - start.toDouble()) / static_cast<double>(steps - 1);
  if (ct == c10::kFloat)  // the step itself computed in float, as the CPU computes it
    step = (static_cast<float>(end.toDouble()) - static_cast<float>(start.toDouble())) / static_cast<float>(steps - 1);
  run_pointwise(iter, "range.cl", "linspace", ct, scalar_bits(start, ct), scalar_bits(end, ct), scalar_bits(step, ct));
}

at::Tensor& linspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (out.numel() != steps) at::native::resize_output(out, {steps});
  if (steps == 0) return out;
  c10::DeviceGuard guard(out.device());
  if (steps == 1) return out.fill_(start);
  auto [first, last] = endpoints_as(out.scalar_type(), start, end);
  linspace_from(first, last, steps, out);
  return out;
}

at::Tensor& eye_m_out(int64_t n, int64_t m, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  at::native::resize_output(out, {n, m});
  out.zero_();
  if (n > 0 && m > 0) out.diagonal().fill_(1);
  return out;
}
at::Tensor& eye_out(int64_t n, at::Tensor& out) { return eye_m_out(n, n, out); }

// logspace: base ** linspace(start, end), the exponents stepped as linspace steps them.
at::Tensor& logspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, double base,
                         at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  at::native::resize_output(out, {steps});
  if (steps == 0) return out;
  // float16/bfloat16 exponents in float: rounded to the output type, one exponent ulp moved a
  // result near 500 by 3 of its ulps (the CPU rounds them too, and lands farther from float64).
  c10::ScalarType exponent_type =
      c10::isFloatingType(out.scalar_type()) ? kernels::compute_type(out.scalar_type()) : double_or_float(out);
  at::Tensor exponents = at::empty({steps}, out.options().dtype(exponent_type));
  c10::DeviceGuard guard(out.device());
  if (steps == 1) return out.fill_(std::pow(base, start.toDouble()));  // as the CPU: start as given
  auto [first, last] = endpoints_as(out.scalar_type(), start, end);  // integer outputs: integer endpoints
  linspace_from(first, last, steps, exponents);
  return out.copy_(at::pow(base, exponents));
}

// triu_indices / tril_indices: the coordinates of a (row x col) matrix's triangle, row-major, as
// the nonzero positions of the triangle's mask (so they come out in the CPU's order).
template <bool Lower>
at::Tensor triangle_indices(int64_t row, int64_t col, int64_t offset, std::optional<c10::ScalarType> dtype,
                            std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                            std::optional<bool> pin_memory) {
  TORCH_CHECK(row >= 0, "row must be non-negative, got", row);
  TORCH_CHECK(col >= 0, "col must be non-negative, got", col);
  const auto type = dtype.value_or(c10::kLong);
  TORCH_CHECK(type == c10::kLong || type == c10::kInt, "\"", Lower ? "tril" : "triu",
              "_indices\" not implemented for '", type, "'");
  auto options = at::TensorOptions().dtype(c10::kLong).device(device.value_or(c10::Device(core::kOcl)));
  if (row == 0 || col == 0) return at::empty({2, 0}, options.dtype(type));
  at::Tensor offsets = at::arange(col, options).unsqueeze(0) - at::arange(row, options).unsqueeze(1);
  at::Tensor mask = Lower ? offsets <= offset : offsets >= offset;
  return at::nonzero(mask).t().contiguous().to(type);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("triu_indices", TORCH_FN(triangle_indices<false>));
  m.impl("tril_indices", TORCH_FN(triangle_indices<true>));
  m.impl("arange.start_out", TORCH_FN(arange_out));
  m.impl("linspace.out", TORCH_FN(linspace_out));
  m.impl("eye.out", TORCH_FN(eye_out));
  m.impl("eye.m_out", TORCH_FN(eye_m_out));
  m.impl("logspace.out", TORCH_FN(logspace_out));
}

}  // namespace drawbridge::ops
