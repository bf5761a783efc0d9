// Ternary elementwise ops: out = f(a, b, c); kernel t_<name>.
// Every iteration reads and writes only its own element: vectorized in place too (common.clh).
#undef VECTORIZE_LOOP
#define VECTORIZE_LOOP VECTORIZE_INDEPENDENT_LOOP
// where(cond, a, b): the condition is read as it is stored (bool or uint8).
__kernel void t_where(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), OPERAND(3)) {
  ELEMENTWISE_BEGIN
  bool cond = ((d.scalar_mask >> 1) & 1) ? d.scalars[1] != 0 : INPUT_RAW(1) != 0;
  OUTPUT(cond ? INPUT(2) : INPUT(3));
  ELEMENTWISE_END
}

TERNARY_P(addcmul, a + p * b * c)
// clamp(a, lo = b, hi = c): max first, then min, so lo > hi gives hi (as the CPU).
#if CT_IS_FLOAT
TERNARY_P(clamp, isnan(a) ? a : fmin(fmax(a, b), c))
#else
TERNARY_P(clamp, (a < b ? b : a) > c ? c : (a < b ? b : a))
#endif
#if CT_IS_FLOAT
TERNARY_P(addcdiv, a + p * (b / c))
TERNARY_P(lerp, lerp_value(a, b, c))
#endif
