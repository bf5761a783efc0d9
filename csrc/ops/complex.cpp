// Complex tensors from and to real parts, natively: complex(real, imag), polar(abs, angle),
// conj_physical, and the multiplication and sign of ops/complex_arithmetic.h, each through
// view_as_real. (Other complex arithmetic takes the CPU fallback; docs/ops.md says so.)
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_conj.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/hypot.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include "ops/complex_arithmetic.h"
#include "ops/out_arguments.h"

namespace drawbridge::ops {

namespace {

// The CPU's checks for complex() and polar(), in its order and words.
void check_parts(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "Expected object of scalar type ", a.scalar_type(),
              " but got scalar type ", b.scalar_type(), " for second argument");
  TORCH_CHECK(a.scalar_type() == c10::kFloat || a.scalar_type() == c10::kDouble || a.scalar_type() == c10::kHalf,
              "Expected both inputs to be Half, Float or Double tensors but got ", a.scalar_type(), " and ",
              b.scalar_type());
  const auto expected = c10::toComplexType(a.scalar_type());
  TORCH_CHECK(out.scalar_type() == expected, "Expected object of scalar type ", expected, " but got scalar type ",
              out.scalar_type(), " for argument 'out'");
}

// out resized to the broadcast shape of the parts; its (real, imag) view.
at::Tensor parts_of(at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  check_out_overlap(out, {a, b});
  at::native::resize_output(out, at::infer_size(a.sizes(), b.sizes()));
  return at::view_as_real(out);
}

at::Tensor& complex_out(const at::Tensor& real, const at::Tensor& imag, at::Tensor& out) {
  check_parts(real, imag, out);
  at::Tensor parts = parts_of(out, real, imag);
  parts.select(-1, 0).copy_(real);
  parts.select(-1, 1).copy_(imag);
  return out;
}

at::Tensor& polar_out(const at::Tensor& abs, const at::Tensor& angle, at::Tensor& out) {
  check_parts(abs, angle, out);
  TORCH_CHECK_NOT_IMPLEMENTED(abs.scalar_type() != c10::kHalf, "\"polar\" not implemented for 'Half'");
  at::Tensor parts = parts_of(out, abs, angle);
  parts.select(-1, 0).copy_(abs * at::cos(angle));
  parts.select(-1, 1).copy_(abs * at::sin(angle));
  return out;
}

// The conjugate as values (torch.fft's inverse transforms of real signals end with one): a copy,
// then its imaginary parts negated.
void negate_imaginary(at::Tensor& t) {
  if (t.is_complex()) at::view_as_real(t.is_conj() ? at::_conj(t) : t).select(-1, 1).neg_();
}

at::Tensor& conj_physical_out(const at::Tensor& self, at::Tensor& out) {
  check_out_overlap(out, {self});
  at::native::resize_output(out, self.sizes());
  out.copy_(self);
  negate_imaginary(out);
  return out;
}

at::Tensor& conj_physical_inplace(at::Tensor& self) {
  negate_imaginary(self);
  return self;
}

// (re, im) of t as a real tensor of `real_type` with a last dim of 2: a view of a complex t of
// that precision, else a converted copy; a real t gets zero imaginary parts.
at::Tensor parts_as(const at::Tensor& t, c10::ScalarType real_type) {
  if (!t.is_complex()) {
    const at::Tensor real = t.to(real_type);
    return at::stack({real, at::zeros_like(real)}, -1);
  }
  const at::Tensor parts = at::view_as_real(t.is_conj() ? t.resolve_conj() : t);
  return parts.scalar_type() == real_type ? parts : parts.to(real_type);
}

// The complex tensor of `parts` into `out` as an out= op writes it (resized; the result type
// must cast to out's), or itself when `out` is undefined.
at::Tensor complex_result(at::Tensor& out, const at::Tensor& parts) {
  const at::Tensor result = at::view_as_complex(parts.contiguous());
  if (!out.defined()) return result;
  TORCH_CHECK(c10::canCast(result.scalar_type(), out.scalar_type()), "result type ", result.scalar_type(),
              " can't be cast to the desired output type ", out.scalar_type());
  at::native::resize_output(out, result.sizes());
  at::view_as_real(out).copy_(at::view_as_real(result));  // out is complex: a complex result casts to no real type
  return out;
}

}  // namespace

at::Tensor complex_mul(at::Tensor out, const at::Tensor& a, const at::Tensor& b) {
  c10::ScalarType type = at::result_type(a, b);
  if (out.defined() && !c10::isComplexType(type)) type = out.scalar_type();  // real inputs, complex out
  const c10::ScalarType real = c10::toRealValueType(type);
  if (!a.is_complex() || !b.is_complex()) {  // a real factor scales both parts
    const at::Tensor& factor = a.is_complex() ? b : a;
    // a complex CPU scalar (z * (1 + 2j)) becomes a device tensor: its parts broadcast against the factor
    const at::Tensor& complex_factor = a.is_complex() ? a : b;
    const at::Tensor z = complex_factor.is_cpu() ? complex_factor.to(factor.device()) : complex_factor;
    // (a 0-dim factor stays one: it may be a CPU scalar, which broadcasts only as a 0-dim tensor)
    const at::Tensor f = factor.to(real);
    return complex_result(out, parts_as(z, real) * (f.dim() == 0 ? f : f.unsqueeze(-1)));
  }
  const at::Tensor x = parts_as(a, real), y = parts_as(b, real);
  const at::Tensor xr = x.select(-1, 0), xi = x.select(-1, 1), yr = y.select(-1, 0), yi = y.select(-1, 1);
  return complex_result(out, at::stack({xr * yr - xi * yi, xr * yi + xi * yr}, -1));
}

at::Tensor complex_sgn(at::Tensor out, const at::Tensor& self) {
  const at::Tensor parts = parts_as(self, c10::toRealValueType(self.scalar_type()));
  const at::Tensor abs = at::hypot(parts.select(-1, 0), parts.select(-1, 1)).unsqueeze(-1);
  return complex_result(out, at::where(abs == 0, at::zeros_like(parts), parts / abs));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("complex.out", TORCH_FN(complex_out));
  m.impl("polar.out", TORCH_FN(polar_out));
  m.impl("conj_physical.out", TORCH_FN(conj_physical_out));
  m.impl("conj_physical_", TORCH_FN(conj_physical_inplace));
}

}  // namespace drawbridge::ops
