// Reductions: one work-group per (output element, chunk of the reduced elements), or per run of
// per_group output elements when there are many.
//
// The launcher splits at::TensorIterator's dimensions into "outer" ones (one output element per
// index) and "inner" ones (reduced). With CHUNKS > 1 a first pass writes one accumulator per
// chunk to a scratch buffer and r_<name>_finish merges them; otherwise the first pass writes
// the result. T0 is the output, T1 the input, CT the type elements are accumulated in; a second
// output (indices, int64) is written by ops that return one.
// On CPU devices (DENSE_RUN=1) a work-group is one work-item that walks its chunk in order, so
// memory is read sequentially; GPUs interleave the work-items of a group for coalesced loads.
#ifndef DENSE_RUN
#define DENSE_RUN 0
#endif
#define LANES 32
#ifndef COLS
#define COLS 16  // outputs per work-item of r_<name>_cols; the launcher picks it
#endif

typedef struct {
  ulong num_outputs;
  ulong inner;        // reduced elements per output
  ulong chunk;        // reduced elements per work-group
  ulong chunks;       // work-groups per output
  ulong per_group;    // outputs per work-group (1 when chunks > 1)
  ulong outer_ndim;
  ulong inner_ndim;
  ulong outer_sizes[MAX_DIMS];
  ulong inner_sizes[MAX_DIMS];
  ulong out_strides[MAX_DIMS];
  ulong out2_strides[MAX_DIMS];
  ulong in_outer_strides[MAX_DIMS];
  ulong in_inner_strides[MAX_DIMS];
} ReduceDesc;


inline ulong offset_of(ulong linear, ulong ndim, const ulong* sizes, const ulong* strides) {
  if (ndim == 1) return linear * strides[0];  // the common case, without a 64-bit division
  ulong off = 0;
  for (ulong dim = 0; dim < ndim; ++dim) {
    ulong idx = linear % sizes[dim];
    linear /= sizes[dim];
    off += idx * strides[dim];
  }
  return off;
}

