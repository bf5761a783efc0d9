// Elementwise copy with conversion: out = (T0) in, through T0's compute type (CT), as the CPU
// converts. Same-dtype copies are launched with raw tokens, so bits pass unchanged.
__kernel void copy(IterDesc d, OPERAND(0), OPERAND(1)) {
  ELEMENTWISE_BEGIN
  OUTPUT(INPUT(1));
  ELEMENTWISE_END
}
