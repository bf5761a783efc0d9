// softmax / log_softmax, attention's probabilities, layer norm and batch norm, and their backward, over rows
// of n contiguous elements: a contiguous tensor's last dim, the common case (cl/row.cl has the general form, one work-item walking each
// strided row). Work-group dim 1 numbers rows and dim 0 the lanes of a row, which stride along it
// and combine through local memory (GPUs). CPU devices get one lane (ONE_LANE): its unit-stride
// loops are what the compiler vectorizes, so their sums may be reassociated.
#if CT_IS_FLOAT
#ifndef ONE_LANE
#define ONE_LANE 0
#endif
#define ROWS_MAX_GROUP 256  // lanes x rows of a work-group, at most
#define AT(base, t, j) ((base) + (j) * sizeof(ST(t)))

#if ONE_LANE
#define ROW_LANES const ulong lane = 0, lanes = 1;
#define ROW_FOR(j) for (ulong j = 0; j < n; ++j)
#define REASSOCIATE _Pragma("clang fp reassociate(on)")
#define ROW_MAX(v) (v)
#define ROW_SUM(v) (v)
#else
#define ROW_LANES                                                \
  const ulong lane = get_local_id(0), lanes = get_local_size(0); \
  __local ct scratch[ROWS_MAX_GROUP];
#define ROW_FOR(j) for (ulong j = lane; j < n; j += lanes)
#define REASSOCIATE
#define ROW_MAX(v) combine_row(scratch, v, 1)
#define ROW_SUM(v) combine_row(scratch, v, 0)
#define ROW_STEP(s)                  \
  barrier(CLK_LOCAL_MEM_FENCE);      \
  if ((s) < lanes && lane < (s))     \
    scratch[slot] = is_max ? fmax(scratch[slot], scratch[slot + (s)]) : scratch[slot] + scratch[slot + (s)];
// The max (is_max) or the sum of v over the lanes of each row, returned to every lane. Every
// work-item of the group reaches it; unrolled, because PoCL repeats code after a loop around
// barriers.
inline ct combine_row(__local ct* scratch, ct v, int is_max) {
  const uint lane = get_local_id(0), lanes = get_local_size(0), first = get_local_id(1) * lanes;
  const uint slot = first + lane;
  barrier(CLK_LOCAL_MEM_FENCE);  // the previous combine's readers are done with scratch
  scratch[slot] = v;
  ROW_STEP(128) ROW_STEP(64) ROW_STEP(32) ROW_STEP(16) ROW_STEP(8) ROW_STEP(4) ROW_STEP(2) ROW_STEP(1)
  barrier(CLK_LOCAL_MEM_FENCE);
  return scratch[first];
}
#endif

// The row of work-group row get_global_id(1). Rows past the last (the launch rounds rows up to
// whole work-groups) recompute the last row, so that every lane reaches every barrier, and store
// nothing.
#define ROW_START(name, t, base, off) \
  __global char* name = (__global char*)(base) + (off) + min((ulong)get_global_id(1), rows - 1) * n * sizeof(ST(t))

// m = max(m, every element of row `in`). One lane: LLVM vectorizes no max reduction without
// no-NaN flags (a row of 4096 floats took 4 ns per element), so 16 running maxima, unrolled, make
// one vector of them (0.1 ns per element).
#if ONE_LANE
#define ROW_MAX_LOOP(in)                                                                              \
  {                                                                                                   \
    ct part[16];                                                                                      \
    _Pragma("unroll") for (int i = 0; i < 16; ++i) part[i] = -INFINITY;                               \
    ulong j = 0;                                                                                      \
    for (; j + 16 <= n; j += 16) {                                                                    \
      _Pragma("unroll") for (int i = 0; i < 16; ++i) part[i] = fmax(part[i], TO(CT, LOAD(T1, AT(in, T1, j + i)))); \
    }                                                                                                 \
    for (; j < n; ++j) m = fmax(m, TO(CT, LOAD(T1, AT(in, T1, j))));                                  \
    _Pragma("unroll") for (int i = 0; i < 16; ++i) m = fmax(m, part[i]);                              \
  }