// REDUCTION(name, acc_t, init, accumulate(acc, x, j), merge(acc, other), project(acc)) defines
// r_<name> and r_<name>_finish. x is an element in ct, j its index among the reduced elements,
// p a parameter (bits of a ct). project yields the value stored in T0; INDEX(acc) the int64
// stored in the second output, when the op has one.
#define REDUCTION(name, acc_t, INIT, ACCUMULATE, MERGE, PROJECT, INDEX)                                   \
  inline void name##_store(const ReduceDesc* d, ulong o, acc_t acc, ct p, __global char* out,           \
                           __global char* out2) {                                                      \
    ulong oo = offset_of(o, d->outer_ndim, d->outer_sizes, d->out_strides);                            \
    STORE(T0, out + oo, TO(T0, PROJECT));                                                              \
    if (HAS_INDEX) {                                                                                   \
      ulong oi = offset_of(o, d->outer_ndim, d->outer_sizes, d->out2_strides);                        \
      *(__global long*)(out2 + oi) = INDEX;                                                            \
    }                                                                                                  \
  }                                                                                                    \
  inline acc_t name##_tree(__local acc_t* scratch, acc_t acc, ct p) {                                  \
    uint lid = get_local_id(0);                                                                        \
    scratch[lid] = acc;                                                                                \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                      \
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {                                             \
      if (lid < s) {                                                                                   \
        acc_t other = scratch[lid + s];                                                                \
        acc = scratch[lid];                                                                            \
        MERGE;                                                                                         \
        scratch[lid] = acc;                                                                            \
      }                                                                                                \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                    \
    }                                                                                                  \
    return scratch[0];                                                                                 \
  }                                                                                                    \
  __kernel void r_##name(ReduceDesc d, __global char* out_base, ulong out_off, __global char* out2_base, \
                         ulong out2_off, __global char* in_base, ulong in_off, __global char* part_base,  \
                         ulong part_off, ulong p_bits) {                                               \
    __local acc_t scratch[WG];                                                                         \
    ct p = bits_to_ct(p_bits);                                                                         \
    ulong g = get_group_id(0);                                                                         \
    ulong c = g % d.chunks, first = (g / d.chunks) * d.per_group;                                      \
    ulong last = min(first + d.per_group, d.num_outputs);                                              \
    for (ulong o = first; o < last; ++o) {                                                             \
    __global char* in = in_base + in_off + offset_of(o, d.outer_ndim, d.outer_sizes, d.in_outer_strides); \
    ulong begin = c * d.chunk, end = min(d.inner, begin + d.chunk);                                    \
    acc_t acc = INIT;                                                                                  \
    if (DENSE_RUN && d.inner_ndim == 1 && d.in_inner_strides[0] == sizeof(ST(T1))) {                   \
      /* One work-item walks a dense run: LANES independent accumulators over consecutive */         \
      /* elements; unrolled, they live in vector registers and vector loads feed them. */            \
      acc_t lanes[LANES];                                                                              \
      _Pragma("unroll") for (int u = 0; u < LANES; ++u) lanes[u] = INIT;                                                 \
      ulong start = begin;                                                                             \
      for (; start + LANES <= end; start += LANES) {                                                   \
        _Pragma("unroll") for (int u = 0; u < LANES; ++u) {                                                              \
          ulong j = start + u;                                                                         \
          ct x = TO(CT, LOAD(T1, in + j * sizeof(ST(T1))));                                            \
          acc_t acc = lanes[u];                                                                        \
          ACCUMULATE;                                                                                  \
          lanes[u] = acc;                                                                              \
        }                                                                                              \
      }                                                                                                \
      for (ulong j = start; j < end; ++j) {                                                            \
        ct x = TO(CT, LOAD(T1, in + j * sizeof(ST(T1))));                                              \
        ACCUMULATE;                                                                                    \
      }                                                                                                \
      _Pragma("unroll") for (int u = 0; u < LANES; ++u) {                                                                \
        acc_t other = lanes[u];                                                                        \
        MERGE;                                                                                         \
      }                                                                                                \
    } else {                                                                                           \
      for (ulong j = begin + get_local_id(0); j < end; j += get_local_size(0)) {                       \
        ct x = TO(CT, LOAD(T1, in + offset_of(j, d.inner_ndim, d.inner_sizes, d.in_inner_strides)));   \
        ACCUMULATE;                                                                                    \
      }                                                                                                \
    }                                                                                                  \
    acc = name##_tree(scratch, acc, p);                                                                \
    if (get_local_id(0) == 0) {                                                                        \
      if (d.chunks > 1)                                                                                \
        ((__global acc_t*)(part_base + part_off))[g] = acc;                                            \
      else                                                                                             \
        name##_store(&d, o, acc, p, out_base + out_off, out2_base + out2_off);                         \
    }                                                                                                  \
    barrier(CLK_LOCAL_MEM_FENCE); /* the next output reuses the scratch */                             \
    }                                                                                                  \
  }                                                                                                    \
  /* Reductions over a strided dimension whose outputs lie next to each other in the input (sum */    \
  /* over dim 0): one work-item takes COLS adjacent outputs and walks the reduced elements, */          \
  /* reading COLS consecutive values at each step. */                                                 \
  __kernel void r_##name##_cols(ReduceDesc d, __global char* out_base, ulong out_off, __global char* out2_base, \
                                ulong out2_off, __global char* in_base, ulong in_off, ulong p_bits) {   \
    ct p = bits_to_ct(p_bits);                                                                         \
    ulong row = d.outer_sizes[0], blocks = (row + COLS - 1) / COLS;                                    \
    ulong g = get_global_id(0), first = (g / blocks) * row + (g % blocks) * COLS;                      \
    if (g >= blocks * (d.num_outputs / row)) return;                                                   \
    ulong count = min((ulong)COLS, row - (g % blocks) * COLS);                                         \
    __global char* in = in_base + in_off + offset_of(first, d.outer_ndim, d.outer_sizes, d.in_outer_strides); \
    acc_t lanes[COLS];                                                                                 \
    _Pragma("unroll") for (int u = 0; u < COLS; ++u) lanes[u] = INIT;                                                    \
    for (ulong j = 0; j < d.inner; ++j) {                                                              \
      __global char* line = in + offset_of(j, d.inner_ndim, d.inner_sizes, d.in_inner_strides);       \
      if (count == COLS) {                                                                             \
        _Pragma("unroll") for (int u = 0; u < COLS; ++u) {                                                               \
          ct x = TO(CT, LOAD(T1, line + u * sizeof(ST(T1))));                                          \
          acc_t acc = lanes[u];                                                                        \
          ACCUMULATE;                                                                                  \
          lanes[u] = acc;                                                                              \
        }                                                                                              \
      } else {                                                                                         \
        for (ulong u = 0; u < count; ++u) {                                                            \
          ct x = TO(CT, LOAD(T1, line + u * sizeof(ST(T1))));                                          \
          acc_t acc = lanes[u];                                                                        \
          ACCUMULATE;                                                                                  \
          lanes[u] = acc;                                                                              \
        }                                                                                              \
      }                                                                                                \
    }                                                                                                  \
    for (ulong u = 0; u < count; ++u)                                                                  \
      name##_store(&d, first + u, lanes[u], p, out_base + out_off, out2_base + out2_off);              \
  }                                                                                                    \
  __kernel void r_##name##_finish(ReduceDesc d, __global char* out_base, ulong out_off,                \
                                  __global char* out2_base, ulong out2_off, __global char* part_base,  \
                                  ulong part_off, ulong p_bits) {                                      \
    __local acc_t scratch[WG];                                                                         \
    ct p = bits_to_ct(p_bits);                                                                         \
    ulong o = get_group_id(0);                                                                         \
    __global acc_t* part = (__global acc_t*)(part_base + part_off) + o * d.chunks;                     \
    acc_t acc = INIT;                                                                                  \
    for (ulong c = get_local_id(0); c < d.chunks; c += get_local_size(0)) {                            \
      acc_t other = part[c];                                                                           \
      MERGE;                                                                                           \
    }                                                                                                  \
    acc = name##_tree(scratch, acc, p);                                                                \
    if (get_local_id(0) == 0) name##_store(&d, o, acc, p, out_base + out_off, out2_base + out2_off);   \
  }

