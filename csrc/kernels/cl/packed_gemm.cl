// GEMM for CPU-class devices (kernels/packed_gemm.cpp): both operands are first packed into
// panels that the product then reads as contiguous streams, and each work-item keeps an
// MR x (NV * VW) tile of C in vector registers. Built with -DREAL (float or double), -DMR, -DNV
// and -DVW (REALs per SIMD register) chosen from the device's vector unit.
#define TILE_N (NV * VW)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VEC CAT(REAL, VW)
#define VLOAD CAT(vload, VW)
#define VSTORE CAT(vstore, VW)

// Panels of R rows of a (rows x depth) operand whose element (r, d) is at
// x[offset + batch * batch_stride + r * row_stride + d * depth_stride]: panel p holds, for each
// d of the depth slice [depth0, depth0 + depth), its rows p * R ... contiguously, zero past the
// last row so that the product needs no edge cases. One work-item per (d, panel, batch);
// adjacent work-items read adjacent depths. pack_a_panels makes A's panels (R = MR),
// pack_b_panels those of B^T (R = TILE_N); R known at compile time unrolls the copy.
#define PACK_PANELS(name, R)                                                                                  \
  __kernel void name(__global const REAL* x, ulong offset, long row_stride, long depth_stride, long batch_stride, \
                     int rows, int depth0, int depth, __global REAL* panels, ulong panels_offset) {            \
    const int d = get_global_id(0), panel = get_global_id(1);                                                 \
    const long batch = get_global_id(2);                                                                      \
    if (d >= depth) return;                                                                                   \
    const int panel_count = (rows + (R) - 1) / (R);                                                           \
    __global const REAL* src = x + offset + batch * batch_stride + (long)(depth0 + d) * depth_stride;         \
    __global REAL* dst = panels + panels_offset + ((batch * panel_count + panel) * (long)depth + d) * (R);    \
    _Pragma("unroll") for (int i = 0; i < (R); ++i) {                                                         \
      const int r = panel * (R) + i;                                                                          \
      dst[i] = r < rows ? src[(long)r * row_stride] : (REAL)0;                                                \
    }                                                                                                         \
  }
PACK_PANELS(pack_a_panels, MR)
PACK_PANELS(pack_b_panels, TILE_N)

// C = alpha * A @ B + beta * C over packed panels of A (MR rows each) and of B^T (TILE_N columns
// each). C's element (i, j) is at c[offset + batch * batch_stride + i * row_stride + j]; beta == 0
// never reads C.
__kernel void packed_gemm(int m, int n, int depth, REAL alpha, REAL beta, __global const REAL* a_panels,
                          ulong a_offset, __global const REAL* b_panels, ulong b_offset, __global REAL* c,
                          ulong c_offset, long c_row_stride, long c_batch_stride) {
  const int pm = get_global_id(0), pn = get_global_id(1);
  const long batch = get_global_id(2);
  const int panels_m = (m + MR - 1) / MR, panels_n = (n + TILE_N - 1) / TILE_N;
  __global const REAL* ap = a_panels + a_offset + (batch * panels_m + pm) * (long)depth * MR;
  __global const REAL* bp = b_panels + b_offset + (batch * panels_n + pn) * (long)depth * TILE_N;
  // Constant trip counts unrolled: the accumulators must live in registers, not in memory.
  VEC acc[MR][NV];
  _Pragma("unroll") for (int i = 0; i < MR; ++i) _Pragma("unroll") for (int v = 0; v < NV; ++v) acc[i][v] = (VEC)(0);
  for (int d = 0; d < depth; ++d) {
    VEC bv[NV];
    _Pragma("unroll") for (int v = 0; v < NV; ++v) bv[v] = VLOAD(v, bp + d * TILE_N);
    _Pragma("unroll") for (int i = 0; i < MR; ++i) {
      const VEC ai = (VEC)(ap[d * MR + i]);
      _Pragma("unroll") for (int v = 0; v < NV; ++v) acc[i][v] = fma(ai, bv[v], acc[i][v]);
    }
  }
  __global REAL* cb = c + c_offset + batch * c_batch_stride;
  const int row0 = pm * MR, col0 = pn * TILE_N;
  _Pragma("unroll") for (int i = 0; i < MR; ++i) {
    if (row0 + i >= m) break;
    _Pragma("unroll") for (int v = 0; v < NV; ++v) {
      const int col = col0 + v * VW;
      if (col >= n) break;
      VEC r = alpha * acc[i][v];
      __global REAL* out = cb + (row0 + i) * c_row_stride + col;
      if (col + VW <= n) {
        if (beta != 0) r = fma((VEC)(beta), VLOAD(0, out), r);
        VSTORE(r, 0, out);
      } else {
        REAL part[VW];
        VSTORE(r, 0, part);
        for (int j = 0; j < VW && col + j < n; ++j) {
          out[j] = beta != 0 ? fma(beta, out[j], part[j]) : part[j];
        }
      }
    }
  }
}
