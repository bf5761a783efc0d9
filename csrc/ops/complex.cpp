// Complex tensors from and to real parts, natively: complex(real, imag), polar(abs, angle) and
// conj_physical, each writing the parts through view_as_real. (Other complex arithmetic takes
// the CPU fallback; docs/ops.md says so.)
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_conj.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/view_as_real.h>
#include <torch/library.h>

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

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("complex.out", TORCH_FN(complex_out));
  m.impl("polar.out", TORCH_FN(polar_out));
  m.impl("conj_physical.out", TORCH_FN(conj_physical_out));
  m.impl("conj_physical_", TORCH_FN(conj_physical_inplace));
}

}  // namespace drawbridge::ops
