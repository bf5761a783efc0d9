// Dense linear algebra on batches of small matrices, one work-item per matrix (or per column of
// a right-hand side): Cholesky, LU with partial pivoting, Householder QR, the triangular solves
// and reflector products built on them, and Jacobi methods for the symmetric eigendecomposition
// and the SVD. Built with CT = f32 or f64. The C++ side (ops/decompositions.cpp) hands every
// matrix as a Mat: a byte offset into its buffer and element strides of rows, columns and batch,
// so that a transposed operand is the same buffer with rs and cs swapped; vectors (pivots, tau,
// info, eigen- and singular values) come as a buffer and a byte offset. The algorithms and their
// conventions (pivot choice, reflector signs, where a factorization stops) are LAPACK's, so that
// results agree with the CPU's to rounding; the Jacobi methods are simple, need no workspace
// beyond the matrices themselves and are accurate to a few ulp of the matrix norm.
typedef struct {
  ulong offset;
  long rs, cs, bs;
} Mat;

#define MATRIX(base, d, b) ((__global ct*)((__global char*)(base) + (d).offset) + (long)(b) * (d).bs)
#define E(p, d, i, j) (p)[(long)(i) * (d).rs + (long)(j) * (d).cs]
#define VECTOR(type, name) __global char *name##_base, ulong name##_off
#define BIND(type, name) __global type* name = (__global type*)(name##_base + name##_off)
#define SWAP(x, y) \
  {                \
    ct t_ = (x);   \
    (x) = (y);     \
    (y) = t_;      \
  }

// Lower Cholesky factor in place (the strict upper triangle is zeroed); info is the order of the
// first leading minor that is not positive-definite (NaN included), where LAPACK stops too.
__kernel void cholesky(__global char* a_base, Mat da, long n, VECTOR(int, info), ulong count) {
  const ulong b = get_global_id(0);
  if (b >= count) return;
  BIND(int, info);
  __global ct* a = MATRIX(a_base, da, b);
  int bad = 0;
  for (long j = 0; j < n && !bad; ++j) {
    ct d = E(a, da, j, j);
    for (long k = 0; k < j; ++k) d -= E(a, da, j, k) * E(a, da, j, k);
    if (!(d > 0)) {
      bad = (int)j + 1;
      break;
    }
    d = sqrt(d);
    E(a, da, j, j) = d;
    for (long i = j + 1; i < n; ++i) {
      ct s = E(a, da, i, j);
      for (long k = 0; k < j; ++k) s -= E(a, da, i, k) * E(a, da, j, k);
      E(a, da, i, j) = s / d;
    }
  }
  for (long i = 0; i < n; ++i)
    for (long j = i + 1; j < n; ++j) E(a, da, i, j) = 0;
  info[b] = bad;
}

// P A = L U in place (getrf): pivots are 1-based row numbers, min(m, n) per matrix; a zero pivot
// sets info (its 1-based column, the first one) and the factorization goes on, as LAPACK's does.
__kernel void lu_factor(__global char* a_base, Mat da, long m, long n, VECTOR(int, pivots), VECTOR(int, info),
                        ulong count) {
  const ulong b = get_global_id(0);
  if (b >= count) return;
  BIND(int, pivots);
  BIND(int, info);
  __global ct* a = MATRIX(a_base, da, b);
  const long k = min(m, n);
  int singular = 0;
  for (long j = 0; j < k; ++j) {
    long p = j;
    ct best = fabs(E(a, da, j, j));
    for (long i = j + 1; i < m; ++i)
      if (fabs(E(a, da, i, j)) > best) {
        best = fabs(E(a, da, i, j));
        p = i;
      }
    pivots[b * k + j] = (int)p + 1;
    if (E(a, da, p, j) != 0) {
      if (p != j)
        for (long c = 0; c < n; ++c) SWAP(E(a, da, j, c), E(a, da, p, c));
      const ct pivot = E(a, da, j, j);
      for (long i = j + 1; i < m; ++i) E(a, da, i, j) /= pivot;
    } else if (!singular) {
      singular = (int)j + 1;
    }
    for (long c = j + 1; c < n; ++c) {
      const ct u = E(a, da, j, c);
      for (long i = j + 1; i < m; ++i) E(a, da, i, c) -= E(a, da, i, j) * u;
    }
  }
  info[b] = singular;
}

