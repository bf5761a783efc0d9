// im2col and col2im for convolutions of 1 to 3 spatial dims (fewer dims are padded with leading
// dims of size 1). Columns hold row (c, k_0, k_1, k_2) and column (o_0, o_1, o_2) of sample n at
// n * column_stride[0] + row * column_stride[1] + column: (N, C * K, L) for unfold/fold, or
// (C * K, N, L) for convolutions, whose whole batch is then one GEMM. K = prod(window), the
// kernel's extent (`kernel` is a keyword of OpenCL C).
// A window position reads image position o * stride - padding + k * dilation, or 0 outside the
// image, so no padded copy of the image is made. Built with -DPANEL_COLUMNS=P, im2col_panels and
// im2col_transposed_panels write them as the packed GEMM's panels of B (kernels/packed_gemm.h).
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
#define WINDOW(d) ((d).window[0] * (d).window[1] * (d).window[2])
#define POSITIONS(d) ((d).out[0] * (d).out[1] * (d).out[2])

// The window positions o_2 in [0, out) that read image positions p = o * stride + first inside
// [0, extent): [*lo, *hi).
inline void inside_range(long first, long stride, long extent, long out, long* lo, long* hi) {
  if (stride == 1) {  // the common case, without the divisions
    *hi = clamp(extent - first, 0L, out);
    *lo = min(max(-first, 0L), *hi);
    return;
  }
  // o * stride + first >= 0  <=>  o >= ceil(-first / stride); < extent  <=>  o <= floor((extent - 1 - first) / stride)
  *lo = first >= 0 ? 0 : (-first + stride - 1) / stride;
  *hi = extent - 1 - first < 0 ? 0 : min(out, (extent - 1 - first) / stride + 1);
  *lo = min(*lo, *hi);
}

// A row of the columns: channel c and window offset (k_0, k_1, k_2).
typedef struct {
  long c, k0, k1, k2;
} WindowOffset;

inline WindowOffset window_offset(const WindowDesc* d, long row) {
  const long k = row % WINDOW(*d);
  WindowOffset w = {row / WINDOW(*d), k / (d->window[2] * d->window[1]), (k / d->window[2]) % d->window[1],
                    k % d->window[2]};
  return w;
}

// The next row's, by counting (the panel kernels walk rows without dividing).
inline void next_window_offset(const WindowDesc* d, WindowOffset* w) {
  if (++w->k2 < d->window[2]) return;
  w->k2 = 0;
  if (++w->k1 < d->window[1]) return;
  w->k1 = 0;
  if (++w->k0 < d->window[0]) return;
  w->k0 = 0;
  ++w->c;
}

// What row w of window row (n, o_0, o_1) reads along o_2: for o_2 in [lo, hi) in[o_2 * step +
// shift], zero elsewhere (where the window hangs over the image).
typedef struct {
  __global const ST(T)* in;
  long lo, hi, step, shift;
} WindowRun;

inline WindowRun window_run(const WindowDesc* d, __global char* image, long n, WindowOffset w, long o0, long o1) {
  long p0 = o0 * d->stride[0] - d->padding[0] + w.k0 * d->dilation[0];
  long p1 = o1 * d->stride[1] - d->padding[1] + w.k1 * d->dilation[1];
  const long first = w.k2 * d->dilation[2] - d->padding[2];  // p_2 = o_2 * stride + first
  WindowRun r;
  r.lo = r.hi = 0;
  if (p0 >= 0 && p0 < d->image[0] && p1 >= 0 && p1 < d->image[1]) {
    inside_range(first, d->stride[2], d->image[2], d->out[2], &r.lo, &r.hi);
  } else {
    p0 = p1 = 0;  // nothing is read; keeps the row's address inside the image
  }
  r.in = (__global const ST(T)*)image + n * d->image_stride[0] + w.c * d->image_stride[1] + p0 * d->image_stride[2] +
         p1 * d->image_stride[3];
  r.step = d->stride[2] * d->image_stride[4];
  r.shift = first * d->image_stride[4];
  return r;
}

// Writes run r's o_2 in [a, b) to DST(o2): zeros, the copy (a contiguous loop for unit strides,
// so that it vectorizes), zeros.
#define WRITE_RUN(r, a, b, DST)                                                                          \
  {                                                                                                      \
    const long a_ = (a), b_ = (b), lo_ = max(a_, min(b_, (r).lo)), hi_ = max(lo_, min(b_, (r).hi));      \
    for (long o2 = a_; o2 < lo_; ++o2) DST(o2) = (ST(T))0;                                               \
    if ((r).step == 1) {                                                                                 \
      for (long o2 = lo_; o2 < hi_; ++o2) DST(o2) = (r).in[o2 + (r).shift];                              \
    } else {                                                                                             \
      for (long o2 = lo_; o2 < hi_; ++o2) DST(o2) = (r).in[o2 * (r).step + (r).shift];                   \
    }                                                                                                    \
    for (long o2 = hi_; o2 < b_; ++o2) DST(o2) = (ST(T))0;                                               \
  }

