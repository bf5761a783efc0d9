// Scaled dot-product attention, forward, tiled with an online softmax: the scores never go to
// memory. q [BH, Sq, D], k and v [BH, Sk, D], out [BH, Sq, D], contiguous; T is float or double;
// D at most MAX_D.
//
// A work-group holds `block` consecutive query rows of one (batch, head), one per work-item. It
// walks the keys in tiles of `block` rows: the work-items load one key and one value row each
// into local memory, then every work-item scores its query against the whole tile and folds the
// tile into its running max, sum and output (the online softmax).
#ifndef MAX_D
#define MAX_D 128
#endif

__kernel void attention_forward(__global T* out, __global const T* q, __global const T* k, __global const T* v,
                                const int seq_q, const int seq_k, const int head_dim, const float scale,
                                const int causal, __local T* k_tile, __local T* v_tile) {
  const int lane = get_local_id(0), block = get_local_size(0);
  const int query = get_global_id(0);
  const size_t bh = get_global_id(1);
  const bool active = query < seq_q;
  __global const T* kb = k + bh * seq_k * head_dim;
  __global const T* vb = v + bh * seq_k * head_dim;

  T q_row[MAX_D], acc[MAX_D];
  for (int d = 0; d < head_dim; ++d) {
    q_row[d] = active ? q[(bh * seq_q + query) * head_dim + d] * (T)scale : 0;
    acc[d] = 0;
  }
  T running_max = -INFINITY, running_sum = 0;
  // Causal attention (top-left aligned, as torch's is_causal): query i sees keys 0..i.
  const int last_tile_key = causal ? min(seq_k, (int)(get_group_id(0) + 1) * block) : seq_k;

  for (int start = 0; start < last_tile_key; start += block) {
    barrier(CLK_LOCAL_MEM_FENCE);  // the previous tile is no longer read
    const int key = start + lane;
    for (int d = 0; d < head_dim; ++d) {
      k_tile[lane * head_dim + d] = key < seq_k ? kb[key * head_dim + d] : 0;
      v_tile[lane * head_dim + d] = key < seq_k ? vb[key * head_dim + d] : 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!active) continue;
    int end = min(block, seq_k - start);
    if (causal) end = min(end, query - start + 1);
    for (int j = 0; j < end; ++j) {
      T score = 0;
      for (int d = 0; d < head_dim; ++d) score += q_row[d] * k_tile[j * head_dim + d];
      const T new_max = fmax(running_max, score);
      const T correction = exp(running_max - new_max);
      const T p = exp(score - new_max);
      running_sum = running_sum * correction + p;
      for (int d = 0; d < head_dim; ++d) acc[d] = acc[d] * correction + p * v_tile[j * head_dim + d];
      running_max = new_max;
    }
  }
  if (active)
    for (int d = 0; d < head_dim; ++d) out[(bh * seq_q + query) * head_dim + d] = acc[d] / running_sum;
}
