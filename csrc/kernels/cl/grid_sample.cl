// grid_sample: output position o of sample n reads the input at the point grid[n, o] (x, y[, z]
// normalized to [-1, 1] across W, H[, D]), bilinearly (trilinearly), at the nearest pixel, or
// bicubically (2-d only), with zeros, border or reflection padding. The arithmetic follows the
// CPU's step by step, contractions off, so results round as there: 3-d samplers as the scalar
// kernel (ATen/native/GridSampler.h), 2-d ones as the vectorized kernel the CPU runs for them
// (ATen/native/cpu/GridSamplerKernel.cpp), whose arithmetic differs (below) and whose build
// fuses some multiply-adds (x86 with FMA): those are written as fma.
//
// One work-item per (n, output position): the source position, taps and weights are computed
// once and applied to every channel. The backward's grid gradient sums over channels and taps
// inside that work-item, in the CPU's order; the input gradient adds into taps that other
// work-items share, so it is an atomic add (common.clh's ATOMIC_UPDATE) into an accumulator of
// the compute type (float32 for float16/bfloat16, rounded once afterwards by the host).
//
// T is the storage token of the input, grid and output, CT the compute type (f32 or f64).
#pragma OPENCL FP_CONTRACT OFF

#ifdef WORD64
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#define ACCUMULATE(p, v) ATOMIC_UPDATE(ulong, atom_cmpxchg, ct, p, GS_ADD, v)
#else
#define ACCUMULATE(p, v) ATOMIC_UPDATE(uint, atomic_cmpxchg, ct, p, GS_ADD, v)
#endif
#define GS_ADD(a, b) ((a) + (b))

// Spatial dims are (D, H, W); a 2-d sampler has D = 1 and no z coordinate.
typedef struct {
  long batch, channels;
  long in_size[3], out_size[3];
  long input_stride[5];       // elements of (n, c, d, h, w)
  long grid_stride[5];        // (n, d, h, w, coordinate)
  long out_stride[5];         // the output, or the gradient of the output
  long grad_input_stride[5];  // the accumulator
  long grad_grid_stride[5];
  int interpolation, padding, align_corners, pad_;
} GridDesc;

#define BILINEAR 0
#define NEAREST 1
#define BICUBIC 2
#define BORDER 1
#define REFLECTION 2

#define ELEMENT(k, i) (base##k + offset##k + (i) * (long)sizeof(ST(T)))
#define READ(k, i) TO(CT, LOAD(T, ELEMENT(k, i)))
#define WRITE(k, i, v) STORE(T, ELEMENT(k, i), TO(T, (v)))

// (long)v where it fits; otherwise (NaN included) LONG_MIN, as x86's conversion gives: outside
// every image, where OpenCL's conversion would be undefined.
inline long to_index(ct v) { return v >= (ct)-9.2e18 && v < (ct)9.2e18 ? (long)v : LONG_MIN; }

// ---- 3-d: GridSampler.h's scalar arithmetic.

inline ct unnormalize(ct coord, long size, int align_corners, ct* grad) {
  if (align_corners) {
    *grad = (ct)(size - 1) / 2;
    return ((coord + 1) / 2) * (ct)(size - 1);
  }
  *grad = (ct)size / 2;
  return ((coord + 1) * (ct)size - 1) / 2;
}

// std::min(size - 1, std::max(in, 0)), whose comparisons send NaN to size - 1 (fmin/fmax would not).
inline ct clip(ct in, long size) {
  const ct high = (ct)(size - 1);
  const ct low = in < (ct)0 ? (ct)0 : in;
  return low < high ? low : high;
}

// The backward's clip, which keeps NaN, and its derivative.
inline ct clip_set_grad(ct in, long size, ct* grad) {
  const ct high = (ct)(size - 1);
  if (in <= (ct)0) {
    *grad = 0;
    return 0;
  }
  if (in >= high) {
    *grad = 0;
    return high;
  }
  *grad = 1;
  return in;
}

// Reflects `in` into [twice_low / 2, twice_high / 2]; *grad is the sign of the reflection. The
// parity of the flips is taken as the CPU takes it, through an int (beyond its range, x86 gives
// INT_MIN: even).
inline ct reflect(ct in, long twice_low, long twice_high, ct* grad) {
  if (twice_low == twice_high) {
    *grad = 0;
    return 0;
  }
  const ct low = (ct)twice_low / 2, span = (ct)(twice_high - twice_low) / 2;
  in = in - low;
  ct sign = 1;
  if (in < (ct)0) {
    sign = -1;
    in = -in;
  }
  const ct extra = fmod(in, span);
  const ct flips = floor(in / span);
  const bool even = !(flips < (ct)2147483648.0) || ((int)flips % 2 == 0);
  *grad = even ? sign : -sign;
  return even ? extra + low : span - extra + low;
}