// Rows of each column of B exchanged as LAPACK's pivots say (laswp): in order (forward, P^T B)
// or in reverse (P B). One work-item per (matrix, column); npivots <= rows.
__kernel void permute_rows(__global char* b_base, Mat db, long rows, long cols, VECTOR(int, pivots),
                           long npivots, int forward, ulong count) {
  const ulong g = get_global_id(0);
  if (g >= count) return;
  const ulong mat = g / cols, col = g % cols;
  __global ct* x = MATRIX(b_base, db, mat);
  BIND(const int, pivots);
  __global const int* piv = pivots + mat * npivots;
  for (long s = 0; s < npivots; ++s) {
    const long i = forward ? s : npivots - 1 - s, p = piv[i] - 1;
    if (p != i && p >= 0 && p < rows) SWAP(E(x, db, i, col), E(x, db, p, col));  // (lu_unpack takes any ints)
  }
}

// Solves A X = B in place of B for triangular A (n x n, upper or lower, with a unit diagonal
// or not); one work-item per (matrix, column of B). A's batch follows B's (the caller expands).
__kernel void triangular_solve(__global char* a_base, Mat da, __global char* b_base, Mat db, long n,
                               long cols, int upper, int unit, ulong count) {
  const ulong g = get_global_id(0);
  if (g >= count) return;
  const ulong mat = g / cols, col = g % cols;
  __global const ct* a = MATRIX(a_base, da, mat);
  __global ct* x = MATRIX(b_base, db, mat);
  for (long s = 0; s < n; ++s) {
    const long i = upper ? n - 1 - s : s;
    ct v = E(x, db, i, col);
    if (upper)
      for (long j = i + 1; j < n; ++j) v -= E(a, da, i, j) * E(x, db, j, col);
    else
      for (long j = 0; j < i; ++j) v -= E(a, da, i, j) * E(x, db, j, col);
    E(x, db, i, col) = unit ? v : v / E(a, da, i, i);
  }
}

// Householder QR in place (geqrf): R on and above the diagonal, reflector j's vector below it
// (its leading 1 implied) and its scale in tau. Reflectors are LAPACK's (larfg): beta takes the
// sign opposite to the diagonal element, and a column already zero below the diagonal gets tau 0.
__kernel void householder_qr(__global char* a_base, Mat da, long m, long n, VECTOR(ct, tau), ulong count) {
  const ulong b = get_global_id(0);
  if (b >= count) return;
  BIND(ct, tau);
  __global ct* a = MATRIX(a_base, da, b);
  const long k = min(m, n);
  for (long j = 0; j < k; ++j) {
    const ct alpha = E(a, da, j, j);
    ct xx = 0;
    for (long i = j + 1; i < m; ++i) xx += E(a, da, i, j) * E(a, da, i, j);
    if (xx == 0) {
      tau[b * k + j] = 0;
      continue;
    }
    const ct beta = -copysign(hypot(alpha, sqrt(xx)), alpha);
    const ct t = (beta - alpha) / beta, scale = 1 / (alpha - beta);
    for (long i = j + 1; i < m; ++i) E(a, da, i, j) *= scale;
    E(a, da, j, j) = beta;
    tau[b * k + j] = t;
    for (long c = j + 1; c < n; ++c) {
      ct w = E(a, da, j, c);
      for (long i = j + 1; i < m; ++i) w += E(a, da, i, j) * E(a, da, i, c);
      w *= t;
      E(a, da, j, c) -= w;
      for (long i = j + 1; i < m; ++i) E(a, da, i, c) -= w * E(a, da, i, j);
    }
  }
}

// C = Q C (or Q^T C with `transpose`) in place, Q = H_0 H_1 ... H_{k-1} the product of the
// reflectors stored below the diagonal of V (m rows) with scales tau (k per matrix). Each column
// of C is independent: one work-item per (matrix, column). With C the identity this is
// householder_product (orgqr); with C's strides swapped, C Q from the right (ormqr).
__kernel void apply_reflectors(__global char* v_base, Mat dv, VECTOR(ct, tau), long k, long m,
                               __global char* c_base, Mat dc, long cols, int transpose, ulong count) {
  const ulong g = get_global_id(0);
  if (g >= count) return;
  const ulong mat = g / cols, col = g % cols;
  BIND(const ct, tau);
  __global const ct* v = MATRIX(v_base, dv, mat);
  __global ct* c = MATRIX(c_base, dc, mat);
  for (long s = 0; s < k; ++s) {
    const long j = transpose ? s : k - 1 - s;
    const ct t = tau[mat * k + j];
    if (t == 0) continue;
    ct w = E(c, dc, j, col);
    for (long i = j + 1; i < m; ++i) w += E(v, dv, i, j) * E(c, dc, i, col);
    w *= t;
    E(c, dc, j, col) -= w;
    for (long i = j + 1; i < m; ++i) E(c, dc, i, col) -= w * E(v, dv, i, j);
  }
}

