// Connectionist temporal classification (ops/ctc_loss.cpp): the forward's alpha recursion and the
// backward's beta recursion with the gradient, in log space, as the CPU computes them. Built with
// CT (f32 or f64) and TG (the targets' dtype, i32 or i64).
//
// One work-group per batch element, its lanes across the 2 * target_length + 1 positions of the
// target with blanks interleaved; each time step reads the row of the step before, written by
// other lanes, so a barrier separates the steps. The rows live in global memory (log_alpha is an
// output; beta takes a two-row scratch per element), which keeps any target length within one
// work-group, whatever the device's local memory.
//
// Targets are read where they are. A label outside [0, C) reads as log 0 (the CPU reads outside
// the row of log_probs there, and its backward writes outside the gradient's): such a target
// cannot be aligned, its loss is inf, and no gradient entry is written for the label.

#define NEG_INF (-(ct)INFINITY)
#define LANES_MAX 256  // the most lanes ops/ctc_loss.cpp launches in a group (a power of two)

typedef struct {
  long T, N, C;              // log_probs' sizes
  long lp_t, lp_n, lp_c;     // log_probs' element strides
  long tg_s;                 // the targets' element stride along one sample's target
  long width;                // the rows' length: 2 * the longest target + 1
  long blank;
  long la_n, la_t, la_s;     // log_alpha's element strides (the backward reads a given one)
  long nll_n, go_n;          // neg_log_likelihood's and grad_out's element strides
  long zero_infinity;
} CtcDesc;

#define BUFFER(type, name) __global char *name##_base, ulong name##_off
#define BIND(type, name) __global type* name = (__global type*)(name##_base + name##_off)

typedef ST(TG) target_t;

// The label at position s of the target with blanks interleaved.
inline long target_prime(__global const target_t* tg, long offset, long stride, long s, long blank) {
  return (s & 1) ? (long)tg[offset + stride * (s >> 1)] : blank;
}

inline ct log_prob(__global const ct* lp, const CtcDesc* d, long t, long c) {
  return (c >= 0 && c < d->C) ? lp[t * d->lp_t + c * d->lp_c] : NEG_INF;
}

// exp where the CPU's terms are often exact: the largest term (0) and log 0 skip the library
// call, which is most of these kernels' time on CPU devices; the values are the same.
inline ct exp_term(ct x) { return x == 0 ? (ct)1 : x == NEG_INF ? (ct)0 : exp(x); }

// log(exp(a) + exp(b) + exp(c)) the CPU's way: shifted by the largest, 0 when all are log 0.
inline ct log_sum3(ct a, ct b, ct c) {
  ct m = a;
  if (b > m) m = b;
  if (c > m) m = c;
  if (m == NEG_INF) m = 0;
  return log(exp_term(a - m) + exp_term(b - m) + exp_term(c - m)) + m;
}

// The CPU's accumulation of alpha * beta products: log 0 takes the new term as it is (and adding
// log 0 leaves the sum as it is: log(1 + 0) is 0).
inline ct log_add(ct acc, ct v) {
  if (acc == NEG_INF) return v;
  if (v == NEG_INF) return acc;
  const ct m = acc < v ? v : acc;
  return log(exp_term(acc - m) + exp_term(v - m)) + m;
}

// The gradient of the loss by log_probs from the log of the summed alpha * beta for a class.
inline ct gradient(ct collected, ct lp, ct nll, ct grad_out) {
  return (exp(lp) - exp_term(collected + nll - lp)) * grad_out;
}

