// Special functions: digamma, polygamma, Hurwitz zeta, erfinv, Bessel J, Y, I and K of orders 0 and 1, Airy Ai, erfcx, the normal
// CDF's log and inverse, log-add-exp and friends.
// They are computed in `wide` (double where the device has it) and rounded once to the output, so
// that float32 results match PyTorch's CPU kernels to within rounding.
#if CT_IS_FLOAT
#ifdef USE_FP64
typedef double wide;
#else
typedef float wide;
#endif

#define W_PI ((wide)3.14159265358979323846)
#define W_EPS ((wide)1.1102230246251565e-16)

// digamma by reflection (x < 0), upward recurrence to x >= 10 and the asymptotic series.
inline wide digamma_w(wide x) {
  if (x == 0) return copysign((wide)INFINITY, -x);  // the sign of the pole follows the zero's sign
  wide result = 0;
  if (x < 0) {
    if (x == floor(x)) return (wide)NAN;
    // digamma(1 - x) - pi / tan(pi x); tan(pi x) through the fractional part keeps precision.
    wide q = x - floor(x);
    result = -W_PI / tan(W_PI * q);
    x = 1 - x;
  }
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  wide y = 1 / (x * x);
  // Bernoulli terms B_2k / (2k): 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760, 1/12.
  wide poly = y * ((wide)(1.0 / 12) -
                   y * ((wide)(1.0 / 120) -
                        y * ((wide)(1.0 / 252) -
                             y * ((wide)(1.0 / 240) - y * ((wide)(1.0 / 132) - y * (wide)(691.0 / 32760))))));
  return result + log(x) - (wide)0.5 / x - poly;
}

// trigamma: reflection for x < 0.5, recurrence, then the asymptotic series.
inline wide trigamma_w(wide x) {
  wide sign = 1, result = 0;
  if (x < (wide)0.5) {
    sign = -1;
    wide s = sin(W_PI * x);
    result -= W_PI * W_PI / (s * s);
    x = 1 - x;
  }
  for (int i = 0; i < 6; ++i) {
    result += 1 / (x * x);
    x += 1;
  }
  wide ixx = 1 / (x * x);
  result += (1 + 1 / (2 * x) + ixx * ((wide)(1.0 / 6) - ixx * ((wide)(1.0 / 30) - ixx * (wide)(1.0 / 42)))) / x;
  return sign * result;
}

// Hurwitz zeta(s, q) = sum_k (k + q)^-s by Euler-Maclaurin summation.
inline wide zeta_w(wide s, wide q) {
  // (2k)! / B_2k for k = 1..12
  const wide A[12] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
                      -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
                      1.8152105401943546773e17, -7.1661652561756670113e18};
  if (s == 1) return (wide)INFINITY;
  if (s < 1) return (wide)NAN;
  if (q <= 0) {
    if (q == floor(q)) return (wide)INFINITY;
    if (s != floor(s)) return (wide)NAN;  // q^-s is not real
  }
  wide sum = pow(q, -s), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9) {
    i += 1;
    a += 1;
    b = pow(a, -s);
    sum += b;
    if (fabs(b / sum) < W_EPS) return sum;
  }
  wide w = a;
  sum += b * w / (s - 1);
  sum -= (wide)0.5 * b;
  wide fact = 1, k = 0;
  for (int j = 0; j < 12; ++j) {
    fact *= s + k;
    b /= w;
    wide t = fact * b / A[j];
    sum += t;
    if (fabs(t / sum) < W_EPS) return sum;
    k += 1;
    fact *= s + k;
    b /= w;
    k += 1;
  }
  return sum;
}

inline wide polygamma_w(int n, wide x) {
  if (n == 0) return digamma_w(x);
  if (n == 1) return trigamma_w(x);
  wide factorial = 1;
  for (int k = 2; k <= n; ++k) factorial *= k;
  return ((n % 2) ? 1 : -1) * factorial * zeta_w((wide)(n + 1), x);
}

