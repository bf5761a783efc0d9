// Fill: every element of the output gets the same bits, converted to its dtype on the host.
// Every iteration reads and writes only its own element: vectorized in place too (common.clh).
#undef VECTORIZE_LOOP
#define VECTORIZE_LOOP VECTORIZE_INDEPENDENT_LOOP
__kernel void fill(IterDesc d, OPERAND(0), ST(T0) value) {
  ELEMENTWISE_BEGIN
  *(__global ST(T0)*)ADDRESS(0) = value;
  ELEMENTWISE_END
}