// lengths: per element its input length, target length and the offset of its target in targets.
// alpha: (N, T, width) contiguous, every entry written (-inf where no path reaches or no
// position is); nll: (N) contiguous.
__kernel void ctc_alpha(CtcDesc d, BUFFER(const ct, lp), BUFFER(const target_t, tg), BUFFER(const long, lengths),
                        BUFFER(ct, alpha), BUFFER(ct, nll)) {
  BIND(const ct, lp);
  BIND(const target_t, tg);
  BIND(const long, lengths);
  BIND(ct, alpha);
  BIND(ct, nll);
  const long b = get_group_id(0), lane = get_local_id(0), lanes = get_local_size(0);
  const long input_length = lengths[3 * b], target_length = lengths[3 * b + 1], offset = lengths[3 * b + 2];
  const long positions = 2 * target_length + 1, width = d.width;
  __global const ct* lpb = lp + b * d.lp_n;
  __global ct* ab = alpha + b * d.T * width;

  if (d.T > 0) {
    for (long s = lane; s < width; s += lanes) {
      ct v = NEG_INF;
      if (input_length > 0 && s < 2 && s < positions)
        v = log_prob(lpb, &d, 0, target_prime(tg, offset, d.tg_s, s, d.blank));
      ab[s] = v;
    }
  }
  for (long t = 1; t < input_length; ++t) {
    barrier(CLK_GLOBAL_MEM_FENCE);
    __global const ct* prev = ab + (t - 1) * width;
    __global ct* cur = ab + t * width;
    for (long s = lane; s < width; s += lanes) {
      ct v = NEG_INF;
      if (s < positions) {
        const long c = target_prime(tg, offset, d.tg_s, s, d.blank);
        const ct a2 = s > 0 ? prev[s - 1] : NEG_INF;
        // A label may follow the one before it directly only when they differ.
        const ct a3 = (s > 1 && target_prime(tg, offset, d.tg_s, s - 2, d.blank) != c) ? prev[s - 2] : NEG_INF;
        v = log_sum3(prev[s], a2, a3) + log_prob(lpb, &d, t, c);
      }
      cur[s] = v;
    }
  }
  // The CPU leaves the rows past the input length as they were allocated; they are log 0 here.
  for (long i = max(input_length, 1L) * width + lane; i < d.T * width; i += lanes) ab[i] = NEG_INF;
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (lane != 0) return;
  ct log_likelihood;
  if (input_length == 0) {
    log_likelihood = target_length == 0 ? 0 : NEG_INF;
  } else {
    __global const ct* last = ab + (input_length - 1) * width;
    if (target_length == 0) {
      log_likelihood = last[0];  // no blank before an empty target: one path end only
    } else {
      const ct l1 = last[2 * target_length], l2 = last[2 * target_length - 1];
      ct m = l1 < l2 ? l2 : l1;
      if (m == NEG_INF) m = 0;
      log_likelihood = log(exp(l1 - m) + exp(l2 - m)) + m;
    }
  }
  nll[b] = -log_likelihood;
}