#else
#define ROW_MAX_LOOP(in) \
  ROW_FOR(j) m = fmax(m, TO(CT, LOAD(T1, AT(in, T1, j))));
#endif

// m, the largest element of row `in` (operand T1), and sum, the sum of exp(x - m) over the row,
// into ct variables the caller declares.
#define ROW_MAX_AND_EXP_SUM(in)                           \
  m = -INFINITY;                                          \
  ROW_MAX_LOOP(in)                                        \
  m = ROW_MAX(m);                                         \
  sum = 0;                                                \
  ROW_FOR(j) {                                            \
    REASSOCIATE                                           \
    sum += exp_arith(TO(CT, LOAD(T1, AT(in, T1, j))) - m); \
  }                                                       \
  sum = ROW_SUM(sum);

__kernel void softmax_rows(__global char* out_base, ulong out_off, __global const char* in_base, ulong in_off,
                           ulong n, ulong rows, int log_) {
  ROW_LANES
  const bool valid = get_global_id(1) < rows;
  ROW_START(out, T0, out_base, out_off);
  ROW_START(in, T1, in_base, in_off);
  ct m, sum;
  ROW_MAX_AND_EXP_SUM(in)
  const ct log_sum = log(sum), inverse = (ct)1 / sum;
  if (!valid) return;
  ROW_FOR(j) {
    const ct x = TO(CT, LOAD(T1, AT(in, T1, j))) - m;
    STORE(T0, AT(out, T0, j), TO(T0, log_ ? x - log_sum : exp_arith(x) * inverse));
  }
}

// Attention's probabilities (ops/attention.cpp): softmax_rows, except that a row without a finite
// score (it attends to nothing) gets zeros, as PyTorch's _safe_softmax gives, and that each row's
// logsumexp goes to lse (float, one per row; +inf for such a row, so exp(score - lse) is 0 there)
// when want_lse is set. The rows are blocks of block_rows query rows (one per batch and head): the
// logsumexps of block b start lse_block_stride floats after those of block b - 1. With
// causal_keys > 0, row i of a block sees its first causal_keys + i keys: the others are masked
// (probability 0).
__kernel void attention_softmax_rows(__global char* out_base, ulong out_off, __global const char* in_base,
                                     ulong in_off, ulong n, ulong rows, __global float* lse, ulong lse_index,
                                     ulong lse_block_stride, int want_lse, ulong causal_keys, ulong block_rows) {
  ROW_LANES
  const bool valid = get_global_id(1) < rows;
  ROW_START(out, T0, out_base, out_off);
  ROW_START(in, T1, in_base, in_off);
  const ulong row = min((ulong)get_global_id(1), rows - 1);
  const ulong seen = causal_keys ? min(n, causal_keys + row % block_rows) : n;
  ct m, sum;
  {
    const ulong n = seen;  // the loops of ROW_MAX_AND_EXP_SUM walk the keys the row sees
    ROW_MAX_AND_EXP_SUM(in)
  }
  const bool attends = m != -INFINITY;
  const ct inverse = (ct)1 / sum;
  if (!valid) return;
  if (want_lse && lane == 0)
    lse[lse_index + row / block_rows * lse_block_stride + row % block_rows] = attends ? (float)(m + log(sum)) : INFINITY;
  // In place: each j is read, then written. Said, so that the aliasing does not keep it scalar.
  _Pragma("clang loop vectorize(assume_safety)") ROW_FOR(j) {
    const ct p = exp_arith(TO(CT, LOAD(T1, AT(in, T1, j))) - m) * inverse;
    STORE(T0, AT(out, T0, j), TO(T0, attends && j < seen ? p : (ct)0));  // exp(-inf - -inf) is NaN
  }
}