// erfinv: a rational first guess, refined by Newton steps on erf.
inline wide erfinv_w(wide y) {
  if (y <= -1 || y >= 1) return y == -1 ? -(wide)INFINITY : y == 1 ? (wide)INFINITY : (wide)NAN;
  wide w = -log((1 - y) * (1 + y)), x;
  if (w < 5) {
    w -= (wide)2.5;
    x = (wide)2.81022636e-08;
    x = (wide)3.43273939e-07 + x * w;
    x = (wide)-3.5233877e-06 + x * w;
    x = (wide)-4.39150654e-06 + x * w;
    x = (wide)0.00021858087 + x * w;
    x = (wide)-0.00125372503 + x * w;
    x = (wide)-0.00417768164 + x * w;
    x = (wide)0.246640727 + x * w;
    x = (wide)1.50140941 + x * w;
  } else {
    w = sqrt(w) - 3;
    x = (wide)-0.000200214257;
    x = (wide)0.000100950558 + x * w;
    x = (wide)0.00134934322 + x * w;
    x = (wide)-0.00367342844 + x * w;
    x = (wide)0.00573950773 + x * w;
    x = (wide)-0.0076224613 + x * w;
    x = (wide)0.00943887047 + x * w;
    x = (wide)1.00167406 + x * w;
    x = (wide)2.83297682 + x * w;
  }
  x *= y;
  const wide two_over_sqrt_pi = (wide)1.1283791670955126;
  for (int i = 0; i < 2; ++i) x -= (erf(x) - y) / (two_over_sqrt_pi * exp(-x * x));
  return x;
}

inline wide logaddexp_w(wide a, wide b) {
  if (isinf(a) && a == b) return a;
  wide m = fmax(a, b);
  return m + log1p(exp(-fabs(a - b)));
}

inline wide logaddexp2_w(wide a, wide b) {
  if (isinf(a) && a == b) return a;
  wide m = fmax(a, b);
  return m + log1p(exp2(-fabs(a - b))) / log((wide)2);
}

inline wide sinc_w(wide x) {
  if (x == 0) return 1;
  wide px = W_PI * x;
  return sin(px) / px;
}

inline wide entr_w(wide x) {
  if (isnan(x)) return x;
  if (x > 0) return -x * log(x);
  return x == 0 ? (wide)0 : -(wide)INFINITY;
}

// x * log1p(y), 0 where x is 0 (unless y is NaN).
inline wide xlog1py_w(wide x, wide y) {
  if (isnan(y)) return y;
  return x == 0 ? (wide)0 : x * log1p(y);
}

// Modified Bessel functions of the first kind, orders 0 and 1, scaled by exp(-|x|): the power
// series below 30 (positive terms, summed until they stop mattering), the asymptotic expansion
// e^x / sqrt(2 pi x) (1 - (mu - 1) / (8x) + (mu - 1)(mu - 9) / (2! (8x)^2) - ...) with mu = 4 nu^2
// beyond (its terms shrink until k ~ 2x, far past double's precision at 30).
inline wide bessel_i_scaled_w(int order, wide x) {
  const wide ax = fabs(x);
  wide result;
  if (ax <= 30) {
    const wide q = ax * ax / 4;
    wide term = order == 0 ? (wide)1 : ax / 2, sum = term;
    for (int k = 1; k < 500 && term > sum * W_EPS; ++k) {
      term *= q / ((wide)k * (wide)(k + order));
      sum += term;
    }
    result = sum * exp(-ax);
  } else {
    const wide mu = 4 * order * order;
    wide term = 1, sum = 1;
    for (int k = 1; k < 60; ++k) {
      const wide odd = 2 * k - 1, next = -term * (mu - odd * odd) / ((wide)k * 8 * ax);
      if (fabs(next) >= fabs(term) || fabs(next) < sum * W_EPS) break;
      term = next;
      sum += term;
    }
    result = sum / sqrt(2 * W_PI * ax);
  }
  return (order == 1 && x < 0) ? -result : result;
}

inline wide bessel_i_w(int order, wide x) {
  if (isinf(x)) return order == 0 ? (wide)INFINITY : x;
  return bessel_i_scaled_w(order, x) * exp(fabs(x));
}

