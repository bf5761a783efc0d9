// Reductions: one work-group per (output element, chunk of the reduced elements), or per run of
// per_group output elements when there are many.
//
// The launcher splits at::TensorIterator's dimensions into "outer" ones (one output element per
// index) and "inner" ones (reduced). With chunks > 1 each chunk writes its accumulator to a
// scratch buffer and a second launch (r_<name>_merge) merges them; otherwise a work-group writes
// the result. T0 is the output, T1 the input (either may be dynamic, common.clh), CT the type
// elements are accumulated in; a second output (indices, int64) is written by ops that return one.
// On CPU devices (DENSE_RUN=1) a work-group is one work-item that walks its chunk in order, so
// memory is read sequentially; GPUs interleave the work-items of a group for coalesced loads.
#ifndef DENSE_RUN
#define DENSE_RUN 0
#endif
// Accumulators of a DENSE_RUN work-item: as many of type t as fill LANE_BYTES (four vector
// registers, from the launcher), a power of two from 16 to 128. A property of each kernel's
// accumulator, so that one program serves reductions of every accumulator size.
#ifndef LANE_BYTES
#define LANE_BYTES 128
#endif
#define LANES_OF(t)                    \
  (128 * sizeof(t) <= LANE_BYTES  ? 128 \
   : 64 * sizeof(t) <= LANE_BYTES ? 64  \
   : 32 * sizeof(t) <= LANE_BYTES ? 32  \
                                  : 16)
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
  ulong dtype_codes;  // of the output and the input, where their tokens are dynamic (common.clh)
} ReduceDesc;
#undef DYNAMIC_CODE
#define DYNAMIC_CODE(k) ((dtype_codes >> (4 * (k))) & 15)


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

// The dense run [begin, end) of `in` that a CPU work-item reduces into acc, two ways; element k
// of the run is element j = origin + k of the reduced ones.
// Both merge their accumulators pairwise at the end: each step is whole-vector work, not a
// chain of one merge per accumulator.
#define MERGE_PAIRWISE(T, array, count, MERGE)                                                      \
  _Pragma("unroll") for (int width = (count) / 2; width > 0; width /= 2) {                          \
    _Pragma("unroll") for (int u = 0; u < width; ++u) {                                             \
      T acc = array[u], other = array[u + width];                                                   \
      MERGE;                                                                                        \
      array[u] = acc;                                                                               \
    }                                                                                               \
  }
// LANE_RUN: LANES_OF(acc_t) independent accumulators over consecutive elements; unrolled, they
// live in vector registers and vector loads feed them. Any accumulator type.
#define LANE_RUN(acc_t, INIT, ACCUMULATE, MERGE)                                                    \
  do {                                                                                              \
    enum { LANE_COUNT = LANES_OF(acc_t) };                                                          \
    acc_t lanes[LANE_COUNT];                                                                        \
    _Pragma("unroll") for (int u = 0; u < LANE_COUNT; ++u) lanes[u] = INIT;                         \
    ulong start = begin;                                                                            \
    for (; start + LANE_COUNT <= end; start += LANE_COUNT) {                                        \
      _Pragma("unroll") for (int u = 0; u < LANE_COUNT; ++u) {                                      \
        ulong k = start + u, j = origin + k;                                                        \
        ct x = TO(CT, LOAD(T1, in + k * ELEMENT_SIZE(T1, 1)));                                           \
        acc_t acc = lanes[u];                                                                       \
        ACCUMULATE;                                                                                 \
        lanes[u] = acc;                                                                             \
      }                                                                                             \
    }                                                                                               \
    for (ulong k = start; k < end; ++k) {                                                           \
      ulong j = origin + k;                                                                         \
      ct x = TO(CT, LOAD(T1, in + k * ELEMENT_SIZE(T1, 1)));                                             \
      ACCUMULATE;                                                                                   \
    }                                                                                               \
    MERGE_PAIRWISE(acc_t, lanes, LANE_COUNT, MERGE);                                                \
    acc_t other = lanes[0];                                                                         \
    MERGE;                                                                                          \
  } while (0)