// Operand grad is grad_output, out the forward's output.
__kernel void softmax_backward_rows(__global char* gi_base, ulong gi_off, __global const char* grad_base,
                                    ulong grad_off, __global const char* out_base, ulong out_off, ulong n,
                                    ulong rows, int log_) {
  ROW_LANES
  const bool valid = get_global_id(1) < rows;
  ROW_START(gi, T0, gi_base, gi_off);
  ROW_START(grad, T1, grad_base, grad_off);
  ROW_START(out, T2, out_base, out_off);
  ct dot = 0;
  ROW_FOR(j) {
    REASSOCIATE
    const ct g = TO(CT, LOAD(T1, AT(grad, T1, j)));
    dot += log_ ? g : g * TO(CT, LOAD(T2, AT(out, T2, j)));
  }
  dot = ROW_SUM(dot);
  if (!valid) return;
  // gi may be grad (attention's backward runs it in place): each j is read, then written.
  _Pragma("clang loop vectorize(assume_safety)") ROW_FOR(j) {
    const ct g = TO(CT, LOAD(T1, AT(grad, T1, j)));
    const ct y = TO(CT, LOAD(T2, AT(out, T2, j)));
    STORE(T0, AT(gi, T0, j), TO(T0, log_ ? g - exp_arith(y) * dot : y * (g - dot)));
  }
}
// Layer norm of each row (ops/normalization.cpp): out = (x - mean) * rstd * weight + bias, with the
// biased variance from a second pass over the row (the row is in cache; no cancellation as in
// E[x^2] - mean^2). mean and rstd go to mean[mean_index + row] and rstd[rstd_index + row].
// affine: 1 with weight, 2 with bias, operands of the input's type (T1).
__kernel void layer_norm_rows(__global char* out_base, ulong out_off, __global const char* in_base, ulong in_off,
                              ulong n, ulong rows, __global float* mean_out, ulong mean_index,
                              __global float* rstd_out, ulong rstd_index, __global const char* weight_base, ulong weight_off, __global const char* bias_base,
                              ulong bias_off, int affine, float eps) {
  ROW_LANES
  const bool valid = get_global_id(1) < rows;
  const ulong row = min((ulong)get_global_id(1), rows - 1);
  ROW_START(out, T0, out_base, out_off);
  ROW_START(in, T1, in_base, in_off);
  __global const char* weight = (__global const char*)weight_base + weight_off;
  __global const char* bias = (__global const char*)bias_base + bias_off;
  ct sum = 0;
  ROW_FOR(j) {
    REASSOCIATE
    sum += TO(CT, LOAD(T1, AT(in, T1, j)));
  }
  const ct mean = ROW_SUM(sum) / (ct)n;
  ct squares = 0;
  ROW_FOR(j) {
    REASSOCIATE
    const ct d = TO(CT, LOAD(T1, AT(in, T1, j))) - mean;
    squares += d * d;
  }
  const ct rstd = rsqrt(ROW_SUM(squares) / (ct)n + (ct)eps);
  if (!valid) return;
  if (lane == 0) {
    mean_out[mean_index + row] = (float)mean;
    rstd_out[rstd_index + row] = (float)rstd;
  }
  ROW_FOR(j) {
    ct y = (TO(CT, LOAD(T1, AT(in, T1, j))) - mean) * rstd;
    if (affine & 1) y *= TO(CT, LOAD(T1, AT(weight, T1, j)));
    if (affine & 2) y += TO(CT, LOAD(T1, AT(bias, T1, j)));
    STORE(T0, AT(out, T0, j), TO(T0, y));
  }
}

