// Binary elementwise ops: out = f(a, b); kernel b_<name>. Semantics follow PyTorch's CPU
// kernels (Python-style floor division and remainder, NaN-propagating minimum/maximum, ...).
// Every iteration reads and writes only its own element: vectorized in place too (common.clh).
#undef VECTORIZE_LOOP
#define VECTORIZE_LOOP VECTORIZE_INDEPENDENT_LOOP
BINARY_P(add, a + p * b)
BINARY_P(sub, a - p * b)
BINARY(mul, a * b)
BINARY(eq, a == b)
BINARY(ne, a != b)
BINARY(lt, a < b)
BINARY(le, a <= b)
BINARY(gt, a > b)
BINARY(ge, a >= b)
BINARY(logical_and, (a != 0) && (b != 0))
BINARY(logical_or, (a != 0) || (b != 0))
BINARY(logical_xor, (a != 0) != (b != 0))
BINARY(heaviside, a == 0 ? b : (ct)(a > 0))

#if CT_IS_FLOAT
BINARY(div, a / b)
BINARY_P(lerp_scalar, lerp_value(a, b, p))
BINARY(div_trunc, trunc(a / b))
inline ct floor_divide(ct a, ct b) {
  if (b == 0) return a / b;
  ct mod = fmod(a, b);
  ct div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
  if (div == 0) return copysign((ct)0, a / b);
  ct floordiv = floor(div);
  if (div - floordiv > (ct)0.5) floordiv += 1;
  return floordiv;
}
BINARY(div_floor, floor_divide(a, b))
inline ct py_remainder(ct a, ct b) {
  ct mod = fmod(a, b);
  if (mod != 0 && (b < 0) != (mod < 0)) mod += b;
  return mod;
}
BINARY(remainder, py_remainder(a, b))
BINARY(fmod, fmod(a, b))
BINARY(pow, pow(a, b))
BINARY(atan2, atan2(a, b))
BINARY(hypot, hypot(a, b))
BINARY(copysign, copysign(a, b))
// nextafter in the output's precision (float16 and bfloat16 compute in float, whose next value
// is not theirs): one step of the stored type's bits, away from zero or toward it; from zero its
// smallest subnormal.
#if CAT(HALF_, T0) || CAT(BFLOAT_, T0)
inline ct next_value(ct a, ct b) {
  if (isnan(a) || isnan(b)) return a + b;
  if (a == b) return b;
  const bool away_from_zero = (a < b) == (a > 0);
#if CAT(HALF_, T0)
  if (a == 0) return copysign((ct)0x1p-24f, b);
  ushort h;
  vstore_half(a, 0, (half*)&h);  // exact: a is a float16
  h = away_from_zero ? h + 1 : h - 1;
  return vload_half(0, (const half*)&h);
#else
  if (a == 0) return copysign(as_float(0x10000u), b);  // 2^-133
  const uint u = as_uint(a);  // a bfloat16 is the top half of a float
  return as_float(away_from_zero ? u + 0x10000u : u - 0x10000u);
#endif
}
BINARY(nextafter, next_value(a, b))
#else
BINARY(nextafter, nextafter(a, b))
#endif
BINARY(minimum, (isnan(a) || isnan(b)) ? a + b : fmin(a, b))
BINARY(maximum, (isnan(a) || isnan(b)) ? a + b : fmax(a, b))
BINARY(fmin, fmin(a, b))
BINARY(clamp_min, isnan(a) ? a : fmax(a, b))
BINARY(clamp_max, isnan(a) ? a : fmin(a, b))
BINARY(fmax, fmax(a, b))
BINARY(xlogy, isnan(b) ? b : (a == 0 ? (ct)0 : a * log(b)))
#else
BINARY(minimum, a < b ? a : b)
BINARY(clamp_min, a < b ? b : a)
BINARY(clamp_max, a > b ? b : a)
BINARY(maximum, a > b ? a : b)
inline ct int_floor_divide(ct a, ct b) {
  ct q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}
BINARY_DIVISION(div_trunc, a / b)
BINARY_DIVISION(div_floor, int_floor_divide(a, b))
inline ct int_remainder(ct a, ct b) {
  ct r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
BINARY_DIVISION(remainder, int_remainder(a, b))
BINARY_DIVISION(fmod, a % b)
inline ct int_pow(ct base, ct exp) {
  if (exp < 0) return base == 1 ? (ct)1 : (base == (ct)-1 ? ((exp & 1) ? (ct)-1 : (ct)1) : (ct)0);
  ct result = 1;
  while (exp) {
    if (exp & 1) result *= base;
    exp >>= 1;
    base *= base;
  }
  return result;
}
BINARY(pow, int_pow(a, b))
BINARY(bitwise_and, a & b)
BINARY(bitwise_or, a | b)
BINARY(bitwise_xor, a ^ b)
#define BITS ((ct)(sizeof(ct) * 8))
BINARY(lshift, (b < 0 || b >= BITS) ? (ct)0 : (ct)(a << b))
BINARY(rshift, (b < 0 || b >= BITS) ? (ct)(a >> (BITS - 1)) : (ct)(a >> b))
#endif
