"""Linear algebra on the device (csrc/ops/factorizations.cpp, spectral.cpp) against the CPU's LAPACK.

Every op runs with the fallback set to raise, so a result here is the device's own: batched,
transposed and strided inputs, the errors LAPACK reports (singular, not positive definite), empty
matrices, and the sizes past which an op hands its matrices to the CPU's LAPACK. Factorizations
with a free gauge (eigenvectors and singular vectors up to sign) are compared through what the
gauge does not change.
"""
import pytest
import torch

from conftest import supports_fp64

DTYPES = [torch.float32] + ([torch.float64] if supports_fp64() else [])
TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float64: dict(rtol=1e-9, atol=1e-9)}


pytestmark = pytest.mark.usefixtures("native_only")


def well_conditioned(*shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = shape[-1]
    return torch.randn(*shape, generator=g, dtype=dtype) + n * torch.eye(n, dtype=dtype) / 2


def positive_definite(*shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(*shape, generator=g, dtype=dtype)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1], dtype=dtype)


def layouts(a):
    """a itself, its matrices stored transposed (a column-major view), and a strided view."""
    wide = torch.zeros(*a.shape[:-1], 2 * a.shape[-1], dtype=a.dtype)
    wide[..., ::2] = a
    return {"contiguous": a, "transposed": a.mT.contiguous().mT, "strided": wide[..., ::2]}


def to_ocl(a):
    """a on ocl with its strides kept (the transposed and strided layouts must reach the op)."""
    out = torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device="ocl")
    return out.copy_(a)


def assert_matches(actual, expected, dtype):
    torch.testing.assert_close(actual.cpu(), expected, **TOL[dtype])


SHAPES = [(1, 1), (5, 5), (3, 7, 7), (2, 1, 33, 33)]

FACTORED = {
    "cholesky": (positive_definite, lambda a: torch.linalg.cholesky(a)),
    "cholesky_upper": (positive_definite, lambda a: torch.linalg.cholesky(a, upper=True)),
    "lu_factor": (well_conditioned, lambda a: torch.linalg.lu_factor(a)),
    "lu": (well_conditioned, lambda a: torch.linalg.lu(a)),
    "inv": (well_conditioned, torch.linalg.inv),
    "det": (well_conditioned, torch.linalg.det),
    "slogdet": (well_conditioned, torch.linalg.slogdet),
    "qr": (well_conditioned, torch.linalg.qr),
    "qr_complete": (well_conditioned, lambda a: torch.linalg.qr(a, mode="complete")),
    "matrix_exp": (well_conditioned, lambda a: torch.linalg.matrix_exp(a / a.shape[-1])),
    "cholesky_inverse": (positive_definite, lambda a: torch.cholesky_inverse(torch.linalg.cholesky(a))),
    "solve": (well_conditioned, lambda a: torch.linalg.solve(a, a.sum(-1, keepdim=True) + 1)),
    "solve_left_false": (well_conditioned, lambda a: torch.linalg.solve(a, a[..., :2, :] * 3, left=False)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(FACTORED))
def test_factorizations_match_cpu(name, shape, dtype):
    make, op = FACTORED[name]
    a = make(*shape, dtype=dtype)
    expected = op(a)
    for layout, x in layouts(a).items():
        actual = op(to_ocl(x))
        for r, e in zip(actual if isinstance(actual, tuple) else [actual], expected if isinstance(expected, tuple) else [expected]):
            assert r.device.type == "ocl", layout
            assert_matches(r, e, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [False, True])
@pytest.mark.parametrize("unitriangular", [False, True])
def test_solve_triangular(upper, left, unitriangular, dtype):
    a = well_conditioned(3, 6, 6, dtype=dtype)
    b = torch.randn(3, 6, 4, dtype=dtype, generator=torch.Generator().manual_seed(1))
    b = b if left else b.mT
    expected = torch.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unitriangular)
    for x in layouts(a).values():
        actual = torch.linalg.solve_triangular(to_ocl(x), to_ocl(b), upper=upper, left=left, unitriangular=unitriangular)
        assert_matches(actual, expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lu_solve_broadcasts_and_transposes(dtype):
    a = well_conditioned(2, 1, 5, 5, dtype=dtype)
    b = torch.randn(3, 5, 2, dtype=dtype, generator=torch.Generator().manual_seed(2))
    lu, pivots = torch.linalg.lu_factor(a)
    lu_d, pivots_d = torch.linalg.lu_factor(to_ocl(a))
    for adjoint in (False, True):
        expected = torch.linalg.lu_solve(lu, pivots, b, adjoint=adjoint)
        assert_matches(torch.linalg.lu_solve(lu_d, pivots_d, to_ocl(b), adjoint=adjoint), expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 5, 5)], ids=str)
