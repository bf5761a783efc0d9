// Indexing kernels. Operands are raw bits (the launcher's raw mode): they move elements, they
// do not compute on them. An index outside [0, size) sets the device's error flag to a code
// (core::DeviceAssert: which exception), which the host raises at the next synchronization, and
// the element is left alone.

// out = src[index] along one dimension. The source operand is restrided so that its stride along
// that dimension is 0; the index operand supplies the position.
__kernel void gather(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), ulong dim_stride, long dim_size,
                     __global int* error, int error_code) {
  ELEMENTWISE_BEGIN
  long idx = (long)LOAD(T2, ADDRESS(2));
  if (idx < 0 || idx >= dim_size) {
    atomic_xchg(error, error_code);
    continue;
  }
  STORE(T0, ADDRESS(0), LOAD(T1, ADDRESS(1) + idx * dim_stride));
  ELEMENTWISE_END
}

// out = mask ? value : self (in place: out and self are the same tensor).
__kernel void masked_fill(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), ST(T0) value) {
  ELEMENTWISE_BEGIN
  if (LOAD(T2, ADDRESS(2)) != 0) *(__global ST(T0)*)ADDRESS(0) = value;
  ELEMENTWISE_END
}

// Advanced indexing: the byte offset that index tensors 1..K (broadcast together) select in a
// source whose indexed dimensions have the given sizes and byte strides. Negative indices count
// from the end; an index out of range sets the error flag and yields offset -1.
typedef struct {
  long sizes[8];
  long strides[8];
} IndexedDims;
#define ADD_INDEX(k, operand)                                           \
  {                                                              \
    long v = (long)INPUT_RAW(operand), n = dims.sizes[k];        \
    if (v < -n || v >= n) bad = 1;                               \
    offset += (v < 0 ? v + n : v) * dims.strides[k];             \
  }
__kernel void index_offsets(IterDesc d, OPERAND(0), OPERAND(1)
#if NARGS > 2
                            , OPERAND(2)
#endif
#if NARGS > 3
                            , OPERAND(3)
#endif
#if NARGS > 4
                            , OPERAND(4)
#endif
#if NARGS > 5
                            , OPERAND(5)
#endif
#if NARGS > 6
                            , OPERAND(6)
#endif
#if NARGS > 7
                            , OPERAND(7)
#endif
#if NARGS > 8
                            , OPERAND(8)
#endif
                            , IndexedDims dims, __global int* error) {
  ELEMENTWISE_BEGIN
  long offset = 0;
  int bad = 0;
  ADD_INDEX(0, 1)
#if NARGS > 2
  ADD_INDEX(1, 2)
#endif
#if NARGS > 3
  ADD_INDEX(2, 3)
#endif
#if NARGS > 4
  ADD_INDEX(3, 4)
#endif
#if NARGS > 5
  ADD_INDEX(4, 5)
#endif
#if NARGS > 6
  ADD_INDEX(5, 6)
#endif
#if NARGS > 7
  ADD_INDEX(6, 7)
#endif
#if NARGS > 8
  ADD_INDEX(7, 8)
#endif
  if (bad) atomic_xchg(error, 1);
  STORE(T0, ADDRESS(0), bad ? -1 : offset);
  ELEMENTWISE_END
}

// nonzero, in two passes over chunks of a contiguous bool mask: count each chunk's nonzeros,
// then (after the host has turned the counts into starting rows) write the coordinates.
__kernel void nonzero_count(IterDesc d, OPERAND(0), OPERAND(1), ulong chunk, ulong n) {
  ELEMENTWISE_BEGIN
  __global const uchar* m = (__global const uchar*)ADDRESS(1);
  ulong len = min(chunk, n - i * chunk);
  long count = 0;
  for (ulong j = 0; j < len; ++j) count += m[j] != 0;
  STORE(T0, ADDRESS(0), count);
  ELEMENTWISE_END
}

typedef struct {
  ulong sizes[MAX_DIMS];
} Shape;
__kernel void nonzero_write(IterDesc d, OPERAND(0), OPERAND(1), ulong chunk, ulong n, __global char* out_base,
                            ulong out_offset, uint ndim, Shape shape) {
  ELEMENTWISE_BEGIN
  __global const uchar* m = (__global const uchar*)ADDRESS(1);
  __global long* out = (__global long*)(out_base + out_offset);
  long row = (long)LOAD(T0, ADDRESS(0));
  ulong len = min(chunk, n - i * chunk);
  for (ulong j = 0; j < len; ++j) {
    if (!m[j]) continue;
    ulong linear = i * chunk + j;
    for (int k = (int)ndim - 1; k >= 0; --k) {
      out[row * ndim + k] = (long)(linear % shape.sizes[k]);
      linear /= shape.sizes[k];
    }
    ++row;
  }
  ELEMENTWISE_END
}
