// Kernels that walk a whole row along one dimension: scans and softmax. The iterator covers
// every position except along that dimension (which it sees with size 1); each work-item then
// walks n elements with the given byte steps. One work-item per row keeps scans exact and
// sequential, as on the CPU.
#define ROW(k, j, step) (ADDRESS(k) + (j) * (step))

#define SCAN(name, init, combine)                                                                     \
  __kernel void name(IterDesc d, OPERAND(0), OPERAND(1), ulong n, ulong out_step, ulong in_step) {      \
    ELEMENTWISE_BEGIN                                                                                \
    ct acc = init;                                                                                   \
    for (ulong j = 0; j < n; ++j) {                                                                  \
      ct x = TO(CT, LOAD(T1, ROW(1, j, in_step)));                                                   \
      acc = j == 0 ? x : (combine);                                                                  \
      STORE(T0, ROW(0, j, out_step), TO(T0, acc));                                                   \
    }                                                                                                \
  }
SCAN(cumsum, (ct)0, acc + x)
SCAN(cumprod, (ct)1, acc * x)
#if CT_IS_FLOAT
inline ct log_add_exp(ct a, ct b) {
  ct m = fmax(a, b);
  if (isinf(m) && a == b) return a + log((ct)2);  // both -inf (or +inf): avoid inf - inf
  return m + log1p(exp(-fabs(a - b)));
}
SCAN(logcumsumexp, (ct)0, (isnan(acc) || isnan(x)) ? acc + x : log_add_exp(acc, x))

// softmax (log_softmax when log != 0) along the row.
__kernel void softmax(IterDesc d, OPERAND(0), OPERAND(1), ulong n, ulong out_step, ulong in_step, int log_) {
  ELEMENTWISE_BEGIN
  ct m = -INFINITY;
  for (ulong j = 0; j < n; ++j) m = fmax(m, TO(CT, LOAD(T1, ROW(1, j, in_step))));
  ct sum = 0;
  for (ulong j = 0; j < n; ++j) sum += exp(TO(CT, LOAD(T1, ROW(1, j, in_step))) - m);
  ct log_sum = log(sum);
  for (ulong j = 0; j < n; ++j) {
    ct x = TO(CT, LOAD(T1, ROW(1, j, in_step))) - m;
    STORE(T0, ROW(0, j, out_step), TO(T0, log_ ? x - log_sum : exp(x) / sum));
  }
}


// Backward: operand 1 is grad_output, operand 2 the forward output.
__kernel void softmax_backward(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), ulong n, ulong gi_step,
                               ulong grad_step, ulong out_step, int log_) {
  ELEMENTWISE_BEGIN
  ct dot = 0;
  for (ulong j = 0; j < n; ++j) {
    ct g = TO(CT, LOAD(T1, ROW(1, j, grad_step)));
    dot += log_ ? g : g * TO(CT, LOAD(T2, ROW(2, j, out_step)));
  }
  for (ulong j = 0; j < n; ++j) {
    ct g = TO(CT, LOAD(T1, ROW(1, j, grad_step)));
    ct y = TO(CT, LOAD(T2, ROW(2, j, out_step)));
    STORE(T0, ROW(0, j, gi_step), TO(T0, log_ ? g - exp(y) * dot : y * (g - dot)));
  }
}
#endif
