// Writing by index: out[..., index, ...] = src, or combined with what is there (add, mul, max,
// min). The destination operand is restrided so that its stride along the indexed dimension is
// 0; the index operand supplies the position, scaled by dim_stride bytes. An index outside
// [0, dim_size) (or [-dim_size, dim_size) when negative indices wrap) sets the device's error
// flag to error_code (which exception the host raises) and writes nothing.
#define SCATTER_TARGET(operand)                            \
  long idx = (long)INPUT_RAW(operand);                     \
  if (wrap && idx < 0) idx += dim_size;                    \
  if (idx < 0 || idx >= dim_size) {                        \
    atomic_xchg(error, error_code);                        \
    continue;                                              \
  }                                                        \
  __global char* target = ADDRESS(0) + idx * dim_stride;

// Raw mode: moves bits.
__kernel void scatter_store(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), ulong dim_stride, long dim_size, int wrap,
                            __global int* error, int error_code) {
  ELEMENTWISE_BEGIN
  SCATTER_TARGET(2)
  STORE(T0, target, LOAD(T1, ADDRESS(1)));
  ELEMENTWISE_END
}

__kernel void scatter_fill(IterDesc d, OPERAND(0), OPERAND(1), ulong dim_stride, long dim_size, int wrap,
                           __global int* error, int error_code, ST(T0) value) {
  ELEMENTWISE_BEGIN
  SCATTER_TARGET(1)
  *(__global ST(T0)*)target = value;
  ELEMENTWISE_END
}

// Typed mode, for 2-, 4- and 8-byte floating and 4- and 8-byte integer element types: a
// compare-and-swap loop on the element's word (common.clh's ATOMIC_UPDATE for 4 and 8 bytes)
// makes concurrent updates of one element safe.
#if CT_IS_FLOAT
#define IS_NAN(x) isnan(x)
#else
#define IS_NAN(x) 0
#endif
#define COMBINE_add(a, b) ((a) + (b))
#define COMBINE_mul(a, b) ((a) * (b))
#define COMBINE_max(a, b) ((IS_NAN(a) || (a) > (b)) ? (a) : (b))
#define COMBINE_min(a, b) ((IS_NAN(a) || (a) < (b)) ? (a) : (b))

#if defined(WORD16)
// float16/bfloat16: the compare-and-swap covers the aligned 32-bit word holding the element, and
// each update rounds to the element type, as a sequence of CPU additions does.
inline float half_bits_to_float(ushort b) { return vload_half(0, (const __private half*)&b); }
inline ushort float_to_half_bits(float v) {
  ushort b;
  vstore_half_rte(v, 0, (__private half*)&b);
  return b;
}
#define BITS_TO_CT_f16 half_bits_to_float
#define CT_TO_BITS_f16 float_to_half_bits
#define BITS_TO_CT_bf16 bf16_to_float
#define CT_TO_BITS_bf16 float_to_bf16
#define SCATTER_COMBINE(name)                                                                              \
  __kernel void scatter_##name(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), ulong dim_stride, long dim_size, \
                               int wrap, __global int* error, int error_code) {                            \
    ELEMENTWISE_BEGIN                                                                                      \
    SCATTER_TARGET(2)                                                                                      \
    ct v = INPUT(1);                                                                                       \
    uint shift = ((ulong)target & 2) * 8;                                                                  \
    volatile __global uint* w = (volatile __global uint*)(target - ((ulong)target & 2));                  \
    uint seen = *w;                                                                                        \
    for (;;) {                                                                                             \
      ct current = CAT(BITS_TO_CT_, T0)((ushort)(seen >> shift));                                           \
      uint bits = (uint)CAT(CT_TO_BITS_, T0)(COMBINE_##name(current, v));                                  \
      uint next = (seen & ~(0xFFFFu << shift)) | (bits << shift);                                          \
      uint before = atomic_cmpxchg(w, seen, next);                                                         \
      if (before == seen) break;                                                                           \
      seen = before;                                                                                       \
    }                                                                                                      \
    ELEMENTWISE_END                                                                                        \
  }
#else
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
                               int wrap, __global int* error, int error_code) {                            \
    ELEMENTWISE_BEGIN                                                                                      \
    SCATTER_TARGET(2)                                                                                      \
    ct v = INPUT(1);                                                                                       \
    ATOMIC_UPDATE(word, CAS, ct, target, COMBINE_##name, v);                                               \
    ELEMENTWISE_END                                                                                        \
  }
#endif
SCATTER_COMBINE(add)
SCATTER_COMBINE(mul)
SCATTER_COMBINE(max)
SCATTER_COMBINE(min)
