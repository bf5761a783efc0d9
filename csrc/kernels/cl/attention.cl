// Fused scaled-dot-product attention, forward and backward, without the L x S score matrix.
// Options: T (q/k/v/bias dtype token), HEAD_DIM, VALUE_DIM, CAUSAL (key j visible to query i iff
// j <= i, top-left aligned as PyTorch's math path), BIAS (an additive float bias, broadcast
// through zero strides), GRAD_SCORES (the backward also writes d scores, for the bias's gradient),
// DELTA_FROM_SCORES (see the backward).
//
// Element strides are given per (batch, head, row, column). Every kernel computes a score as
// (q * scale) . k + bias in the same order, so that the backward's probabilities exp(s - lse)
// are the forward's: a row that attends to a single key gets exactly 1 there, and exactly zero
// gradients, as the CPU's math path does.
typedef struct {
  long heads, q_len, kv_len;
  long q_stride[4], k_stride[4], v_stride[4], bias_stride[4], out_stride[4], grad_out_stride[4];
} AttentionDesc;

#define ELEMENT(base, i) TO_f32(LOAD(T, (base) + (i) * sizeof(ST(T))))
#define ROW_AT(tensor, b, h, r) ((b) * d.tensor##_stride[0] + (h) * d.tensor##_stride[1] + (r) * d.tensor##_stride[2])
// Rows of q, k, v are walked in pieces: with VECTOR_ROWS (dense rows of a floating type, dims
// that are multiples of 8) a piece is eight elements loaded at once as a float8; otherwise one
// element at its stride.
#ifdef VECTOR_ROWS
#define WIDTH 8
typedef float8 piece;
inline float8 load8_f32(long c, __global const char* p) { return vload8(c, (__global const float*)p); }
inline float8 load8_f16(long c, __global const char* p) { return vload_half8(c, (__global const half*)p); }
inline float8 load8_bf16(long c, __global const char* p) {
  return as_float8(convert_uint8(vload8(c, (__global const ushort*)p)) << 16);
}
inline void store8_f32(float8 x, long c, __global char* p) { vstore8(x, c, (__global float*)p); }
inline void store8_f16(float8 x, long c, __global char* p) { vstore_half8_rte(x, c, (__global half*)p); }
inline void store8_bf16(float8 x, long c, __global char* p) {
  float v[8];
  vstore8(x, 0, v);
  for (int e = 0; e < 8; ++e) STORE_bf16(p + (c * 8 + e) * sizeof(ushort), v[e]);
}
#define PIECE(tensor, at, c) CAT(load8_, T)((c), tensor + (at) * sizeof(ST(T)))
#define PIECE_SUM(x) (dot((x).lo, (float4)(1.0f)) + dot((x).hi, (float4)(1.0f)))
#define STORE_ROW(dst, pieces, n, factor) \
  for (int c = 0; c < (n) / WIDTH; ++c) CAT(store8_, T)((pieces)[c] * (factor), c, (dst))
#else
#define WIDTH 1
typedef float piece;
#define PIECE(tensor, at, c) ELEMENT(tensor, (at) + (c) * d.tensor##_stride[3])
#define PIECE_SUM(x) (x)
#define STORE_ROW(dst, pieces, n, factor) \
  for (int c = 0; c < (n); ++c) STORE(T, (dst) + c * sizeof(ST(T)), (pieces)[c] * (factor))
#endif
#define LOAD_ROW(pieces, tensor, at, n, factor) \
  for (int c = 0; c < (n) / WIDTH; ++c) (pieces)[c] = PIECE(tensor, at, c) * (factor)

#ifdef BIAS
#define ADD_BIAS(s, b, h, i, j) \
  s += ELEMENT(bias, (b) * d.bias_stride[0] + (h) * d.bias_stride[1] + (i) * d.bias_stride[2] + (j) * d.bias_stride[3])
#else
#define ADD_BIAS(s, b, h, i, j)
#endif

#define KEY_BLOCK 16

// (batch, head, query row) of a row index over batch * heads * q_len, and the keys it sees.
#define QUERY_ROW(row)                                                                 \
  const long i = (row) % d.q_len, bh = (row) / d.q_len, h = bh % d.heads, b = bh / d.heads
#ifdef CAUSAL
#define KEYS_OF(i) min(d.kv_len, (i) + 1)
#else
#define KEYS_OF(i) d.kv_len
#endif

// The score s of query row i (its pieces in `query`, scaled) and key row j, as every kernel
// computes it; kj is where key row j starts.
#define KEY_SCORE(j)                                                                    \
  const long kj = k_at + (j) * d.k_stride[2];                                           \
  piece score_dots = 0.0f;                                                              \
  for (int c = 0; c < HEAD_DIM / WIDTH; ++c) score_dots += query[c] * PIECE(k, kj, c); \
  float s = PIECE_SUM(score_dots);                                                      \
  ADD_BIAS(s, b, h, i, j)

