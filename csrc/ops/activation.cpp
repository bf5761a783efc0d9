// Activation functions and their backward ops, plus clamp with scalar bounds: elementwise
// kernels with scalar parameters (cl/unary.cl for forward, cl/activation_backward.cl for backward).
#include <cmath>

#include <limits>

#include <ATen/Dispatch.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Activation.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "core/fallback.h"
#include "ops/out_arguments.h"
#include "ops/pointwise.h"
#include "ops/variants.h"

namespace drawbridge::ops {

namespace {

// out = kernel(self, params...), computed in self's floating type.
template <typename... P>
at::Tensor unary_with(at::Tensor out, const at::Tensor& self, const char* op, const char* kernel, Dtypes dtypes,
                      const P&... params) {
  auto iter = at::TensorIterator::unary_op(out, self);
  check_dtype(op, iter.common_dtype(), dtypes);
  c10::ScalarType compute = kernels::compute_type(iter.common_dtype());
  run_pointwise(iter, "unary.cl", kernel, compute, scalar_bits(params, compute)...);
  return iter.output();
}

// An int kernel argument among scalar parameters (scalar_bits passes it through unchanged).
struct IntArg {
  cl_int value;
};
inline IntArg scalar_bits(IntArg a, c10::ScalarType) { return a; }
using ops::scalar_bits;

// grad_input = kernel(grad_output, x, params...).
template <typename... P>
at::Tensor backward_with(at::Tensor grad_input, const at::Tensor& grad_output, const at::Tensor& x, const char* op,
                         const char* kernel, const P&... params) {
  auto iter = at::TensorIterator::borrowing_binary_op(grad_input, grad_output, x);
  check_dtype(op, iter.common_dtype(), Dtypes::Floating);
  c10::ScalarType compute = kernels::compute_type(iter.common_dtype());
  run_pointwise(iter, "activation_backward.cl", kernel, compute, scalar_bits(params, compute)...);
  return iter.output();
}

// name_impl(out, self, PARAMS...) for a forward activation whose extra parameters are PARAMS
// (declarations) passed on as ARGS; ops/variants.h derives its three forms.
#define DB_ACTIVATION(name, KERNEL, DTYPES, PARAMS, ARGS)                   \
  at::Tensor name##_impl(at::Tensor out, const at::Tensor& self PARAMS) {   \
    return unary_with(out, self, #name, KERNEL, DTYPES ARGS);               \
  }
#define DB_NOTHING
#define DB_WITH(...) , __VA_ARGS__
// name_impl(grad_input, grad_output, x, PARAMS...) for an activation's backward.
#define DB_BACKWARD(name, KERNEL, PARAMS, ARGS)                                                         \
  at::Tensor name##_impl(at::Tensor grad_input, const at::Tensor& grad_output, const at::Tensor& x PARAMS) { \
    return backward_with(grad_input, grad_output, x, #name, KERNEL ARGS);                               \
  }

DB_ACTIVATION(silu, "u_silu", Dtypes::Floating, DB_NOTHING, DB_NOTHING)
DB_ACTIVATION(mish, "u_mish", Dtypes::Floating, DB_NOTHING, DB_NOTHING)
DB_ACTIVATION(hardsigmoid, "u_hardsigmoid", Dtypes::Floating, DB_NOTHING, DB_NOTHING)
DB_ACTIVATION(hardswish, "u_hardswish", Dtypes::Floating, DB_NOTHING, DB_NOTHING)
DB_ACTIVATION(leaky_relu, "u_leaky_relu", Dtypes::Floating, DB_WITH(const c10::Scalar& slope), DB_WITH(slope))
DB_ACTIVATION(softshrink, "u_softshrink", Dtypes::Floating, DB_WITH(const c10::Scalar& lambd), DB_WITH(lambd))
DB_ACTIVATION(hardshrink, "u_hardshrink", Dtypes::Floating, DB_WITH(const c10::Scalar& lambd), DB_WITH(lambd))
DB_ACTIVATION(softplus, "u_softplus", Dtypes::Floating, DB_WITH(const c10::Scalar& beta, const c10::Scalar& threshold),
              DB_WITH(beta, threshold))
DB_ACTIVATION(hardtanh, "u_hardtanh", Dtypes::NotBool, DB_WITH(const c10::Scalar& lo, const c10::Scalar& hi),
              DB_WITH(lo, hi))
DB_ACTIVATION(threshold, "u_threshold", Dtypes::NotBool,
              DB_WITH(const c10::Scalar& threshold, const c10::Scalar& value), DB_WITH(threshold, value))

DB_BACKWARD(threshold_backward, "b_threshold_backward", DB_WITH(const c10::Scalar& threshold), DB_WITH(threshold))
DB_BACKWARD(sigmoid_backward, "b_sigmoid_backward", DB_NOTHING, DB_NOTHING)
DB_BACKWARD(tanh_backward, "b_tanh_backward", DB_NOTHING, DB_NOTHING)
DB_BACKWARD(silu_backward, "b_silu_backward", DB_NOTHING, DB_NOTHING)
DB_BACKWARD(mish_backward, "b_mish_backward", DB_NOTHING, DB_NOTHING)
DB_BACKWARD(hardsigmoid_backward, "b_hardsigmoid_backward", DB_NOTHING, DB_NOTHING)
DB_BACKWARD(hardswish_backward, "b_hardswish_backward", DB_NOTHING, DB_NOTHING)
DB_BACKWARD(hardtanh_backward, "b_hardtanh_backward", DB_WITH(const c10::Scalar& lo, const c10::Scalar& hi),
            DB_WITH(lo, hi))
DB_BACKWARD(softplus_backward, "b_softplus_backward",
            DB_WITH(const c10::Scalar& beta, const c10::Scalar& threshold), DB_WITH(beta, threshold))
DB_BACKWARD(softshrink_backward, "b_softshrink_backward", DB_WITH(const c10::Scalar& lambd), DB_WITH(lambd))
DB_BACKWARD(hardshrink_backward, "b_hardshrink_backward", DB_WITH(const c10::Scalar& lambd), DB_WITH(lambd))

// gelu has a string parameter, leaky_relu_backward an extra flag, logit an optional eps.
at::Tensor gelu_impl(at::Tensor out, const at::Tensor& self, c10::string_view approximate) {
  bool tanh = at::native::get_gelutype_enum(approximate) == at::native::GeluType::Tanh;
  return unary_with(out, self, "gelu", tanh ? "u_gelu_tanh" : "u_gelu", Dtypes::Floating);
}
at::Tensor gelu_backward_impl(at::Tensor gi, const at::Tensor& grad, const at::Tensor& self, c10::string_view approximate) {
  bool tanh = at::native::get_gelutype_enum(approximate) == at::native::GeluType::Tanh;
  return backward_with(gi, grad, self, "gelu_backward", tanh ? "b_gelu_tanh_backward" : "b_gelu_backward");
}

// The CPU checks self_is_result for the functional and out= forms alike.
at::Tensor leaky_relu_backward_impl(at::Tensor grad_input, const at::Tensor& grad, const at::Tensor& self,
                                    const c10::Scalar& slope, bool self_is_result) {
  TORCH_CHECK(!self_is_result || slope.to<double>() >= 0.0,
              "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. "
              "This is caused by calling in-place forward function with a negative slope, please call out-of-place "
              "version instead.");
  return backward_with(grad_input, grad, self, "leaky_relu_backward", "b_leaky_relu_backward", slope);
}

at::Tensor logit_impl(at::Tensor out, const at::Tensor& self, std::optional<double> eps) {
  auto iter = at::TensorIterator::unary_float_op(out, self);
  c10::ScalarType compute = kernels::compute_type(iter.common_dtype());
  if (eps && *eps >= 0)
    run_pointwise(iter, "unary.cl", "u_logit_eps", compute, scalar_bits(*eps, compute));
  else
    run_pointwise(iter, "unary.cl", "u_logit", compute);
  return iter.output();
}

at::Tensor logit_backward_impl(at::Tensor gi, const at::Tensor& grad, const at::Tensor& self, std::optional<double> eps) {
  if (eps && *eps >= 0) return backward_with(gi, grad, self, "logit_backward", "b_logit_backward_eps", *eps);
  return backward_with(gi, grad, self, "logit_backward", "b_logit_backward");
}

std::tuple<at::Tensor&, at::Tensor&> log_sigmoid_forward_out(const at::Tensor& self, at::Tensor& output,
                                                             at::Tensor& buffer) {
  unary_with(output, self, "log_sigmoid_forward", "u_log_sigmoid", Dtypes::Floating);
  return {output, buffer};  // the buffer is the CPU kernel's scratch; ocl needs none
}
std::tuple<at::Tensor, at::Tensor> log_sigmoid_forward(const at::Tensor& self) {
  return {unary_with({}, self, "log_sigmoid_forward", "u_log_sigmoid", Dtypes::Floating), at::empty({0}, self.options())};
}

at::Tensor log_sigmoid_backward_impl(at::Tensor grad_input, const at::Tensor& grad, const at::Tensor& self,
                                     const at::Tensor& buffer) {
  return backward_with(grad_input, grad, self, "log_sigmoid_backward", "b_log_sigmoid_backward");
}

at::Tensor elu_impl(at::Tensor out, const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                    const c10::Scalar& input_scale) {
  return unary_with(out, self, "elu", "u_elu", Dtypes::Floating, alpha, scale, input_scale);
}
at::Tensor elu_backward_impl(at::Tensor gi, const at::Tensor& grad, const c10::Scalar& alpha, const c10::Scalar& scale,
                             const c10::Scalar& input_scale, bool is_result, const at::Tensor& x) {
  return backward_with(gi, grad, x, "elu_backward", "b_elu_backward", alpha, scale, input_scale,
                       IntArg{is_result ? 1 : 0});
}

// round with decimals: multiply by 10^decimals, round half to even, divide back (as the CPU).
at::Tensor round_decimals_impl(at::Tensor out, const at::Tensor& self, int64_t decimals) {
  auto iter = at::TensorIterator::unary_op(out, self);
  check_dtype("round", iter.common_dtype(), Dtypes::Floating);
  c10::ScalarType compute = kernels::compute_type(iter.common_dtype());
  double ten_pow = std::pow(10.0, static_cast<double>(std::abs(decimals)));
  run_pointwise(iter, "unary.cl", "u_round_decimals", compute, scalar_bits(ten_pow, compute),
                scalar_bits(decimals < 0 ? 1.0 : 0.0, compute));
  return iter.output();
}

// nan_to_num: NaN -> nan (default 0), +inf -> posinf (default: the dtype's max), -inf -> neginf.
at::Tensor nan_to_num_impl(at::Tensor out, const at::Tensor& self, std::optional<double> nan,
                           std::optional<double> posinf, std::optional<double> neginf) {
  if (!c10::isFloatingType(self.scalar_type())) {  // integers have no NaN or inf: a copy
    if (!out.defined()) return self.clone();
    return assign_out(out, self);
  }
  double max = 0, lowest = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "nan_to_num", [&] {
    max = static_cast<double>(std::numeric_limits<scalar_t>::max());
    lowest = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
  });
  return unary_with(out, self, "nan_to_num", "u_nan_to_num", Dtypes::Floating, nan.value_or(0.0),
                    posinf.value_or(max), neginf.value_or(lowest));
}

// clamp with optional scalar bounds; NaN propagates for floating types, as on the CPU.
at::Tensor clamp_impl(at::Tensor out, const at::Tensor& self, const std::optional<c10::Scalar>& lo,
                      const std::optional<c10::Scalar>& hi) {
  TORCH_CHECK(lo || hi, "torch.clamp: At least one of 'min' or 'max' must not be None");
  auto iter = at::TensorIterator::unary_op(out, self);
  c10::ScalarType compute = kernels::compute_type(iter.common_dtype());
  check_dtype("clamp", compute, Dtypes::NotBool);
  bool floating = c10::isFloatingType(compute);
  if (lo && hi)
    run_pointwise(iter, "unary.cl", floating ? "u_clamp_scalar_float" : "u_clamp_scalar", compute,
                  scalar_bits(*lo, compute), scalar_bits(*hi, compute));
  else if (lo)
    run_pointwise(iter, "unary.cl", floating ? "u_clamp_min_scalar_float" : "u_clamp_min_scalar", compute,
                  scalar_bits(*lo, compute));
  else
    run_pointwise(iter, "unary.cl", floating ? "u_clamp_max_scalar_float" : "u_clamp_max_scalar", compute,
                  scalar_bits(*hi, compute));
  return iter.output();
}

at::Tensor clamp_min_impl(at::Tensor out, const at::Tensor& self, const c10::Scalar& lo) {
  return clamp_impl(out, self, lo, std::nullopt);
}
at::Tensor clamp_max_impl(at::Tensor out, const at::Tensor& self, const c10::Scalar& hi) {
  return clamp_impl(out, self, std::nullopt, hi);
}

// glu: the first half of dim gated by the sigmoid of the second.
at::Tensor& glu_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  TORCH_CHECK(self.dim() > 0, "glu does not support scalars because halving size must be even");
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t n = self.size(dim);
  TORCH_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension ", dim, " is size ", n);
  at::Tensor r = self.narrow(dim, 0, n / 2) * self.narrow(dim, n / 2, n / 2).sigmoid();
  return assign_out(out, r);
}
at::Tensor glu(const at::Tensor& self, int64_t dim) {
  at::Tensor out = at::empty({0}, self.options());
  return glu_out(self, dim, out);
}

