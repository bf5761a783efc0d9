// GEMM for CPU-class devices (kernels/packed_gemm.cpp): B, and A when it is transposed (or
// float16), are first packed into panels that the product then reads as contiguous streams (an A
// of contiguous rows is read in place), and each work-item keeps an MR x (NV * VW) tile of C in
// vector registers.
// Built with -DREAL (float or double), -DMR, -DNV and -DVW (REALs per SIMD register) chosen from
// the device's vector unit, and for float16 or bfloat16 operands -DSTORAGE_F16 or -DSTORAGE_BF16:
// A, B and C are stored in 16 bits, B packed into float panels and C rounded once (to nearest
// even), so that no widened copies are made.
#define TILE_N (NV * VW)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VEC CAT(REAL, VW)
#define VLOAD CAT(vload, VW)
#define VSTORE CAT(vstore, VW)
// LOAD_S/STORE_S: one element of A, B or C as REAL; VLOAD_S/VSTORE_S: VW of them.
#if defined(STORAGE_F16)
typedef half storage;
// PoCL converts half to float in software, too slowly for the product's inner loop: A is always
// packed, into float panels, which the product reads as they are (A_T, LOAD_A).
typedef REAL A_T;
#define LOAD_A(p, i) ((p)[i])
#define PACK_A_LOAD LOAD_S
#define LOAD_S(p, i) vload_half((i), (p))
#define STORE_S(p, i, v) vstore_half_rte((v), (i), (p))
#define VLOAD_S(p) CAT(vload_half, VW)(0, (p))
#define VSTORE_S(p, v) CAT(CAT(vstore_half, VW), _rte)((v), 0, (p))
#elif defined(STORAGE_BF16)
typedef ushort storage;
#define LOAD_S(p, i) bf16_to_float((p)[i])
#define STORE_S(p, i, v) ((p)[i] = float_to_bf16(v))
#define VLOAD_S(p) CAT(as_float, VW)(CAT(convert_uint, VW)(CAT(vload, VW)(0, (p))) << 16)
#define VSTORE_S(p, v) CAT(vstore, VW)(bf16_vector(v), 0, (p))
// float_to_bf16 (common.clh) lane by lane: to nearest even, NaN kept quiet.
inline CAT(ushort, VW) bf16_vector(VEC f) {
  const CAT(uint, VW) u = CAT(as_uint, VW)(f);
  const CAT(ushort, VW) rounded = CAT(convert_ushort, VW)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  return select(rounded, (CAT(ushort, VW))(0x7FC0), CAT(convert_ushort, VW)(isnan(f)));
}
#else
typedef REAL storage;
#define LOAD_S(p, i) ((p)[i])
#define STORE_S(p, i, v) ((p)[i] = (v))
#define VLOAD_S(p) VLOAD(0, (p))
#define VSTORE_S(p, v) VSTORE((v), 0, (p))
#endif
#ifndef LOAD_A  // A read as it is stored, in place or from panels of its own bits
typedef storage A_T;
#define LOAD_A LOAD_S
#define PACK_A_LOAD(p, i) ((p)[i])
#endif

// Panels of R rows of a (rows x depth) operand whose element (r, d) is at
// x[offset + batch * batch_stride + r * row_stride + d * depth_stride]: panel p holds, for each
// d of the depth slice [depth0, depth0 + depth), its rows p * R ... contiguously, zero past the
// last row so that the product needs no edge cases. One work-item per (d, panel, batch);
// adjacent work-items read adjacent depths. pack_a_panels makes A's panels (R = MR) of A_T, which
// the product reads as it reads A in place; pack_b_panels those of B^T (R = TILE_N), widened to
// REAL. R known at compile time unrolls the copy.
#define PACK_PANELS(name, R, PANEL, LOAD)                                                                            \
  __kernel void name(__global const storage* x, ulong offset, long row_stride, long depth_stride, long batch_stride, \
                     int rows, int depth0, int depth, __global PANEL* panels, ulong panels_offset) {                 \
    const int d = get_global_id(0), panel = get_global_id(1);                                                        \
    const long batch = get_global_id(2);                                                                             \
    if (d >= depth) return;                                                                                          \
    const int panel_count = (rows + (R) - 1) / (R);                                                                  \
    __global const storage* src = x + offset + batch * batch_stride + (long)(depth0 + d) * depth_stride;             \
    __global PANEL* dst = panels + panels_offset + ((batch * panel_count + panel) * (long)depth + d) * (R);          \
    _Pragma("unroll") for (int i = 0; i < (R); ++i) {                                                                \
      const int r = panel * (R) + i;                                                                                 \
      dst[i] = r < rows ? LOAD(src, (long)r * row_stride) : (PANEL)0;                                                \
    }                                                                                                                \
  }
