// Unary elementwise ops (cl/unary.cl): math functions, rounding, sign tests, bitwise/logical not.
#include <cstring>
#include <utility>

#include <tuple>

#include <ATen/TensorIterator.h>
#include <torch/library.h>

#include "core/fallback.h"
#include "ops/complex_arithmetic.h"
#include "ops/pointwise.h"
#include "ops/variants.h"

namespace drawbridge::ops {

namespace {

enum class Build {
  Float,     // integer inputs promote to float (sqrt, exp, ...)
  Same,      // output dtype = input dtype
  BoolOut,   // output is bool, computed in the input's type (signbit, isposinf, ...)
};

struct UnaryOp {
  const char* name;        // ATen name; registered as name, name_ and name.out
  Build build;
  Dtypes dtypes;
  const char* float_kernel;  // kernel when computing in floating point
  const char* int_kernel;    // kernel when computing in an integer type (or nullptr)
  bool inplace_and_functional = true;  // false: the functional and name.out only
  const char* file = "unary.cl";
  // Takes the op's complex arguments (a complex input or out); without it they take the CPU fallback.
  at::Tensor (*complex_impl)(at::Tensor, const at::Tensor&) = nullptr;
};

constexpr UnaryOp kOps[] = {
    {"sqrt", Build::Float, Dtypes::All, "u_sqrt", nullptr},
    {"rsqrt", Build::Float, Dtypes::All, "u_rsqrt", nullptr},
    {"exp", Build::Float, Dtypes::All, "u_exp", nullptr},
    {"exp2", Build::Float, Dtypes::All, "u_exp2", nullptr},
    {"expm1", Build::Float, Dtypes::All, "u_expm1", nullptr},
    {"log", Build::Float, Dtypes::All, "u_log", nullptr},
    {"log2", Build::Float, Dtypes::All, "u_log2", nullptr},
    {"log10", Build::Float, Dtypes::All, "u_log10", nullptr},
    {"log1p", Build::Float, Dtypes::All, "u_log1p", nullptr},
    {"sin", Build::Float, Dtypes::All, "u_sin", nullptr},
    {"cos", Build::Float, Dtypes::All, "u_cos", nullptr},
    {"tan", Build::Float, Dtypes::All, "u_tan", nullptr},
    {"asin", Build::Float, Dtypes::All, "u_asin", nullptr},
    {"acos", Build::Float, Dtypes::All, "u_acos", nullptr},
    {"atan", Build::Float, Dtypes::All, "u_atan", nullptr},
    {"sinh", Build::Float, Dtypes::All, "u_sinh", nullptr},
    {"cosh", Build::Float, Dtypes::All, "u_cosh", nullptr},
    {"tanh", Build::Float, Dtypes::All, "u_tanh", nullptr},
    {"asinh", Build::Float, Dtypes::All, "u_asinh", nullptr},
    {"acosh", Build::Float, Dtypes::All, "u_acosh", nullptr},
    {"atanh", Build::Float, Dtypes::All, "u_atanh", nullptr},
    {"erf", Build::Float, Dtypes::All, "u_erf", nullptr},
    {"erfc", Build::Float, Dtypes::All, "u_erfc", nullptr},
    {"lgamma", Build::Float, Dtypes::All, "u_lgamma", nullptr},
    {"sigmoid", Build::Float, Dtypes::All, "u_sigmoid", nullptr},
    {"reciprocal", Build::Float, Dtypes::All, "u_reciprocal", nullptr},
    {"neg", Build::Same, Dtypes::NotBool, "u_neg", "u_neg"},
    {"abs", Build::Same, Dtypes::NotBool, "u_abs", "u_abs"},
    {"floor", Build::Same, Dtypes::NotBool, "u_floor", "u_floor"},
    {"ceil", Build::Same, Dtypes::NotBool, "u_ceil", "u_ceil"},
    {"round", Build::Same, Dtypes::NotBool, "u_round", "u_round"},
    {"trunc", Build::Same, Dtypes::NotBool, "u_trunc", "u_trunc"},
    {"frac", Build::Same, Dtypes::Floating, "u_frac", nullptr},
    {"sign", Build::Same, Dtypes::All, "u_sign_float", "u_sign"},
    {"sgn", Build::Same, Dtypes::All, "u_sign_float", "u_sign", true, "unary.cl", &complex_sgn},
    {"bitwise_not", Build::Same, Dtypes::IntegralAndBool, nullptr, "u_bitwise_not"},
    {"signbit", Build::BoolOut, Dtypes::All, "u_signbit", "u_signbit", false},
    {"isposinf", Build::BoolOut, Dtypes::All, "u_isposinf_float", "u_isposinf", false},
    {"isneginf", Build::BoolOut, Dtypes::All, "u_isneginf_float", "u_isneginf", false},
    {"isnan", Build::BoolOut, Dtypes::All, "u_isnan_float", "u_isnan", false},
    {"relu", Build::Same, Dtypes::NotBool, "u_relu", "u_relu"},
    {"erfinv", Build::Float, Dtypes::All, "u_erfinv", nullptr, true, "special.cl"},
    {"digamma", Build::Float, Dtypes::All, "u_digamma", nullptr, true, "special.cl"},
    {"sinc", Build::Float, Dtypes::All, "u_sinc", nullptr, true, "special.cl"},
    {"special_entr", Build::Float, Dtypes::All, "u_entr", nullptr, false, "special.cl"},
    {"angle", Build::Float, Dtypes::All, "u_angle", nullptr, false, "special.cl"},
    {"i0", Build::Float, Dtypes::All, "u_i0", nullptr, true, "special.cl"},
    {"special_i0e", Build::Float, Dtypes::All, "u_i0e", nullptr, false, "special.cl"},
    {"special_i1", Build::Float, Dtypes::All, "u_i1", nullptr, false, "special.cl"},
    {"special_i1e", Build::Float, Dtypes::All, "u_i1e", nullptr, false, "special.cl"},
    {"special_erfcx", Build::Float, Dtypes::All, "u_erfcx", nullptr, false, "special.cl"},
    {"special_airy_ai", Build::Float, Dtypes::All, "u_airy_ai", nullptr, false, "special.cl"},
    {"special_bessel_j0", Build::Float, Dtypes::All, "u_j0", nullptr, false, "special.cl"},
    {"special_bessel_j1", Build::Float, Dtypes::All, "u_j1", nullptr, false, "special.cl"},
    {"special_bessel_y0", Build::Float, Dtypes::All, "u_y0", nullptr, false, "special.cl"},
    {"special_bessel_y1", Build::Float, Dtypes::All, "u_y1", nullptr, false, "special.cl"},
    {"special_modified_bessel_i0", Build::Float, Dtypes::All, "u_i0", nullptr, false, "special.cl"},
    {"special_modified_bessel_i1", Build::Float, Dtypes::All, "u_i1", nullptr, false, "special.cl"},
    {"special_modified_bessel_k0", Build::Float, Dtypes::All, "u_k0", nullptr, false, "special.cl"},
    {"special_modified_bessel_k1", Build::Float, Dtypes::All, "u_k1", nullptr, false, "special.cl"},
    {"special_scaled_modified_bessel_k0", Build::Float, Dtypes::All, "u_k0e", nullptr, false, "special.cl"},
    {"special_scaled_modified_bessel_k1", Build::Float, Dtypes::All, "u_k1e", nullptr, false, "special.cl"},
    {"special_spherical_bessel_j0", Build::Float, Dtypes::All, "u_spherical_j0", nullptr, false, "special.cl"},
    {"special_log_ndtr", Build::Float, Dtypes::All, "u_log_ndtr", nullptr, false, "special.cl"},
    {"special_ndtri", Build::Float, Dtypes::All, "u_ndtri", nullptr, false, "special.cl"},
};

at::TensorIterator build(const UnaryOp& op, at::Tensor& out, const at::Tensor& self) {
  switch (op.build) {
    case Build::Float: return at::TensorIterator::unary_float_op(out, self);
    case Build::Same: return at::TensorIterator::unary_op(out, self);
    case Build::BoolOut:
      return at::TensorIteratorConfig()
          .set_check_mem_overlap(true)
          .check_all_same_dtype(false)
          .declare_static_dtype(c10::kBool)
          .add_output(out)
          .add_const_input(self)
          .build();
  }
  TORCH_INTERNAL_ASSERT(false);
}

void run(const UnaryOp& op, at::TensorIterator& iter, c10::ScalarType input_type) {
  TORCH_CHECK(input_type != c10::kBool || std::strcmp(op.name, "neg") != 0,
              "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
              "use the `~` or `logical_not()` operator instead.");
  check_dtype(op.name, input_type, op.dtypes);
  c10::ScalarType compute = op.build == Build::BoolOut ? input_type : iter.common_dtype();
  bool floating = c10::isFloatingType(compute);
  const char* kernel = input_type == c10::kBool && std::strcmp(op.name, "bitwise_not") == 0
                           ? "u_bitwise_not_bool"
                           : floating ? op.float_kernel : op.int_kernel;
  TORCH_CHECK_NOT_IMPLEMENTED(kernel, "\"", op.name, "\" not implemented for '", c10::toString(compute), "' on ocl");
  // Bool "sign"-like ops compute on uint8 values and store them back as bool.
  run_pointwise(iter, op.file, kernel, compute);
}

// Writes op I of self into `out` (a handle to the caller's tensor, or undefined to allocate).
template <int I>
at::Tensor unary_impl(at::Tensor out, const at::Tensor& self) {
  if (kOps[I].complex_impl && (self.is_complex() || (out.defined() && out.is_complex())))
    return kOps[I].complex_impl(out, self);
  auto iter = build(kOps[I], out, self);
  run(kOps[I], iter, self.scalar_type());
  return iter.output();
}

at::Tensor& logical_not_out(const at::Tensor& self, at::Tensor& out) {
  auto iter = at::TensorIteratorConfig().check_all_same_dtype(false).add_output(out).add_const_input(self).build();
  check_dtype("logical_not", self.scalar_type(), Dtypes::All);
  run_pointwise(iter, "unary.cl", "u_logical_not", self.scalar_type());
  return out;
}

// polygamma(n, x), the n-th derivative of digamma.
at::Tensor polygamma_impl(at::Tensor out, int64_t n, const at::Tensor& self) {
  TORCH_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  auto iter = at::TensorIterator::unary_float_op(out, self);
  c10::ScalarType compute = kernels::compute_type(iter.common_dtype());
  check_dtype("polygamma", compute, Dtypes::Floating);
  run_pointwise(iter, "special.cl", "u_polygamma", compute, scalar_bits(n, compute));
  return iter.output();
}
at::Tensor polygamma(int64_t n, const at::Tensor& self) { return polygamma_impl(at::Tensor(), n, self); }
at::Tensor& polygamma_out(int64_t n, const at::Tensor& self, at::Tensor& out) {
  polygamma_impl(out, n, self);
  return out;
}
at::Tensor& polygamma_(at::Tensor& self, int64_t n) {
  polygamma_impl(self, n, self);
  return self;
}

// frexp: self = mantissa * 2^exponent, the mantissa's magnitude in [0.5, 1) (or 0), in self's
// dtype; the exponent int32.
std::tuple<at::Tensor&, at::Tensor&> frexp_out(const at::Tensor& self, at::Tensor& mantissa, at::Tensor& exponent) {
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()), "torch.frexp() only supports floating-point dtypes");
  TORCH_CHECK(mantissa.dtype() == self.dtype(), "torch.frexp() expects mantissa to have dtype ", self.dtype(),
              " but got ", mantissa.dtype());
  TORCH_CHECK(exponent.dtype() == c10::kInt, "torch.frexp() expects exponent to have int dtype but got ",
              exponent.dtype());
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .set_check_mem_overlap(true)
                  .add_output(mantissa)
                  .add_output(exponent)
                  .add_const_input(self)
                  .build();
  run_pointwise(iter, "unary.cl", "u_frexp", self.scalar_type());
  return {mantissa, exponent};
}

template <int I>
void register_one(torch::Library& m) {
  const std::string name = kOps[I].name;
  const std::string in_place = name + "_", out = name + ".out";
  register_variants<&unary_impl<I>>(m, name.c_str(), kOps[I].inplace_and_functional ? in_place.c_str() : nullptr,
                                    out.c_str(), kOps[I].complex_impl ? ComplexArgs::Native : ComplexArgs::Fallback);
}

template <int... I>
void register_all(torch::Library& m, std::integer_sequence<int, I...>) {
  (register_one<I>(m), ...);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  register_all(m, std::make_integer_sequence<int, sizeof(kOps) / sizeof(kOps[0])>());
  core::register_real_kernel<&logical_not_out>(m, "logical_not.out");
  core::register_real_kernel<&polygamma>(m, "polygamma");
  core::register_real_kernel<&polygamma_out>(m, "polygamma.out");
  core::register_real_kernel<&polygamma_>(m, "polygamma_");
  core::register_real_kernel<&frexp_out>(m, "frexp.Tensor_out");
}

}  // namespace drawbridge::ops
