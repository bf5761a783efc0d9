// im2col and col2im for convolutions of 1 to 3 spatial dims (fewer dims are padded with leading
// dims of size 1). Columns hold row (c, k_0, k_1, k_2) and column (o_0, o_1, o_2) of sample n at
// n * column_stride[0] + row * column_stride[1] + column: (N, C * K, L) for unfold/fold, or
// (C * K, N, L) for convolutions, whose whole batch is then one GEMM. K = prod(window), the
// kernel's extent (`kernel` is a keyword of OpenCL C).
// A window position reads image position o * stride - padding + k * dilation, or 0 outside the
// image, so no padded copy of the image is made. Built with -DPANEL_COLUMNS=P, im2col writes each
// sample's columns as the packed GEMM's panels of B instead (kernels/packed_gemm.h).
//
// im2col moves raw bits (T is a raw token of the element size); col2im sums in the element type
// (T is f32, f64, i32 or i64: callers widen float16/bfloat16 first) by gathering, for every image
// element, the column entries of the windows that cover it: no atomics, a deterministic sum.
typedef struct {
  long batch, channels;
  long image[3], out[3], window[3], stride[3], padding[3], dilation[3];
  long image_stride[5];  // elements, of (n, c, d_0, d_1, d_2); im2col's input may be strided
  long column_stride[2];  // elements, of (n, row)
} WindowDesc;

#define ELEMENTS(base, offset) ((__global ST(T)*)((base) + (offset)))

// The window positions o_2 in [0, out) that read image positions p = o * stride + first inside
// [0, extent): [*lo, *hi).
inline void inside_range(long first, long stride, long extent, long out, long* lo, long* hi) {
  // o * stride + first >= 0  <=>  o >= ceil(-first / stride); < extent  <=>  o <= floor((extent - 1 - first) / stride)
  *lo = first >= 0 ? 0 : (-first + stride - 1) / stride;
  *hi = extent - 1 - first < 0 ? 0 : min(out, (extent - 1 - first) / stride + 1);
  *lo = min(*lo, *hi);
}

// One work-item per (n, row, o_0, o_1), walking o_2: zeros where the window hangs over the image's
// ends, a copy between them (contiguous for unit strides, so that it vectorizes).
__kernel void im2col(WindowDesc d, OPERAND(0), OPERAND(1)) {
  const long kernel_size = d.window[0] * d.window[1] * d.window[2];
  const long rows = d.batch * d.channels * kernel_size * d.out[0] * d.out[1];
  long id = get_global_id(0);
  if (id >= rows) return;
  const long o1 = id % d.out[1];
  id /= d.out[1];
  const long o0 = id % d.out[0];
  id /= d.out[0];
  const long row = id % (d.channels * kernel_size), n = id / (d.channels * kernel_size);
  const long k2 = row % d.window[2], k1 = (row / d.window[2]) % d.window[1];
  const long k0 = (row / (d.window[2] * d.window[1])) % d.window[0], c = row / kernel_size;
  const long p0 = o0 * d.stride[0] - d.padding[0] + k0 * d.dilation[0];
  const long p1 = o1 * d.stride[1] - d.padding[1] + k1 * d.dilation[1];
  const long column0 = (o0 * d.out[1] + o1) * d.out[2];
  // FOR_O2(a, b, store): runs `store`, which writes out[o2], for o2 in [a, b).
#ifdef PANEL_COLUMNS
  // Straight into the packed GEMM's panels of B (kernels/packed_gemm.h): column j at
  // ((j / P) * rows + row) * P + j % P, where sample n's columns start at j = n * column_stride[0]
  // (its positions rounded up to whole panels when each sample is its own product, or not when
  // the batch is one). A run of o_2 is cut where it crosses into the next panel, so that each
  // piece is a contiguous loop.
  __global ST(T)* panels = ELEMENTS(base0, offset0) + row * PANEL_COLUMNS;
  const long panel_stride = d.channels * kernel_size * PANEL_COLUMNS, sample_column0 = n * d.column_stride[0] + column0;
#define COLUMN(j) (panels + ((j) / PANEL_COLUMNS) * panel_stride + (j) % PANEL_COLUMNS)
#define FOR_O2(first_o2, last_o2, ...)                                                    \
  for (long s_ = (first_o2), e_; s_ < (last_o2); s_ = e_) {                                \
    e_ = min((long)(last_o2), s_ + PANEL_COLUMNS - (sample_column0 + s_) % PANEL_COLUMNS);  \
    __global ST(T)* out = COLUMN(sample_column0 + s_) - s_;                                \
    for (long o2 = s_; o2 < e_; ++o2) __VA_ARGS__;                                         \
  }
  // The sample's last columns zero the rest of their panel, unless the next sample's follow.
  if (o0 == d.out[0] - 1 && o1 == d.out[1] - 1 && (n == d.batch - 1 || d.column_stride[0] % PANEL_COLUMNS == 0)) {
    for (long j = sample_column0 + d.out[2]; j % PANEL_COLUMNS != 0; ++j) *COLUMN(j) = (ST(T))0;
  }
#else
#define FOR_O2(first_o2, last_o2, ...)                                                                       \
  {                                                                                                          \
    __global ST(T)* out = ELEMENTS(base0, offset0) + n * d.column_stride[0] + row * d.column_stride[1] + column0; \
    for (long o2 = (first_o2); o2 < (last_o2); ++o2) __VA_ARGS__;                                            \
  }
#endif
  const bool inside = p0 >= 0 && p0 < d.image[0] && p1 >= 0 && p1 < d.image[1];
  const long first = k2 * d.dilation[2] - d.padding[2];  // p_2 = o_2 * stride + first
  long lo = 0, hi = 0;
  if (inside) inside_range(first, d.stride[2], d.image[2], d.out[2], &lo, &hi);
  __global const ST(T)* in = ELEMENTS(base1, offset1) + n * d.image_stride[0] + c * d.image_stride[1] +
                             p0 * d.image_stride[2] + p1 * d.image_stride[3];
  FOR_O2(0, lo, out[o2] = (ST(T))0);
  const long step = d.stride[2] * d.image_stride[4];
  if (step == 1) {
    FOR_O2(lo, hi, out[o2] = in[o2 + first]);
  } else {
    FOR_O2(lo, hi, out[o2] = in[(o2 * d.stride[2] + first) * d.image_stride[4]]);
  }
  FOR_O2(hi, d.out[2], out[o2] = (ST(T))0);
#undef FOR_O2
#undef COLUMN
}

