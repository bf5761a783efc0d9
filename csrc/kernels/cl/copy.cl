// Elementwise copy with conversion: out = (T0) in, through T0's compute type (CT), as the CPU
// converts. Same-dtype copies are launched with raw tokens, so bits pass unchanged.
// Every iteration reads and writes only its own element: vectorized in place too (common.clh).
#undef VECTORIZE_LOOP
#define VECTORIZE_LOOP VECTORIZE_INDEPENDENT_LOOP
__kernel void copy(IterDesc d, OPERAND(0), OPERAND(1)) {
  ELEMENTWISE_BEGIN
  OUTPUT(INPUT(1));
  ELEMENTWISE_END
}