// The input's gradient of layer_norm_rows: with xhat = (x - mean) * rstd and gw = grad * weight,
// gi = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)) over each row. Operands: gi (T0), grad (T1),
// the input (T2); mean and rstd as layer_norm_rows wrote them, weight of the input's type.
__kernel void layer_norm_backward_rows(__global char* gi_base, ulong gi_off, __global const char* grad_base,
                                       ulong grad_off, __global const char* in_base, ulong in_off, ulong n, ulong rows,
                                       __global const float* mean_in, ulong mean_index,
                                       __global const float* rstd_in, ulong rstd_index,
                                       __global const char* weight_base, ulong weight_off, int has_weight) {
  ROW_LANES
  const bool valid = get_global_id(1) < rows;
  const ulong row = min((ulong)get_global_id(1), rows - 1);
  ROW_START(gi, T0, gi_base, gi_off);
  ROW_START(grad, T1, grad_base, grad_off);
  ROW_START(in, T2, in_base, in_off);
  __global const char* weight = (__global const char*)weight_base + weight_off;
  const ct mean = mean_in[mean_index + row], rstd = rstd_in[rstd_index + row];
  ct sum_gw = 0, sum_gw_xhat = 0;
  ROW_FOR(j) {
    REASSOCIATE
    ct gw = TO(CT, LOAD(T1, AT(grad, T1, j)));
    if (has_weight) gw *= TO(CT, LOAD(T2, AT(weight, T2, j)));
    sum_gw += gw;
    sum_gw_xhat += gw * ((TO(CT, LOAD(T2, AT(in, T2, j))) - mean) * rstd);
  }
  const ct mean_gw = ROW_SUM(sum_gw) / (ct)n, mean_gw_xhat = ROW_SUM(sum_gw_xhat) / (ct)n;
  if (!valid) return;
  ROW_FOR(j) {
    ct gw = TO(CT, LOAD(T1, AT(grad, T1, j)));
    if (has_weight) gw *= TO(CT, LOAD(T2, AT(weight, T2, j)));
    const ct xhat = (TO(CT, LOAD(T2, AT(in, T2, j))) - mean) * rstd;
    STORE(T0, AT(gi, T0, j), TO(T0, rstd * (gw - mean_gw - xhat * mean_gw_xhat)));
  }
}

// batch_norm over the channels of a contiguous (N, C, spatial...) tensor: channel c's elements are
// `segments` runs of n (the spatial size), rows * n apart, and work-group dim 1 numbers channels.
// e is an element's offset from its channel's first one. GPUs' lanes stride over the channel's
// elements counted flat; one lane walks each run in a loop the compiler vectorizes.
#define CHANNEL_START(name, t, base, off) \
  __global char* name = (__global char*)(base) + (off) + min((ulong)get_global_id(1), rows - 1) * n * sizeof(ST(t))
#if ONE_LANE
#define CHANNEL_FOR(e) \
  for (ulong s_ = 0; s_ < segments; ++s_) for (ulong e = s_ * rows * n, end_ = e + n; e < end_; ++e)
#else
#define CHANNEL_FOR(e)                                                                     \
  for (ulong i_ = lane, e = i_ / n * rows * n + i_ % n; i_ < segments * n; i_ += lanes, \
             e = i_ / n * rows * n + i_ % n)
#endif

// Batch norm: in training (given_stats == 0) each channel's mean and biased variance (two passes,
// so the squares do not cancel) into mean_out and var_out, invstd = rsqrt(var + eps) into
// invstd_out; in evaluation mean_out and var_out hold the running statistics to use and nothing
// is written there. Then out = (x - mean) * invstd * weight + bias.
__kernel void batch_norm_channels(__global char* out_base, ulong out_off, __global const char* in_base, ulong in_off,
                                  ulong n, ulong rows, ulong segments, __global float* mean_out, ulong mean_index,
                                  __global float* var_out, ulong var_index, __global float* invstd_out,
                                  ulong invstd_index,
                                  __global const char* weight_base, ulong weight_off,
                                  __global const char* bias_base, ulong bias_off, int affine, float eps,
                                  int given_stats) {
  ROW_LANES
  const bool valid = get_global_id(1) < rows;
  const ulong c = min((ulong)get_global_id(1), rows - 1);
  CHANNEL_START(out, T0, out_base, out_off);
  CHANNEL_START(in, T1, in_base, in_off);
  ct mean, var;
  if (given_stats) {  // the same for the whole launch: every lane reaches the same barriers
    mean = mean_out[mean_index + c];
    var = var_out[var_index + c];
  } else {
    const ct count = (ct)(segments * n);
    ct sum = 0;
    CHANNEL_FOR(e) {
      REASSOCIATE
      sum += TO(CT, LOAD(T1, AT(in, T1, e)));
    }
    mean = ROW_SUM(sum) / count;
    ct squares = 0;
    CHANNEL_FOR(e) {
      REASSOCIATE
      const ct d = TO(CT, LOAD(T1, AT(in, T1, e))) - mean;
      squares += d * d;
    }
    var = ROW_SUM(squares) / count;
  }
  const ct invstd = rsqrt(var + (ct)eps);
  if (!valid) return;
  if (lane == 0 && !given_stats) {
    mean_out[mean_index + c] = (float)mean;
    var_out[var_index + c] = (float)var;
    invstd_out[invstd_index + c] = (float)invstd;
  }
  const ct scale = (affine & 1) ? invstd * TO(CT, LOAD(T1, AT((__global const char*)weight_base + weight_off, T1, c)))
                                : invstd;
  const ct shift = (affine & 2) ? TO(CT, LOAD(T1, AT((__global const char*)bias_base + bias_off, T1, c))) : (ct)0;
  CHANNEL_FOR(e) {
    STORE(T0, AT(out, T0, e), TO(T0, (TO(CT, LOAD(T1, AT(in, T1, e))) - mean) * scale + shift));
  }
}