// compute_coordinates: the padding mode applied to an unnormalized coordinate.
inline ct pad_coordinate(ct coord, long size, int padding, int align_corners) {
  ct unused;
  if (padding == BORDER) return clip(coord, size);
  if (padding == REFLECTION) {
    coord = align_corners ? reflect(coord, 0, 2 * (size - 1), &unused) : reflect(coord, -1, 2 * size - 1, &unused);
    return clip(coord, size);
  }
  return coord;
}

inline ct source_index(ct coord, long size, int padding, int align_corners) {
  ct unused;
  return pad_coordinate(unnormalize(coord, size, align_corners, &unused), size, padding, align_corners);
}

// The source index and d(index)/d(coord), multiplied in the CPU's order.
inline ct source_index_set_grad(ct coord, long size, int padding, int align_corners, ct* grad) {
  ct g_clip, g_reflect;
  coord = unnormalize(coord, size, align_corners, grad);
  if (padding == BORDER) {
    coord = clip_set_grad(coord, size, &g_clip);
    *grad = *grad * g_clip;
  } else if (padding == REFLECTION) {
    coord = align_corners ? reflect(coord, 0, 2 * (size - 1), &g_reflect) : reflect(coord, -1, 2 * size - 1, &g_reflect);
    coord = clip_set_grad(coord, size, &g_clip);
    *grad = *grad * g_reflect * g_clip;
  }
  return coord;
}

// ---- 2-d: the vectorized kernel's arithmetic. It unnormalizes as (x + 1) * scale (- 0.5), its
// forward clip sends NaN to 0, it reflects by a truncated division and one comparison, and its
// bilinear weights come from the distance to the floor.

inline ct scale_2d(long size, int align_corners) { return align_corners ? (ct)(size - 1) / 2 : (ct)size / 2; }

inline ct unnormalize_2d(ct coord, long size, int align_corners) {
  const ct scale = scale_2d(size, align_corners);
  return align_corners ? (coord + 1) * scale : fma(coord + 1, scale, (ct)-0.5);
}

// x86's max(in, 0) (NaN gives 0), then min with size - 1.
inline ct clip_2d(ct in, long size) {
  const ct high = (ct)(size - 1);
  const ct low = in > (ct)0 ? in : (ct)0;
  return low < high ? low : high;
}

// Reflection between low = -0.5 (0 with align_corners) and low + span; *grad is its sign. NaN
// stays NaN.
inline ct reflect_2d(ct in, long size, int align_corners, ct* grad) {
  if (align_corners && size <= 1) {
    *grad = 0;
    return 0;
  }
  const ct twice_span = align_corners ? (ct)(size - 1) * 2 : (ct)size * 2;
  const ct low = align_corners ? (ct)0 : (ct)-0.5;
  const ct shifted = in - low, a = fabs(shifted);
  const ct extra = a - trunc(a / twice_span) * twice_span, reflected = twice_span - extra;
  const bool flip = extra > reflected;
  *grad = flip != (shifted < (ct)0) ? (ct)-1 : (ct)1;
  return (flip ? reflected : extra) + low;
}

// compute_coordinates: the padding mode applied to an unnormalized coordinate.
inline ct pad_2d(ct coord, long size, int padding, int align_corners) {
  ct unused;
  if (padding == BORDER) return clip_2d(coord, size);
  if (padding == REFLECTION) return clip_2d(reflect_2d(coord, size, align_corners, &unused), size);
  return coord;
}

inline ct locate_2d(ct coord, long size, int padding, int align_corners) {
  return pad_2d(unnormalize_2d(coord, size, align_corners), size, padding, align_corners);
}

// The location and its derivative; the backward's clip keeps NaN (clip_set_grad is the same
// clip in both kernels).
inline ct locate_2d_set_grad(ct coord, long size, int padding, int align_corners, ct* grad) {
  const ct scale = scale_2d(size, align_corners);
  ct x = unnormalize_2d(coord, size, align_corners), g_clip, g_reflect;
  *grad = scale;
  if (padding == BORDER) {
    x = clip_set_grad(x, size, &g_clip);
    *grad = g_clip != 0 ? scale : (ct)0;
  } else if (padding == REFLECTION) {
    x = reflect_2d(x, size, align_corners, &g_reflect);
    const ct g = g_reflect * scale;
    x = clip_set_grad(x, size, &g_clip);
    *grad = g_clip != 0 ? g : (ct)0;
  }
  return x;
}