// d glu / d self: the first half gets the gate, the second the first half times the gate's slope.
at::Tensor& glu_backward_out(const at::Tensor& grad_output, const at::Tensor& self, int64_t dim,
                             at::Tensor& grad_input) {
  TORCH_CHECK(self.dim() > 0, "glu does not support 0-dimensional tensors");
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t n = self.size(dim);
  TORCH_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension ", dim, " is size ", n);
  at::Tensor first = self.narrow(dim, 0, n / 2), gate = self.narrow(dim, n / 2, n / 2).sigmoid();
  at::Tensor grad_first = grad_output * gate;
  at::Tensor grad_second = grad_first * first * (1 - gate);
  return assign_out(grad_input, at::cat({grad_first, grad_second}, dim), {grad_output, self});
}
at::Tensor glu_backward(const at::Tensor& grad_output, const at::Tensor& self, int64_t dim) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return glu_backward_out(grad_output, self, dim, grad_input);
}

// softshrink's lambda must lie in [0, the dtype's largest value], as the CPU checks before the dtype.
void check_shrink_lambda(const at::Tensor& self, const c10::Scalar& lambd) {
  if (!at::isFloatingType(self.scalar_type())) return;  // the kernel's dtype check raises
  double limit = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "softshrink",
                                  [&] { limit = static_cast<double>(std::numeric_limits<scalar_t>::max()); });
  const double value = lambd.to<double>();
  TORCH_CHECK(value >= 0 && value <= limit, "lambda must be in range [0, ", limit, "] for input dtype ",
              self.scalar_type(), ", but found ", value);
}

