// Cross-entropy of softmax(logits) against class indices, fused: each row is read once for the
// loss (an online max and sum of exponentials) and once for the gradient, where the composed ops
// write and re-read the softmax. T is float or double.
//
// One work-group per row; on CPU devices a single lane (see rmsnorm.cl).

// Merges the running (max, sum of exp(x - max)) pair b into a.
#define MERGE(m_a, s_a, m_b, s_b) \
  { \
    const T m = fmax(m_a, m_b); \
    s_a = (m_a == -INFINITY ? 0 : s_a * exp(m_a - m)) + (m_b == -INFINITY ? 0 : s_b * exp(m_b - m)); \
    m_a = m; \
  }

#define TREE_STEP(s) \
  barrier(CLK_LOCAL_MEM_FENCE); \
  if (lane < s && lane + s < lanes) MERGE(maxes[lane], sums[lane], maxes[lane + s], sums[lane + s])

// loss[row] = logsumexp(logits[row]) - logits[row, target[row]]; 0 where target == ignore_index,
// NaN where the target is out of range (PyTorch's CPU kernel raises; a kernel cannot).
__kernel void softmax_cross_entropy_forward(__global T* loss, __global T* lse, __global const T* logits,
                                            __global const long* target, const int classes,
                                            const long ignore_index, __local T* maxes, __local T* sums) {
  const size_t row = get_group_id(0);
  const int lane = get_local_id(0), lanes = get_local_size(0);
  __global const T* lr = logits + row * classes;
  T m = -INFINITY, s = 0;
  for (int c = lane; c < classes; c += lanes) {
    const T v = lr[c];
    if (v > m) {
      s = s * exp(m - v) + 1;
      m = v;
    } else if (v != -INFINITY) {
      s += exp(v - m);
    }
  }
  maxes[lane] = m;
  sums[lane] = s;
  TREE_STEP(128) TREE_STEP(64) TREE_STEP(32) TREE_STEP(16) TREE_STEP(8) TREE_STEP(4) TREE_STEP(2) TREE_STEP(1)
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lane == 0) {
    const T row_lse = maxes[0] + log(sums[0]);
    const long t = target[row];
    lse[row] = row_lse;
    loss[row] = t == ignore_index ? 0 : (t < 0 || t >= classes) ? NAN : row_lse - lr[t];
  }
}

// dlogits = (softmax(logits) - onehot(target)) * dloss, one work-item per element.
__kernel void softmax_cross_entropy_backward(__global T* dlogits, __global const T* dloss,
                                             __global const T* logits, __global const T* lse,
                                             __global const long* target, const int classes,
                                             const long ignore_index, const long elements) {
  const long i = get_global_id(0);
  if (i >= elements) return;
  const long row = i / classes, c = i % classes;
  const long t = target[row];
  const T onehot = c == t ? 1 : 0;
  dlogits[i] = t == ignore_index ? 0 : (exp(logits[i] - lse[row]) - onehot) * dloss[row];
}