// Bicubic convolution with A = -0.75 and its derivative in t. (Where the CPU's compiler fused
// these multiply-adds was not found: a sample of outputs matched its result bit for bit in 2/3 of
// the points at best, so they stay as written.)
inline void cubic_coefficients(ct t, ct* c) {
  const ct A = (ct)-0.75;
  ct x = t + 1;
  c[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  x = 1 - t;
  c[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
  x = 2 - t;
  c[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}
inline void cubic_coefficients_grad(ct t, ct* c) {
  const ct A = (ct)-0.75;
  ct x = -1 - t;
  c[0] = (-3 * A * x - 10 * A) * x - 8 * A;
  x = 0 - t;
  c[1] = (-3 * (A + 2) * x - 2 * (A + 3)) * x;
  x = 1 - t;
  c[2] = (3 * (A + 2) * x - 2 * (A + 3)) * x;
  x = 2 - t;
  c[3] = (3 * A * x - 10 * A) * x + 8 * A;
}

// A bicubic tap at an integral coordinate: padded, truncated, -1 when outside.
inline long cubic_tap(ct coord, long size, int padding, int align_corners) {
  const ct t = trunc(pad_2d(coord, size, padding, align_corners));
  return t >= 0 && t < (ct)size ? (long)t : -1;
}

// The four bilinear corners of (ix, iy), nw, ne, sw, se: their pixel (px, py; px = -1 where the
// corner is outside) and weight, and the distances w, e, n, s to the cell's sides.
inline void bilinear_2d(ct ix, ct iy, long IH, long IW, long* px, long* py, ct* weight, ct* dist) {
  const ct fx = floor(ix), fy = floor(iy);
  const ct w = ix - fx, e = 1 - w, n = iy - fy, s = 1 - n;
  dist[0] = w;
  dist[1] = e;
  dist[2] = n;
  dist[3] = s;
  weight[0] = s * e;
  weight[1] = s * w;
  weight[2] = n * e;
  weight[3] = n * w;
  for (int k = 0; k < 4; ++k) {
    const ct cx = fx + (ct)(k & 1), cy = fy + (ct)(k >> 1);
    const bool inside = cx >= 0 && cx < (ct)IW && cy >= 0 && cy < (ct)IH;
    px[k] = inside ? (long)cx : -1;
    py[k] = inside ? (long)cy : -1;
  }
}

// Work-item id -> (n, od, oh, ow) and the offset of its grid point.
#define POSITION                                                                              \
  long id = get_global_id(0);                                                                 \
  if (id >= d.batch * d.out_size[0] * d.out_size[1] * d.out_size[2]) return;                  \
  const long ow = id % d.out_size[2];                                                         \
  id /= d.out_size[2];                                                                        \
  const long oh = id % d.out_size[1];                                                         \
  id /= d.out_size[1];                                                                        \
  const long od = id % d.out_size[0], n = id / d.out_size[0];                                 \
  const long g0 = n * d.grid_stride[0] + od * d.grid_stride[1] + oh * d.grid_stride[2] + ow * d.grid_stride[3]; \
  const long ID = d.in_size[0], IH = d.in_size[1], IW = d.in_size[2];                         \
  const long in0 = n * d.input_stride[0];                                                     \
  const long out0 = n * d.out_stride[0] + od * d.out_stride[2] + oh * d.out_stride[3] + ow * d.out_stride[4];

// out (0), input (1), grid (2).
__kernel void grid_sample_2d(GridDesc d, OPERAND(0), OPERAND(1), OPERAND(2)) {
  POSITION
  const ct x = READ(2, g0), y = READ(2, g0 + d.grid_stride[4]);
  const long sC = d.input_stride[1], sH = d.input_stride[3], sW = d.input_stride[4];
  if (d.interpolation == BILINEAR) {
    long px[4], py[4];
    ct weight[4], dist[4];
    bilinear_2d(locate_2d(x, IW, d.padding, d.align_corners), locate_2d(y, IH, d.padding, d.align_corners), IH, IW,
                px, py, weight, dist);
    for (long c = 0; c < d.channels; ++c) {
      const long base = in0 + c * sC;
      ct v[4];
      for (int k = 0; k < 4; ++k) v[k] = px[k] >= 0 ? READ(1, base + py[k] * sH + px[k] * sW) : (ct)0;
      // Outside corners add 0 * weight, as the CPU's masked gathers do (a NaN weight gives NaN).
      ct sum = v[0] * weight[0];
      for (int k = 1; k < 4; ++k) sum = fma(v[k], weight[k], sum);
      WRITE(0, out0 + c * d.out_stride[1], sum);
    }
  } else if (d.interpolation == NEAREST) {
    const ct fx = rint(locate_2d(x, IW, d.padding, d.align_corners));
    const ct fy = rint(locate_2d(y, IH, d.padding, d.align_corners));
    const bool inside = fx >= 0 && fx < (ct)IW && fy >= 0 && fy < (ct)IH;
    const long at = inside ? (long)fy * sH + (long)fx * sW : 0;
    for (long c = 0; c < d.channels; ++c) {
      WRITE(0, out0 + c * d.out_stride[1], inside ? READ(1, in0 + c * sC + at) : (ct)0);
    }
  } else {
    const ct ix = unnormalize_2d(x, IW, d.align_corners), iy = unnormalize_2d(y, IH, d.align_corners);
    const ct fx = floor(ix), fy = floor(iy);
    ct cx[4], cy[4];
    cubic_coefficients(ix - fx, cx);
    cubic_coefficients(iy - fy, cy);
    long tx[4], ty[4];
    for (int k = 0; k < 4; ++k) {
      tx[k] = cubic_tap(fx + (ct)(k - 1), IW, d.padding, d.align_corners);
      ty[k] = cubic_tap(fy + (ct)(k - 1), IH, d.padding, d.align_corners);
    }
    for (long c = 0; c < d.channels; ++c) {
      const long base = in0 + c * sC;
      ct rows[4];
      for (int j = 0; j < 4; ++j) {
        ct v[4];
        for (int i = 0; i < 4; ++i) v[i] = tx[i] >= 0 && ty[j] >= 0 ? READ(1, base + ty[j] * sH + tx[i] * sW) : (ct)0;
        rows[j] = cx[0] * v[0] + cx[1] * v[1] + cx[2] * v[2] + cx[3] * v[3];
      }
      WRITE(0, out0 + c * d.out_stride[1], cy[0] * rows[0] + cy[1] * rows[1] + cy[2] * rows[2] + cy[3] * rows[3]);
    }
  }
}

__kernel void grid_sample_3d(GridDesc d, OPERAND(0), OPERAND(1), OPERAND(2)) {
  POSITION
  const ct x = READ(2, g0), y = READ(2, g0 + d.grid_stride[4]), z = READ(2, g0 + 2 * d.grid_stride[4]);
  const long sC = d.input_stride[1], sD = d.input_stride[2], sH = d.input_stride[3], sW = d.input_stride[4];
  const ct ix = source_index(x, IW, d.padding, d.align_corners), iy = source_index(y, IH, d.padding, d.align_corners);
  const ct iz = source_index(z, ID, d.padding, d.align_corners);
  if (d.interpolation == BILINEAR) {
    const long x0 = to_index(floor(ix)), y0 = to_index(floor(iy)), z0 = to_index(floor(iz));
    const ct wx[2] = {(ct)(x0 + 1) - ix, ix - (ct)x0}, wy[2] = {(ct)(y0 + 1) - iy, iy - (ct)y0};
    const ct wz[2] = {(ct)(z0 + 1) - iz, iz - (ct)z0};
    for (long c = 0; c < d.channels; ++c) {
      const long base = in0 + c * sC;
      ct v = 0;
      for (int k = 0; k < 2; ++k) {
        for (int j = 0; j < 2; ++j) {
          for (int i = 0; i < 2; ++i) {
            const long xi = x0 + i, yj = y0 + j, zk = z0 + k;
            if (xi >= 0 && xi < IW && yj >= 0 && yj < IH && zk >= 0 && zk < ID)
              v += READ(1, base + zk * sD + yj * sH + xi * sW) * (wx[i] * wy[j] * wz[k]);
          }
        }
      }
      WRITE(0, out0 + c * d.out_stride[1], v);
    }
  } else {
    const long xi = to_index(rint(ix)), yi = to_index(rint(iy)), zi = to_index(rint(iz));
    const bool inside = xi >= 0 && xi < IW && yi >= 0 && yi < IH && zi >= 0 && zi < ID;
    for (long c = 0; c < d.channels; ++c) {
      WRITE(0, out0 + c * d.out_stride[1], inside ? READ(1, in0 + c * sC + zi * sD + yi * sH + xi * sW) : (ct)0);
    }
  }
}

// The backward's operands: the input-gradient accumulator (0, of ct, dense), the grid gradient
// (1), the output gradient (2), input (3), grid (4). want_input / want_grid: which gradients
// are asked for (output_mask); an operand not asked for is never touched.
#define GRAD_INPUT(i) ((__global ct*)(base0 + offset0) + (i))
#define BACKWARD_SETUP                                                                            \
  POSITION                                                                                        \
  const long gi0 = n * d.grad_input_stride[0];                                                    \
  const long gg0 = n * d.grad_grid_stride[0] + od * d.grad_grid_stride[1] + oh * d.grad_grid_stride[2] + \
                   ow * d.grad_grid_stride[3];

__kernel void grid_sample_2d_backward(GridDesc d, OPERAND(0), OPERAND(1), OPERAND(2), OPERAND(3), OPERAND(4),
                                      int want_input, int want_grid) {
  BACKWARD_SETUP
  const ct x = READ(4, g0), y = READ(4, g0 + d.grid_stride[4]);
  const long sC = d.input_stride[1], sH = d.input_stride[3], sW = d.input_stride[4];
  const long gC = d.grad_input_stride[1], gH = d.grad_input_stride[3], gW = d.grad_input_stride[4];
  ct gx = 0, gy = 0, mx = 0, my = 0;
  if (d.interpolation == BILINEAR) {
    const ct ix = locate_2d_set_grad(x, IW, d.padding, d.align_corners, &mx);
    const ct iy = locate_2d_set_grad(y, IH, d.padding, d.align_corners, &my);
    long px[4], py[4];
    ct weight[4], dist[4];
    bilinear_2d(ix, iy, IH, IW, px, py, weight, dist);
    const ct w = dist[0], e = dist[1], n_ = dist[2], s = dist[3];
    for (long c = 0; c < d.channels; ++c) {
      const ct g = READ(2, out0 + c * d.out_stride[1]);
      if (want_input) {
        for (int k = 0; k < 4; ++k)
          if (px[k] >= 0) ACCUMULATE(GRAD_INPUT(gi0 + c * gC + py[k] * gH + px[k] * gW), weight[k] * g);
      }
      if (want_grid) {
        ct v[4];
        for (int k = 0; k < 4; ++k) v[k] = px[k] >= 0 ? READ(3, in0 + c * sC + py[k] * sH + px[k] * sW) : (ct)0;
        gx = fma(fma(v[3] - v[2], n_, (v[1] - v[0]) * s), g, gx);
        gy = fma(fma(v[3] - v[1], w, (v[2] - v[0]) * e), g, gy);
      }
    }
  } else if (d.interpolation == NEAREST) {
    // The grid's gradient is 0; the input's uses the forward's location (no clip gradient).
    if (want_input) {
      const ct fx = rint(locate_2d(x, IW, d.padding, d.align_corners));
      const ct fy = rint(locate_2d(y, IH, d.padding, d.align_corners));
      if (fx >= 0 && fx < (ct)IW && fy >= 0 && fy < (ct)IH) {
        const long at = gi0 + (long)fy * gH + (long)fx * gW;
        for (long c = 0; c < d.channels; ++c) ACCUMULATE(GRAD_INPUT(at + c * gC), READ(2, out0 + c * d.out_stride[1]));
      }
    }
  } else {
    const ct ix = unnormalize_2d(x, IW, d.align_corners), iy = unnormalize_2d(y, IH, d.align_corners);
    mx = scale_2d(IW, d.align_corners);
    my = scale_2d(IH, d.align_corners);
    const ct fx = floor(ix), fy = floor(iy);
    ct cx[4], cy[4], dcx[4], dcy[4];
    cubic_coefficients(ix - fx, cx);
    cubic_coefficients(iy - fy, cy);
    cubic_coefficients_grad(ix - fx, dcx);
    cubic_coefficients_grad(iy - fy, dcy);
    long tx[4], ty[4];
    for (int k = 0; k < 4; ++k) {
      tx[k] = cubic_tap(fx + (ct)(k - 1), IW, d.padding, d.align_corners);
      ty[k] = cubic_tap(fy + (ct)(k - 1), IH, d.padding, d.align_corners);
    }
    for (long c = 0; c < d.channels; ++c) {
      const ct g = READ(2, out0 + c * d.out_stride[1]);
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          const bool inside = tx[i] >= 0 && ty[j] >= 0;
          if (want_input && inside) ACCUMULATE(GRAD_INPUT(gi0 + c * gC + ty[j] * gH + tx[i] * gW), g * cx[i] * cy[j]);
          if (want_grid) {
            const ct v = inside ? READ(3, in0 + c * sC + ty[j] * sH + tx[i] * sW) : (ct)0;
            gx = gx - v * g * dcx[i] * cy[j];
            gy = gy - v * g * dcy[j] * cx[i];
          }
        }
      }
    }
  }
  if (want_grid) {
    WRITE(1, gg0, gx * mx);
    WRITE(1, gg0 + d.grad_grid_stride[4], gy * my);
  }
}

__kernel void grid_sample_3d_backward(GridDesc d, OPERAND(0), OPERAND(1), OPERAND(2), OPERAND(3), OPERAND(4),
                                      int want_input, int want_grid) {
  BACKWARD_SETUP
  const ct x = READ(4, g0), y = READ(4, g0 + d.grid_stride[4]), z = READ(4, g0 + 2 * d.grid_stride[4]);
  const long sC = d.input_stride[1], sD = d.input_stride[2], sH = d.input_stride[3], sW = d.input_stride[4];
  const long gC = d.grad_input_stride[1], gD = d.grad_input_stride[2], gH = d.grad_input_stride[3];
  const long gW = d.grad_input_stride[4];
  ct gx = 0, gy = 0, gz = 0, mx, my, mz;
  const ct ix = source_index_set_grad(x, IW, d.padding, d.align_corners, &mx);
  const ct iy = source_index_set_grad(y, IH, d.padding, d.align_corners, &my);
  const ct iz = source_index_set_grad(z, ID, d.padding, d.align_corners, &mz);
  if (d.interpolation == BILINEAR) {
    const long x0 = to_index(floor(ix)), y0 = to_index(floor(iy)), z0 = to_index(floor(iz));
    const ct wx[2] = {(ct)(x0 + 1) - ix, ix - (ct)x0}, wy[2] = {(ct)(y0 + 1) - iy, iy - (ct)y0};
    const ct wz[2] = {(ct)(z0 + 1) - iz, iz - (ct)z0};
    for (long c = 0; c < d.channels; ++c) {
      const ct g = READ(2, out0 + c * d.out_stride[1]);
      for (int k = 0; k < 2; ++k) {
        for (int j = 0; j < 2; ++j) {
          for (int i = 0; i < 2; ++i) {
            const long xi = x0 + i, yj = y0 + j, zk = z0 + k;
            if (!(xi >= 0 && xi < IW && yj >= 0 && yj < IH && zk >= 0 && zk < ID)) continue;
            if (want_input)
              ACCUMULATE(GRAD_INPUT(gi0 + c * gC + zk * gD + yj * gH + xi * gW), wx[i] * wy[j] * wz[k] * g);
            if (want_grid) {
              const ct v = READ(3, in0 + c * sC + zk * sD + yj * sH + xi * sW);
              const ct dx = v * wy[j] * wz[k] * g, dy = v * wx[i] * wz[k] * g, dz = v * wx[i] * wy[j] * g;
              gx = i ? gx + dx : gx - dx;
              gy = j ? gy + dy : gy - dy;
              gz = k ? gz + dz : gz - dz;
            }
          }
        }
      }
    }
  } else {
    if (want_input) {
      const long xi = to_index(rint(ix)), yi = to_index(rint(iy)), zi = to_index(rint(iz));
      if (xi >= 0 && xi < IW && yi >= 0 && yi < IH && zi >= 0 && zi < ID) {
        for (long c = 0; c < d.channels; ++c)
          ACCUMULATE(GRAD_INPUT(gi0 + c * gC + zi * gD + yi * gH + xi * gW), READ(2, out0 + c * d.out_stride[1]));
      }
    }
    mx = my = mz = 0;
  }
  if (want_grid) {
    WRITE(1, gg0, mx * gx);
    WRITE(1, gg0 + d.grad_grid_stride[4], my * gy);
    WRITE(1, gg0 + 2 * d.grad_grid_stride[4], mz * gz);
  }
}