// Modified Bessel functions of the second kind, orders 0 and 1, scaled by exp(x): the integral
// exp(x) K_nu(x) = int_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt by the trapezoid rule, which
// converges geometrically for this analytic integrand (steps shrink as 1/sqrt(x), the width of
// its peak); the asymptotic expansion from 30 on.
inline wide bessel_k_scaled_w(int order, wide x) {
  if (isnan(x) || x < 0) return (wide)NAN;
  if (x == 0) return (wide)INFINITY;
  if (isinf(x)) return 0;
  if (x >= 30) {
    const wide mu = 4 * order * order;
    wide term = 1, sum = 1;
    for (int k = 1; k < 60; ++k) {
      const wide odd = 2 * k - 1, next = term * (mu - odd * odd) / ((wide)k * 8 * x);
      if (fabs(next) >= fabs(term) || fabs(next) < sum * W_EPS) break;
      term = next;
      sum += term;
    }
    return sum * sqrt(W_PI / (2 * x));
  }
  // The integrand is below e^-45 past cosh t = 1 + 45 / x; for tiny x, acosh(y) = log(2y).
  const wide h = (wide)0.15 / fmax((wide)1, sqrt(x));
  const wide end = x < (wide)1e-3 ? log((wide)90) - log(x) : acosh(1 + 45 / x);
  wide sum = (wide)0.5;  // the t = 0 end of the trapezoid, where the integrand is 1
  for (int k = 1; k * h <= end; ++k) {
    const wide t = k * h, s = sinh(t / 2), decay = -2 * x * s * s;
    // cosh(t) e^decay as two exponentials: cosh alone overflows before the product does.
    sum += order == 0 ? exp(decay) : (exp(decay + t) + exp(decay - t)) / 2;
  }
  return h * sum;
}

inline wide bessel_k_w(int order, wide x) { return bessel_k_scaled_w(order, x) * exp(-x); }

// Bessel functions of the first and second kinds, orders 0 and 1: the power series (with the
// logarithmic terms for Y) below 12, where their largest terms stay near 1e4 so that cancellation
// costs 4 of double's digits, and Hankel's asymptotic expansion from 12 on, where its terms
// shrink to e^-24 before they diverge.
inline void bessel_hankel_w(int order, wide x, wide* j, wide* y) {
  const wide mu = 4 * order * order;
  wide p = 1, q = 0, term = 1;
  for (int k = 1; k < 60; ++k) {
    const wide odd = 2 * k - 1, next = term * (mu - odd * odd) / ((wide)k * 8 * x);
    if (fabs(next) >= fabs(term) || fabs(next) < W_EPS) break;  // past its smallest term it diverges
    term = next;
    if (k % 2) q += (k % 4 == 1 ? 1 : -1) * term;
    else p += (k % 4 == 0 ? 1 : -1) * term;
  }
  // chi = x - (order / 2 + 1 / 4) pi, through sin x and cos x to keep x's digits.
  const wide c = cos(x), s = sin(x), r = (wide)0.70710678118654752440;
  const wide cos_chi = order == 0 ? (c + s) * r : (s - c) * r;
  const wide sin_chi = order == 0 ? (s - c) * r : -(c + s) * r;
  const wide scale = sqrt(2 / (W_PI * x));
  *j = scale * (p * cos_chi - q * sin_chi);
  *y = scale * (p * sin_chi + q * cos_chi);
}

inline wide bessel_j_w(int order, wide x) {
  if (isinf(x)) return 0;
  const wide ax = fabs(x), sign = (order == 1 && x < 0) ? -1 : 1;
  if (ax >= 12) {
    wide j, y;
    bessel_hankel_w(order, ax, &j, &y);
    return sign * j;
  }
  const wide q = -ax * ax / 4;
  wide term = order == 0 ? (wide)1 : ax / 2, sum = term;
  for (int k = 1; k < 100 && fabs(term) > W_EPS * 1e-4; ++k) {
    term *= q / ((wide)k * (wide)(k + order));
    sum += term;
  }
  return sign * sum;
}

