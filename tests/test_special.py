"""Special functions on the device against mpmath, at arguments OpInfo's samples (|x| < 10)
do not reach: the large-argument expansions of the Bessel and Airy functions, the tails of the
normal distribution. ocl computes them in double where the device has it; the bound is what
double gives these formulas, well inside float32's resolution."""
import mpmath
import pytest
import torch

from conftest import supports_fp64

mpmath.mp.dps = 30
pytestmark = pytest.mark.usefixtures("native_only")

X = [0.001, 0.5, 3.0, 5.4, 7.9, 11.9, 12.1, 15.0, 20.0, 29.9, 30.1, 50.0, 100.0, 1000.0, 12345.6]
FUNCTIONS = {
    "bessel_j0": (torch.special.bessel_j0, lambda x: mpmath.besselj(0, x)),
    "bessel_j1": (torch.special.bessel_j1, lambda x: mpmath.besselj(1, x)),
    "bessel_y0": (torch.special.bessel_y0, lambda x: mpmath.bessely(0, x)),
    "bessel_y1": (torch.special.bessel_y1, lambda x: mpmath.bessely(1, x)),
    "i0": (torch.special.i0, lambda x: mpmath.besseli(0, x)),
    "i1e": (torch.special.i1e, lambda x: mpmath.besseli(1, x) * mpmath.exp(-x)),
    "modified_bessel_k0": (torch.special.modified_bessel_k0, lambda x: mpmath.besselk(0, x)),
    "scaled_modified_bessel_k1": (torch.special.scaled_modified_bessel_k1,
                                  lambda x: mpmath.besselk(1, x) * mpmath.exp(x)),
    "airy_ai": (torch.special.airy_ai, lambda x: mpmath.airyai(x)),
    "airy_ai_negative": (lambda t: torch.special.airy_ai(-t), lambda x: mpmath.airyai(-x)),
    "erfcx": (torch.special.erfcx, lambda x: mpmath.exp(x * x) * mpmath.erfc(x)),
    "log_ndtr_tail": (lambda t: torch.special.log_ndtr(-t), lambda x: mpmath.log(mpmath.ncdf(-x))),
    # ndtri at p = exp(-x): the lower tail, down to exp(-12345.6) = 0 (so -inf).
    "ndtri_tail": (lambda t: torch.special.ndtri(torch.exp(-t)), lambda x: inverse_normal_cdf(float(mpmath.exp(-x)))),
}


def inverse_normal_cdf(p):
    with mpmath.workdps(700):  # 2p - 1 keeps p's digits down to p = 1e-300
        return mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(p) - 1)


@pytest.mark.skipif(not supports_fp64(), reason="the bound assumes double arithmetic")
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_matches_mpmath_at_large_arguments(name):
    fn, exact = FUNCTIONS[name]
    x = torch.tensor(X, dtype=torch.float64)
    actual = fn(x.to("ocl")).cpu()
    for xi, value in zip(X, actual.tolist()):
        reference = float(exact(mpmath.mpf(xi)))
        if reference == 0 or abs(reference) == float("inf"):
            assert value == reference, (xi, value, reference)
        else:
            assert abs(value - reference) <= 1e-9 * abs(reference), (xi, value, reference)


def float32_ulps(actual, exact):
    """|actual - exact| in units of float32's spacing at exact."""
    spacing = torch.nextafter(exact.abs().float(), torch.tensor(float("inf"))).double() - exact.abs().float().double()
    return (actual.double() - exact).abs() / spacing


