// Unary elementwise ops: out = f(in); kernel u_<name> (the prefix keeps names clear of builtins). Float-only ops are compiled when the compute type is
// floating point; the host promotes integer inputs to float for them, as PyTorch does.
// Every iteration reads and writes only its own element: vectorized in place too (common.clh).
#undef VECTORIZE_LOOP
#define VECTORIZE_LOOP VECTORIZE_INDEPENDENT_LOOP
UNARY(neg, -a)
UNARY(sign, (ct)((a > 0) - (a < 0)))
UNARY(bitwise_not_bool, !a)
UNARY(logical_not, !a)
UNARY(isposinf, 0)
UNARY(isnan, 0)
UNARY(isneginf, 0)
inline ct clamp_ordered(ct a, ct lo, ct hi) {  // max(a, lo), then min(., hi), as the CPU
  ct t = a < lo ? lo : a;
  return t > hi ? hi : t;
}
UNARY_PQ(clamp_scalar, clamp_ordered(a, p, q))
UNARY_P(clamp_min_scalar, a < p ? p : a)
UNARY_P(clamp_max_scalar, a > p ? p : a)

#if CT_IS_FLOAT
UNARY(abs, fabs(a))
UNARY(sqrt, sqrt(a))
UNARY(rsqrt, rsqrt(a))
UNARY(exp, exp(a))
UNARY(exp2, exp2(a))
UNARY(expm1, expm1(a))
UNARY(log, log(a))
UNARY(log2, log2(a))
UNARY(log10, log10(a))
UNARY(log1p, log1p(a))
UNARY(sin, sin(a))
UNARY(cos, cos(a))
UNARY(tan, tan(a))
UNARY(asin, asin(a))
UNARY(acos, acos(a))
UNARY(atan, atan(a))
UNARY(sinh, sinh(a))
UNARY(cosh, cosh(a))
UNARY(tanh, tanh(a))
UNARY(asinh, asinh(a))
UNARY(acosh, acosh(a))
UNARY(atanh, atanh(a))
#if CAT(DOUBLE_, CT)
UNARY(erf, erf(a))
UNARY(erfc, erfc(a))
#else
UNARY(erf, erf_arith(a))  // the library's erf is a call per element: 20x slower on CPU devices
UNARY(erfc, erfc_arith(a))
#endif
UNARY(lgamma, lgamma(a))
UNARY(sigmoid, (ct)1 / ((ct)1 + exp_arith(-a)))
UNARY(reciprocal, (ct)1 / a)
UNARY(floor, floor(a))
UNARY(ceil, ceil(a))
UNARY(round, rint(a))
UNARY(trunc, trunc(a))
UNARY(frac, a - trunc(a))
UNARY(sign_float, isnan(a) ? (ct)0 : (ct)((a > 0) - (a < 0)))
UNARY(signbit, signbit(a))
UNARY(isposinf_float, isinf(a) && a > 0)
UNARY(isnan_float, isnan(a))
// nan_to_num: p replaces NaN, q +inf and r -inf.
__kernel void u_nan_to_num(IterDesc d, OPERAND(0), OPERAND(1), ulong p_bits, ulong q_bits, ulong r_bits) {
  ELEMENTWISE_BEGIN
  ct a = INPUT(1);
  OUTPUT(isnan(a) ? bits_to_ct(p_bits) : isinf(a) ? (a > 0 ? bits_to_ct(q_bits) : bits_to_ct(r_bits)) : a);
  ELEMENTWISE_END
}
UNARY(isneginf_float, isinf(a) && a < 0)
// frexp: operand 0 is the mantissa, 1 the exponent (int32), 2 the input. Infinities and NaN
// keep exponent 0, as on the CPU (C leaves it unspecified).
__kernel void u_frexp(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2)) {
  ELEMENTWISE_BEGIN
  const ct a = INPUT(2);
  int exponent = 0;
  const ct mantissa = isfinite(a) ? frexp(a, &exponent) : a;
  OUTPUT(mantissa);
  STORE(T1, ADDRESS(1), TO(T1, isfinite(a) ? exponent : 0));
  ELEMENTWISE_END
}
UNARY(relu, isnan(a) ? a : (a > 0 ? a : (ct)0))
UNARY(silu, a / ((ct)1 + exp_arith(-a)))
UNARY(mish, a * tanh(a > (ct)20 ? a : log1p(exp(a))))
#if CAT(DOUBLE_, CT)
UNARY(gelu, (ct)0.5 * a * ((ct)1 + erf(a * (ct)M_SQRT1_2)))
#else
UNARY(gelu, a * normal_cdf(a))  // vectorizable; the float64 kernel keeps the library's erf
#endif
UNARY(gelu_tanh, (ct)0.5 * a * ((ct)1 + tanh((ct)(M_SQRT2 * M_2_SQRTPI * 0.5) * (a + (ct)0.044715 * a * a * a))))
UNARY(hardsigmoid, fmin(fmax(a + (ct)3, (ct)0), (ct)6) / (ct)6)
UNARY(hardswish, a * fmin(fmax(a + (ct)3, (ct)0), (ct)6) / (ct)6)
UNARY_P(leaky_relu, a > 0 ? a : a * p)
UNARY_P(logit_eps, log(fmin(fmax(a, p), (ct)1 - p) / ((ct)1 - fmin(fmax(a, p), (ct)1 - p))))
UNARY(logit, log(a / ((ct)1 - a)))
UNARY_P(softshrink, a > p ? a - p : (a < -p ? a + p : (ct)0))
UNARY_P(hardshrink, (a >= -p && a <= p) ? (ct)0 : a)
UNARY_PQ(softplus, a * p > q ? a : log1p(exp(a * p)) / p)
UNARY_PQ(clamp_scalar_float, isnan(a) ? a : fmin(fmax(a, p), q))
UNARY_P(clamp_min_scalar_float, isnan(a) ? a : fmax(a, p))
UNARY_P(clamp_max_scalar_float, isnan(a) ? a : fmin(a, p))
UNARY_PQ(hardtanh, a <= p ? p : (a >= q ? q : a))
UNARY_PQ(threshold, a <= p ? q : a)
UNARY(log_sigmoid, fmin(a, (ct)0) - log1p(exp(-fabs(a))))
// round(a, decimals): p = 10^|decimals|, q > 0 when decimals are negative.
UNARY_PQ(round_decimals, q > 0 ? rint(a / p) * p : rint(a * p) / p)
// elu: p = alpha * scale... passed as alpha, scale, input_scale through three kernel args.
__kernel void u_elu(IterDesc d, OPERAND(0), OPERAND(1), ulong alpha_bits, ulong scale_bits, ulong input_scale_bits) {
  ELEMENTWISE_BEGIN
  ct a = INPUT(1);
  ct alpha = bits_to_ct(alpha_bits), scale = bits_to_ct(scale_bits), input_scale = bits_to_ct(input_scale_bits);
  OUTPUT(a > 0 ? a * scale : expm1(a * input_scale) * alpha * scale);
  ELEMENTWISE_END
}
#else
UNARY(abs, a < 0 ? -a : a)
UNARY(floor, a)
UNARY(ceil, a)
UNARY(round, a)
UNARY(trunc, a)
UNARY(bitwise_not, ~a)
UNARY(signbit, a < 0)
UNARY(relu, a > 0 ? a : (ct)0)
UNARY_PQ(hardtanh, a <= p ? p : (a >= q ? q : a))
UNARY_PQ(threshold, a <= p ? q : a)
#endif