inline wide bessel_y_w(int order, wide x) {
  if (isnan(x) || x < 0) return (wide)NAN;
  if (x == 0) return -(wide)INFINITY;
  if (isinf(x)) return 0;
  if (x >= 12) {
    wide j, y;
    bessel_hankel_w(order, x, &j, &y);
    return y;
  }
  const wide euler = (wide)0.57721566490153286061, q = -x * x / 4, log_half = log(x / 2);
  if (order == 0) {
    // (2/pi) ((ln(x/2) + gamma) J0 - sum_k (-x^2/4)^k H_k / k!^2)
    wide term = 1, harmonic = 0, sum = 0;
    for (int k = 1; k < 100; ++k) {
      term *= q / ((wide)k * k);
      harmonic += (wide)1 / k;
      sum += term * harmonic;
      if (fabs(term * harmonic) < W_EPS * 1e-4) break;
    }
    return 2 / W_PI * ((log_half + euler) * bessel_j_w(0, x) - sum);
  }
  // (2/pi) ln(x/2) J1 - 2/(pi x) - (1/pi) sum_k (psi(k+1) + psi(k+2)) (x/2)^(2k+1) (-1)^k / (k! (k+1)!)
  wide term = x / 2, h_k = 0, h_k1 = 1, sum = term * (h_k + h_k1 - 2 * euler);
  for (int k = 1; k < 100; ++k) {
    term *= q / ((wide)k * (k + 1));
    h_k += (wide)1 / k;
    h_k1 += (wide)1 / (k + 1);
    const wide add = term * (h_k + h_k1 - 2 * euler);
    sum += add;
    if (fabs(add) < W_EPS * 1e-4) break;
  }
  return 2 / W_PI * log_half * bessel_j_w(1, x) - 2 / (W_PI * x) - sum / W_PI;
}

// The Airy function Ai: its Maclaurin series on [-8, 5.5] (for positive x the series cancels
// down to Ai's small values, losing up to 7 digits at 5.5) and the asymptotic expansions in
// zeta = (2/3) |x|^(3/2) beyond, summed up to their smallest term (below 3e-8 relative there).
inline wide airy_ai_w(wide x) {
  if (isnan(x)) return x;
  if (isinf(x)) return 0;
  const wide ax = fabs(x);
  if (x <= 5.5 && x >= -8) {
    const wide ai0 = (wide)0.35502805388781723926, slope0 = (wide)0.25881940379280679840;
    const wide x3 = x * x * x;
    wide f = 1, g = x, tf = 1, tg = x;
    for (int k = 1; k < 200; ++k) {
      tf *= x3 / ((wide)(3 * k - 1) * (3 * k));
      tg *= x3 / ((wide)(3 * k) * (3 * k + 1));
      f += tf;
      g += tg;
      if (fabs(tf) + fabs(tg) < W_EPS * 1e-6) break;
    }
    return ai0 * f - slope0 * g;
  }
  const wide zeta = 2 * ax * sqrt(ax) / 3, root = sqrt(W_PI) * sqrt(sqrt(ax));
  // u_k: u_0 = 1, u_k = u_{k-1} (6k - 5)(6k - 3)(6k - 1) / ((2k - 1) 216 k).
  wide term = 1, even = 1, odd = 0, all = 1;
  for (int k = 1; k < 60; ++k) {
    const wide next = term * (wide)(6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((wide)(2 * k - 1) * 216 * k * zeta);
    if (next >= term || next < W_EPS) break;  // past its smallest term the expansion diverges
    term = next;
    all += (k % 2 ? -1 : 1) * term;
    if (k % 2) odd += (k % 4 == 1 ? 1 : -1) * term;
    else even += (k % 4 == 0 ? 1 : -1) * term;
  }
  if (x > 0) return exp(-zeta) * all / (2 * root);
  const wide phase = zeta + W_PI / 4;
  return (sin(phase) * even - cos(phase) * odd) / root;
}

inline wide spherical_j0_w(wide x) {
  if (isinf(x)) return 0;
  return x == 0 ? (wide)1 : sin(x) / x;
}

// erfcx(x) = exp(x^2) erfc(x): directly while neither factor leaves the type's range, the
// asymptotic series 1 / (x sqrt(pi)) (1 - 1/(2x^2) + 3/(2x^2)^2 - ...) beyond.
inline wide erfcx_w(wide x) {
  const wide direct_below = sizeof(wide) == 8 ? (wide)26 : (wide)9;
  if (isnan(x)) return x;
  if (x < direct_below) return exp(x * x) * erfc(x);
  if (isinf(x)) return 0;
  const wide r = 1 / (2 * x * x);
  wide term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    term *= -(2 * k - 1) * r;
    sum += term;
    if (fabs(term) < sum * W_EPS) break;
  }
  return sum / (x * sqrt(W_PI));
}