def test_householder_product_and_ormqr(shape, dtype):
    a = torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(3))
    reflectors, tau = torch.geqrf(a)
    reflectors_d, tau_d = torch.geqrf(to_ocl(a))
    assert_matches(reflectors_d, reflectors, dtype)
    assert_matches(tau_d, tau, dtype)
    if shape[-2] >= shape[-1]:
        assert_matches(torch.linalg.householder_product(reflectors_d, tau_d),
                       torch.linalg.householder_product(reflectors, tau), dtype)
    c = torch.randn(*shape[:-2], shape[-2], 3, dtype=dtype)
    for transpose in (False, True):
        assert_matches(torch.ormqr(reflectors_d, tau_d, to_ocl(c), transpose=transpose),
                       torch.ormqr(reflectors, tau, c, transpose=transpose), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (6, 6), (3, 20, 20)], ids=str)
def test_eigh(shape, dtype):
    a = torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(4))
    a = a + a.mT
    w, v = torch.linalg.eigh(a)
    for x in layouts(a).values():
        w_d, v_d = torch.linalg.eigh(to_ocl(x))
        assert_matches(w_d, w, dtype)
        # The eigenvalues are distinct here, so each eigenvector is unique up to its sign.
        assert_matches(v_d.abs(), v.abs(), dtype)
        assert_matches(v_d @ torch.diag_embed(w_d) @ v_d.mT, a, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (7, 4), (4, 7), (2, 9, 9)], ids=str)
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd(shape, full_matrices, dtype):
    a = torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(5))
    u, s, vh = torch.linalg.svd(a, full_matrices=full_matrices)
    for x in layouts(a).values():
        u_d, s_d, vh_d = torch.linalg.svd(to_ocl(x), full_matrices=full_matrices)
        assert (u_d.shape, s_d.shape, vh_d.shape) == (u.shape, s.shape, vh.shape)
        assert_matches(s_d, s, dtype)
        k = s.shape[-1]
        assert_matches(u_d[..., :k] @ torch.diag_embed(s_d) @ vh_d[..., :k, :], a, dtype)
        # Completed bases are orthonormal, as LAPACK's are.
        eye = torch.eye(u.shape[-1], dtype=dtype).expand_as(u.mT @ u)
        assert_matches(u_d.mT @ u_d, eye, dtype)
        assert_matches(vh_d @ vh_d.mT, torch.eye(vh.shape[-2], dtype=dtype).expand_as(vh @ vh.mT), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_svd_lowrank_full_rank_is_exact(dtype):
    # With q at the matrix's full rank the random sketch spans everything: the result is the SVD.
    a = torch.randn(12, 5, dtype=dtype, generator=torch.Generator().manual_seed(6))
    _, s, _ = torch.svd_lowrank(to_ocl(a), q=5)
    assert_matches(s, torch.linalg.svdvals(a), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
def test_lstsq(driver, dtype):
    a = torch.randn(2, 8, 3, dtype=dtype, generator=torch.Generator().manual_seed(7))
    b = torch.randn(2, 8, 2, dtype=dtype, generator=torch.Generator().manual_seed(8))
    expected = torch.linalg.lstsq(a, b, driver=driver)
    actual = torch.linalg.lstsq(to_ocl(a), to_ocl(b), driver=driver)
    for name in ("solution", "residuals", "rank", "singular_values"):
        e, r = getattr(expected, name), getattr(actual, name)
        assert r.shape == e.shape and r.dtype == e.dtype, name
        if e.numel():
            torch.testing.assert_close(r.cpu(), e, **TOL[dtype]) if e.is_floating_point() else torch.testing.assert_close(r.cpu(), e)


# --- errors ----------------------------------------------------------------------------------


def raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e), str(e)
    return None


def singular(device):
    a = torch.eye(4).repeat(3, 1, 1)
    a[1, 2, 2] = 0
    return a.to(device)


def indefinite(device):
    a = torch.eye(4).repeat(2, 1, 1)
    a[1, 3, 3] = -1
    return a.to(device)


ERRORS = {
    "inv_singular": lambda d: torch.linalg.inv(singular(d)),
    "solve_singular": lambda d: torch.linalg.solve(singular(d), torch.ones(3, 4, 1, device=d)),
    "cholesky_indefinite": lambda d: torch.linalg.cholesky(indefinite(d)),
    "cholesky_nonsquare": lambda d: torch.linalg.cholesky(torch.ones(3, 4, device=d)),
    "lu_factor_singular": lambda d: torch.linalg.lu_factor(singular(d)),
    "solve_shapes": lambda d: torch.linalg.solve(torch.eye(3, device=d), torch.ones(4, device=d)),
    "solve_dtypes": lambda d: torch.linalg.solve(torch.eye(3, device=d), torch.ones(3, device=d, dtype=torch.float64)),
    "ormqr_dtypes": lambda d: torch.ormqr(torch.eye(3, device=d), torch.ones(3, device=d),
                                          torch.ones(3, 2, device=d, dtype=torch.int64)),
    "qr_integer": lambda d: torch.linalg.qr(torch.ones(3, 3, dtype=torch.int64, device=d)),
    "eigh_vector": lambda d: torch.linalg.eigh(torch.ones(3, device=d)),
    "svd_integer": lambda d: torch.linalg.svd(torch.ones(2, 2, dtype=torch.int32, device=d)),
    "lstsq_rows": lambda d: torch.linalg.lstsq(torch.ones(3, 2, device=d), torch.ones(4, 1, device=d)),
    "lu_factor_no_pivot": lambda d: torch.linalg.lu_factor(torch.eye(3, device=d), pivot=False),
}
# Dtype errors come from PyTorch's Python meta functions, which spell dtypes as torch.int64 where
# the CPU's C++ says Long: the same type, the message not word for word.
DTYPE_ERRORS = {"qr_integer", "svd_integer", "solve_dtypes", "ormqr_dtypes"}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_cpu(name):
    expected = raised(lambda: ERRORS[name]("cpu"))
    actual = raised(lambda: ERRORS[name]("ocl"))
    if name == "lu_factor_no_pivot":  # the CPU's LAPACK cannot skip pivoting either; CUDA can
        assert actual is not None and actual[0] is RuntimeError and "pivot" in actual[1]
        return
    assert expected is not None
    assert actual is not None and actual[0] is expected[0], (actual, expected)
    if name not in DTYPE_ERRORS:
        assert actual[1] == expected[1]
    assert torch.ones(2, device="ocl").sum().item() == 2  # still usable


def test_solve_triangular_promotes_as_cpu():
    a, b = torch.eye(3) * 2, torch.arange(6, dtype=torch.int64).view(3, 2)
    expected = torch.linalg.solve_triangular(a, b, upper=True)
    actual = torch.linalg.solve_triangular(a.to("ocl"), b.to("ocl"), upper=True)
    assert actual.dtype == expected.dtype
    torch.testing.assert_close(actual.cpu(), expected)


@pytest.mark.parametrize("op", ["cholesky_ex", "inv_ex", "lu_factor_ex"])
def test_ex_variants_report_info_as_cpu(op):
    fn = getattr(torch.linalg, op)
    for make in (singular, indefinite):
        expected = fn(make("cpu"))
        actual = fn(make("ocl"))
        torch.testing.assert_close(actual.info.cpu(), expected.info)


# --- edges -----------------------------------------------------------------------------------


EMPTY = {
    "cholesky": lambda a: torch.linalg.cholesky(a),
    "inv": torch.linalg.inv,
    "det": torch.linalg.det,
    "lu_factor": lambda a: torch.linalg.lu_factor(a),
    "qr": torch.linalg.qr,
    "eigh": torch.linalg.eigh,
    "svd": torch.linalg.svd,
    "matrix_exp": torch.linalg.matrix_exp,
}


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 4, 4)], ids=str)
@pytest.mark.parametrize("name", sorted(EMPTY))
def test_empty_matrices(name, shape):
    a = torch.empty(shape)
    expected = EMPTY[name](a)
    actual = EMPTY[name](a.to("ocl"))
    for r, e in zip(actual if isinstance(actual, tuple) else [actual], expected if isinstance(expected, tuple) else [expected]):
        assert r.shape == e.shape and r.dtype == e.dtype and r.device.type == "ocl"
        torch.testing.assert_close(r.cpu(), e)


def test_large_matrices_use_the_cpus_lapack():
    # Past kFactorMaxOrder (and kJacobiMaxOrder for eigh and svd) the op hands its matrices to the
    # CPU: the results are the CPU's, on the device.
    a = well_conditioned(520, 520, dtype=torch.float32)
    b = torch.ones(520, 2)
    assert_matches(torch.linalg.solve(a.to("ocl"), b.to("ocl")), torch.linalg.solve(a, b), torch.float32)
    s = torch.randn(70, 70, generator=torch.Generator().manual_seed(9))
    s = s + s.mT
    w = torch.linalg.eigvalsh(s.to("ocl"))
    assert w.device.type == "ocl"
    assert_matches(w, torch.linalg.eigvalsh(s), torch.float32)
    assert_matches(torch.linalg.svdvals(s.to("ocl")), torch.linalg.svdvals(s), torch.float32)
