// RMSNorm over the last dimension, forward and backward: y = x * rstd * weight with
// rstd = 1 / sqrt(mean(x^2) + eps). T is float or double (drawbridge.kernel defines it per dtype).
//
// One work-group per row. On a GPU its lanes stride over the row (neighbouring lanes read
// neighbouring elements) and combine through local memory; on a CPU device the group has a
// single lane whose loop the compiler vectorizes, and the combine costs nothing.

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
  __global const T* xr = x + row * cols;
  __global T* yr = y + row * cols;
  T squares = 0;
  for (int c = lane; c < cols; c += lanes) squares += xr[c] * xr[c];
  const T r = rsqrt(group_sum(squares, scratch) / cols + (T)eps);
  for (int c = lane; c < cols; c += lanes) yr[c] = xr[c] * r * weight[c];
  if (lane == 0) rstd[row] = r;
}

// dx = rstd * weight * dy - x * rstd^3 / cols * sum(dy * weight * x)
__kernel void rms_norm_backward_input(__global T* dx, __global const T* dy, __global const T* x,
                                      __global const T* weight, __global const T* rstd, const int cols,
                                      __local T* scratch) {
  const size_t row = get_group_id(0);
  const int lane = get_local_id(0), lanes = get_local_size(0);
  __global const T* xr = x + row * cols;
  __global const T* dyr = dy + row * cols;
  T dot = 0;
  for (int c = lane; c < cols; c += lanes) dot += dyr[c] * weight[c] * xr[c];
  const T r = rstd[row];
  const T k = group_sum(dot, scratch) * r * r * r / cols;
  __global T* dxr = dx + row * cols;
  for (int c = lane; c < cols; c += lanes) dxr[c] = r * weight[c] * dyr[c] - xr[c] * k;
}

// dweight[c] = sum over rows of dy * x * rstd: one work-item per column, so that neighbouring
// work-items read neighbouring elements of each row.
__kernel void rms_norm_backward_weight(__global T* dweight, __global const T* dy, __global const T* x,
                                       __global const T* rstd, const int rows, const int cols) {
  const int c = get_global_id(0);
  if (c >= cols) return;
  T acc = 0;
  for (int r = 0; r < rows; ++r) acc += dy[(size_t)r * cols + c] * x[(size_t)r * cols + c] * rstd[r];
  dweight[c] = acc;
}
