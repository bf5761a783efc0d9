// Writing by index: out[..., index, ...] = src, or combined with what is there (add, mul, max,
// min). The destination operand is restrided so that its stride along the indexed dimension is
// 0; the index operand supplies the position, scaled by dim_stride bytes. An index outside
// [0, dim_size) (or [-dim_size, dim_size) when negative indices wrap) sets the device's error
// flag and writes nothing.
#define SCATTER_TARGET(operand)                            \
  long idx = (long)INPUT_RAW(operand);                     \
  if (wrap && idx < 0) idx += dim_size;                    \
  if (idx < 0 || idx >= dim_size) {                        \
    atomic_xchg(error, 1);                                 \
    return;                                                \
  }                                                        \
  __global char* target = ADDRESS(0) + idx * dim_stride;

// Raw mode: moves bits.
__kernel void scatter_store(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), ulong dim_stride, long dim_size, int wrap,
                            __global int* error) {
  ELEMENTWISE_BEGIN
  SCATTER_TARGET(2)
  STORE(T0, target, LOAD(T1, ADDRESS(1)));
}

__kernel void scatter_fill(IterDesc d, OPERAND(0), OPERAND(1), ulong dim_stride, long dim_size, int wrap,
                           __global int* error, ST(T0) value) {
  ELEMENTWISE_BEGIN
  SCATTER_TARGET(1)
  *(__global ST(T0)*)target = value;
}

// Typed mode, for 4- and 8-byte element types (ct is the element type): a compare-and-swap loop
// on the element's word makes concurrent updates of one element safe.
#if CT_IS_FLOAT
#define IS_NAN(x) isnan(x)
#else
#define IS_NAN(x) 0
#endif
#define COMBINE_add(a, b) ((a) + (b))
#define COMBINE_mul(a, b) ((a) * (b))
#define COMBINE_max(a, b) ((IS_NAN(a) || (a) > (b)) ? (a) : (b))
#define COMBINE_min(a, b) ((IS_NAN(a) || (a) < (b)) ? (a) : (b))

#ifdef WORD64
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
typedef ulong word;
#define CAS(p, cmp, val) atom_cmpxchg(p, cmp, val)
#else
typedef uint word;
#define CAS(p, cmp, val) atomic_cmpxchg(p, cmp, val)
#endif

#define SCATTER_COMBINE(name)                                                                              \
  __kernel void scatter_##name(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), ulong dim_stride, long dim_size, \
                               int wrap, __global int* error) {                                            \
    ELEMENTWISE_BEGIN                                                                                      \
    SCATTER_TARGET(2)                                                                                      \
    ct v = INPUT(1);                                                                                       \
    volatile __global word* w = (volatile __global word*)target;                                           \
    union { word bits; ct value; } seen, next;                                                             \
    seen.bits = *w;                                                                                        \
    for (;;) {                                                                                             \
      next.value = COMBINE_##name(seen.value, v);                                                          \
      word before = CAS(w, seen.bits, next.bits);                                                          \
      if (before == seen.bits) break;                                                                      \
      seen.bits = before;                                                                                  \
    }                                                                                                      \
  }
SCATTER_COMBINE(add)
SCATTER_COMBINE(mul)
SCATTER_COMBINE(max)
SCATTER_COMBINE(min)
