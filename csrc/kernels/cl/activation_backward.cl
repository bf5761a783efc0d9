// Backward of elementwise activations: grad_input = f(a, b), a the incoming gradient and b the
// forward's input (or output). Their own program, apart from binary.cl's: PoCL's build of a
// program grows with its kernel count, and the forward ops of a dtype rarely need these.
// Every iteration reads and writes only its own element: vectorized in place too (common.clh).
#undef VECTORIZE_LOOP
#define VECTORIZE_LOOP VECTORIZE_INDEPENDENT_LOOP
#if CT_IS_FLOAT  // the host takes floating dtypes only
BINARY_P(threshold_backward, b <= p ? (ct)0 : a)
BINARY(sigmoid_backward, a * ((ct)1 - b) * b)
BINARY(tanh_backward, a * ((ct)1 - b * b))
BINARY(silu_backward, a * ((ct)1 / ((ct)1 + exp(-b))) * ((ct)1 + b * ((ct)1 - (ct)1 / ((ct)1 + exp(-b)))))
#if CAT(DOUBLE_, CT)
BINARY(gelu_backward, a * ((ct)0.5 * ((ct)1 + erf(b * (ct)M_SQRT1_2)) + b * exp((ct)-0.5 * b * b) * (ct)(M_2_SQRTPI * M_SQRT1_2 * 0.5)))
#else
BINARY(gelu_backward, a * (normal_cdf(b) + b * exp_arith((ct)-0.5 * b * b) * (ct)(M_2_SQRTPI * M_SQRT1_2 * 0.5)))
#endif
inline ct gelu_tanh_grad(ct x) {
  const ct k = (ct)(M_SQRT2 * M_2_SQRTPI * 0.5), c = (ct)0.044715;
  ct inner = k * (x + c * x * x * x);
  ct t = tanh(inner);
  return (ct)0.5 * ((ct)1 + t) + (ct)0.5 * x * ((ct)1 - t * t) * k * ((ct)1 + (ct)3 * c * x * x);
}
BINARY(gelu_tanh_backward, a * gelu_tanh_grad(b))
BINARY(hardsigmoid_backward, (b > (ct)-3 && b < (ct)3) ? a / (ct)6 : (ct)0)
BINARY(hardswish_backward, b < (ct)-3 ? (ct)0 : (b <= (ct)3 ? a * (b / (ct)3 + (ct)0.5) : a))
inline ct mish_grad(ct x) {
  ct sp = x > (ct)20 ? x : log1p(exp(x));
  ct t = tanh(sp);
  ct s = (ct)1 / ((ct)1 + exp(-x));
  return t + x * s * ((ct)1 - t * t);
}
BINARY(mish_backward, a * mish_grad(b))
BINARY_P(leaky_relu_backward, b > 0 ? a : a * p)
BINARY_PQ(hardtanh_backward, (b <= p || b >= q) ? (ct)0 : a)
BINARY_PQ(softplus_backward, b * p > q ? a : a * ((ct)1 - (ct)1 / ((ct)1 + exp(b * p))))
BINARY_P(softshrink_backward, (b >= -p && b <= p) ? (ct)0 : a)
BINARY_P(hardshrink_backward, (b >= -p && b <= p) ? (ct)0 : a)
BINARY_P(logit_backward_eps, (b < p || b > (ct)1 - p) ? (ct)0 : a / (b * ((ct)1 - b)))
BINARY(log_sigmoid_backward, a * ((ct)1 / ((ct)1 + exp(b))))
// elu backward; b is the input, or the output when is_result (then alpha * scale * exp(x * input_scale) = b + alpha * scale).
__kernel void b_elu_backward(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), ulong alpha_bits, ulong scale_bits,
                             ulong input_scale_bits, int is_result) {
  ELEMENTWISE_BEGIN
  ct g = INPUT(1), x = INPUT(2);
  ct alpha = bits_to_ct(alpha_bits), scale = bits_to_ct(scale_bits), input_scale = bits_to_ct(input_scale_bits);
  ct neg = is_result ? g * input_scale * (x + alpha * scale) : g * input_scale * alpha * scale * exp(x * input_scale);
  OUTPUT(x > 0 ? g * scale : neg);
  ELEMENTWISE_END
}
BINARY(logit_backward, (b < 0 || b > 1) ? (ct)NAN : a / (b * ((ct)1 - b)))
#endif