#define HAS_INDEX 0
REDUCTION(sum, ct, (ct)0, acc += x, acc += other, acc, 0)
REDUCTION(prod, ct, (ct)1, acc *= x, acc *= other, acc, 0)
REDUCTION(mean, ct, (ct)0, acc += x, acc += other, acc / (ct)d->inner, 0)
REDUCTION(any, uchar, 0, acc = acc || (x != 0), acc = acc || other, acc, 0)
REDUCTION(all, uchar, 1, acc = acc && (x != 0), acc = acc && other, acc, 0)
REDUCTION(count_nonzero, long, 0, acc += (x != 0), acc += other, acc, 0)
#if CT_IS_FLOAT
// NaN tests are written x != x: a library call would stop CPU devices from vectorizing the loop.
REDUCTION(amax, ct, -INFINITY, acc = (x != x || x > acc) ? x : acc, acc = (other != other || other > acc) ? other : acc, acc, 0)
REDUCTION(amin, ct, INFINITY, acc = (x != x || x < acc) ? x : acc, acc = (other != other || other < acc) ? other : acc, acc, 0)
REDUCTION(nansum, ct, (ct)0, acc += x != x ? (ct)0 : x, acc += other, acc, 0)
// p-norms: sum |x|^p, then ^(1/p); p = inf and -inf are amax/amin of |x|; p = 0 counts non-zeros.
REDUCTION(norm_p, ct, (ct)0, acc += pow(fabs(x), p), acc += other, pow(acc, (ct)1 / p), 0)
REDUCTION(norm_2, ct, (ct)0, acc += x * x, acc += other, sqrt(acc), 0)
REDUCTION(norm_1, ct, (ct)0, acc += fabs(x), acc += other, acc, 0)
REDUCTION(norm_0, ct, (ct)0, acc += (x != 0), acc += other, acc, 0)
REDUCTION(norm_inf, ct, (ct)0, acc = (isnan(fabs(x)) || fabs(x) > acc) ? fabs(x) : acc, acc = (isnan(other) || other > acc) ? other : acc, acc, 0)
REDUCTION(norm_neginf, ct, INFINITY, acc = (isnan(fabs(x)) || fabs(x) < acc) ? fabs(x) : acc, acc = (isnan(other) || other < acc) ? other : acc, acc, 0)
// Welford: (n, mean, m2); p is the correction.
typedef struct { ct n; ct mean; ct m2; } Welford;
inline Welford welford_add(Welford a, ct x) {
  a.n += 1;
  ct delta = x - a.mean;
  a.mean += delta / a.n;
  a.m2 += delta * (x - a.mean);
  return a;
}
inline Welford welford_merge(Welford a, Welford b) {
  if (b.n == 0) return a;
  if (a.n == 0) return b;
  ct n = a.n + b.n, delta = b.mean - a.mean;
  Welford r = {n, a.mean + delta * b.n / n, a.m2 + b.m2 + delta * delta * a.n * b.n / n};
  return r;
}
#define WELFORD_ZERO ((Welford){0, 0, 0})
REDUCTION(var, Welford, WELFORD_ZERO, acc = welford_add(acc, x), acc = welford_merge(acc, other), acc.m2 / fmax(acc.n - p, (ct)0), 0)
REDUCTION(std, Welford, WELFORD_ZERO, acc = welford_add(acc, x), acc = welford_merge(acc, other), sqrt(acc.m2 / fmax(acc.n - p, (ct)0)), 0)
#else
REDUCTION(amax, ct, CAT(MIN_, CT), acc = x > acc ? x : acc, acc = other > acc ? other : acc, acc, 0)
REDUCTION(amin, ct, CAT(MAX_, CT), acc = x < acc ? x : acc, acc = other < acc ? other : acc, acc, 0)
#endif