def test_float32_erf_within_two_ulps():
    """erf in float32 is arithmetic (two polynomials, no library call): every float from 0 to 4.5
    on a fine grid, tiny arguments, and both signs stay within 2 ulp of the exact value."""
    x = torch.cat([torch.linspace(0, 4.5, 450_001), torch.logspace(-38, 0, 4001)])
    x = torch.cat([x, -x])
    ulps = float32_ulps(torch.erf(x.to("ocl")).cpu(), torch.erf(x.double()))
    worst = ulps.argmax()
    assert ulps.max() <= 2, (x[worst].item(), ulps.max().item())
    special = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan")])
    actual = torch.erf(special.to("ocl")).cpu()
    torch.testing.assert_close(actual, torch.erf(special), equal_nan=True, rtol=0, atol=0)
    assert torch.signbit(actual[1])


# The representation functions are exact: bit for bit the CPU's, at zeros of both signs,
# subnormals, the largest finite values, infinities and NaN, in every floating dtype (float16
# and bfloat16 step in their own precision though they compute in float).
EDGES = [0.0, -0.0, 1.0, -1.0, 0.1, -3.5, 1e-30, 1e-41, 6e-8, 65504.0, 3e38, 1e300, float("inf"), -float("inf"),
         float("nan")]


def assert_identical(got, expected):
    assert got.dtype == expected.dtype and torch.equal(got.isnan(), expected.isnan())
    keep = ~expected.isnan()
    assert torch.equal(got[keep], expected[keep]) and torch.equal(got[keep].signbit(), expected[keep].signbit())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_nextafter_and_frexp_are_exact(dtype):
    if dtype == torch.float64 and not supports_fp64():
        pytest.skip("no fp64")
    x = torch.tensor(EDGES, dtype=torch.float64).to(dtype)
    a, b = x.repeat_interleave(len(EDGES)), x.repeat(len(EDGES))  # every pair
    assert_identical(torch.nextafter(a.to("ocl"), b.to("ocl")).cpu(), torch.nextafter(a, b))
    mantissa, exponent = torch.frexp(x.to("ocl"))
    expected_mantissa, expected_exponent = torch.frexp(x)
    assert_identical(mantissa.cpu(), expected_mantissa)
    assert torch.equal(exponent.cpu(), expected_exponent)


def test_incomplete_gamma_against_mpmath_and_the_cpu_at_its_edges():
    """igamma / igammac (P and Q) over small to large a, on both sides of x = a + 1 where the
    series hands over to the continued fraction; the edge cases (zeros, infinities, negatives,
    NaN) as the CPU's."""
    if not supports_fp64():
        pytest.skip("no fp64")
    pairs = [(a, x) for a in (0.01, 0.5, 1.0, 3.7, 20.0, 150.0, 1000.0) for x in (1e-3, 0.3, 1.0, 5.0, 19.0, 21.0, 150.0, 1100.0)]
    a = torch.tensor([p[0] for p in pairs], dtype=torch.float64)
    x = torch.tensor([p[1] for p in pairs], dtype=torch.float64)
    lower = torch.igamma(a.to("ocl"), x.to("ocl")).cpu()
    upper = torch.igammac(a.to("ocl"), x.to("ocl")).cpu()
    for k, (ak, xk) in enumerate(pairs):
        p = mpmath.gammainc(ak, 0, xk, regularized=True)
        q = mpmath.gammainc(ak, xk, mpmath.inf, regularized=True)
        assert abs(lower[k].item() - float(p)) <= 1e-9 * float(p) + 1e-300, (ak, xk, lower[k].item(), p)
        assert abs(upper[k].item() - float(q)) <= 1e-9 * float(q) + 1e-300, (ak, xk, upper[k].item(), q)
    inf, nan = float("inf"), float("nan")
    edges = [(0.0, 1.0), (0.0, 0.0), (1.0, 0.0), (inf, 1.0), (inf, inf), (1.0, inf), (-1.0, 1.0), (1.0, -1.0), (nan, 1.0)]
    a = torch.tensor([e[0] for e in edges])
    x = torch.tensor([e[1] for e in edges])
    for fn in (torch.igamma, torch.igammac):
        torch.testing.assert_close(fn(a.to("ocl"), x.to("ocl")).cpu(), fn(a, x), equal_nan=True)