// log of the standard normal CDF: log1p of the upper tail where the CDF is near 1, and through
// erfcx below -1, where the CDF itself would underflow.
inline wide log_ndtr_w(wide x) {
  const wide t = x * (wide)0.70710678118654752440;
  if (x > -1) return log1p(-erfc(t) / 2);
  return log(erfcx_w(-t) / 2) - x * x / 2;
}

// The inverse of the standard normal CDF. Inside (0.1, 0.9): sqrt(2) erfinv(2p - 1) refined by
// Newton steps on the CDF. In the tails, where 2p - 1 rounds to -1: a rational first guess in
// sqrt(-2 log p) (Abramowitz and Stegun 26.2.23, within 5e-4), refined by Newton steps on
// log CDF through log_ndtr and erfcx, which neither underflow; the upper tail by symmetry.
inline wide ndtri_lower_tail_w(wide p) {
  const wide t = sqrt(-2 * log(p));
  wide x = -(t - ((wide)2.515517 + (wide)0.802853 * t + (wide)0.010328 * t * t) /
                     (1 + (wide)1.432788 * t + (wide)0.189269 * t * t + (wide)0.001308 * t * t * t));
  const wide log_p = log(p), sqrt_half_pi = (wide)1.25331413731550025121;
  for (int i = 0; i < 5; ++i) x -= (log_ndtr_w(x) - log_p) * erfcx_w(-x * (wide)0.70710678118654752440) * sqrt_half_pi;
  return x;
}

inline wide ndtri_w(wide p) {
  if (p <= 0 || p >= 1) return p == 0 ? -(wide)INFINITY : p == 1 ? (wide)INFINITY : (wide)NAN;
  if (p <= (wide)0.1) return ndtri_lower_tail_w(p);
  if (p >= (wide)0.9) return -ndtri_lower_tail_w(1 - p);
  const wide sqrt2 = (wide)1.41421356237309504880, inv_sqrt_2pi = (wide)0.39894228040143267794;
  wide x = sqrt2 * erfinv_w(2 * p - 1);
  for (int i = 0; i < 3; ++i) {
    const wide cdf = erfc(-x / sqrt2) / 2, pdf = inv_sqrt_2pi * exp(-x * x / 2);
    x -= (cdf - p) / pdf;
  }
  return x;
}

// Orthogonal polynomials of degree n (n < 0 gives 0), by their three-term recurrences, with the
// CPU's closed forms at the interval's ends and its trigonometric forms inside the interval for
// large n. The shifted Chebyshev polynomials are the plain ones at 2x - 1.
inline wide chebyshev_wide(char kind, wide x, long n) {
  if (n < 0) return 0;
  const wide odd = n % 2 ? -1 : 1;  // (-1)^n
  if (fabs(x) == 1) {
    switch (kind) {
      case 't': return x > 0 ? 1 : odd;
      case 'u': return (x > 0 ? 1 : odd) * (wide)(n + 1);
      case 'v': return x > 0 ? 1 : odd * (wide)(2 * n + 1);
      default: return x > 0 ? (wide)(2 * n + 1) : odd;  // 'w'
    }
  }
  if (n > (kind == 't' ? 6 : 8) && fabs(x) < 1) {
    const wide theta = acos(x);
    switch (kind) {
      case 't': return cos(n * theta);
      case 'u':
        if (sin(theta) != 0) return sin((n + 1) * theta) / sin(theta);
        return (n + 1) * cos((n + 1) * theta) / x;
      case 'v':
        if (sin(theta / 2) != 1) return cos((n + (wide)0.5) * theta) / cos(theta / 2);
        return odd * (wide)(2 * n + 1);
      default:
        if (cos(theta / 2) != 1) return sin((n + (wide)0.5) * theta) / sin(theta / 2);
        return x > 0 ? (wide)(2 * n + 1) : odd;
    }
  }
  if (n == 0) return 1;
  wide p = 1, q = kind == 't' ? x : kind == 'u' ? x + x : kind == 'v' ? x + x - 1 : x + x + 1;
  for (long k = 2; k <= n; ++k) {
    const wide r = (x + x) * q - p;
    p = q;
    q = r;
  }
  return q;
}