#define EPS_f32 FLT_EPSILON
#define EPS_f64 DBL_EPSILON
#define EPSILON CAT(EPS_, CT)
#define MAX_SWEEPS 60

// (c, s) of the rotation that zeroes the off-diagonal entry of [[app, apq], [apq, aqq]];
// t = tan of the angle, the smaller root, for stability.
inline ct rotation_tangent(ct app, ct aqq, ct apq) {
  const ct theta = (aqq - app) / (2 * apq);
  return copysign((ct)1, theta) / (fabs(theta) + hypot(theta, (ct)1));
}

// a (n x n, symmetric, both triangles filled) is diagonalized in place; w gets the eigenvalues in
// ascending order (n per matrix) and, with vectors, v (n x n) the eigenvectors as columns.
__kernel void symmetric_eigen(__global char* a_base, Mat da, long n, VECTOR(ct, w), __global char* v_base, Mat dv,
                              int vectors, ulong count) {
  const ulong b = get_global_id(0);
  if (b >= count) return;
  BIND(ct, w);
  __global ct* a = MATRIX(a_base, da, b);
  __global ct* v = MATRIX(v_base, dv, b);
  if (vectors)
    for (long i = 0; i < n; ++i)
      for (long j = 0; j < n; ++j) E(v, dv, i, j) = i == j;
  ct norm = 0;
  for (long i = 0; i < n; ++i)
    for (long j = 0; j < n; ++j) norm += E(a, da, i, j) * E(a, da, i, j);
  for (int sweep = 0; sweep < MAX_SWEEPS; ++sweep) {
    ct off = 0;
    for (long p = 0; p < n; ++p)
      for (long q = p + 1; q < n; ++q) off += E(a, da, p, q) * E(a, da, p, q);
    if (!(off > EPSILON * EPSILON * norm * 1e-2)) break;  // NaN stops too
    for (long p = 0; p < n; ++p)
      for (long q = p + 1; q < n; ++q) {
        const ct apq = E(a, da, p, q);
        if (apq == 0) continue;
        const ct t = rotation_tangent(E(a, da, p, p), E(a, da, q, q), apq);
        const ct c = 1 / sqrt(t * t + 1), s = t * c;
        E(a, da, p, p) -= t * apq;
        E(a, da, q, q) += t * apq;
        E(a, da, p, q) = E(a, da, q, p) = 0;
        for (long r = 0; r < n; ++r) {
          if (r == p || r == q) continue;
          const ct arp = E(a, da, r, p), arq = E(a, da, r, q);
          E(a, da, r, p) = E(a, da, p, r) = c * arp - s * arq;
          E(a, da, r, q) = E(a, da, q, r) = s * arp + c * arq;
        }
        if (vectors)
          for (long r = 0; r < n; ++r) {
            const ct vrp = E(v, dv, r, p), vrq = E(v, dv, r, q);
            E(v, dv, r, p) = c * vrp - s * vrq;
            E(v, dv, r, q) = s * vrp + c * vrq;
          }
      }
  }
  __global ct* out = w + b * n;
  for (long i = 0; i < n; ++i) out[i] = E(a, da, i, i);
  for (long i = 0; i < n; ++i) {  // selection sort, ascending, moving the vectors along
    long lo = i;
    for (long j = i + 1; j < n; ++j)
      if (out[j] < out[lo]) lo = j;
    if (lo == i) continue;
    const ct t = out[i];
    out[i] = out[lo];
    out[lo] = t;
    if (vectors)
      for (long r = 0; r < n; ++r) {
        const ct x = E(v, dv, r, i);
        E(v, dv, r, i) = E(v, dv, r, lo);
        E(v, dv, r, lo) = x;
      }
  }
}