// VECTOR_RUN: for reductions whose accumulate and merge are elementwise expressions that also
// hold for OpenCL vectors, with the accumulator in the compute type and an input already in it
// (the launcher then defines VECTOR_WIDTH). LLVM vectorizes LANE_RUN at 256 bits on AVX-512
// machines; explicit vectors of the device's width use all of it (amax ran 1.3x faster).
#ifdef VECTOR_WIDTH
typedef CAT(CAT(C_, CT), VECTOR_WIDTH) ctv;
typedef CAT(C_, CT) ct_1;
typedef CAT(CAT(C_, CT), 2) ct_2;
typedef CAT(CAT(C_, CT), 4) ct_4;
typedef CAT(CAT(C_, CT), 8) ct_8;
typedef CAT(CAT(C_, CT), 16) ct_16;
// Merges the halves of fold_<from> into fold_<to>, down to the scalar fold_1.
#define FOLD(from, to, MERGE)                              \
  ct_##to fold_##to;                                       \
  {                                                        \
    ct_##to acc = fold_##from.lo, other = fold_##from.hi;  \
    MERGE;                                                 \
    fold_##to = acc;                                       \
  }
#if VECTOR_WIDTH == 16
#define FOLD_VECTOR(MERGE) FOLD(16, 8, MERGE) FOLD(8, 4, MERGE) FOLD(4, 2, MERGE) FOLD(2, 1, MERGE)
#elif VECTOR_WIDTH == 8
#define FOLD_VECTOR(MERGE) FOLD(8, 4, MERGE) FOLD(4, 2, MERGE) FOLD(2, 1, MERGE)
#elif VECTOR_WIDTH == 4
#define FOLD_VECTOR(MERGE) FOLD(4, 2, MERGE) FOLD(2, 1, MERGE)
#else
#define FOLD_VECTOR(MERGE) FOLD(2, 1, MERGE)
#endif
#define VECTOR_COUNT (LANES_OF(ct) / VECTOR_WIDTH)
// The end of a vector run: the elements from `start` that fill no whole block, one at a time,
// then the block's `vectors` merged into acc.
#define VECTOR_TAIL_AND_MERGE(ACCUMULATE, MERGE)                                                       \
  for (ulong j = start; j < end; ++j) {                                                                \
    ct x = run[j];                                                                                     \
    ACCUMULATE;                                                                                        \
  }                                                                                                    \
  MERGE_PAIRWISE(ctv, vectors, VECTOR_COUNT, MERGE);                                                   \
  CAT(ct_, VECTOR_WIDTH) CAT(fold_, VECTOR_WIDTH) = vectors[0];                                        \
  FOLD_VECTOR(MERGE);                                                                                  \
  ct other = fold_1;                                                                                   \
  MERGE
#define VECTOR_RUN(acc_t, INIT, ACCUMULATE, MERGE)                                                    \
  do {                                                                                                 \
    __global const ct* run = (__global const ct*)in;                                                   \
    ctv vectors[VECTOR_COUNT];                                                                         \
    _Pragma("unroll") for (int v = 0; v < VECTOR_COUNT; ++v) vectors[v] = (ctv)(INIT);                \
    ulong start = begin;                                                                               \
    for (; start + LANES_OF(ct) <= end; start += LANES_OF(ct)) {                                       \
      _Pragma("unroll") for (int v = 0; v < VECTOR_COUNT; ++v) {                                       \
        ctv x = CAT(vload, VECTOR_WIDTH)(0, run + start + v * VECTOR_WIDTH);                           \
        ctv acc = vectors[v];                                                                          \
        ACCUMULATE;                                                                                    \
        vectors[v] = acc;                                                                              \
      }                                                                                                \
    }                                                                                                  \
    VECTOR_TAIL_AND_MERGE(ACCUMULATE, MERGE);                                                          \
  } while (0)