inline wide shifted_chebyshev_wide(char kind, wide x, long n) { return chebyshev_wide(kind, x + x - 1, n); }

inline wide hermite_h_w(wide x, long n) {  // the physicists' H_n
  if (n < 0) return 0;
  if (n == 0) return 1;
  wide p = 1, q = x + x;
  for (long k = 2; k < n + n; k += 2) {
    const wide r = (x + x) * q - k * p;
    p = q;
    q = r;
  }
  return q;
}

inline wide hermite_he_w(wide x, long n) {  // the probabilists' He_n
  if (n < 0) return 0;
  if (n == 0) return 1;
  wide p = 1, q = x;
  for (long k = 1; k < n; ++k) {
    const wide r = x * q - k * p;
    p = q;
    q = r;
  }
  return q;
}

inline wide laguerre_w(wide x, long n) {
  if (n < 0) return 0;
  if (x == 0 || n == 0) return 1;
  wide p = 1, q = 1 - x;
  for (long k = 1; k < n; ++k) {
    const wide r = ((k + k + 1 - x) * q - k * p) / (k + 1);
    p = q;
    q = r;
  }
  return q;
}

inline wide legendre_w(wide x, long n) {
  if (n < 0) return 0;
  if (fabs(x) == 1) return (x > 0 || n % 2 == 0) ? 1 : -1;
  if (n == 0) return 1;
  wide p = 1, q = x;
  for (long k = 1; k < n; ++k) {
    const wide r = ((k + k + 1) * x * q - k * p) / (k + 1);
    p = q;
    q = r;
  }
  return q;
}

#define WIDE(x) ((wide)(x))