// One work-item per query row walks the key rows once with an online softmax (running maximum
// m, running sum l, an accumulator rescaled once per block of keys). Operands (buffer, byte offset): the output (batch,
// head, row, VALUE_DIM) dense, the logsumexp (float, one per row), then q, k, v and the bias (a
// placeholder without BIAS). A row whose keys are all masked out gets a zero output and
// logsumexp +inf, so that exp(score - lse) is 0 in the backward.
__kernel void attention_forward(AttentionDesc d, OPERAND(0), OPERAND(1), OPERAND(2), OPERAND(3), OPERAND(4),
                                OPERAND(5), float scale, long rows) {
  const long row = get_global_id(0);
  if (row >= rows) return;
  __global char* out = base0 + offset0;
  __global float* lse = (__global float*)(base1 + offset1);
  __global const char *q = base2 + offset2, *k = base3 + offset3, *v = base4 + offset4, *bias = base5 + offset5;
  QUERY_ROW(row);
  const long k_at = ROW_AT(k, b, h, 0), v_at = ROW_AT(v, b, h, 0);
  piece query[HEAD_DIM / WIDTH], acc[VALUE_DIM / WIDTH];
  LOAD_ROW(query, q, ROW_AT(q, b, h, i), HEAD_DIM, scale);
  for (int c = 0; c < VALUE_DIM / WIDTH; ++c) acc[c] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  const long keys = KEYS_OF(i);
  // Keys go in blocks: their scores first, then one rescale of the accumulator per block.
  for (long first = 0; first < keys; first += KEY_BLOCK) {
    const int block = (int)min((long)KEY_BLOCK, keys - first);
    float scores[KEY_BLOCK];
    float block_max = -INFINITY;
    for (int t = 0; t < block; ++t) {
      KEY_SCORE(first + t);
      scores[t] = s;
      block_max = fmax(block_max, s);
    }
    if (block_max == -INFINITY) continue;  // all masked out
    const float m_new = fmax(m, block_max), rescale = exp(m - m_new);
    l *= rescale;
    for (int c = 0; c < VALUE_DIM / WIDTH; ++c) acc[c] *= rescale;
    for (int t = 0; t < block; ++t) {
      if (scores[t] == -INFINITY) continue;  // masked out
      const float p = exp(scores[t] - m_new);
      l += p;
      const long vj = v_at + (first + t) * d.v_stride[2];
      for (int c = 0; c < VALUE_DIM / WIDTH; ++c) acc[c] += p * PIECE(v, vj, c);
    }
    m = m_new;
  }
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  STORE_ROW(out + row * VALUE_DIM * sizeof(ST(T)), acc, VALUE_DIM, inv);
  lse[row] = l > 0.0f ? m + log(l) : INFINITY;
}

// The backward, flash attention's way: with P = exp(S - lse), dP = dO V^T and
// delta_i = dO_i . O_i (= rowsum(P * dP), which DELTA_FROM_SCORES computes as such, in one more
// pass over the keys, where O was rounded to 16 bits), dS = P * (dP - delta), dQ = dS K scale,
// dK = dS^T Q scale and dV = P^T dO. Two kernels, so that no work-item sums into another's row:
// one per query row (dQ, delta and, with GRAD_SCORES, dS itself), then one per key row (dK, dV),
// which recomputes P and dS from delta.
//
// Operands: dQ (batch, head, row, HEAD_DIM) dense, delta (float, one per query row), dS (float,
// batch * heads * q_len * kv_len dense; a placeholder without GRAD_SCORES), q, k, v, the bias,
// the forward's output and its gradient dO, and the forward's logsumexp (float, one per row).
__kernel void attention_backward_queries(AttentionDesc d, OPERAND(0), OPERAND(1), OPERAND(2), OPERAND(3),
                                         OPERAND(4), OPERAND(5), OPERAND(6), OPERAND(7), OPERAND(8), OPERAND(9),
                                         float scale, long rows) {
  const long row = get_global_id(0);
  if (row >= rows) return;
  __global char* grad_q = base0 + offset0;
  __global float* delta_out = (__global float*)(base1 + offset1);
  __global float* grad_scores = (__global float*)(base2 + offset2) + row * d.kv_len;
  __global const char *q = base3 + offset3, *k = base4 + offset4, *v = base5 + offset5, *bias = base6 + offset6;
  __global const char *out = base7 + offset7, *grad_out = base8 + offset8;
  const float row_lse = ((__global const float*)(base9 + offset9))[row];
  QUERY_ROW(row);
  const long k_at = ROW_AT(k, b, h, 0), v_at = ROW_AT(v, b, h, 0), o_at = ROW_AT(out, b, h, i);
  piece query[HEAD_DIM / WIDTH], d_out[VALUE_DIM / WIDTH], acc[HEAD_DIM / WIDTH];
  LOAD_ROW(query, q, ROW_AT(q, b, h, i), HEAD_DIM, scale);
  LOAD_ROW(d_out, grad_out, ROW_AT(grad_out, b, h, i), VALUE_DIM, 1.0f);
  const long keys = KEYS_OF(i);
// dp = dO_i . v_j.
#define DP(dp, j)                                                                   \
  const long vj = v_at + (j) * d.v_stride[2];                                       \
  piece dp_dots = 0.0f;                                                             \
  for (int c = 0; c < VALUE_DIM / WIDTH; ++c) dp_dots += d_out[c] * PIECE(v, vj, c); \
  const float dp = PIECE_SUM(dp_dots)
#ifdef DELTA_FROM_SCORES
  // The output is rounded to T: delta = rowsum(P * dP) from the recomputed probabilities instead.
  float delta = 0.0f;
  for (long j = 0; j < keys; ++j) {
    KEY_SCORE(j);
    if (s == -INFINITY) continue;
    DP(dp, j);
    delta += exp(s - row_lse) * dp;
  }
#else
  piece dots = 0.0f;
  for (int c = 0; c < VALUE_DIM / WIDTH; ++c) dots += d_out[c] * PIECE(out, o_at, c);
  const float delta = PIECE_SUM(dots);
#endif
  for (int c = 0; c < HEAD_DIM / WIDTH; ++c) acc[c] = 0.0f;
  for (long j = 0; j < keys; ++j) {
    KEY_SCORE(j);
    float ds = 0.0f;
    if (s != -INFINITY) {
      const float p = exp(s - row_lse);
      DP(dp, j);
      ds = p * (dp - delta);
      for (int c = 0; c < HEAD_DIM / WIDTH; ++c) acc[c] += ds * PIECE(k, kj, c);
    }
#ifdef GRAD_SCORES
    grad_scores[j] = ds;
#endif
  }
#ifdef GRAD_SCORES
  for (long j = keys; j < d.kv_len; ++j) grad_scores[j] = 0.0f;
#endif
  STORE_ROW(grad_q + row * HEAD_DIM * sizeof(ST(T)), acc, HEAD_DIM, scale);
  delta_out[row] = delta;
}

