// Fused scaled-dot-product attention forward: one work-item per query row walks the key rows
// once with an online softmax (running maximum m, running sum l, rescaled accumulator), so the
// L x S score matrix is never stored. Options: T (q/k/v/bias dtype token), HEAD_DIM, VALUE_DIM,
// CAUSAL (key j visible to query i iff j <= i, top-left aligned as PyTorch's math path), BIAS
// (an additive float bias, broadcast through zero strides).
//
// Element strides are given per (batch, head, row, column). A row whose keys are all masked out
// gets a zero output and logsumexp +inf, so that exp(score - lse) is 0 in the backward.
typedef struct {
  long heads, q_len, kv_len;
  long q_stride[4], k_stride[4], v_stride[4], bias_stride[4];
} AttentionDesc;

#define ELEMENT(base, i) TO_f32(LOAD(T, (base) + (i) * sizeof(ST(T))))
// Rows of q, k, v are walked in pieces: with VECTOR_ROWS (float32, dense rows, dims that are
// multiples of 8) a piece is a float8 loaded at once; otherwise one element at its stride.
#ifdef VECTOR_ROWS
#define WIDTH 8
typedef float8 piece;
#define PIECE(tensor, at, c) vload8((c), (__global const float*)tensor + (at))
#define PIECE_SUM(x) (dot((x).lo, (float4)(1.0f)) + dot((x).hi, (float4)(1.0f)))
#else
#define WIDTH 1
typedef float piece;
#define PIECE(tensor, at, c) ELEMENT(tensor, (at) + (c) * d.tensor##_stride[3])
#define PIECE_SUM(x) (x)
#endif

// Operands (buffer, byte offset): the output (batch, head, row, VALUE_DIM) dense, the logsumexp
// (float, one per row), then q, k, v and the bias (a placeholder without BIAS).
__kernel void attention_forward(AttentionDesc d, OPERAND(0), OPERAND(1), OPERAND(2), OPERAND(3), OPERAND(4),
                                OPERAND(5), float scale, long rows) {
  const long row = get_global_id(0);
  if (row >= rows) return;
  __global char* out = base0 + offset0;
  __global float* lse = (__global float*)(base1 + offset1);
  __global const char *q = base2 + offset2, *k = base3 + offset3, *v = base4 + offset4, *bias = base5 + offset5;
  const long i = row % d.q_len, bh = row / d.q_len, h = bh % d.heads, b = bh / d.heads;
  const long q_at = b * d.q_stride[0] + h * d.q_stride[1] + i * d.q_stride[2];
  const long k_at = b * d.k_stride[0] + h * d.k_stride[1];
  const long v_at = b * d.v_stride[0] + h * d.v_stride[1];
  piece query[HEAD_DIM / WIDTH], acc[VALUE_DIM / WIDTH];
  for (int c = 0; c < HEAD_DIM / WIDTH; ++c) query[c] = PIECE(q, q_at, c) * scale;
  for (int c = 0; c < VALUE_DIM / WIDTH; ++c) acc[c] = 0.0f;
  float m = -INFINITY, l = 0.0f;
#ifdef CAUSAL
  const long keys = min(d.kv_len, i + 1);
#else
  const long keys = d.kv_len;
#endif
  for (long j = 0; j < keys; ++j) {
    const long kj = k_at + j * d.k_stride[2];
    piece dots = 0.0f;
    for (int c = 0; c < HEAD_DIM / WIDTH; ++c) dots += query[c] * PIECE(k, kj, c);
    float s = PIECE_SUM(dots);
#ifdef BIAS
    s += ELEMENT(bias, b * d.bias_stride[0] + h * d.bias_stride[1] + i * d.bias_stride[2] + j * d.bias_stride[3]);
#endif
    if (s == -INFINITY) continue;  // masked out
    const float m_new = s > m ? s : m;
    const float rescale = exp(m - m_new), p = exp(s - m_new);
    l = l * rescale + p;
    const long vj = v_at + j * d.v_stride[2];
    for (int c = 0; c < VALUE_DIM / WIDTH; ++c) acc[c] = acc[c] * rescale + p * PIECE(v, vj, c);
    m = m_new;
  }
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  __global char* o = out + row * VALUE_DIM * sizeof(ST(T));
#ifdef VECTOR_ROWS
  for (int c = 0; c < VALUE_DIM / WIDTH; ++c) vstore8(acc[c] * inv, c, (__global float*)o);
#else
  for (int e = 0; e < VALUE_DIM; ++e) STORE(T, o + e * sizeof(ST(T)), acc[e] * inv);
#endif
  lse[row] = l > 0.0f ? m + log(l) : INFINITY;
}