// One work-item per (n, row, o_0, o_1), walking o_2.
__kernel void im2col(WindowDesc d, OPERAND(0), OPERAND(1)) {
  long id = get_global_id(0);
  if (id >= d.batch * d.channels * WINDOW(d) * d.out[0] * d.out[1]) return;
  const long o1 = id % d.out[1];
  id /= d.out[1];
  const long o0 = id % d.out[0];
  id /= d.out[0];
  const long row = id % (d.channels * WINDOW(d)), n = id / (d.channels * WINDOW(d));
  __global ST(T)* out = ELEMENTS(base0, offset0) + n * d.column_stride[0] + row * d.column_stride[1] +
                        (o0 * d.out[1] + o1) * d.out[2];
  const WindowRun r = window_run(&d, base1 + offset1, n, window_offset(&d, row), o0, o1);
#define DST(o2) out[o2]
  WRITE_RUN(r, 0, d.out[2], DST);
#undef DST
}

#ifdef PANEL_COLUMNS
#define P PANEL_COLUMNS

// Built with -DPANEL_COLUMNS=P: the columns as the packed GEMM's panels of B (kernels/packed_gemm.h)
// for correlate's product weight @ columns, whose depth is the rows (c, k): column j at
// ((j / P) * rows + row) * P + j % P. Sample n's columns start at j = n * column_stride[0] (its
// positions rounded up to whole panels when each sample is its own product, or not when the batch
// is one); zeros fill the gaps and the last panel. One work-item per (panel, row), writing that
// row's P columns: consecutive work-items write consecutive memory. The P columns are cut into
// runs of o_2.
__kernel void im2col_panels(WindowDesc d, OPERAND(0), OPERAND(1)) {
  const long rows = d.channels * WINDOW(d), positions = POSITIONS(d);
  const long columns = (d.batch - 1) * d.column_stride[0] + positions;
  const long id = get_global_id(0);
  if (id >= (columns + P - 1) / P * rows) return;
  const long row = id % rows, j0 = id / rows * P;
  __global ST(T)* out = ELEMENTS(base0, offset0) + id * P - j0;  // out[j]: column j of this row
  const WindowOffset w = window_offset(&d, row);
  // Column j is position l of sample n, o_2 of window row (o_0, o_1); counted, not divided, as j grows.
  long n = j0 / d.column_stride[0], l = j0 - n * d.column_stride[0], o0 = 0, o1 = 0, o2 = 0;
  if (l < positions) {
    o2 = l % d.out[2];
    o1 = l / d.out[2] % d.out[1];
    o0 = l / (d.out[2] * d.out[1]);
  }
  for (long j = j0, end = j0 + P; j < end;) {
    if (n >= d.batch || l >= positions) {  // a gap: zeros up to the next sample
      for (const long stop = min(end, (n + 1) * d.column_stride[0]); j < stop; ++j) out[j] = (ST(T))0;
      ++n;
      l = o0 = o1 = o2 = 0;
      continue;
    }
    const long run = min(end - j, d.out[2] - o2);
    const WindowRun r = window_run(&d, base1 + offset1, n, w, o0, o1);
    __global ST(T)* run_out = out + j - o2;
#define DST(o) run_out[o]
    WRITE_RUN(r, o2, o2 + run, DST);
#undef DST
    j += run;
    l += run;
    if ((o2 += run) == d.out[2]) {
      o2 = 0;
      if (++o1 == d.out[1]) {
        o1 = 0;
        ++o0;
      }
    }
  }
}

// The columns transposed, as the panels of B for the weight gradient's product
// result @ columns^T, whose depth is the output positions and whose columns are the rows (c, k):
// row r of position p at ((r / P) * depth + p) * P + r % P, zero past the last row. Each sample is
// its own product (matrix n at n * column_stride[0], depth = positions) or the batch is one
// (column_stride[0] = 0, sample n's positions from n * column_stride[1]). One work-item per
// (panel, n, o_0, o_1): the P rows of its panel for the o_2 of its window row, out[2] * P
// consecutive elements.
__kernel void im2col_transposed_panels(WindowDesc d, OPERAND(0), OPERAND(1)) {
  const long rows = d.channels * WINDOW(d), depth = (d.batch - 1) * d.column_stride[1] + POSITIONS(d);
  const long lines = d.batch * d.out[0] * d.out[1];
  const long id = get_global_id(0);
  if (id >= (rows + P - 1) / P * lines) return;
  const long panel = id / lines, line = id % lines;  // line = (n * out[0] + o_0) * out[1] + o_1
  const long o1 = line % d.out[1], o0 = (line / d.out[1]) % d.out[0], n = line / (d.out[1] * d.out[0]);
  const long position = n * d.column_stride[1] + (o0 * d.out[1] + o1) * d.out[2];
  __global ST(T)* out = ELEMENTS(base0, offset0) + n * d.column_stride[0] + (panel * depth + position) * P;
  // The P rows' runs first, then each position's P elements in turn: contiguous stores.
  long start[P], lo[P], hi[P];
  long step = 0;
  __global const ST(T)* image = (__global const ST(T)*)(base1 + offset1);
  WindowOffset w = window_offset(&d, panel * P);
  for (int i = 0; i < P; ++i, next_window_offset(&d, &w)) {
    lo[i] = hi[i] = start[i] = 0;
    if (panel * P + i < rows) {
      const WindowRun r = window_run(&d, base1 + offset1, n, w, o0, o1);
      lo[i] = r.lo;
      hi[i] = r.hi;
      start[i] = (r.in - image) + r.shift;
      step = r.step;
    }
  }
  for (long o2 = 0; o2 < d.out[2]; ++o2) {
    for (int i = 0; i < P; ++i) out[o2 * P + i] = o2 >= lo[i] && o2 < hi[i] ? image[start[i] + o2 * step] : (ST(T))0;
  }
}

#undef P
#endif

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