// One work-item per image row (n, c, p_0, p_1); the image is dense. Each window offset
// (k_0, k_1, k_2) that reaches the row adds its column entries to the range of p_2 it covers, in
// the order of k, so every element is the same sum, in the same order, as gathering it element by
// element; and no division is left in the loops over p_2.
__kernel void col2im(WindowDesc d, OPERAND(0), OPERAND(1)) {
  const long kernel_size = d.window[0] * d.window[1] * d.window[2];
  const long rows = d.batch * d.channels * d.image[0] * d.image[1];
  long id = get_global_id(0);
  if (id >= rows) return;
  const long p1 = id % d.image[1];
  id /= d.image[1];
  const long p0 = id % d.image[0];
  id /= d.image[0];
  const long c = id % d.channels, n = id / d.channels;
  __global const ST(T)* cols = ELEMENTS(base1, offset1) + n * d.column_stride[0] + c * kernel_size * d.column_stride[1];
  __global ST(T)* out = ELEMENTS(base0, offset0) + ((n * d.channels + c) * d.image[0] + p0) * d.image[1] * d.image[2] +
                        p1 * d.image[2];
  for (long p2 = 0; p2 < d.image[2]; ++p2) out[p2] = (ST(T))0;
  for (long k0 = 0; k0 < d.window[0]; ++k0) {
    const long q0 = p0 + d.padding[0] - k0 * d.dilation[0];
    if (q0 < 0 || q0 % d.stride[0] != 0 || q0 / d.stride[0] >= d.out[0]) continue;
    for (long k1 = 0; k1 < d.window[1]; ++k1) {
      const long q1 = p1 + d.padding[1] - k1 * d.dilation[1];
      if (q1 < 0 || q1 % d.stride[1] != 0 || q1 / d.stride[1] >= d.out[1]) continue;
      for (long k2 = 0; k2 < d.window[2]; ++k2) {
        const long k = (k0 * d.window[1] + k1) * d.window[2] + k2;
        __global const ST(T)* col =
            cols + k * d.column_stride[1] + ((q0 / d.stride[0]) * d.out[1] + q1 / d.stride[1]) * d.out[2];
        // Window position o_2 covers image position p_2 = o_2 * stride + first.
        const long first = k2 * d.dilation[2] - d.padding[2];
        long lo, hi;
        inside_range(first, d.stride[2], d.image[2], d.out[2], &lo, &hi);
        if (d.stride[2] == 1) {
          for (long o2 = lo; o2 < hi; ++o2) out[o2 + first] += col[o2];
        } else {
          for (long o2 = lo; o2 < hi; ++o2) out[o2 * d.stride[2] + first] += col[o2];
        }
      }
    }
  }
}

