// Ranges: arange and linspace write out[i] for the element index i of a 1-D output.
__kernel void arange(IterDesc d, OPERAND(0), ulong start_bits, ulong step_bits) {
  ELEMENTWISE_BEGIN
  OUTPUT(bits_to_ct(start_bits) + (ct)i * bits_to_ct(step_bits));
  ELEMENTWISE_END
}

// Like the CPU: the first half counts up from start, the second half down from end.
__kernel void linspace(IterDesc d, OPERAND(0), ulong start_bits, ulong end_bits, ulong step_bits) {
  ELEMENTWISE_BEGIN
  ct start = bits_to_ct(start_bits), end = bits_to_ct(end_bits), step = bits_to_ct(step_bits);
  ulong halfway = d.numel / 2;
  OUTPUT(i < halfway ? start + step * (ct)i : end - step * (ct)(d.numel - i - 1));
  ELEMENTWISE_END
}