#if CT_IS_FLOAT
// EXTREMUM_RUN(CMP): amax (>) and amin (<) of floats. Their NaN-propagating ACCUMULATE takes four
// vector instructions (two compares, a mask or, a blend); the vector body here keeps the plain
// compare-and-select, one max/min instruction that drops NaNs, and beside it an or of x != x.
// The tail and the merges are exact. A NaN found comes back as the canonical NaN.
#define MASK_f32 int
#define MASK_f64 long
typedef CAT(CAT(MASK_, CT), VECTOR_WIDTH) maskv;
#define EXTREMUM_RUN(CMP, INIT, ACCUMULATE, MERGE)                                                    \
  do {                                                                                                 \
    __global const ct* run = (__global const ct*)in;                                                   \
    ctv vectors[VECTOR_COUNT];                                                                         \
    maskv nans[VECTOR_COUNT];                                                                          \
    _Pragma("unroll") for (int v = 0; v < VECTOR_COUNT; ++v) {                                         \
      vectors[v] = (ctv)(INIT);                                                                        \
      nans[v] = (maskv)0;                                                                              \
    }                                                                                                  \
    ulong start = begin;                                                                               \
    for (; start + LANES_OF(ct) <= end; start += LANES_OF(ct)) {                                       \
      _Pragma("unroll") for (int v = 0; v < VECTOR_COUNT; ++v) {                                       \
        ctv x = CAT(vload, VECTOR_WIDTH)(0, run + start + v * VECTOR_WIDTH);                           \
        vectors[v] = (x CMP vectors[v]) ? x : vectors[v];                                              \
        nans[v] |= x != x;                                                                             \
      }                                                                                                \
    }                                                                                                  \
    VECTOR_TAIL_AND_MERGE(ACCUMULATE, MERGE);                                                          \
    _Pragma("unroll") for (int v = 1; v < VECTOR_COUNT; ++v) nans[0] |= nans[v];                       \
    if (any(nans[0])) acc = (ct)NAN;                                                                   \
  } while (0)
#define AMAX_RUN(acc_t, INIT, ACCUMULATE, MERGE) EXTREMUM_RUN(>, INIT, ACCUMULATE, MERGE)
#define AMIN_RUN(acc_t, INIT, ACCUMULATE, MERGE) EXTREMUM_RUN(<, INIT, ACCUMULATE, MERGE)
#endif
#else
#define VECTOR_RUN LANE_RUN
#define AMAX_RUN LANE_RUN
#define AMIN_RUN LANE_RUN
#endif

// REDUCTION(name, acc_t, init, accumulate(acc, x, j), merge(acc, other), project(acc), index,
// run) defines r_<name>, r_<name>_merge and r_<name>_cols. x is an element in ct, j its index among the
// reduced elements, p a parameter (bits of a ct). project yields the value stored in T0; INDEX(acc)
// the int64 stored in the second output, when the op has one; run is LANE_RUN, VECTOR_RUN, AMAX_RUN
// or AMIN_RUN. A program built for one reduction (ONE_FAMILY, common.clh) defines its kernels only.
// REDUCTION_1 takes the kernel's name r_<name>: a bare name may be a macro (OpenCL's any, all).
// With OP_DISPATCH (small reductions, kernels/op_dispatch.h) a REDUCTION defines r_<name>_small
// instead, one case of the generated r_dispatch kernel.
#define REDUCTION(name, ...) CAT(REDUCTION_, FAMILY_KEPT(r_##name))(r_##name, __VA_ARGS__)
#define REDUCTION_0(...)
#ifdef OP_DISPATCH
#define REDUCTION_1(name, acc_t, INIT, ACCUMULATE, MERGE, PROJECT, INDEX, RUN) \
  REDUCTION_STORE(name, acc_t, PROJECT, INDEX)                                 \
  REDUCTION_SMALL(name, acc_t, INIT, ACCUMULATE, MERGE)
