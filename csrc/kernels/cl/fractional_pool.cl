// Fractional max pooling: windows of a fixed size (pool) whose starts along each dim follow the
// plane's sample u in [0, 1): start(o) = (int)((o + u) * alpha) - (int)(u * alpha) with
// alpha = (in - pool) / (out - 1), the last window at in - pool, each step computed in the
// input's dtype as the CPU's generate_intervals computes it (float16 and bfloat16 rounded after
// every operation, since the CPU does their arithmetic in them). Spatial dims are right-aligned
// into three. The maximum follows the CPU: the first of equal values, the last NaN.
// T is the input's dtype token.
typedef struct {
  long planes, channels;
  long in[3], out[3], pool[3];
  long sample_of[3];  // which of a plane's samples each dim uses (2-d: width first)
  long samples_per_plane;
} FractionalDesc;

#define ELEMENT_AT(base, offset) ((__global char*)(base) + (offset))

#if CAT(HALF_, T)
inline float rounded(float x) {
  ushort h;
  vstore_half(x, 0, (half*)&h);
  return vload_half(0, (const half*)&h);
}
#elif CAT(BFLOAT_, T)
inline float rounded(float x) { return bf16_to_float(float_to_bf16(x)); }
#else
#define rounded(x) (x)
#endif

inline long window_start(ct u, long o, long in, long out, long pool) {
  if (o == out - 1) return in - pool;
  const ct alpha = rounded(rounded((ct)(in - pool)) / rounded((ct)(out - 1)));
  return (long)((int)rounded(rounded((ct)o + u) * alpha) - (int)rounded(u * alpha));
}

// One work-item per output element: its value (T) and its index within the plane (long).
__kernel void fractional_max_pool(FractionalDesc d, __global char* out_base, ulong out_offset,
                                  __global char* indices_base, ulong indices_offset, __global const char* in_base,
                                  ulong in_offset, __global const char* samples_base, ulong samples_offset) {
  const long index = get_global_id(0), positions = d.out[0] * d.out[1] * d.out[2];
  if (index >= d.planes * positions) return;
  const long plane = index / positions, o2 = index % d.out[2];
  const long o1 = (index / d.out[2]) % d.out[1], o0 = (index / (d.out[2] * d.out[1])) % d.out[0];
  const long sample0 = plane * d.samples_per_plane;
#define SAMPLE(k) TO(CT, LOAD(T, ELEMENT_AT(samples_base, samples_offset + (sample0 + d.sample_of[k]) * sizeof(ST(T)))))
  const long s0 = window_start(SAMPLE(0), o0, d.in[0], d.out[0], d.pool[0]);
  const long s1 = window_start(SAMPLE(1), o1, d.in[1], d.out[1], d.pool[1]);
  const long s2 = window_start(SAMPLE(2), o2, d.in[2], d.out[2], d.pool[2]);
#undef SAMPLE
  const long plane_size = d.in[0] * d.in[1] * d.in[2];
  __global const char* in = ELEMENT_AT(in_base, in_offset + plane * plane_size * sizeof(ST(T)));
  ct best = -INFINITY;
  long best_at = (s0 * d.in[1] + s1) * d.in[2] + s2;
  for (long p0 = s0; p0 < s0 + d.pool[0]; ++p0)
    for (long p1 = s1; p1 < s1 + d.pool[1]; ++p1)
      for (long p2 = s2; p2 < s2 + d.pool[2]; ++p2) {
        const long at = (p0 * d.in[1] + p1) * d.in[2] + p2;
        const ct v = TO(CT, LOAD(T, in + at * sizeof(ST(T))));
        if (v > best || isnan(v)) {
          best = v;
          best_at = at;
        }
      }
  STORE(T, ELEMENT_AT(out_base, out_offset + index * sizeof(ST(T))), TO(T, best));
  *(__global long*)ELEMENT_AT(indices_base, indices_offset + index * sizeof(long)) = best_at;
}