at::Tensor softshrink_checked_impl(at::Tensor out, const at::Tensor& self, const c10::Scalar& lambd) {
  check_shrink_lambda(self, lambd);
  return softshrink_impl(out, self, lambd);
}

// PReLU from native comparisons and where (weight is already broadcastable to self); the
// gradients keep self's broadcast shape, which autograd sums down to weight's.
at::Tensor prelu_kernel(const at::Tensor& self, const at::Tensor& weight) {
  return at::where(self > 0, self, weight * self);
}

std::tuple<at::Tensor, at::Tensor> prelu_kernel_backward(const at::Tensor& grad, const at::Tensor& self,
                                                         const at::Tensor& weight) {
  at::Tensor positive = self > 0;
  return {at::where(positive, grad, weight * grad), at::where(positive, at::zeros({}, grad.options()), self * grad)};
}

// rrelu: in training each element <= 0 is scaled by a slope drawn from U(lower, upper) on the
// device, which `noise` keeps for the backward (1 elsewhere); in evaluation by the mean slope, as
// leaky_relu (noise untouched), as on the CPU.
at::Tensor& rrelu_with_noise_out(const at::Tensor& self, at::Tensor& noise, const c10::Scalar& lower,
                                 const c10::Scalar& upper, bool training, std::optional<at::Generator> generator,
                                 at::Tensor& out) {
  TORCH_CHECK(self.sizes() == noise.sizes(), "noise tensor shape must match self tensor shape. Got self.shape = ",
              self.sizes(), " noise.shape = ", noise.sizes());
  check_dtype("rrelu_with_noise", self.scalar_type(), Dtypes::Floating);
  if (!training) return at::leaky_relu_out(out, self, (lower.toDouble() + upper.toDouble()) / 2);
  at::native::resize_output(out, self.sizes());
  if (self.numel() == 0) return out;
  at::Tensor slopes = at::empty_like(self).uniform_(lower.toDouble(), upper.toDouble(), std::move(generator));
  noise.copy_(at::where(self <= 0, slopes, at::ones({}, self.options())));
  return out.copy_(self * noise);
}

}  // namespace

