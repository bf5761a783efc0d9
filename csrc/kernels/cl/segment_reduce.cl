// segment_reduce and its backward: one work-item per (outer, segment, inner) output element walks
// its segment's elements along the reduced axis. Built with T = the data's dtype token.
//
// The CPU computes in the element type itself: a float16/bfloat16 accumulator is rounded after
// every step (c10::Half arithmetic is float arithmetic rounded back), and dividing by a count
// converts the count to the element type first. ROUND reproduces that, so results match the
// CPU's bit for bit instead of being more accurate than it.
typedef CAT(C_, T) acc_t;

inline float round_half(float v) {
  ushort b;
  vstore_half_rte(v, 0, (__private half*)&b);
  return vload_half(0, (const __private half*)&b);
}
#define ROUND_f32(v) (v)
#define ROUND_f64(v) (v)
#define ROUND_f16(v) round_half(v)
#define ROUND_bf16(v) bf16_to_float(float_to_bf16(v))
#define ROUND(v) CAT(ROUND_, T)(v)

// at::native::ReductionType's order.
#define RED_MAX 0
#define RED_MEAN 1
#define RED_MIN 2
#define RED_SUM 3
#define RED_PROD 4

// Element strides of each operand viewed as (outer, axis, inner); `result` and `grad` have the
// segments as their axis. Segment s of row `outer` spans [start, end) along data's axis: with
// `inclusive`, bounds hold the inclusive prefix sums of the lengths (start = bounds[s - 1]);
// otherwise they are the offsets (start = bounds[s], end = bounds[s + 1]).
typedef struct {
  long outer, segments, inner, axis_size;
  long data_stride[3];
  long result_stride[3];
  long grad_stride[3];
  long bounds_stride;
  long inclusive;
  long has_initial;
} SegmentDesc;

#define ELEMENT(base, stride, o, a, i) ((base) + ((o) * (stride)[0] + (a) * (stride)[1] + (i) * (stride)[2]) * (long)sizeof(ST(T)))

inline void segment_bounds(const SegmentDesc* d, __global const long* bounds, long o, long s, long* start, long* end) {
  __global const long* row = bounds + o * d->bounds_stride;
  if (d->inclusive) {
    *start = s == 0 ? 0 : row[s - 1];
    *end = row[s];
  } else {
    *start = row[s];
    *end = row[s + 1];
  }
}

// A segment of negative length (the CPU's `segment_length >= 0` check) or one reaching outside the
// data (which the CPU would read past its buffer) sets the error flag and is left unwritten.
__kernel void segment_reduce(SegmentDesc d, __global char* out_base, ulong out_offset, __global const char* data_base,
                             ulong data_offset, __global const char* bounds_base, ulong bounds_offset, acc_t initial,
                             int reduction, __global int* error, int error_code) {
  const long id = get_global_id(0);
  if (id >= d.outer * d.segments * d.inner) return;
  const long i = id % d.inner, s = (id / d.inner) % d.segments, o = id / (d.inner * d.segments);
  long start, end;
  segment_bounds(&d, (__global const long*)(bounds_base + bounds_offset), o, s, &start, &end);
  if (end < start || start < 0 || end > d.axis_size) {
    atomic_xchg(error, error_code);
    return;
  }
  __global const char* data = data_base + data_offset;
  acc_t acc;
  if (d.has_initial)
    acc = initial;
  else if (reduction == RED_MAX)
    acc = -INFINITY;
  else if (reduction == RED_MIN)
    acc = INFINITY;
  else if (reduction == RED_PROD)
    acc = 1;
  else
    acc = 0;
  // NaN tests are x != x: isnan is a library call. max and min keep the first NaN, as
  // std::max / std::min over the CPU's `isnan(x) ? x : max(acc, x)` do.
  switch (reduction) {
    case RED_MAX:
      for (long j = start; j < end; ++j) {
        acc_t x = LOAD(T, ELEMENT(data, d.data_stride, o, j, i));
        acc = x != x ? x : (acc < x ? x : acc);
      }
      break;
    case RED_MIN:
      for (long j = start; j < end; ++j) {
        acc_t x = LOAD(T, ELEMENT(data, d.data_stride, o, j, i));
        acc = x != x ? x : (x < acc ? x : acc);
      }
      break;
    case RED_PROD:
      for (long j = start; j < end; ++j) acc = ROUND(acc * LOAD(T, ELEMENT(data, d.data_stride, o, j, i)));
      break;
    default:
      for (long j = start; j < end; ++j) acc = ROUND(acc + LOAD(T, ELEMENT(data, d.data_stride, o, j, i)));
      break;
  }
  const long length = end - start;
  if (reduction == RED_MEAN) {
    if (length == 0 && !d.has_initial)
      acc = NAN;
    else if (length > 0 && acc == acc)
      acc = ROUND(acc / ROUND((acc_t)length));
  }
  __global char* out = out_base + out_offset + id * (long)sizeof(ST(T));
  STORE(T, out, acc);
}