// Depthwise convolutions (one input channel per group; output channel oc reads input channel
// oc / multiplier): direct kernels. As im2col + GEMM each group would be a product of one row,
// K x L columns written K-fold for it. T is f32 or f64 (callers widen float16/bfloat16); the
// weight (O, 1, K...) and the gradients of the output (N, O, out...) are dense, the input may be
// strided (image_stride), and every result is dense.
#define WINDOW(d) ((d).window[0] * (d).window[1] * (d).window[2])
#define POSITIONS(d) ((d).out[0] * (d).out[1] * (d).out[2])

// One work-item per output row (n, oc, o_0, o_1), walking o_2 as im2col does, adding each window
// offset's products to the row (contiguous loops for unit strides, so that they vectorize).
__kernel void depthwise_forward(WindowDesc d, OPERAND(0), OPERAND(1), OPERAND(2), long multiplier) {
  const long out_channels = d.channels * multiplier;
  long id = get_global_id(0);
  if (id >= d.batch * out_channels * d.out[0] * d.out[1]) return;
  __global ST(T)* out = ELEMENTS(base0, offset0) + id * d.out[2];
  const long o1 = id % d.out[1];
  id /= d.out[1];
  const long o0 = id % d.out[0];
  id /= d.out[0];
  const long oc = id % out_channels, n = id / out_channels;
  __global const ST(T)* in = ELEMENTS(base1, offset1) + n * d.image_stride[0] + (oc / multiplier) * d.image_stride[1];
  __global const ST(T)* w = ELEMENTS(base2, offset2) + oc * WINDOW(d);
  for (long o2 = 0; o2 < d.out[2]; ++o2) out[o2] = (ST(T))0;
  for (long k0 = 0; k0 < d.window[0]; ++k0) {
    const long p0 = o0 * d.stride[0] - d.padding[0] + k0 * d.dilation[0];
    if (p0 < 0 || p0 >= d.image[0]) continue;
    for (long k1 = 0; k1 < d.window[1]; ++k1) {
      const long p1 = o1 * d.stride[1] - d.padding[1] + k1 * d.dilation[1];
      if (p1 < 0 || p1 >= d.image[1]) continue;
      __global const ST(T)* row = in + p0 * d.image_stride[2] + p1 * d.image_stride[3];
      for (long k2 = 0; k2 < d.window[2]; ++k2) {
        const ST(T) weight = w[(k0 * d.window[1] + k1) * d.window[2] + k2];
        const long first = k2 * d.dilation[2] - d.padding[2];  // p_2 = o_2 * stride + first
        long lo, hi;
        inside_range(first, d.stride[2], d.image[2], d.out[2], &lo, &hi);
        const long step = d.stride[2] * d.image_stride[4];
        if (step == 1) {
          for (long o2 = lo; o2 < hi; ++o2) out[o2] += weight * row[o2 + first];
        } else {
          for (long o2 = lo; o2 < hi; ++o2) out[o2] += weight * row[(o2 * d.stride[2] + first) * d.image_stride[4]];
        }
      }
    }
  }
}

// The input's gradient: one work-item per input row (n, c, p_0, p_1), which gathers, as col2im
// does, the output positions whose windows read it (no atomics, a deterministic sum).
__kernel void depthwise_input_grad(WindowDesc d, OPERAND(0), OPERAND(1), OPERAND(2), long multiplier) {
  long id = get_global_id(0);
  if (id >= d.batch * d.channels * d.image[0] * d.image[1]) return;
  __global ST(T)* out = ELEMENTS(base0, offset0) + id * d.image[2];
  const long p1 = id % d.image[1];
  id /= d.image[1];
  const long p0 = id % d.image[0];
  id /= d.image[0];
  const long c = id % d.channels, n = id / d.channels;
  for (long p2 = 0; p2 < d.image[2]; ++p2) out[p2] = (ST(T))0;
  for (long m = 0; m < multiplier; ++m) {
    const long oc = c * multiplier + m;
    __global const ST(T)* grad = ELEMENTS(base1, offset1) + (n * d.channels * multiplier + oc) * POSITIONS(d);
    __global const ST(T)* w = ELEMENTS(base2, offset2) + oc * WINDOW(d);
    for (long k0 = 0; k0 < d.window[0]; ++k0) {
      const long q0 = p0 + d.padding[0] - k0 * d.dilation[0];
      if (q0 < 0 || q0 % d.stride[0] != 0 || q0 / d.stride[0] >= d.out[0]) continue;
      for (long k1 = 0; k1 < d.window[1]; ++k1) {
        const long q1 = p1 + d.padding[1] - k1 * d.dilation[1];
        if (q1 < 0 || q1 % d.stride[1] != 0 || q1 / d.stride[1] >= d.out[1]) continue;
        __global const ST(T)* row = grad + ((q0 / d.stride[0]) * d.out[1] + q1 / d.stride[1]) * d.out[2];
        for (long k2 = 0; k2 < d.window[2]; ++k2) {
          const ST(T) weight = w[(k0 * d.window[1] + k1) * d.window[2] + k2];
          const long first = k2 * d.dilation[2] - d.padding[2];  // o_2 reads p_2 = o_2 * stride + first
          long lo, hi;
          inside_range(first, d.stride[2], d.image[2], d.out[2], &lo, &hi);
          if (d.stride[2] == 1) {
            for (long o2 = lo; o2 < hi; ++o2) out[o2 + first] += weight * row[o2];
          } else {
            for (long o2 = lo; o2 < hi; ++o2) out[o2 * d.stride[2] + first] += weight * row[o2];
          }
        }
      }
    }
  }
}