// The regularized incomplete gamma functions P(a, x) (igamma) and Q(a, x) = 1 - P (igammac):
// the power series below x = a + 1, the continued fraction (modified Lentz) above, each giving
// the other as its complement there; the edge cases (a or x zero, negative, infinite, NaN) as
// the CPU's.
#define GAMMA_EPS ((wide)(sizeof(wide) == 8 ? 1.1e-16 : 6e-8))
inline wide gamma_prefactor(wide a, wide x) { return exp(a * log(x) - x - lgamma(a)); }
inline wide lower_gamma_series(wide a, wide x) {
  wide term = 1 / a, sum = term;
  for (int n = 1; n < 10000 && fabs(term) >= fabs(sum) * GAMMA_EPS; ++n) {
    term *= x / (a + n);
    sum += term;
  }
  return sum * gamma_prefactor(a, x);
}
inline wide upper_gamma_fraction(wide a, wide x) {
  const wide tiny = sizeof(wide) == 8 ? (wide)1e-300 : (wide)1e-30;
  wide b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const wide an = -i * (i - a);
    b += 2;
    d = an * d + b;
    d = fabs(d) < tiny ? tiny : d;
    c = b + an / c;
    c = fabs(c) < tiny ? tiny : c;
    d = 1 / d;
    h *= d * c;
    if (fabs(d * c - 1) < GAMMA_EPS) break;
  }
  return h * gamma_prefactor(a, x);
}
inline wide incomplete_gamma(wide a, wide x, bool upper) {
  if (isnan(a) || isnan(x) || a < 0 || x < 0) return NAN;
  if (a == 0) return x > 0 ? (wide)!upper : NAN;
  if (x == 0) return (wide)upper;
  if (isinf(a)) return isinf(x) ? NAN : (wide)upper;
  if (isinf(x)) return (wide)!upper;
  if (x < a + 1) {
    const wide p = lower_gamma_series(a, x);
    return upper ? 1 - p : p;
  }
  const wide q = upper_gamma_fraction(a, x);
  return upper ? q : 1 - q;
}
BINARY(igamma, incomplete_gamma(WIDE(a), WIDE(b), false))
BINARY(igammac, incomplete_gamma(WIDE(a), WIDE(b), true))
#define DEGREE(b) ((long)(b))
BINARY(chebyshev_t, chebyshev_wide('t', WIDE(a), DEGREE(b)))
BINARY(chebyshev_u, chebyshev_wide('u', WIDE(a), DEGREE(b)))
BINARY(chebyshev_v, chebyshev_wide('v', WIDE(a), DEGREE(b)))
BINARY(chebyshev_w, chebyshev_wide('w', WIDE(a), DEGREE(b)))
BINARY(shifted_chebyshev_t, shifted_chebyshev_wide('t', WIDE(a), DEGREE(b)))
BINARY(shifted_chebyshev_u, shifted_chebyshev_wide('u', WIDE(a), DEGREE(b)))
BINARY(shifted_chebyshev_v, shifted_chebyshev_wide('v', WIDE(a), DEGREE(b)))
BINARY(shifted_chebyshev_w, shifted_chebyshev_wide('w', WIDE(a), DEGREE(b)))
BINARY(hermite_h, hermite_h_w(WIDE(a), DEGREE(b)))
BINARY(hermite_he, hermite_he_w(WIDE(a), DEGREE(b)))
BINARY(laguerre_l, laguerre_w(WIDE(a), DEGREE(b)))
BINARY(legendre_p, legendre_w(WIDE(a), DEGREE(b)))
UNARY(i0, bessel_i_w(0, WIDE(a)))
UNARY(i0e, bessel_i_scaled_w(0, WIDE(a)))
UNARY(i1, bessel_i_w(1, WIDE(a)))
UNARY(i1e, bessel_i_scaled_w(1, WIDE(a)))
UNARY(airy_ai, airy_ai_w(WIDE(a)))
UNARY(j0, bessel_j_w(0, WIDE(a)))
UNARY(j1, bessel_j_w(1, WIDE(a)))
UNARY(y0, bessel_y_w(0, WIDE(a)))
UNARY(y1, bessel_y_w(1, WIDE(a)))
UNARY(k0, bessel_k_w(0, WIDE(a)))
UNARY(k1, bessel_k_w(1, WIDE(a)))
UNARY(k0e, bessel_k_scaled_w(0, WIDE(a)))
UNARY(k1e, bessel_k_scaled_w(1, WIDE(a)))
UNARY(spherical_j0, spherical_j0_w(WIDE(a)))
UNARY(erfcx, erfcx_w(WIDE(a)))
UNARY(log_ndtr, log_ndtr_w(WIDE(a)))
UNARY(ndtri, ndtri_w(WIDE(a)))
UNARY(digamma, digamma_w(WIDE(a)))
UNARY(erfinv, erfinv_w(WIDE(a)))
UNARY(sinc, sinc_w(WIDE(a)))
UNARY(entr, entr_w(WIDE(a)))
// angle of a real number: 0 for x >= 0, pi for x < 0, NaN stays NaN.
UNARY(angle, isnan(a) ? a : (a < 0 ? (ct)M_PI : (ct)0))
UNARY_P(polygamma, polygamma_w((int)p, WIDE(a)))
BINARY(zeta, zeta_w(WIDE(a), WIDE(b)))
BINARY(xlog1py, xlog1py_w(WIDE(a), WIDE(b)))
BINARY(logaddexp, logaddexp_w(WIDE(a), WIDE(b)))
BINARY(logaddexp2, logaddexp2_w(WIDE(a), WIDE(b)))
#endif