// Its gradients from the saved mean and invstd: grad_bias = sum(g), grad_weight = sum(g * xhat)
// (float32, one per channel) and, with input_grad, gi = (g - mean(g) - xhat * mean(g * xhat)) *
// invstd * weight. Operands: gi (T0), grad (T1), the input (T2); weight of the input's type.
__kernel void batch_norm_backward_channels(__global char* gi_base, ulong gi_off, __global const char* grad_base,
                                           ulong grad_off, __global const char* in_base, ulong in_off, ulong n,
                                           ulong rows, ulong segments, __global const float* mean_in,
                                           ulong mean_index, __global const float* invstd_in, ulong invstd_index,
                                           __global const char* weight_base, ulong weight_off, int has_weight,
                                           __global float* grad_weight, ulong grad_weight_index,
                                           __global float* grad_bias, ulong grad_bias_index, int input_grad) {
  ROW_LANES
  const bool valid = get_global_id(1) < rows;
  const ulong c = min((ulong)get_global_id(1), rows - 1);
  CHANNEL_START(gi, T0, gi_base, gi_off);
  CHANNEL_START(grad, T1, grad_base, grad_off);
  CHANNEL_START(in, T2, in_base, in_off);
  const ct mean = mean_in[mean_index + c], invstd = invstd_in[invstd_index + c];
  ct sum_g = 0, sum_g_centered = 0;
  CHANNEL_FOR(e) {
    REASSOCIATE
    const ct g = TO(CT, LOAD(T1, AT(grad, T1, e)));
    sum_g += g;
    sum_g_centered += g * (TO(CT, LOAD(T2, AT(in, T2, e))) - mean);
  }
  sum_g = ROW_SUM(sum_g);
  sum_g_centered = ROW_SUM(sum_g_centered);
  if (!valid) return;
  if (lane == 0) {
    grad_bias[grad_bias_index + c] = (float)sum_g;
    grad_weight[grad_weight_index + c] = (float)(sum_g_centered * invstd);
  }
  if (!input_grad) return;
  const ct count = (ct)(segments * n), mean_g = sum_g / count;
  const ct projection = sum_g_centered / count * invstd * invstd;  // mean(g * xhat) / invstd
  const ct scale =
      has_weight ? invstd * TO(CT, LOAD(T2, AT((__global const char*)weight_base + weight_off, T2, c))) : invstd;
  CHANNEL_FOR(e) {
    const ct g = TO(CT, LOAD(T1, AT(grad, T1, e)));
    const ct centered = TO(CT, LOAD(T2, AT(in, T2, e))) - mean;
    STORE(T0, AT(gi, T0, e), TO(T0, (g - mean_g - centered * projection) * scale));
  }
}

#endif