// The gradient of each segment's elements into grad_input (dense (outer, axis, inner), zeroed
// before: elements in no segment keep 0), by the CPU's formulas: max/min send the gradient to
// every element equal to the result (or NaN) and split it among ties only where it is positive;
// prod divides grad * result by the element, or multiplies out the other elements where the
// element is 0 or NaN. Segments of offsets the forward accepted never overlap.
__kernel void segment_reduce_backward(SegmentDesc d, __global char* gi_base, ulong gi_offset,
                                      __global const char* grad_base, ulong grad_offset,
                                      __global const char* result_base, ulong result_offset,
                                      __global const char* data_base, ulong data_offset,
                                      __global const char* bounds_base, ulong bounds_offset, acc_t initial,
                                      int reduction, __global int* error, int error_code) {
  const long id = get_global_id(0);
  if (id >= d.outer * d.segments * d.inner) return;
  const long i = id % d.inner, s = (id / d.inner) % d.segments, o = id / (d.inner * d.segments);
  long start, end;
  segment_bounds(&d, (__global const long*)(bounds_base + bounds_offset), o, s, &start, &end);
  if (end <= start) return;  // the CPU's loops over an empty or negative range do nothing
  if (start < 0 || end > d.axis_size) {
    atomic_xchg(error, error_code);
    return;
  }
  __global const char* data = data_base + data_offset;
  __global char* gi = gi_base + gi_offset;
  const long gi_stride[3] = {d.axis_size * d.inner, d.inner, 1};
  const acc_t g = LOAD(T, ELEMENT(grad_base + grad_offset, d.grad_stride, o, s, i));
  const acc_t r = LOAD(T, ELEMENT(result_base + result_offset, d.result_stride, o, s, i));
  const long length = end - start;
  switch (reduction) {
    case RED_MAX:
    case RED_MIN: {
      long ties = 0;
      for (long j = start; j < end; ++j) {
        acc_t x = LOAD(T, ELEMENT(data, d.data_stride, o, j, i));
        ties += (x != x || x == r);
      }
      acc_t v = g;
      if (ties >= 2 && v > 0) v = ROUND(v / ROUND((acc_t)ties));
      for (long j = start; j < end; ++j) {
        acc_t x = LOAD(T, ELEMENT(data, d.data_stride, o, j, i));
        if (x != x || x == r) STORE(T, ELEMENT(gi, gi_stride, o, j, i), v);
      }
      break;
    }
    case RED_MEAN: {
      const acc_t v = ROUND(g / ROUND((acc_t)length));
      for (long j = start; j < end; ++j) STORE(T, ELEMENT(gi, gi_stride, o, j, i), v);
      break;
    }
    case RED_SUM:
      for (long j = start; j < end; ++j) STORE(T, ELEMENT(gi, gi_stride, o, j, i), g);
      break;
    default: {  // RED_PROD
      const acc_t gr = ROUND(g * r);
      for (long j = start; j < end; ++j) {
        acc_t x = LOAD(T, ELEMENT(data, d.data_stride, o, j, i));
        acc_t v;
        if (x != x || x == 0) {
          acc_t others = initial;
          for (long k = start; k < end; ++k)
            if (k != j) others = ROUND(others * LOAD(T, ELEMENT(data, d.data_stride, o, k, i)));
          v = ROUND(g * others);
        } else {
          v = ROUND(gr / x);
        }
        STORE(T, ELEMENT(gi, gi_stride, o, j, i), v);
      }
      break;
    }
  }
}
