// Anti-aliased resampling along one dim of an (N, C, H, W) tensor, for _upsample_bilinear2d_aa
// and _upsample_bicubic2d_aa (ops/antialias_resample.cpp). Built with -DT=<storage token> and
// -DCUBIC=0 (triangle filter) or 1 (the a = -0.5 cubic).
//
// Output position o along the dim is a weighted sum of the inputs [xmin, xmin + xsize) around its
// center scale * (o + 0.5); the filter is widened by the downscale factor, so the support is not
// bounded. aa_weights computes every output position's taps once per pass into two small tables
// (positions x taps), which the passes read: the same for every other coordinate.
// The arithmetic follows the CPU's (UpSample.h, _compute_indices_min_size_weights_aa), including
// where its C++ promotes float operands to double: `wide` is double there when the device has it.
typedef CAT(C_, T) ct;
#ifdef USE_FP64
typedef double wide;
#else
typedef float wide;
#endif

#define ELEMENT(base, offset, index) ((__global ST(T)*)((base) + (offset)) + (index))

typedef struct {
  long size[4];  // of the tensor written
  long dst_stride[4], src_stride[4];  // elements
  long src_size;  // the source's length along dim
  long dim;
} AaPass;

inline ct aa_filter(ct x) {
  if (x < 0) x = -x;
#if CUBIC
  if (x < 1) return (ct)(((wide)1.5 * x - (wide)2.5) * x * x + 1);
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * (ct)-0.5;
#else
  if (x < 1) return 1 - x;
#endif
  return 0;
}

// The taps of output o over an input of length `in`; returns the sum of their filter values,
// by which the CPU normalizes them (unless it is 0).
inline ct aa_taps(long o, long in, ct scale, ct support, long* xmin, long* xsize, ct* center, ct* invscale) {
  *center = (ct)((wide)scale * ((wide)o + 0.5));
  *invscale = scale >= 1 ? (ct)(1.0 / (wide)scale) : (ct)1;
  const long max_taps = (long)ceil(support) * 2 + 1;
  *xmin = max((long)((wide)(*center - support) + 0.5), 0L);
  // The CPU clips the count: rounding can make it one more than the taps it has room for.
  *xsize = clamp(min((long)((wide)(*center + support) + 0.5), in) - *xmin, 0L, max_taps);
  ct total = 0;
  for (long j = 0; j < *xsize; ++j) total += aa_filter((ct)(((wide)((ct)(j + *xmin) - *center) + 0.5) * *invscale));
  return total;
}

inline ct aa_weight(long j, long xmin, ct center, ct invscale, ct total) {
  const ct w = aa_filter((ct)(((wide)((ct)(j + xmin) - center) + 0.5) * invscale));
  return total != 0 ? w / total : w;
}

#define TABLE(type, k) ((__global type*)(base##k + offset##k))

// One work-item per output position o along the dim: its first tap and tap count into taps
// (out, 2) and its weights into weights (out, max_taps), which the passes then read.
__kernel void aa_weights(long in, long out, long max_taps, ct scale, ct support, OPERAND(0), OPERAND(1)) {
  const long o = get_global_id(0);
  if (o >= out) return;
  long xmin, xsize;
  ct center, invscale;
  const ct total = aa_taps(o, in, scale, support, &xmin, &xsize, &center, &invscale);
  TABLE(long, 0)[2 * o] = xmin;
  TABLE(long, 0)[2 * o + 1] = xsize;
  for (long j = 0; j < xsize; ++j) TABLE(ct, 1)[o * max_taps + j] = aa_weight(j, xmin, center, invscale, total);
}

// The element written by work-item `id`: its offsets in dst and, along every dim but d.dim, src.
#define PASS_BEGIN                                                  \
  long id = get_global_id(0);                                       \
  if (id >= d.size[0] * d.size[1] * d.size[2] * d.size[3]) return;  \
  long index[4];                                                    \
  for (int k = 3; k >= 0; --k) {                                    \
    index[k] = id % d.size[k];                                      \
    id /= d.size[k];                                                \
  }                                                                 \
  long src = 0, dst = 0;                                            \
  for (int k = 0; k < 4; ++k) {                                     \
    dst += index[k] * d.dst_stride[k];                              \
    if (k != d.dim) src += index[k] * d.src_stride[k];              \
  }                                                                 \
  const long step = d.src_stride[d.dim];

// One work-item per input position i along the dim: the range of outputs [covers[2i],
// covers[2i + 1]) whose taps (aa_weights' table) include it, for the backward. Output o's taps lie
// within center +- (support + 1), center = scale * (o + 0.5): a superset of those outputs is
// searched.
__kernel void aa_covers(long in, long out, ct scale, ct support, OPERAND(0), OPERAND(1)) {
  const long i = get_global_id(0);
  if (i >= in) return;
  long lo = 0, hi = out;
  if (scale > 0) {
    const ct first = floor(((ct)i - support - 2) / scale - 1), last = ceil(((ct)i + support + 2) / scale + 1);
    lo = (long)clamp(first, (ct)0, (ct)out);
    hi = (long)clamp(last, (ct)0, (ct)out);
  }
  long first = hi, last = lo;
  for (long o = lo; o < hi; ++o) {
    const long j = i - TABLE(long, 1)[2 * o];
    if (j < 0 || j >= TABLE(long, 1)[2 * o + 1]) continue;
    first = min(first, o);
    last = o + 1;
  }
  TABLE(long, 0)[2 * i] = first;
  TABLE(long, 0)[2 * i + 1] = max(first, last);
}

// One work-item per element written: the forward pass along d.dim, with aa_weights' tables.
__kernel void aa_forward(AaPass d, long max_taps, OPERAND(0), OPERAND(1), OPERAND(2), OPERAND(3)) {
  PASS_BEGIN
  const long o = index[d.dim], xmin = TABLE(long, 2)[2 * o], xsize = TABLE(long, 2)[2 * o + 1];
  __global const ct* w = TABLE(ct, 3) + o * max_taps;
  ct acc = 0;
  for (long j = 0; j < xsize; ++j) acc += (ct)LOAD(T, ELEMENT(base1, offset1, src + (xmin + j) * step)) * w[j];
  STORE(T, ELEMENT(base0, offset0, dst), TO(T, acc));
}

// The adjoint, gathered: one work-item per input position i, summing the outputs whose taps
// cover it (no atomics: a deterministic sum). The source is the outputs' gradient; the tables
// are the forward's and aa_covers'.
__kernel void aa_backward(AaPass d, long max_taps, OPERAND(0), OPERAND(1), OPERAND(2), OPERAND(3), OPERAND(4)) {
  PASS_BEGIN
  const long i = index[d.dim];
  ct acc = 0;
  for (long o = TABLE(long, 4)[2 * i], last = TABLE(long, 4)[2 * i + 1]; o < last; ++o) {
    const long j = i - TABLE(long, 2)[2 * o];
    if (j < 0 || j >= TABLE(long, 2)[2 * o + 1]) continue;
    acc += (ct)LOAD(T, ELEMENT(base1, offset1, src + o * step)) * TABLE(ct, 3)[o * max_taps + j];
  }
  STORE(T, ELEMENT(base0, offset0, dst), TO(T, acc));
}