// grad: (T, N, C) contiguous, every entry of the element written. beta: (N, 2, width) scratch,
// the rows of t and t + 1. chain: (N, width) scratch; at odd s it holds the odd position before s
// with the same label (or -1), at s - 1 whether s is that label's last position, so that one lane
// sums each label's products in place of a scatter into the gradient row. Positions of the blank
// (every even one, and labels equal to the blank) are summed by all lanes and a tree. Every sum
// runs from the last position down, as the CPU's does: with one lane (CPU devices) each gradient
// entry is the CPU's sum in the CPU's order.
__kernel void ctc_gradient(CtcDesc d, BUFFER(const ct, grad_out), BUFFER(const ct, lp), BUFFER(const target_t, tg),
                           BUFFER(const long, lengths), BUFFER(const ct, nll), BUFFER(const ct, alpha),
                           BUFFER(ct, beta), BUFFER(int, chain), BUFFER(ct, grad)) {
  BIND(const ct, grad_out);
  BIND(const ct, lp);
  BIND(const target_t, tg);
  BIND(const long, lengths);
  BIND(const ct, nll);
  BIND(const ct, alpha);
  BIND(ct, beta);
  BIND(int, chain);
  BIND(ct, grad);
  __local ct partial[LANES_MAX];
  const long b = get_group_id(0), lane = get_local_id(0), lanes = get_local_size(0);
  const long row = d.N * d.C;
  __global ct* gb = grad + b * d.C;
  const ct nll_b = nll[b * d.nll_n];
  if (d.zero_infinity && nll_b == (ct)INFINITY) {
    for (long t = 0; t < d.T; ++t)
      for (long c = lane; c < d.C; c += lanes) gb[t * row + c] = 0;
    return;
  }
  const long input_length = lengths[3 * b], target_length = lengths[3 * b + 1], offset = lengths[3 * b + 2];
  const long positions = 2 * target_length + 1, width = d.width;
  __global const ct* lpb = lp + b * d.lp_n;
  __global const ct* ab = alpha + b * d.la_n;
  __global ct* bb = beta + b * 2 * width;
  __global int* cb = chain + b * width;
  const ct gr = grad_out[b * d.go_n];

  for (long s = 1 + 2 * lane; s < positions; s += 2 * lanes) {
    const long c = target_prime(tg, offset, d.tg_s, s, d.blank);
    int head = 0, next = -1;
    if (c != d.blank && c >= 0 && c < d.C) {
      head = 1;
      for (long u = s + 2; u < positions; u += 2)
        if (target_prime(tg, offset, d.tg_s, u, d.blank) == c) {
          head = 0;
          break;
        }
      for (long u = s - 2; u > 0; u -= 2)
        if (target_prime(tg, offset, d.tg_s, u, d.blank) == c) {
          next = (int)u;
          break;
        }
    }
    cb[s - 1] = head;
    cb[s] = next;
  }
  barrier(CLK_GLOBAL_MEM_FENCE);

  for (long t = input_length - 1; t >= 0; --t) {
    __global ct* cur = bb + (t & 1) * width;
    __global const ct* later = bb + ((t + 1) & 1) * width;
    for (long s = lane; s < positions; s += lanes) {
      const long c = target_prime(tg, offset, d.tg_s, s, d.blank);
      ct v;
      if (t == input_length - 1) {
        // Paths end in the last label or the blank after it.
        v = s >= positions - 2 ? log_prob(lpb, &d, t, c) : NEG_INF;
      } else {
        const ct b2 = s < 2 * target_length ? later[s + 1] : NEG_INF;
        const bool skip = s < 2 * target_length - 1 && target_prime(tg, offset, d.tg_s, s + 2, d.blank) != c;
        const ct b3 = skip ? later[s + 2] : NEG_INF;
        v = log_sum3(later[s], b2, b3) + log_prob(lpb, &d, t, c);
      }
      cur[s] = v;
    }
    // Classes no position holds have no alpha * beta products; the ones that do are rewritten.
    for (long c = lane; c < d.C; c += lanes)
      gb[t * row + c] = gradient(NEG_INF, lpb[t * d.lp_t + c * d.lp_c], nll_b, gr);
    barrier(CLK_GLOBAL_MEM_FENCE);

    __global const ct* at = ab + t * d.la_t;
    // Lanes take the blank's even positions, each after the label above it should that be the blank.
    ct acc = NEG_INF;
    for (long s = 2 * target_length - 2 * lane; s >= 0; s -= 2 * lanes) {
      if (s + 1 < positions && target_prime(tg, offset, d.tg_s, s + 1, d.blank) == d.blank)
        acc = log_add(acc, at[(s + 1) * d.la_s] + cur[s + 1]);
      acc = log_add(acc, at[s * d.la_s] + cur[s]);
    }
    partial[lane] = acc;
    for (long span = lanes / 2; span > 0; span /= 2) {
      barrier(CLK_LOCAL_MEM_FENCE);
      if (lane < span) partial[lane] = log_add(partial[lane], partial[lane + span]);
    }
    for (long s = 1 + 2 * lane; s < positions; s += 2 * lanes) {
      if (!cb[s - 1]) continue;
      ct sum = NEG_INF;
      for (long u = s; u >= 0; u = cb[u]) sum = log_add(sum, at[u * d.la_s] + cur[u]);
      const long c = target_prime(tg, offset, d.tg_s, s, d.blank);
      gb[t * row + c] = gradient(sum, lpb[t * d.lp_t + c * d.lp_c], nll_b, gr);
    }
    if (lane == 0) {
      ct collected = partial[0];
      // A target that holds the blank (not a valid target): at the last step the CPU assigns the
      // last label's product to the class instead of adding it to the blank's, and so do we.
      if (t == input_length - 1 && target_length > 0 &&
          target_prime(tg, offset, d.tg_s, 2 * target_length - 1, d.blank) == d.blank)
        collected = at[(2 * target_length - 1) * d.la_s] + cur[2 * target_length - 1];
      gb[t * row + d.blank] = gradient(collected, lpb[t * d.lp_t + d.blank * d.lp_c], nll_b, gr);
    }
  }
  for (long t = max(input_length, 0L); t < d.T; ++t)
    for (long c = lane; c < d.C; c += lanes) gb[t * row + c] = 0;
}