// The weight's gradient: one work-group per weight element (oc, k) sums over the batch and the
// output positions, its work-items taking output rows (n, o_0, o_1) in turn, each a contiguous
// run of o_2, then adding their sums in local memory (ops/convolution.cpp launches groups of this size).
#define DEPTHWISE_GROUP 64
__kernel void depthwise_weight_grad(WindowDesc d, OPERAND(0), OPERAND(1), OPERAND(2), long multiplier) {
  __local ST(T) partial[DEPTHWISE_GROUP];
  const long element = get_group_id(0), oc = element / WINDOW(d), k = element % WINDOW(d);
  const long k2 = k % d.window[2], k1 = (k / d.window[2]) % d.window[1], k0 = k / (d.window[2] * d.window[1]);
  const long first = k2 * d.dilation[2] - d.padding[2];  // p_2 = o_2 * stride + first
  long lo, hi;
  inside_range(first, d.stride[2], d.image[2], d.out[2], &lo, &hi);
  const long out_channels = d.channels * multiplier, rows = d.batch * d.out[0] * d.out[1];
  ST(T) sum = 0;
  CAT(CAT(C_, T), 8) lanes = 0;
  for (long row = get_local_id(0); row < rows; row += DEPTHWISE_GROUP) {
    const long o1 = row % d.out[1], o0 = (row / d.out[1]) % d.out[0], n = row / (d.out[1] * d.out[0]);
    const long p0 = o0 * d.stride[0] - d.padding[0] + k0 * d.dilation[0];
    const long p1 = o1 * d.stride[1] - d.padding[1] + k1 * d.dilation[1];
    if (p0 < 0 || p0 >= d.image[0] || p1 < 0 || p1 >= d.image[1]) continue;
    __global const ST(T)* grad =
        ELEMENTS(base1, offset1) + ((n * out_channels + oc) * d.out[0] * d.out[1] + o0 * d.out[1] + o1) * d.out[2];
    __global const ST(T)* in = ELEMENTS(base2, offset2) + n * d.image_stride[0] +
                               (oc / multiplier) * d.image_stride[1] + p0 * d.image_stride[2] + p1 * d.image_stride[3];
    long o2 = lo;
    if (d.stride[2] * d.image_stride[4] == 1) {
      // Lanes of a vector hold partial sums: a loop into one scalar sum would not vectorize
      // (OpenCL C does not reassociate float additions).
      for (; o2 + 8 <= hi; o2 += 8) lanes += vload8(0, grad + o2) * vload8(0, in + o2 + first);
      for (; o2 < hi; ++o2) sum += grad[o2] * in[o2 + first];
    }
    for (; o2 < hi; ++o2) sum += grad[o2] * in[(o2 * d.stride[2] + first) * d.image_stride[4]];
  }
  sum += lanes.s0 + lanes.s1 + lanes.s2 + lanes.s3 + lanes.s4 + lanes.s5 + lanes.s6 + lanes.s7;
  const int lid = get_local_id(0);
  partial[lid] = sum;
  for (int half_size = DEPTHWISE_GROUP / 2; half_size > 0; half_size /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < half_size) partial[lid] += partial[lid + half_size];
  }
  if (lid == 0) ELEMENTS(base0, offset0)[element] = partial[0];
}