PACK_PANELS(pack_a_panels, MR, A_T, PACK_A_LOAD)
PACK_PANELS(pack_b_panels, TILE_N, REAL, LOAD_S)

// Where the product reads A (kernels/packed_gemm.h: ALayout): element (r, d) of matrix b at
// a[offset + b * batch_stride + row(r) + depth(d)], with
//   row(r) = (r / row_group) * group_stride + (r % row_group / row_width) * row_y_stride
//            + (r % row_width) * row_x_stride,
//   depth(d) = (d / depth_width) * depth_y_stride + (d % depth_width) * depth_x_stride.
// A plain matrix has one row per group and one line of depth; A's packed panels are groups of MR
// rows; a convolution's columns are windows of its (padded) image, read in place.
typedef struct {
  ulong offset;
  long row_group, row_width, group_stride, row_y_stride, row_x_stride;
  long depth_width, depth_y_stride, depth_x_stride;
  long batch_stride;
} ALayout;

// C = alpha * A @ B + beta * C over A (read where ALayout says) and packed panels of B^T (TILE_N
// columns each). C's element (i, j) is at c[offset + batch * batch_stride + i * row_stride + j];
// beta == 0 never reads C.
__kernel void packed_gemm(int m, int n, int depth, REAL alpha, REAL beta, __global const A_T* a, ALayout ad,
                          __global const REAL* b_panels, ulong b_offset, __global storage* c, ulong c_offset,
                          long c_row_stride, long c_batch_stride) {
  const int pm = get_global_id(0), pn = get_global_id(1);
  const long batch = get_global_id(2);
  const int panels_n = (n + TILE_N - 1) / TILE_N;
  // Rows past m read row m - 1: their results are never stored.
  __global const A_T* ar[MR];
  _Pragma("unroll") for (int i = 0; i < MR; ++i) {
    const long r = min(pm * MR + i, m - 1), in_group = r % ad.row_group;
    ar[i] = a + ad.offset + batch * ad.batch_stride + r / ad.row_group * ad.group_stride +
            in_group / ad.row_width * ad.row_y_stride + in_group % ad.row_width * ad.row_x_stride;
  }
  __global const REAL* bp = b_panels + b_offset + (batch * panels_n + pn) * (long)depth * TILE_N;
  // Constant trip counts unrolled: the accumulators must live in registers, not in memory.
  VEC acc[MR][NV];
  _Pragma("unroll") for (int i = 0; i < MR; ++i) _Pragma("unroll") for (int v = 0; v < NV; ++v) acc[i][v] = (VEC)(0);
  // The depth line by line of A (a plain matrix has one).
  for (int d = 0, line = 0; d < depth; ++line) {
    const long line_offset = line * ad.depth_y_stride;
    for (int x = 0, end = min((long)depth, d + ad.depth_width); d < end; ++d, ++x) {
      VEC bv[NV];
      _Pragma("unroll") for (int v = 0; v < NV; ++v) bv[v] = VLOAD(v, bp + d * TILE_N);
      const long at = line_offset + x * ad.depth_x_stride;
      _Pragma("unroll") for (int i = 0; i < MR; ++i) {
        const VEC ai = (VEC)(LOAD_A(ar[i], at));
        _Pragma("unroll") for (int v = 0; v < NV; ++v) acc[i][v] = fma(ai, bv[v], acc[i][v]);
      }
    }
  }
  __global storage* cb = c + c_offset + batch * c_batch_stride;
  const int row0 = pm * MR, col0 = pn * TILE_N;
  _Pragma("unroll") for (int i = 0; i < MR; ++i) {
    if (row0 + i >= m) break;
    _Pragma("unroll") for (int v = 0; v < NV; ++v) {
      const int col = col0 + v * VW;
      if (col >= n) break;
      VEC r = alpha * acc[i][v];
      __global storage* out = cb + (row0 + i) * c_row_stride + col;
      if (col + VW <= n) {
        if (beta != 0) r = fma((VEC)(beta), VLOAD_S(out), r);
        VSTORE_S(out, r);
        continue;
      }
      REAL part[VW];
      VSTORE(r, 0, part);
      for (int j = 0; j < VW && col + j < n; ++j) STORE_S(out, j, beta != 0 ? fma(beta, LOAD_S(out, j), part[j]) : part[j]);
    }
  }
}