#else
#define REDUCTION_1(name, acc_t, INIT, ACCUMULATE, MERGE, PROJECT, INDEX, RUN) \
  REDUCTION_STORE(name, acc_t, PROJECT, INDEX)                                 \
  REDUCTION_KERNELS(name, acc_t, INIT, ACCUMULATE, MERGE, RUN)
#endif
#define REDUCTION_STORE(name, acc_t, PROJECT, INDEX)                                                    \
  inline void name##_store(const ReduceDesc* d, ulong o, acc_t acc, ct p, __global char* out,           \
                           __global char* out2) {                                                      \
    const ulong dtype_codes = d->dtype_codes;                                                          \
    ulong oo = offset_of(o, d->outer_ndim, d->outer_sizes, d->out_strides);                            \
    STORE(T0, out + oo, TO(T0, PROJECT));                                                              \
    if (HAS_INDEX) {                                                                                   \
      ulong oi = offset_of(o, d->outer_ndim, d->outer_sizes, d->out2_strides);                        \
      *(__global long*)(out2 + oi) = INDEX;                                                            \
    }                                                                                                  \
  }
#define REDUCTION_KERNELS(name, acc_t, INIT, ACCUMULATE, MERGE, RUN)                                    \
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
  __kernel void name(ReduceDesc d, __global char* out_base, ulong out_off, __global char* out2_base, \
                         ulong out2_off, __global char* in_base, ulong in_off, __global char* part_base,  \
                         ulong part_off, ulong p_bits) {                                                 \
    __local acc_t scratch[WG];                                                                         \
    const ulong dtype_codes = d.dtype_codes;                                                           \
    ct p = bits_to_ct(p_bits);                                                                         \
    ulong g = get_group_id(0);                                                                         \
    ulong c = g % d.chunks, first = (g / d.chunks) * d.per_group;                                      \
    ulong last = min(first + d.per_group, d.num_outputs);                                              \
    for (ulong o = first; o < last; ++o) {                                                             \
    __global char* in = in_base + in_off + offset_of(o, d.outer_ndim, d.outer_sizes, d.in_outer_strides); \
    ulong begin = c * d.chunk, end = min(d.inner, begin + d.chunk);                                    \
    acc_t acc = INIT;                                                                                  \
    if (DENSE_RUN && end > begin && d.in_inner_strides[0] == ELEMENT_SIZE(T1, 1) &&                         \
        (d.inner_ndim == 1 || d.inner_sizes[0] >= LANES_OF(acc_t))) {                                  \
      /* Each row of the innermost reduced dim (contiguous) in [begin, end) is a dense run: vector */  \
      /* loads, and many accumulators merged pairwise round less than one running sum. */            \
      const ulong row = d.inner_sizes[0];                                                              \
      for (ulong origin = begin - begin % row; origin < end; origin += row) {                          \
        __global char* row_in = in + offset_of(origin, d.inner_ndim, d.inner_sizes, d.in_inner_strides); \
        const ulong lo = max(begin, origin) - origin, hi = min(end, origin + row) - origin;           \
        {                                                                                              \
          __global char* in = row_in;                                                                  \
          ulong begin = lo, end = hi;                                                                  \
          RUN(acc_t, INIT, ACCUMULATE, MERGE);                                                         \
        }                                                                                              \
      }                                                                                                \
    } else {                                                                                           \
      for (ulong j = begin + get_local_id(0); j < end; j += get_local_size(0)) {                       \
        ct x = TO(CT, LOAD(T1, in + offset_of(j, d.inner_ndim, d.inner_sizes, d.in_inner_strides)));   \
        ACCUMULATE;                                                                                    \
      }                                                                                                \
    }                                                                                                  \
    acc = name##_tree(scratch, acc, p);                                                                \
    if (d.chunks > 1) {                                                                                \
      /* Each chunk leaves its accumulator for r_<name>_merge, the launch after this one. */           \
      if (get_local_id(0) == 0) ((__global acc_t*)(part_base + part_off))[o * d.chunks + c] = acc;      \
    } else if (get_local_id(0) == 0) {                                                                 \
      name##_store(&d, o, acc, p, out_base + out_off, out2_base + out2_off);                           \
    }                                                                                                  \
    barrier(CLK_LOCAL_MEM_FENCE); /* the next output reuses the scratch */                             \
    }                                                                                                  \
  }                                                                                                    \
  /* The second launch of a split reduction: a work-group per output merges its chunks' */            \
  /* accumulators. A separate launch because OpenCL 1.2 gives no way to see another work-group's */   \
  /* writes within one launch. */                                                                      \
  __kernel void name##_merge(ReduceDesc d, __global char* out_base, ulong out_off, __global char* out2_base, \
                                 ulong out2_off, __global char* part_base, ulong part_off, ulong p_bits) { \
    __local acc_t scratch[WG];                                                                         \
    ct p = bits_to_ct(p_bits);                                                                         \
    ulong o = get_group_id(0);                                                                         \
    __global acc_t* part = (__global acc_t*)(part_base + part_off) + o * d.chunks;                     \
    acc_t acc = INIT;                                                                                  \
    for (ulong k = get_local_id(0); k < d.chunks; k += get_local_size(0)) {                            \
      acc_t other = part[k];                                                                           \
      MERGE;                                                                                           \
    }                                                                                                  \
    acc = name##_tree(scratch, acc, p);                                                                \
    if (get_local_id(0) == 0) name##_store(&d, o, acc, p, out_base + out_off, out2_base + out2_off);   \
  }                                                                                                    \
  /* Reductions over a strided dimension whose outputs lie next to each other in the input (sum */    \
  /* over dim 0): one work-item takes COLS adjacent outputs and walks the reduced elements, */          \
  /* reading COLS consecutive values at each step. */                                                 \
  __kernel void name##_cols(ReduceDesc d, __global char* out_base, ulong out_off, __global char* out2_base, \
                                ulong out2_off, __global char* in_base, ulong in_off, ulong p_bits) {   \
    const ulong dtype_codes = d.dtype_codes;                                                           \
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
          ct x = TO(CT, LOAD(T1, line + u * ELEMENT_SIZE(T1, 1)));                                          \
          acc_t acc = lanes[u];                                                                        \
          ACCUMULATE;                                                                                  \
          lanes[u] = acc;                                                                              \
        }                                                                                              \
      } else {                                                                                         \
        for (ulong u = 0; u < count; ++u) {                                                            \
          ct x = TO(CT, LOAD(T1, line + u * ELEMENT_SIZE(T1, 1)));                                          \
          acc_t acc = lanes[u];                                                                        \
          ACCUMULATE;                                                                                  \
          lanes[u] = acc;                                                                              \
        }                                                                                              \
      }                                                                                                \
    }                                                                                                  \
    for (ulong u = 0; u < count; ++u)                                                                  \
      name##_store(&d, first + u, lanes[u], p, out_base + out_off, out2_base + out2_off);              \
  }

