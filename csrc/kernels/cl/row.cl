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
    ELEMENTWISE_END                                                                                  \
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
  for (ulong j = 0; j < n; ++j) sum += exp_arith(TO(CT, LOAD(T1, ROW(1, j, in_step))) - m);
  ct log_sum = log(sum);
  for (ulong j = 0; j < n; ++j) {
    ct x = TO(CT, LOAD(T1, ROW(1, j, in_step))) - m;
    STORE(T0, ROW(0, j, out_step), TO(T0, log_ ? x - log_sum : exp_arith(x) / sum));
  }
  ELEMENTWISE_END
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
    STORE(T0, ROW(0, j, gi_step), TO(T0, log_ ? g - exp_arith(y) * dot : y * (g - dot)));
  }
  ELEMENTWISE_END
}
#endif

// cummax / cummin: values (operand 0) and the index where each was found (operand 1). Ties and
// NaNs move the index to the later element, and a NaN, once met, stays, as on the CPU.
#if CT_IS_FLOAT
#define SCAN_NAN(x) isnan(x)
#else
#define SCAN_NAN(x) 0
#endif
#define SCAN_WITH_INDEX(name, better)                                                                   \
  __kernel void name(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), ulong n, ulong values_step,           \
                     ulong indices_step, ulong in_step) {                                               \
    ELEMENTWISE_BEGIN                                                                                   \
    ct best = 0;                                                                                        \
    long at = 0;                                                                                        \
    for (ulong j = 0; j < n; ++j) {                                                                     \
      ct x = TO(CT, LOAD(T2, ROW(2, j, in_step)));                                                      \
      if (j == 0 || SCAN_NAN(x) || (!SCAN_NAN(best) && x better best)) {                              \
        best = x;                                                                                       \
        at = (long)j;                                                                                   \
      }                                                                                                 \
      STORE(T0, ROW(0, j, values_step), TO(T0, best));                                                  \
      *(__global long*)ROW(1, j, indices_step) = at;                                                    \
    }                                                                                                   \
    ELEMENTWISE_END                                                                                     \
  }
SCAN_WITH_INDEX(cummax, >=)
SCAN_WITH_INDEX(cummin, <=)

// mode over a row already sorted (stable) with its original positions: the most frequent value
// (the smallest of equally frequent ones) and the last position it held, as the CPU reports.
__kernel void mode(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), OPERAND(3), ulong n, ulong values_step,
                   ulong indices_step, ulong sorted_step, ulong positions_step) {
  ELEMENTWISE_BEGIN
  ct best = 0, run_value = 0;
  long best_count = 0, run = 0, best_at = 0;
  for (ulong j = 0; j < n; ++j) {
    ct x = TO(CT, LOAD(T2, ROW(2, j, sorted_step)));
    run = (j > 0 && x == run_value) ? run + 1 : 1;
    run_value = x;
    if (run > best_count) {
      best_count = run;
      best = x;
    }
    if (x == best && run == best_count) best_at = *(__global const long*)ROW(3, j, positions_step);
  }
  STORE(T0, ADDRESS(0), TO(T0, best));
  *(__global long*)ADDRESS(1) = best_at;
  ELEMENTWISE_END
}