// Complex operands take the CPU fallback (ops/variants.h), forward and backward alike.
#define DB_REGISTER_ACTIVATION(m, name) register_variants<&name##_impl>(m, #name, #name "_", #name ".out")
#define DB_REGISTER_BACKWARD(m, name) register_variants<&name##_impl>(m, #name, nullptr, #name ".grad_input")

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  DB_REGISTER_ACTIVATION(m, silu);
  DB_REGISTER_ACTIVATION(m, mish);
  DB_REGISTER_ACTIVATION(m, hardsigmoid);
  DB_REGISTER_ACTIVATION(m, hardswish);
  DB_REGISTER_ACTIVATION(m, leaky_relu);
  DB_REGISTER_ACTIVATION(m, hardtanh);
  DB_REGISTER_ACTIVATION(m, threshold);
  DB_REGISTER_ACTIVATION(m, gelu);
  DB_REGISTER_ACTIVATION(m, logit);
  DB_REGISTER_ACTIVATION(m, clamp);
  DB_REGISTER_ACTIVATION(m, clamp_min);
  DB_REGISTER_ACTIVATION(m, clamp_max);
  DB_REGISTER_ACTIVATION(m, elu);
  DB_REGISTER_ACTIVATION(m, nan_to_num);
  register_variants<&softshrink_checked_impl>(m, "softshrink", nullptr, "softshrink.out");
  register_variants<&hardshrink_impl>(m, "hardshrink", nullptr, "hardshrink.out");
  register_variants<&softplus_impl>(m, "softplus", nullptr, "softplus.out");
  register_variants<&round_decimals_impl>(m, "round.decimals", "round_.decimals", "round.decimals_out");
  register_from_out<&rrelu_with_noise_out>(m, "rrelu_with_noise", "rrelu_with_noise_", "rrelu_with_noise.out");
  DB_REGISTER_BACKWARD(m, threshold_backward);
  DB_REGISTER_BACKWARD(m, sigmoid_backward);
  DB_REGISTER_BACKWARD(m, tanh_backward);
  DB_REGISTER_BACKWARD(m, silu_backward);
  DB_REGISTER_BACKWARD(m, hardsigmoid_backward);
  DB_REGISTER_BACKWARD(m, hardtanh_backward);
  DB_REGISTER_BACKWARD(m, softplus_backward);
  DB_REGISTER_BACKWARD(m, softshrink_backward);
  DB_REGISTER_BACKWARD(m, hardshrink_backward);
  DB_REGISTER_BACKWARD(m, gelu_backward);
  DB_REGISTER_BACKWARD(m, leaky_relu_backward);
  DB_REGISTER_BACKWARD(m, logit_backward);
  DB_REGISTER_BACKWARD(m, log_sigmoid_backward);
  DB_REGISTER_BACKWARD(m, elu_backward);
  register_variants<&hardswish_backward_impl>(m, "hardswish_backward", nullptr, "hardswish_backward.out");
  register_variants<&mish_backward_impl>(m, "mish_backward", nullptr, nullptr);
  m.impl("_prelu_kernel", TORCH_FN(prelu_kernel));
  m.impl("_prelu_kernel_backward", TORCH_FN(prelu_kernel_backward));
  core::register_real_kernel<&log_sigmoid_forward>(m, "log_sigmoid_forward");
  core::register_real_kernel<&log_sigmoid_forward_out>(m, "log_sigmoid_forward.output");
  core::register_real_kernel<&glu>(m, "glu");
  core::register_real_kernel<&glu_out>(m, "glu.out");
  core::register_real_kernel<&glu_backward>(m, "glu_backward");
  core::register_real_kernel<&glu_backward_out>(m, "glu_backward.grad_input");
}

}  // namespace drawbridge::ops