// The whole reduction of output o by one work-item, over at most kSmallIteration elements in any
// layout, in LANE_RUN's order: LANES_OF(acc_t) accumulators take whole blocks of elements in
// turn, the rest go to one running accumulator, and the lanes merge pairwise into it. Results
// are those of the longer kernels on a dense row (a short row sums in order, as on the CPU).
// Plain loops: unrolled, every case would multiply the dispatch kernel's compile time.
#define REDUCTION_SMALL(name, acc_t, INIT, ACCUMULATE, MERGE)                                          \
  inline void name##_small(const ReduceDesc* d, ulong o, __global char* out, __global char* out2,      \
                           __global char* in_base, ct p) {                                             \
    const ulong dtype_codes = d->dtype_codes;                                                          \
    __global char* in = in_base + offset_of(o, d->outer_ndim, d->outer_sizes, d->in_outer_strides);   \
    enum { LANE_COUNT = LANES_OF(acc_t) };                                                             \
    const bool blocks = d->inner >= LANE_COUNT; /* a shorter row leaves the lanes at INIT */         \
    acc_t lanes[LANE_COUNT];                                                                           \
    for (int u = 0; blocks && u < LANE_COUNT; ++u) lanes[u] = INIT;                                    \
    ulong start = 0;                                                                                   \
    for (; start + LANE_COUNT <= d->inner; start += LANE_COUNT) {                                      \
      for (int u = 0; u < LANE_COUNT; ++u) {                                                           \
        ulong j = start + u;                                                                           \
        ct x = TO(CT, LOAD(T1, in + offset_of(j, d->inner_ndim, d->inner_sizes, d->in_inner_strides))); \
        acc_t acc = lanes[u];                                                                          \
        ACCUMULATE;                                                                                    \
        lanes[u] = acc;                                                                                \
      }                                                                                                \
    }                                                                                                  \
    acc_t acc = INIT;                                                                                  \
    for (ulong j = start; j < d->inner; ++j) {                                                         \
      ct x = TO(CT, LOAD(T1, in + offset_of(j, d->inner_ndim, d->inner_sizes, d->in_inner_strides)));  \
      ACCUMULATE;                                                                                      \
    }                                                                                                  \
    if (blocks) {                                                                                      \
      for (int width = LANE_COUNT / 2; width > 0; width /= 2) {                                        \
        for (int u = 0; u < width; ++u) {                                                              \
          acc_t acc = lanes[u], other = lanes[u + width];                                              \
          MERGE;                                                                                       \
          lanes[u] = acc;                                                                              \
        }                                                                                              \
      }                                                                                                \
      acc_t other = lanes[0];                                                                          \
      MERGE;                                                                                           \
    }                                                                                                  \
    name##_store(d, o, acc, p, out, out2);                                                             \
  }
