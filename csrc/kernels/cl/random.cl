// Random numbers on the device: Philox4x32-10, counter-based. Element i of a launch draws from
// counter (i, offset) under key seed, so a (seed, offset) pair replays the same numbers.
inline uint4 philox(ulong seed, ulong i, ulong offset) {
  uint2 key = (uint2)((uint)seed, (uint)(seed >> 32));
  uint4 ctr = (uint4)((uint)i, (uint)(i >> 32), (uint)offset, (uint)(offset >> 32));
  for (int round = 0; round < 10; ++round) {
    ulong p0 = (ulong)0xD2511F53u * ctr.x;
    ulong p1 = (ulong)0xCD9E8D57u * ctr.z;
    ctr = (uint4)((uint)(p1 >> 32) ^ ctr.y ^ key.x, (uint)p1, (uint)(p0 >> 32) ^ ctr.w ^ key.y, (uint)p0);
    key += (uint2)(0x9E3779B9u, 0xBB67AE85u);
  }
  return ctr;
}

// Uniform in [0, 1) with the mantissa bits of the compute type, and in (0, 1] for logarithms.
inline ct uniform01(uint4 r) {
#if CT_IS_FLOAT
  if (sizeof(ct) == 8) return (ct)((((ulong)r.x << 21) ^ (ulong)r.y) & ((1ul << 53) - 1)) * (ct)(1.0 / 9007199254740992.0);
  return (ct)(r.x >> 8) * (ct)(1.0f / 16777216.0f);
#else
  return 0;
#endif
}
inline ct uniform01_open_low(uint4 r) { return (ct)1 - uniform01(r); }

#define RANDOM_KERNEL(name, expr)                                                                   \
  __kernel void name(IterDesc d, OPERAND(0), ulong seed, ulong offset, ulong p_bits, ulong q_bits) { \
    ELEMENTWISE_BEGIN                                                                               \
    uint4 r = philox(seed, i, offset);                                                              \
    ct p = bits_to_ct(p_bits), q = bits_to_ct(q_bits);                                              \
    OUTPUT(expr);                                                                                   \
    ELEMENTWISE_END                                                                                 \
  }

#if CT_IS_FLOAT
RANDOM_KERNEL(uniform, p + uniform01(r) * (q - p))
RANDOM_KERNEL(normal, p + q * sqrt((ct)-2 * log(uniform01_open_low(r))) * cospi((ct)2 * uniform01(r.zwxy)))
RANDOM_KERNEL(log_normal, exp(p + q * sqrt((ct)-2 * log(uniform01_open_low(r))) * cospi((ct)2 * uniform01(r.zwxy))))
RANDOM_KERNEL(bernoulli, uniform01(r) < p ? (ct)1 : (ct)0)
RANDOM_KERNEL(exponential, -log(uniform01_open_low(r)) / p)
RANDOM_KERNEL(geometric, ceil(log(uniform01_open_low(r)) / log1p(-p)))
RANDOM_KERNEL(cauchy, p + q * tanpi(uniform01(r) - (ct)0.5))

// bernoulli with a probability per element (input 1).
__kernel void bernoulli_tensor(IterDesc d, OPERAND(0), OPERAND(1), ulong seed, ulong offset) {
  ELEMENTWISE_BEGIN
  uint4 r = philox(seed, i, offset);
  OUTPUT(uniform01(r) < INPUT(1) ? (ct)1 : (ct)0);
  ELEMENTWISE_END
}
#else
// Integers: from + (random % range), with 64 random bits when the range needs them.
__kernel void random_range(IterDesc d, OPERAND(0), ulong seed, ulong offset, long from, ulong range) {
  ELEMENTWISE_BEGIN
  uint4 r = philox(seed, i, offset);
  ulong bits = range > 0xFFFFFFFFul ? (((ulong)r.x << 32) | r.y) : (ulong)r.x;
  OUTPUT((ct)(from + (long)(bits % range)));
  ELEMENTWISE_END
}
#endif
