// Indexing kernels. Operands are raw bits (the launcher's raw mode): they move elements, they
// do not compute on them. An index outside [0, size) sets the device's error flag, which the
// host raises at the next synchronization, and the element is left alone.

// out = src[index] along one dimension. The source operand is restrided so that its stride along
// that dimension is 0; the index operand supplies the position.
__kernel void gather(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), ulong dim_stride, long dim_size,
                     __global int* error) {
  ELEMENTWISE_BEGIN
  long idx = (long)LOAD(T2, ADDRESS(2));
  if (idx < 0 || idx >= dim_size) {
    atomic_xchg(error, 1);
    return;
  }
  STORE(T0, ADDRESS(0), LOAD(T1, ADDRESS(1) + idx * dim_stride));
}

// out = mask ? value : self (in place: out and self are the same tensor).
__kernel void masked_fill(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), ST(T0) value) {
  ELEMENTWISE_BEGIN
  if (LOAD(T2, ADDRESS(2)) != 0) *(__global ST(T0)*)ADDRESS(0) = value;
}