// Column j of u becomes a unit vector orthogonal to columns 0..j-1 (themselves orthonormal):
// the standard basis vector least in their span, orthogonalized twice (Gram-Schmidt).
inline void complete_basis(__global ct* u, Mat du, long m, long j) {
  long best = 0;
  ct best_rest = -1;
  for (long i = 0; i < m; ++i) {
    ct in_span = 0;
    for (long l = 0; l < j; ++l) in_span += E(u, du, i, l) * E(u, du, i, l);
    if (1 - in_span > best_rest) {
      best_rest = 1 - in_span;
      best = i;
    }
  }
  for (long i = 0; i < m; ++i) E(u, du, i, j) = i == best;
  for (int pass = 0; pass < 2; ++pass)
    for (long l = 0; l < j; ++l) {
      ct d = 0;
      for (long i = 0; i < m; ++i) d += E(u, du, i, l) * E(u, du, i, j);
      for (long i = 0; i < m; ++i) E(u, du, i, j) -= d * E(u, du, i, l);
    }
  ct nn = 0;
  for (long i = 0; i < m; ++i) nn += E(u, du, i, j) * E(u, du, i, j);
  const ct inv = 1 / sqrt(nn);
  for (long i = 0; i < m; ++i) E(u, du, i, j) *= inv;
}

// SVD of g (m x n, m >= n) by one-sided Jacobi: column pairs are rotated until orthogonal, so
// that g = U S and the accumulated rotations are V. s gets the singular values in descending
// order (n per matrix); with vectors, v (n x n) gets V and u (m x ucols, ucols = n or m) the left
// singular vectors, those of zero singular values and the columns past n completed to an
// orthonormal basis. g is overwritten.
__kernel void jacobi_svd(__global char* g_base, Mat dg, long m, long n, VECTOR(ct, s), __global char* u_base, Mat du,
                         long ucols, __global char* v_base, Mat dv, int vectors, ulong count) {
  const ulong b = get_global_id(0);
  if (b >= count) return;
  BIND(ct, s);
  __global ct* g = MATRIX(g_base, dg, b);
  __global ct* v = MATRIX(v_base, dv, b);
  __global ct* u = MATRIX(u_base, du, b);
  if (vectors)
    for (long i = 0; i < n; ++i)
      for (long j = 0; j < n; ++j) E(v, dv, i, j) = i == j;
  for (int sweep = 0; sweep < MAX_SWEEPS; ++sweep) {
    int rotated = 0;
    for (long p = 0; p < n; ++p)
      for (long q = p + 1; q < n; ++q) {
        ct alpha = 0, beta = 0, gamma = 0;
        for (long i = 0; i < m; ++i) {
          const ct x = E(g, dg, i, p), y = E(g, dg, i, q);
          alpha += x * x;
          beta += y * y;
          gamma += x * y;
        }
        if (!(fabs(gamma) > EPSILON * sqrt(alpha * beta))) continue;  // orthogonal to rounding (or NaN)
        rotated = 1;
        const ct t = rotation_tangent(alpha, beta, gamma);
        const ct c = 1 / sqrt(t * t + 1), sn = t * c;
        for (long i = 0; i < m; ++i) {
          const ct x = E(g, dg, i, p), y = E(g, dg, i, q);
          E(g, dg, i, p) = c * x - sn * y;
          E(g, dg, i, q) = sn * x + c * y;
        }
        if (vectors)
          for (long i = 0; i < n; ++i) {
            const ct x = E(v, dv, i, p), y = E(v, dv, i, q);
            E(v, dv, i, p) = c * x - sn * y;
            E(v, dv, i, q) = sn * x + c * y;
          }
      }
    if (!rotated) break;
  }
  __global ct* sv = s + b * n;
  for (long j = 0; j < n; ++j) {
    ct nn = 0;
    for (long i = 0; i < m; ++i) nn += E(g, dg, i, j) * E(g, dg, i, j);
    sv[j] = sqrt(nn);
  }
  for (long i = 0; i < n; ++i) {  // selection sort, descending, moving the columns along
    long hi = i;
    for (long j = i + 1; j < n; ++j)
      if (sv[j] > sv[hi]) hi = j;
    if (hi == i) continue;
    const ct t = sv[i];
    sv[i] = sv[hi];
    sv[hi] = t;
    for (long r = 0; r < m; ++r) {
      const ct x = E(g, dg, r, i);
      E(g, dg, r, i) = E(g, dg, r, hi);
      E(g, dg, r, hi) = x;
    }
    if (vectors)
      for (long r = 0; r < n; ++r) {
        const ct x = E(v, dv, r, i);
        E(v, dv, r, i) = E(v, dv, r, hi);
        E(v, dv, r, hi) = x;
      }
  }
  if (!vectors) return;
  for (long j = 0; j < ucols; ++j) {
    if (j < n && sv[j] > 0) {
      const ct inv = 1 / sv[j];
      for (long i = 0; i < m; ++i) E(u, du, i, j) = E(g, dg, i, j) * inv;
    } else {
      complete_basis(u, du, m, j);
    }
  }
}
