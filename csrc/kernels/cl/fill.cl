// Fill: every element of the output gets the same bits, converted to the dtype on the host.
__kernel void fill(IterDesc d, OPERAND(0), ST(DST) value) {
  INDEX_T i = get_global_id(0);
  if (i >= d.numel) return;
  INDEX_T off[NARGS];
  element_offsets(&d, i, off);
  *(__global ST(DST)*)ADDRESS(0) = value;
}
