// Binary elementwise ops (cl/binary.cl): arithmetic, comparisons, logical and bitwise ops.
#include <cstring>
#include <utility>

#include <ATen/ScalarOps.h>
#include <ATen/native/BinaryOps.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "core/fallback.h"
#include "ops/complex_arithmetic.h"
#include "ops/pointwise.h"
#include "ops/variants.h"

namespace drawbridge::ops {

namespace {

enum class Build {
  Same,     // TensorIterator::binary_op: promoted common dtype
  Float,    // binary_float_op: integers promote to float
  Compare,  // comparison_op: bool output, computed in the inputs' common dtype
  SameDtypes,  // binary_op, for ops that the CPU defines only for operands of one dtype
};

struct BinaryOp {
  const char* functional;  // each name may be nullptr when the variant is composite
  const char* inplace;
  const char* out;
  Build build;
  Dtypes dtypes;
  const char* float_kernel;
  const char* int_kernel;
  bool scalar_other = false;  // the second argument is a Scalar
  const char* file = "binary.cl";
  // Takes the op's complex arguments (a complex input or out); without it they take the CPU fallback.
  at::Tensor (*complex_impl)(at::Tensor, const at::Tensor&, const at::Tensor&) = nullptr;
};

constexpr BinaryOp kOps[] = {
    {"mul.Tensor", "mul_.Tensor", "mul.out", Build::Same, Dtypes::All, "b_mul", "b_mul", false, "binary.cl", &complex_mul},
    {"div.Tensor", "div_.Tensor", "div.out", Build::Float, Dtypes::All, "b_div", nullptr},
    {"remainder.Tensor", "remainder_.Tensor", "remainder.Tensor_out", Build::Same, Dtypes::NotBool, "b_remainder", "b_remainder"},
    {"fmod.Tensor", "fmod_.Tensor", "fmod.Tensor_out", Build::Same, Dtypes::NotBool, "b_fmod", "b_fmod"},
    {"pow.Tensor_Tensor", "pow_.Tensor", "pow.Tensor_Tensor_out", Build::Same, Dtypes::NotBool, "b_pow", "b_pow"},
    {"atan2", "atan2_", "atan2.out", Build::Float, Dtypes::All, "b_atan2", nullptr},
    {"hypot", "hypot_", "hypot.out", Build::Same, Dtypes::Floating, "b_hypot", nullptr},
    {"copysign.Tensor", "copysign_.Tensor", "copysign.out", Build::Float, Dtypes::All, "b_copysign", nullptr},
    {"nextafter", "nextafter_", "nextafter.out", Build::Same, Dtypes::Floating, "b_nextafter", nullptr},
    {"minimum", nullptr, "minimum.out", Build::Same, Dtypes::All, "b_minimum", "b_minimum"},
    {"maximum", nullptr, "maximum.out", Build::Same, Dtypes::All, "b_maximum", "b_maximum"},
    {"fmin", nullptr, "fmin.out", Build::Same, Dtypes::All, "b_fmin", "b_minimum"},
    {"fmax", nullptr, "fmax.out", Build::Same, Dtypes::All, "b_fmax", "b_maximum"},
    {"xlogy.Tensor", "xlogy_.Tensor", "xlogy.OutTensor", Build::Float, Dtypes::All, "b_xlogy", nullptr},
    {"heaviside", "heaviside_", "heaviside.out", Build::SameDtypes, Dtypes::All, "b_heaviside", "b_heaviside"},
    {"eq.Tensor", "eq_.Tensor", "eq.Tensor_out", Build::Compare, Dtypes::All, "b_eq", "b_eq"},
    {"ne.Tensor", "ne_.Tensor", "ne.Tensor_out", Build::Compare, Dtypes::All, "b_ne", "b_ne"},
    {"lt.Tensor", "lt_.Tensor", "lt.Tensor_out", Build::Compare, Dtypes::All, "b_lt", "b_lt"},
    {"le.Tensor", "le_.Tensor", "le.Tensor_out", Build::Compare, Dtypes::All, "b_le", "b_le"},
    {"gt.Tensor", "gt_.Tensor", "gt.Tensor_out", Build::Compare, Dtypes::All, "b_gt", "b_gt"},
    {"ge.Tensor", "ge_.Tensor", "ge.Tensor_out", Build::Compare, Dtypes::All, "b_ge", "b_ge"},
    {"eq.Scalar", "eq_.Scalar", "eq.Scalar_out", Build::Compare, Dtypes::All, "b_eq", "b_eq", true},
    {"ne.Scalar", "ne_.Scalar", "ne.Scalar_out", Build::Compare, Dtypes::All, "b_ne", "b_ne", true},
    {"lt.Scalar", "lt_.Scalar", "lt.Scalar_out", Build::Compare, Dtypes::All, "b_lt", "b_lt", true},
    {"le.Scalar", "le_.Scalar", "le.Scalar_out", Build::Compare, Dtypes::All, "b_le", "b_le", true},
    {"gt.Scalar", "gt_.Scalar", "gt.Scalar_out", Build::Compare, Dtypes::All, "b_gt", "b_gt", true},
    {"ge.Scalar", "ge_.Scalar", "ge.Scalar_out", Build::Compare, Dtypes::All, "b_ge", "b_ge", true},
    {nullptr, nullptr, "logical_and.out", Build::Compare, Dtypes::All, "b_logical_and", "b_logical_and"},
    {nullptr, nullptr, "logical_or.out", Build::Compare, Dtypes::All, "b_logical_or", "b_logical_or"},
    {nullptr, nullptr, "logical_xor.out", Build::Compare, Dtypes::All, "b_logical_xor", "b_logical_xor"},
    {"bitwise_and.Tensor", "bitwise_and_.Tensor", "bitwise_and.Tensor_out", Build::Same, Dtypes::IntegralAndBool, nullptr, "b_bitwise_and"},
    {"bitwise_or.Tensor", "bitwise_or_.Tensor", "bitwise_or.Tensor_out", Build::Same, Dtypes::IntegralAndBool, nullptr, "b_bitwise_or"},
    {"bitwise_xor.Tensor", "bitwise_xor_.Tensor", "bitwise_xor.Tensor_out", Build::Same, Dtypes::IntegralAndBool, nullptr, "b_bitwise_xor"},
    {"bitwise_left_shift.Tensor", "bitwise_left_shift_.Tensor", "bitwise_left_shift.Tensor_out", Build::Same, Dtypes::Integral, nullptr, "b_lshift"},
    {"bitwise_right_shift.Tensor", "bitwise_right_shift_.Tensor", "bitwise_right_shift.Tensor_out", Build::Same, Dtypes::Integral, nullptr, "b_rshift"},
    {"floor_divide", "floor_divide_.Tensor", "floor_divide.out", Build::Same, Dtypes::NotBool, "b_div_floor", "b_div_floor"},
    {"logaddexp", nullptr, "logaddexp.out", Build::Same, Dtypes::Floating, "b_logaddexp", nullptr, false, "special.cl"},
    {"logaddexp2", nullptr, "logaddexp2.out", Build::Same, Dtypes::Floating, "b_logaddexp2", nullptr, false, "special.cl"},
    {"special_xlog1py", nullptr, "special_xlog1py.out", Build::Float, Dtypes::All, "b_xlog1py", nullptr, false, "special.cl"},
    {"special_zeta", nullptr, "special_zeta.out", Build::Float, Dtypes::All, "b_zeta", nullptr, false, "special.cl"},
    {"igamma", "igamma_", "igamma.out", Build::Same, Dtypes::Floating, "b_igamma", nullptr, false, "special.cl"},
    {"igammac", "igammac_", "igammac.out", Build::Same, Dtypes::Floating, "b_igammac", nullptr, false, "special.cl"},
    {nullptr, nullptr, "special_chebyshev_polynomial_t.out", Build::Float, Dtypes::All, "b_chebyshev_t", nullptr, false, "special.cl"},
    {nullptr, nullptr, "special_chebyshev_polynomial_u.out", Build::Float, Dtypes::All, "b_chebyshev_u", nullptr, false, "special.cl"},
    {nullptr, nullptr, "special_chebyshev_polynomial_v.out", Build::Float, Dtypes::All, "b_chebyshev_v", nullptr, false, "special.cl"},
    {nullptr, nullptr, "special_chebyshev_polynomial_w.out", Build::Float, Dtypes::All, "b_chebyshev_w", nullptr, false, "special.cl"},
    {nullptr, nullptr, "special_shifted_chebyshev_polynomial_t.out", Build::Float, Dtypes::All, "b_shifted_chebyshev_t", nullptr, false, "special.cl"},
    {nullptr, nullptr, "special_shifted_chebyshev_polynomial_u.out", Build::Float, Dtypes::All, "b_shifted_chebyshev_u", nullptr, false, "special.cl"},
    {nullptr, nullptr, "special_shifted_chebyshev_polynomial_v.out", Build::Float, Dtypes::All, "b_shifted_chebyshev_v", nullptr, false, "special.cl"},
    {nullptr, nullptr, "special_shifted_chebyshev_polynomial_w.out", Build::Float, Dtypes::All, "b_shifted_chebyshev_w", nullptr, false, "special.cl"},
    {nullptr, nullptr, "special_hermite_polynomial_h.out", Build::Float, Dtypes::All, "b_hermite_h", nullptr, false, "special.cl"},
    {nullptr, nullptr, "special_hermite_polynomial_he.out", Build::Float, Dtypes::All, "b_hermite_he", nullptr, false, "special.cl"},
    {nullptr, nullptr, "special_laguerre_polynomial_l.out", Build::Float, Dtypes::All, "b_laguerre_l", nullptr, false, "special.cl"},
    {nullptr, nullptr, "special_legendre_polynomial_p.out", Build::Float, Dtypes::All, "b_legendre_p", nullptr, false, "special.cl"},
};

at::TensorIterator build(Build kind, at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  switch (kind) {
    case Build::Same:
    case Build::SameDtypes: return at::TensorIterator::binary_op(out, a, b);
    case Build::Float: return at::TensorIterator::binary_float_op(out, a, b);
    case Build::Compare: return at::TensorIterator::comparison_op(out, a, b);
  }
  TORCH_INTERNAL_ASSERT(false);
}

const char* pick_kernel(const char* op, c10::ScalarType compute, Dtypes dtypes, const char* float_kernel,
                        const char* int_kernel) {
  check_dtype(op, compute, dtypes);
  const char* kernel = c10::isFloatingType(compute) ? float_kernel : int_kernel;
  TORCH_CHECK_NOT_IMPLEMENTED(kernel, "\"", op, "\" not implemented for '", c10::toString(compute), "' on ocl");
  return kernel;
}

// Integer division kernels take the device's error flag: a zero divisor raises ZeroDivisionError.
bool checks_divisor(const char* kernel, c10::ScalarType compute) {
  if (c10::isFloatingType(compute)) return false;
  for (const char* name : {"b_div_trunc", "b_div_floor", "b_remainder", "b_fmod"})
    if (std::strcmp(kernel, name) == 0) return true;
  return false;
}

template <typename... Extra>
void run_in(const char* file, const char* op, at::TensorIterator& iter, Dtypes dtypes, const char* float_kernel,
            const char* int_kernel, const Extra&... extra) {
  // Comparisons compute in the inputs' common dtype, not in the output's bool.
  c10::ScalarType compute = iter.common_dtype();
  const char* kernel = pick_kernel(op, compute, dtypes, float_kernel, int_kernel);
  kernels::KernelSpec spec{file, kernel, kernels::compute_type(compute)};
  // The binary kernels touch their operands through INPUT and OUTPUT alone; nextafter steps in the
  // output's own bits, which its program compiles in.
  spec.dynamic_dtypes = std::strcmp(kernel, "b_nextafter") != 0;
  spec.widen_integers = true;
  if (iter.numel() > 0 && checks_divisor(kernel, compute)) {
    cl_mem error = core::checked_device(iter.device(0).index()).error_flag();
    kernels::launch_pointwise(iter, spec, extra..., error);
    return;
  }
  kernels::launch_pointwise(iter, spec, extra...);
}

template <typename... Extra>
void run(const char* op, at::TensorIterator& iter, Dtypes dtypes, const char* float_kernel, const char* int_kernel,
         const Extra&... extra) {
  run_in("binary.cl", op, iter, dtypes, float_kernel, int_kernel, extra...);
}

at::Tensor other_tensor(const at::Tensor& t) { return t; }
at::Tensor other_tensor(const c10::Scalar& s) { return at::native::wrapped_scalar_tensor(s); }

template <int I, typename Other>
at::Tensor binary_impl(at::Tensor out, const at::Tensor& a, const Other& b) {
  const BinaryOp& op = kOps[I];
  const at::Tensor other = other_tensor(b);
  if (op.complex_impl && (a.is_complex() || other.is_complex() || (out.defined() && out.is_complex())))
    return op.complex_impl(out, a, other);
  TORCH_CHECK(op.build != Build::SameDtypes || a.scalar_type() == other.scalar_type(), op.functional,
              " is not yet implemented for tensors with different dtypes.");
  auto iter = build(op.build, out, a, other);
  run_in(op.file, op.out, iter, op.dtypes, op.float_kernel, op.int_kernel);
  return iter.output();
}

template <int I>
void register_one(torch::Library& m) {
  const BinaryOp& op = kOps[I];
  const ComplexArgs complex = op.complex_impl ? ComplexArgs::Native : ComplexArgs::Fallback;
  if (op.scalar_other)
    register_variants<&binary_impl<I, c10::Scalar>>(m, op.functional, op.inplace, op.out, complex);
  else
    register_variants<&binary_impl<I, at::Tensor>>(m, op.functional, op.inplace, op.out, complex);
}

template <int... I>
void register_all(torch::Library& m, std::integer_sequence<int, I...>) {
  (register_one<I>(m), ...);
}

// add / sub: a + alpha * b.
template <bool Subtract>
at::Tensor add_sub_impl(at::Tensor out, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& alpha) {
  if (Subtract) at::native::sub_check(a, b);
  auto iter = at::TensorIterator::binary_op(out, a, b);
  at::native::alpha_check(iter.dtype(), alpha);
  c10::ScalarType compute = kernels::compute_type(iter.common_dtype());
  const char* kernel = Subtract ? "b_sub" : "b_add";
  run(Subtract ? "sub" : "add", iter, Dtypes::All, kernel, kernel, scalar_bits(alpha, compute));
  return iter.output();
}

// rsub: other - alpha * self.
at::Tensor rsub(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  return add_sub_impl<true>(at::Tensor(), other, self, alpha);
}
at::Tensor& rsub_out(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha, at::Tensor& out) {
  add_sub_impl<true>(out, other, self, alpha);
  return out;
}

// div with rounding_mode None (true division), "trunc" or "floor".
at::Tensor div_mode_impl(at::Tensor out, const at::Tensor& a, const at::Tensor& b,
                         std::optional<c10::string_view> mode) {
  if (!mode.has_value()) {
    auto iter = at::TensorIterator::binary_float_op(out, a, b);
    run("div", iter, Dtypes::All, "b_div", nullptr);
    return iter.output();
  }
  TORCH_CHECK(*mode == "trunc" || *mode == "floor",
              "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *mode, "'");
  auto iter = at::TensorIterator::binary_op(out, a, b);
  const char* kernel = *mode == "trunc" ? "b_div_trunc" : "b_div_floor";
  run("div", iter, Dtypes::NotBool, kernel, kernel);
  return iter.output();
}

// The exponents models use most (x.pow(2) in every variance and RMS norm) as multiplications and
// square roots, as PyTorch's CPU and CUDA kernels do: the device's pow() is a general routine that
// costs tens of times more (PoCL: about 100 ns per element). Floating results of the base's own
// dtype only; `out` is already allocated.
bool pow_as_cheaper_ops(at::Tensor out, const at::Tensor& base, const c10::Scalar& exponent) {
  if (!at::isFloatingType(base.scalar_type()) || out.scalar_type() != base.scalar_type() || exponent.isComplex())
    return false;
  const double e = exponent.toDouble();
  if (e == 1.0) {
    if (!out.is_same(base)) out.copy_(base);
  } else if (e == 2.0) {
    at::mul_out(out, base, base);
  } else if (e == 3.0) {
    const at::Tensor b = out.is_same(base) ? base.clone() : base;
    at::mul_out(out, b, b).mul_(b);
  } else if (e == 0.5) {
    at::sqrt_out(out, base);
  } else if (e == -0.5) {
    at::rsqrt_out(out, base);
  } else if (e == -1.0) {
    at::reciprocal_out(out, base);
  } else if (e == -2.0) {
    at::mul_out(out, base, base).reciprocal_();
  } else {
    return false;
  }
  return true;
}

// pow(Tensor base, Scalar exponent): integers take no negative integer exponent, as on the CPU.
at::Tensor pow_tensor_scalar_impl(at::Tensor out, const at::Tensor& base, const c10::Scalar& exponent) {
  TORCH_CHECK(!(c10::isIntegralType(base.scalar_type(), true) && exponent.isIntegral(true) && exponent.toLong() < 0),
              "Integers to negative integer powers are not allowed.");
  auto iter = at::TensorIterator::binary_op(out, base, at::native::wrapped_scalar_tensor(exponent));
  if (pow_as_cheaper_ops(iter.output(), base, exponent)) return iter.output();
  run("pow", iter, Dtypes::NotBool, "b_pow", "b_pow");
  return iter.output();
}

// pow(Scalar base, Tensor exponent).
at::Tensor pow_scalar_base_impl(at::Tensor out, const c10::Scalar& base, const at::Tensor& exponent) {
  auto iter = at::TensorIterator::binary_op(out, at::native::wrapped_scalar_tensor(base), exponent);
  run("pow", iter, Dtypes::NotBool, "b_pow", "b_pow");
  return iter.output();
}
at::Tensor pow_scalar_base(const c10::Scalar& base, const at::Tensor& exponent) {
  return pow_scalar_base_impl(at::Tensor(), base, exponent);
}
at::Tensor& pow_scalar_base_out(const c10::Scalar& base, const at::Tensor& exponent, at::Tensor& out) {
  pow_scalar_base_impl(out, base, exponent);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  register_all(m, std::make_integer_sequence<int, sizeof(kOps) / sizeof(kOps[0])>());
  register_variants<&add_sub_impl<false>>(m, "add.Tensor", "add_.Tensor", "add.out");
  register_variants<&add_sub_impl<true>>(m, "sub.Tensor", "sub_.Tensor", "sub.out");
  core::register_real_kernel<&rsub>(m, "rsub.Tensor");
  core::register_real_kernel<&rsub_out>(m, "rsub.Tensor_out");
  register_variants<&div_mode_impl>(m, "div.Tensor_mode", "div_.Tensor_mode", "div.out_mode");
  register_variants<&pow_tensor_scalar_impl>(m, "pow.Tensor_Scalar", "pow_.Scalar", "pow.Tensor_Scalar_out");
  core::register_real_kernel<&pow_scalar_base>(m, "pow.Scalar");
  core::register_real_kernel<&pow_scalar_base_out>(m, "pow.Scalar_out");
}

}  // namespace drawbridge::ops
