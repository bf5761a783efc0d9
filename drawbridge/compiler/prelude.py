"""The OpenCL C helpers of generated programs: integer floor division and modulo with Python's
signs, rounding to 16-bit floats, NaN-propagating min/max, atomic adds, and the Philox4x32-10
generator behind ``rand``/``randn`` in compiled graphs. (csrc/compiler puts the eager kernels'
common.clh before them: its bfloat16 conversions and arithmetic exp/erf, which CPU devices
vectorize where the library's calls would not.)"""

# Work-items per work-group that reduction kernels are written for (the size of their local
# buffers); launches never use more.
MAX_GROUP = 256
# Elements each work-item of a pointwise kernel walks on CPU devices (DB_ONE_LANE).
CPU_CHUNK = 64

PRELUDE = f"#define DB_CHUNK {CPU_CHUNK}L\n" + r"""
// Adjacent outputs each work-item of a column reduction owns, and adjacent elements of a row each
// lane of a row reduction takes at a time (kernel.py).
#ifdef DB_ONE_LANE
#define DB_XRUN DB_CHUNK
#define DB_RRUN 16
#else
#define DB_XRUN 1
#define DB_RRUN 1
#endif
// The loops over a run of elements, outputs or a row's elements (CPU devices): vectorized at the
// vector unit's width, which csrc/compiler passes (LLVM alone takes 256 bits on AVX-512).
#define DB_PRAGMA(x) _Pragma(#x)
#define DB_VECTORIZE_WITH(width) DB_PRAGMA(clang loop vectorize(enable) vectorize_width(width))
#ifdef DB_VECTOR_WIDTH
#define DB_VECTORIZE DB_VECTORIZE_WITH(DB_VECTOR_WIDTH)
#else
#define DB_VECTORIZE DB_PRAGMA(clang loop vectorize(enable))
#endif
inline long db_floordiv_l(long a, long b) {
  long q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline long db_mod_l(long a, long b) {
  long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
inline long db_pow_l(long base, long exp) {
  if (exp < 0) return base == 1 ? 1 : (base == -1 ? ((exp & 1) ? -1 : 1) : 0);
  long result = 1;
  while (exp) { if (exp & 1) result *= base; base *= base; exp >>= 1; }
  return result;
}
inline float db_remainder_f(float a, float b) {
  float r = fmod(a, b);
  return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
}
inline float db_floordiv_f(float a, float b) {
  if (b == 0.0f) return a / b;
  float r = fmod(a, b);
  float q = (a - r) / b;
  if (r != 0.0f && ((b < 0.0f) != (r < 0.0f))) q -= 1.0f;
  float fq = floor(q);
  if (q - fq > 0.5f) fq += 1.0f;
  return q == 0.0f ? copysign(0.0f, a / b) : fq;
}
#define DB_MAX_FP(a, b) (isnan(a) ? (a) : (isnan(b) ? (b) : fmax((a), (b))))
#define DB_MIN_FP(a, b) (isnan(a) ? (a) : (isnan(b) ? (b) : fmin((a), (b))))

inline float db_round_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }
inline float db_round_half(float f) {
  ushort h;
  vstore_half_rte(f, 0, (half*)&h);
  return vload_half(0, (const half*)&h);
}

// Philox4x32-10 (Salmon et al., SC'11): counter (offset, 0, 0, 0) under key (seed low, high).
inline uint4 db_philox(ulong seed, uint offset) {
  uint2 key = (uint2)((uint)seed, (uint)(seed >> 32));
  uint4 c = (uint4)(offset, 0u, 0u, 0u);
  for (int i = 0; i < 10; ++i) {
    uint hi0 = mul_hi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
    uint hi1 = mul_hi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
    c = (uint4)(hi1 ^ c.y ^ key.x, lo1, hi0 ^ c.w ^ key.y, lo0);
    key += (uint2)(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}
// Uniform in [0, 1) with 24 random bits.
inline float db_rand(long seed, long offset) {
  return (float)(db_philox((ulong)seed, (uint)offset).x >> 8) * 0x1.0p-24f;
}
inline float db_randn(long seed, long offset) {
  uint4 r = db_philox((ulong)seed, (uint)offset);
  float u1 = ((float)(r.x >> 8) + 1.0f) * 0x1.0p-24f;  // (0, 1]: log stays finite
  float u2 = (float)(r.y >> 8) * 0x1.0p-24f;
  return sqrt(-2.0f * log(u1)) * cospi(2.0f * u2);
}
// Atomic adds for stores in "atomic_add" mode (scatter-add, index_put with accumulate): a
// compare-and-swap loop on the 32-bit word that holds the element.
inline void db_atomic_add_f32(volatile __global float* p, float v) {
  volatile __global uint* word = (volatile __global uint*)p;
  uint seen = *word, expected;
  do {
    expected = seen;
    seen = atomic_cmpxchg(word, expected, as_uint(as_float(expected) + v));
  } while (seen != expected);
}
inline void db_atomic_add_f16(volatile __global half* p, float v) {
  volatile __global uint* word = (volatile __global uint*)((ulong)p & ~(ulong)3);
  uint shift = ((ulong)p & 2) ? 16u : 0u;
  uint seen = *word, expected;
  do {
    expected = seen;
    ushort bits = (ushort)(expected >> shift), sum;
    vstore_half_rte(vload_half(0, (const half*)&bits) + v, 0, (half*)&sum);
    seen = atomic_cmpxchg(word, expected, (expected & ~(0xFFFFu << shift)) | ((uint)sum << shift));
  } while (seen != expected);
}
inline long db_randint64(long seed, long offset, long low, long high) {
  uint4 r = db_philox((ulong)seed, (uint)offset);
  ulong bits = ((ulong)r.x << 32) | r.y;
  return low + (long)(bits % (ulong)(high - low));
}
"""


# Needs 64-bit atomics (cl_khr_int64_base_atomics): only in programs that use it.
ATOMIC_ADD_F64 = r"""
inline void db_atomic_add_f64(volatile __global double* p, double v) {
  volatile __global ulong* word = (volatile __global ulong*)p;
  ulong seen = *word, expected;
  do {
    expected = seen;
    seen = atom_cmpxchg(word, expected, as_ulong(as_double(expected) + v));
  } while (seen != expected);
}
"""


def prelude(source: str) -> str:
    """The prelude for a program whose kernels are `source`: the extensions they use, the helpers."""
    head = ""
    if "double" in source:
        head += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    if "atom_add" in source or "db_atomic_add_f64" in source:
        head += "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
    tail = ATOMIC_ADD_F64 if "db_atomic_add_f64" in source else ""
    return head + PRELUDE + tail
