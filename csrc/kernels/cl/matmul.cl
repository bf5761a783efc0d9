// Matrix products for dtypes CLBlast does not cover (integers, bfloat16, float16 without
// cl_khr_fp16): out[b, i, j] = beta * out + alpha * sum_k a[b, i, k] * b[b, k, j]. The iterator
// covers the output; a is seen with stride 0 along j and b with stride 0 along i.
__kernel void matmul_naive(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), ulong K, ulong a_step, ulong b_step,
                           ulong alpha_bits, ulong beta_bits) {
  ELEMENTWISE_BEGIN
  ct acc = 0;
  for (ulong k = 0; k < K; ++k)
    acc += TO(CT, LOAD(T1, ADDRESS(1) + k * a_step)) * TO(CT, LOAD(T2, ADDRESS(2) + k * b_step));
  ct alpha = bits_to_ct(alpha_bits), beta = bits_to_ct(beta_bits);
  ct prior = beta == 0 ? (ct)0 : beta * TO(CT, LOAD(T0, ADDRESS(0)));
  OUTPUT(prior + alpha * acc);
  ELEMENTWISE_END
}