// The frame of the generated r_dispatch: a work-item per run of per_group outputs.
#define REDUCE_DISPATCH_PARAMS                                                                          \
  ReduceDesc d, __global char *out_base, ulong out_off, __global char *out2_base, ulong out2_off,      \
      __global char *in_base, ulong in_off, ulong p_bits
#define REDUCE_DISPATCH_BEGIN                                                                           \
  const ulong first = get_global_id(0) * d.per_group, last = min(first + d.per_group, d.num_outputs);  \
  const ct p = bits_to_ct(p_bits);                                                                     \
  __global char *out = out_base + out_off, *out2 = out2_base + out2_off, *in = in_base + in_off;       \
  for (ulong o = first; o < last; ++o) {
#define REDUCE_DISPATCH_END }
#define REDUCE_DISPATCH_CASE(name) name##_small(&d, o, out, out2, in, p)

#define HAS_INDEX 0
REDUCTION(sum, ct, (ct)0, acc += x, acc += other, acc, 0, VECTOR_RUN)
REDUCTION(prod, ct, (ct)1, acc *= x, acc *= other, acc, 0, VECTOR_RUN)
REDUCTION(mean, ct, (ct)0, acc += x, acc += other, acc / (ct)d->inner, 0, VECTOR_RUN)
REDUCTION(any, uchar, 0, acc = acc || (x != 0), acc = acc || other, acc, 0, LANE_RUN)
REDUCTION(all, uchar, 1, acc = acc && (x != 0), acc = acc && other, acc, 0, LANE_RUN)
REDUCTION(count_nonzero, long, 0, acc += (x != 0), acc += other, acc, 0, LANE_RUN)
#if CT_IS_FLOAT
// NaN tests are written x != x: a library call would stop CPU devices from vectorizing the loop.
REDUCTION(amax, ct, -INFINITY, acc = ((x != x) | (x > acc)) ? x : acc, acc = ((other != other) | (other > acc)) ? other : acc, acc, 0, AMAX_RUN)
REDUCTION(amin, ct, INFINITY, acc = ((x != x) | (x < acc)) ? x : acc, acc = ((other != other) | (other < acc)) ? other : acc, acc, 0, AMIN_RUN)
REDUCTION(nansum, ct, (ct)0, acc += (x != x) ? (ct)0 : x, acc += other, acc, 0, VECTOR_RUN)
// p-norms: sum |x|^p, then ^(1/p); p = inf and -inf are amax/amin of |x|; p = 0 counts non-zeros.
REDUCTION(norm_p, ct, (ct)0, acc += pow(fabs(x), p), acc += other, pow(acc, (ct)1 / p), 0, LANE_RUN)
REDUCTION(norm_2, ct, (ct)0, acc += x * x, acc += other, sqrt(acc), 0, VECTOR_RUN)
REDUCTION(norm_1, ct, (ct)0, acc += fabs(x), acc += other, acc, 0, VECTOR_RUN)
REDUCTION(norm_0, ct, (ct)0, acc += (x != 0), acc += other, acc, 0, LANE_RUN)
REDUCTION(norm_inf, ct, (ct)0, acc = (isnan(fabs(x)) || fabs(x) > acc) ? fabs(x) : acc, acc = (isnan(other) || other > acc) ? other : acc, acc, 0, LANE_RUN)
REDUCTION(norm_neginf, ct, INFINITY, acc = (isnan(fabs(x)) || fabs(x) < acc) ? fabs(x) : acc, acc = (isnan(other) || other < acc) ? other : acc, acc, 0, LANE_RUN)
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
REDUCTION(var, Welford, WELFORD_ZERO, acc = welford_add(acc, x), acc = welford_merge(acc, other), acc.m2 / fmax(acc.n - p, (ct)0), 0, LANE_RUN)
REDUCTION(std, Welford, WELFORD_ZERO, acc = welford_add(acc, x), acc = welford_merge(acc, other), sqrt(acc.m2 / fmax(acc.n - p, (ct)0)), 0, LANE_RUN)
#else
REDUCTION(amax, ct, CAT(MIN_, CT), acc = x > acc ? x : acc, acc = other > acc ? other : acc, acc, 0, VECTOR_RUN)
REDUCTION(amin, ct, CAT(MAX_, CT), acc = x < acc ? x : acc, acc = other < acc ? other : acc, acc, 0, VECTOR_RUN)
#endif

// Value and index of the maximum/minimum; NaN wins, the first index wins ties (as the CPU).
typedef struct { ct value; long index; } ValueIndex;
#undef HAS_INDEX
#define HAS_INDEX 1
// SAME: ties, which the lower index wins; NaNs tie with each other (merged lanes each hold one).
#if CT_IS_FLOAT
#define GREATER(a, b) (isnan(a) ? !isnan(b) : (a) > (b))
#define LESS(a, b) (isnan(a) ? !isnan(b) : (a) < (b))
#define SAME(a, b) ((a) == (b) || (isnan(a) && isnan(b)))
#else
#define GREATER(a, b) ((a) > (b))
#define LESS(a, b) ((a) < (b))
#define SAME(a, b) ((a) == (b))
#endif
#define PICK(CMP, acc, v, i) \
  if (acc.index < 0 || CMP(v, acc.value) || (SAME(v, acc.value) && (i) < acc.index)) { acc.value = v; acc.index = i; }
#define PICK_IDX(CMP, acc, other) \
  if (other.index >= 0 && (acc.index < 0 || CMP(other.value, acc.value) || (SAME(other.value, acc.value) && other.index < acc.index))) acc = other;
REDUCTION(max_index, ValueIndex, ((ValueIndex){0, -1}), PICK(GREATER, acc, x, (long)j), PICK_IDX(GREATER, acc, other), acc.value, acc.index, LANE_RUN)
REDUCTION(min_index, ValueIndex, ((ValueIndex){0, -1}), PICK(LESS, acc, x, (long)j), PICK_IDX(LESS, acc, other), acc.value, acc.index, LANE_RUN)
