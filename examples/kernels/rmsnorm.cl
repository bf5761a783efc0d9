// RMSNorm over the last dimension, forward and backward: y = x * rstd * weight with
// rstd = 1 / sqrt(mean(x^2) + eps). T is float or double (drawbridge.kernel defines it per dtype).
//
// One work-group per row. Each lane takes runs of W consecutive elements as one vector (vloadW
// needs only the element's alignment), so the loops are vector code on every device: on a GPU
// the lanes stride over the row run by run (neighbouring lanes read neighbouring runs) and
// combine through local memory; on a CPU device the group has a single lane, and explicit vectors
// are what makes its loop fast (a float sum is not reassociated, so a scalar loop would not
// vectorize). A row's last cols % W elements are taken one by one. rmsnorm.py defines W = 8
// (lanes_total adds up 8 lanes), as it also sizes the weight gradient's grid by it.
#define VEC_(t, n) t##n
#define VEC(t, n) VEC_(t, n)
#define TW VEC(T, W)
#define LOADW(p, c) VEC(vload, W)(0, (p) + (c))
#define STOREW(v, p, c) VEC(vstore, W)((v), 0, (p) + (c))

T lanes_total(TW v) {
  const VEC(T, 4) h = v.lo + v.hi;
  const VEC(T, 2) q = h.lo + h.hi;
  return q.x + q.y;
}

// The sum of v over the work-group, in every lane (local size a power of two up to 256). The tree
// is unrolled with every barrier reached by all lanes, as OpenCL requires.
#define TREE_STEP(s) \
  barrier(CLK_LOCAL_MEM_FENCE); \
  if (lane < s && lane + s < lanes) scratch[lane] += scratch[lane + s];

T group_sum(T v, __local T* scratch) {
  const uint lane = get_local_id(0), lanes = get_local_size(0);
  scratch[lane] = v;
  TREE_STEP(128) TREE_STEP(64) TREE_STEP(32) TREE_STEP(16) TREE_STEP(8) TREE_STEP(4) TREE_STEP(2) TREE_STEP(1)
  barrier(CLK_LOCAL_MEM_FENCE);
  const T total = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);  // the caller may reuse scratch
  return total;
}

__kernel void rms_norm_forward(__global T* y, __global T* rstd, __global const T* x,
                               __global const T* weight, const int cols, const float eps,
                               __local T* scratch) {
  const size_t row = get_group_id(0);
  const int lane = get_local_id(0), lanes = get_local_size(0);
  const int vector_end = cols - cols % W;
  __global const T* xr = x + row * cols;
  __global T* yr = y + row * cols;
  TW squares_w = 0;
  for (int c = lane * W; c < vector_end; c += lanes * W) {
    const TW v = LOADW(xr, c);
    squares_w += v * v;
  }
  T squares = lanes_total(squares_w);
  for (int c = vector_end + lane; c < cols; c += lanes) squares += xr[c] * xr[c];
  const T r = rsqrt(group_sum(squares, scratch) / cols + (T)eps);
  for (int c = lane * W; c < vector_end; c += lanes * W) STOREW(LOADW(xr, c) * r * LOADW(weight, c), yr, c);
  for (int c = vector_end + lane; c < cols; c += lanes) yr[c] = xr[c] * r * weight[c];
  if (lane == 0) rstd[row] = r;
}

// dx = rstd * weight * dy - x * rstd^3 / cols * sum(dy * weight * x)
__kernel void rms_norm_backward_input(__global T* dx, __global const T* dy, __global const T* x,
                                      __global const T* weight, __global const T* rstd, const int cols,
                                      __local T* scratch) {
  const size_t row = get_group_id(0);
  const int lane = get_local_id(0), lanes = get_local_size(0);
  const int vector_end = cols - cols % W;
  __global const T* xr = x + row * cols;
  __global const T* dyr = dy + row * cols;
  TW dot_w = 0;
  for (int c = lane * W; c < vector_end; c += lanes * W) dot_w += LOADW(dyr, c) * LOADW(weight, c) * LOADW(xr, c);
  T dot = lanes_total(dot_w);
  for (int c = vector_end + lane; c < cols; c += lanes) dot += dyr[c] * weight[c] * xr[c];
  const T r = rstd[row];
  const T k = group_sum(dot, scratch) * r * r * r / cols;
  __global T* dxr = dx + row * cols;
  for (int c = lane * W; c < vector_end; c += lanes * W)
    STOREW(r * LOADW(weight, c) * LOADW(dyr, c) - LOADW(xr, c) * k, dxr, c);
  for (int c = vector_end + lane; c < cols; c += lanes) dxr[c] = r * weight[c] * dyr[c] - xr[c] * k;
}

// The weight's gradient, first stage: partial[block, c] = sum over the rows of `block` of
// dy * x * rstd. Work-item (i, block) takes the W columns from i * W (the last one the columns
// left), so neighbouring work-items read neighbouring memory of each row and every work-item
// walks only rows_per_block rows; the caller sums the blocks (one reduction over dim 0).
__kernel void rms_norm_backward_weight(__global T* partial, __global const T* dy, __global const T* x,
                                       __global const T* rstd, const int rows, const int cols,
                                       const int rows_per_block) {
  const int c = get_global_id(0) * W;
  const int block = get_global_id(1);
  if (c >= cols) return;
  const int first = block * rows_per_block, last = min(rows, first + rows_per_block);
  __global T* out = partial + (size_t)block * cols;
  if (c + W <= cols) {
    TW acc = 0;
    for (int r = first; r < last; ++r)
      acc += LOADW(dy + (size_t)r * cols, c) * LOADW(x + (size_t)r * cols, c) * rstd[r];
    STOREW(acc, out, c);
  } else {
    for (int j = c; j < cols; ++j) {
      T acc = 0;
      for (int r = first; r < last; ++r) acc += dy[(size_t)r * cols + j] * x[(size_t)r * cols + j] * rstd[r];
      out[j] = acc;
    }
  }
}