// Value and index of the maximum/minimum; NaN wins, the first index wins ties (as the CPU).
typedef struct { ct value; long index; } ValueIndex;
#undef HAS_INDEX
#define HAS_INDEX 1
#if CT_IS_FLOAT
#define GREATER(a, b) (isnan(a) ? !isnan(b) : (a) > (b))
#define LESS(a, b) (isnan(a) ? !isnan(b) : (a) < (b))
#else
#define GREATER(a, b) ((a) > (b))
#define LESS(a, b) ((a) < (b))
#endif
#define PICK(CMP, acc, v, i) \
  if (acc.index < 0 || CMP(v, acc.value) || ((v) == acc.value && (i) < acc.index)) { acc.value = v; acc.index = i; }
#define PICK_IDX(CMP, acc, other) \
  if (other.index >= 0 && (acc.index < 0 || CMP(other.value, acc.value) || (other.value == acc.value && other.index < acc.index))) acc = other;
REDUCTION(max_index, ValueIndex, ((ValueIndex){0, -1}), PICK(GREATER, acc, x, (long)j), PICK_IDX(GREATER, acc, other), acc.value, acc.index)
REDUCTION(min_index, ValueIndex, ((ValueIndex){0, -1}), PICK(LESS, acc, x, (long)j), PICK_IDX(LESS, acc, other), acc.value, acc.index)
