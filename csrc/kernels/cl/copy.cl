// Elementwise copies: out[i] = TO(DST, LOAD(SRC, in[i])), with -DDST=<token> -DSRC=<token>.
// Same-dtype copies use raw tokens (r8..r128) so bits, NaN payloads included, pass unchanged.
__kernel void copy(IterDesc d, OPERAND(0), OPERAND(1)) {
  INDEX_T i = get_global_id(0);
  if (i >= d.numel) return;
  INDEX_T off[NARGS];
  element_offsets(&d, i, off);
  STORE(DST, ADDRESS(0), TO(DST, LOAD(SRC, ADDRESS(1))));
}