// Operands: dK (batch, head, key row, HEAD_DIM) and dV (..., VALUE_DIM) dense, then q, k, v,
// the bias, dO, the logsumexp and delta (float, one per query row).
__kernel void attention_backward_keys(AttentionDesc d, OPERAND(0), OPERAND(1), OPERAND(2), OPERAND(3), OPERAND(4),
                                      OPERAND(5), OPERAND(6), OPERAND(7), OPERAND(8), float scale, long rows) {
  const long row = get_global_id(0);
  if (row >= rows) return;
  __global char *grad_k = base0 + offset0, *grad_v = base1 + offset1;
  __global const char *q = base2 + offset2, *k = base3 + offset3, *v = base4 + offset4, *bias = base5 + offset5;
  __global const char* grad_out = base6 + offset6;
  const long j = row % d.kv_len, bh = row / d.kv_len, h = bh % d.heads, b = bh / d.heads;
  __global const float* lse = (__global const float*)(base7 + offset7) + bh * d.q_len;
  __global const float* delta = (__global const float*)(base8 + offset8) + bh * d.q_len;
  piece key[HEAD_DIM / WIDTH], value[VALUE_DIM / WIDTH], d_out[VALUE_DIM / WIDTH];
  piece acc_k[HEAD_DIM / WIDTH], acc_v[VALUE_DIM / WIDTH];
  LOAD_ROW(key, k, ROW_AT(k, b, h, j), HEAD_DIM, 1.0f);
  LOAD_ROW(value, v, ROW_AT(v, b, h, j), VALUE_DIM, 1.0f);
  for (int c = 0; c < HEAD_DIM / WIDTH; ++c) acc_k[c] = 0.0f;
  for (int c = 0; c < VALUE_DIM / WIDTH; ++c) acc_v[c] = 0.0f;
#ifdef CAUSAL
  const long first = j;
#else
  const long first = 0;
#endif
  for (long i = first; i < d.q_len; ++i) {
    const long qi = ROW_AT(q, b, h, i);
    piece dots = 0.0f;
    for (int c = 0; c < HEAD_DIM / WIDTH; ++c) dots += (PIECE(q, qi, c) * scale) * key[c];
    float s = PIECE_SUM(dots);
    ADD_BIAS(s, b, h, i, j);
    if (s == -INFINITY) continue;
    const float p = exp(s - lse[i]);
    LOAD_ROW(d_out, grad_out, ROW_AT(grad_out, b, h, i), VALUE_DIM, 1.0f);
    dots = 0.0f;
    for (int c = 0; c < VALUE_DIM / WIDTH; ++c) dots += d_out[c] * value[c];
    const float ds = p * (PIECE_SUM(dots) - delta[i]);
    for (int c = 0; c < VALUE_DIM / WIDTH; ++c) acc_v[c] += p * d_out[c];
    for (int c = 0; c < HEAD_DIM / WIDTH; ++c) acc_k[c] += ds * PIECE(q, qi, c);
  }
  STORE_ROW(grad_k + row * HEAD_DIM * sizeof(ST(T)), acc_k, HEAD_DIM, scale);
  STORE_ROW(grad_v + row * VALUE_DIM * sizeof(ST(T)), acc_v, VALUE_DIM, 1.0f);
}
