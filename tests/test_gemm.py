"""Matrix products swept over the shapes, layouts and offsets that pick different GEMM paths.

Sizes sit on and beside every tile and vector width that the packed kernels of CPU-class devices
(8 x 48 tiles of 16-wide vectors on AVX-512, 6 x 16 on AVX2) or CLBlast's defaults on GPU-class
ones (16/32/64) use; operands come contiguous,
transposed, as slices of wider matrices (ld > row) and at unaligned offsets, after the allocator
was filled with blocks of odd sizes. Results are checked against float64 products on the CPU,
element by element, within a bound scaled by |A| @ |B|. `make test` runs this file with
DRAWBRIDGE_DEVICE_CLASS=gpu too, so CLBlast's default (GPU) parameters are swept as well.
"""
import pytest
import torch

from conftest import supports_fp64

DEV = "ocl"
CPU_CLASS = torch.ocl.get_device_properties().device_class == "cpu"
EDGES = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 95, 96, 97, 127, 128, 129,
         143, 144, 145, 191, 192, 193, 255, 256, 257]
LARGE = [384, 511, 720, 768, 1024]
LAYOUTS = ("contiguous", "transposed", "wide", "unaligned")
# Relative to |A| @ |B|: float32 and float64 accumulate in their own precision, float16/bfloat16
# in float32 and round the result once.
TOLERANCE = {torch.float32: 2e-5, torch.float64: 1e-12, torch.float16: 2e-3, torch.bfloat16: 1e-2}


def dtypes():
    return [d for d in (torch.float32, torch.float64, torch.float16, torch.bfloat16)
            if d is not torch.float64 or supports_fp64()]


@pytest.fixture(scope="module", autouse=True)
def scattered_allocations():
    """Blocks of odd sizes held for the whole module, so operands land at varied offsets."""
    held = [torch.empty(n, device=DEV) for n in (1, 17, 333, 4097, 100003, 3, 65537)]
    yield held
    del held


def shape_triples():
    """(m, n, k): every edge size once as m, as n and as k, the others rotating through the list."""
    count = len(EDGES)
    triples = []
    for i, s in enumerate(EDGES):
        triples.append((s, EDGES[(i * 7 + 3) % count], EDGES[(i * 11 + 5) % count]))
        triples.append((EDGES[(i * 5 + 1) % count], s, EDGES[(i * 13 + 2) % count]))
        triples.append((EDGES[(i * 3 + 4) % count], EDGES[(i * 17 + 6) % count], s))
    triples += [(768, 32, 64), (720, 192, 48), (1536, 48, 96), (384, 511, 257), (1024, 768, 64),
                (511, 1024, 33), (96, 96, 1024)]
    return triples


def place(values, layout, dtype):
    """The CPU matrix `values` on the device in the given memory layout (same values)."""
    rows, cols = values.shape
    host = values.to(dtype)
    if layout == "contiguous":
        return host.to(DEV)
    if layout == "transposed":
        return host.t().contiguous().to(DEV).t()
    if layout == "wide":
        wide = torch.zeros(rows, cols + 5, dtype=dtype, device=DEV)
        wide[:, 2:2 + cols] = host.to(DEV)
        return wide[:, 2:2 + cols]
    assert layout == "unaligned"
    flat = torch.zeros(rows * cols + 3, dtype=dtype, device=DEV)
    flat[3:] = host.flatten().to(DEV)
    return flat[3:].view(rows, cols)


def operand(gen, shape, layout, dtype):
    """(float64 CPU values rounded to dtype, the same on the device in `layout`)."""
    values = torch.randn(*shape, generator=gen, dtype=torch.float64).to(dtype).double()
    return values, place(values, layout, dtype)


def batched_place(values, layout, dtype):
    batch, rows, cols = values.shape
    host = values.to(dtype)
    if layout == "transposed":
        return host.transpose(1, 2).contiguous().to(DEV).transpose(1, 2)
    if layout == "wide":
        wide = torch.zeros(batch, rows, cols + 5, dtype=dtype, device=DEV)
        wide[:, :, 2:2 + cols] = host.to(DEV)
        return wide[:, :, 2:2 + cols]
    assert layout == "unaligned"
    flat = torch.zeros(values.numel() + 3, dtype=dtype, device=DEV)
    flat[3:] = host.flatten().to(DEV)
    return flat[3:].view(batch, rows, cols)


def check(result, expected, bound, dtype, what):
    assert result.device.type == DEV, what
    assert result.dtype == dtype, what
    assert result.shape == expected.shape, f"{what}: shape {tuple(result.shape)} != {tuple(expected.shape)}"
    error = (result.cpu().double() - expected).abs()
    limit = TOLERANCE[dtype] * bound + TOLERANCE[dtype]
    bad = error > limit
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {error.numel()} elements wrong, "
                           f"max error {float(error.max()):.3g} (limit there {float(limit.flatten()[error.argmax()]):.3g})")


@pytest.mark.parametrize("dtype", dtypes(), ids=str)
def test_mm_sweep(dtype):
    gen = torch.Generator().manual_seed(1)
    for case, (m, n, k) in enumerate(shape_triples()):
        la, lb = LAYOUTS[case % 4], LAYOUTS[(case // 4 + case) % 4]
        a, a_dev = operand(gen, (m, k), la, dtype)
        b, b_dev = operand(gen, (k, n), lb, dtype)
        check(torch.mm(a_dev, b_dev), a @ b, a.abs() @ b.abs(), dtype, f"mm {m}x{k} ({la}) @ {k}x{n} ({lb})")


@pytest.mark.parametrize("dtype", dtypes(), ids=str)
def test_addmm_and_out_sweep(dtype):
    gen = torch.Generator().manual_seed(2)
    for case, (m, n, k) in enumerate(shape_triples()[::2]):
        la, lb, lc = LAYOUTS[case % 4], LAYOUTS[(case + 1) % 4], LAYOUTS[(case + 2) % 4]
        a, a_dev = operand(gen, (m, k), la, dtype)
        b, b_dev = operand(gen, (k, n), lb, dtype)
        c, c_dev = operand(gen, (m, n), lc, dtype)
        bound = 0.5 * c.abs() + 2 * (a.abs() @ b.abs())
        what = f"addmm {m}x{k} ({la}) @ {k}x{n} ({lb}) + C ({lc})"
        check(torch.addmm(c_dev, a_dev, b_dev, beta=0.5, alpha=2.0), 0.5 * c + 2 * (a @ b), bound, dtype, what)
        # In place into a strided output: beta reads what is there.
        c_dev.addmm_(a_dev, b_dev, beta=-0.5, alpha=2.0)
        check(c_dev, -0.5 * c + 2 * (a @ b), bound, dtype, what + " in place")
        out = place(torch.zeros(m, n, dtype=torch.float64), lc, dtype)
        torch.mm(a_dev, b_dev, out=out)
        check(out, a @ b, a.abs() @ b.abs(), dtype, what + " mm out=")


BATCHED_LAYOUTS = ("contiguous", "transposed", "wide", "unaligned", "batch_slice", "broadcast")


def batched_operand(gen, batch, rows, cols, layout, dtype):
    """(float64 CPU [batch, rows, cols], the same on the device). batch_slice: each matrix is dense
    but matrices lie further apart than its size; broadcast: one matrix expanded with stride 0."""
    if layout == "broadcast":
        one = torch.randn(1, rows, cols, generator=gen, dtype=torch.float64).to(dtype).double()
        return one.expand(batch, rows, cols), one.to(dtype).to(DEV).expand(batch, rows, cols)
    values = torch.randn(batch, rows, cols, generator=gen, dtype=torch.float64).to(dtype).double()
    if layout == "contiguous":
        return values, values.to(dtype).to(DEV)
    if layout == "batch_slice":
        tall = torch.zeros(batch, rows + 3, cols, dtype=dtype, device=DEV)
        tall[:, 1:1 + rows] = values.to(dtype).to(DEV)
        return values, tall[:, 1:1 + rows]
    return values, batched_place(values, layout, dtype)


# Shapes that fill whole tiles of the packed kernels (8 x 48) and of CLBlast's defaults (multiples of
# 64), so that CLBlast reads dense operands in place.
TILE_EXACT = [(96, 96, 64), (48, 192, 32), (192, 48, 96), (64, 64, 64), (128, 256, 128), (192, 192, 192)]


@pytest.mark.parametrize("dtype", dtypes(), ids=str)
def test_bmm_sweep(dtype):
    gen = torch.Generator().manual_seed(3)
    batches = (2, 3, 5)
    cases = [(m, n, k, BATCHED_LAYOUTS[c % 6], BATCHED_LAYOUTS[(c // 6 + c + 1) % 6])
             for c, (m, n, k) in enumerate(shape_triples()[1::3]) if m * n * k <= 4_000_000]
    cases += [(m, n, k, la, lb) for m, n, k in TILE_EXACT for la, lb in [("contiguous", "contiguous"),
                                                                         ("broadcast", "contiguous"),
                                                                         ("contiguous", "batch_slice")]]
    for case, (m, n, k, la, lb) in enumerate(cases):
        batch = batches[case % 3]
        a, a_dev = batched_operand(gen, batch, m, k, la, dtype)
        b, b_dev = batched_operand(gen, batch, k, n, lb, dtype)
        what = f"bmm {batch}x{m}x{k} ({la}) @ {batch}x{k}x{n} ({lb})"
        check(torch.bmm(a_dev, b_dev), a @ b, a.abs() @ b.abs(), dtype, what)
        c, c_dev = batched_operand(gen, batch, m, n, BATCHED_LAYOUTS[(case + 3) % 5], dtype)
        bound = c.abs() + 0.5 * (a.abs() @ b.abs())
        check(torch.baddbmm(c_dev, a_dev, b_dev, beta=-1.0, alpha=0.5), -c + 0.5 * (a @ b), bound, dtype,
              what + " baddbmm")


@pytest.mark.parametrize("dtype", dtypes(), ids=str)
def test_linear_and_matmul_ranks(dtype):
    gen = torch.Generator().manual_seed(4)
    for tokens, features, out_features in [(768, 64, 32), (720, 48, 192), (5, 33, 48), (96, 255, 96), (1, 7, 1)]:
        x, x_dev = operand(gen, (tokens, features), "contiguous", dtype)
        w, w_dev = operand(gen, (out_features, features), "contiguous", dtype)
        bias = torch.randn(out_features, generator=gen, dtype=torch.float64).to(dtype).double()
        what = f"linear {tokens}x{features} -> {out_features}"
        expected = x @ w.t() + bias
        bound = x.abs() @ w.t().abs() + bias.abs()
        check(torch.nn.functional.linear(x_dev, w_dev, bias.to(dtype).to(DEV)), expected, bound, dtype, what)
        x3 = x.view(1, tokens, features).expand(2, tokens, features)
        check(torch.nn.functional.linear(x_dev.expand(2, tokens, features), w_dev), x3 @ w.t(),
              x3.abs() @ w.t().abs(), dtype, what + " (3-d input)")
    shapes = [((2, 3, 48, 17), (2, 3, 17, 96)), ((4, 96, 33), (33, 48)), ((48, 33), (4, 33, 96)),
              ((2, 1, 16, 64), (3, 64, 49)), ((65,), (65, 48)), ((48, 65), (65,)), ((129,), (129,))]
    for left, right in shapes:
        a = torch.randn(*left, generator=gen, dtype=torch.float64).to(dtype).double()
        b = torch.randn(*right, generator=gen, dtype=torch.float64).to(dtype).double()
        check(torch.matmul(a.to(dtype).to(DEV), b.to(dtype).to(DEV)), torch.matmul(a, b),
              torch.matmul(a.abs(), b.abs()), dtype, f"matmul {left} @ {right}")


def test_offsets_of_every_alignment():
    """The issue's reproduction, at every element offset from 0 to 40 in one segment."""
    gen = torch.Generator().manual_seed(5)
    a = torch.randn(768, 64, generator=gen)
    w = torch.randn(32, 64, generator=gen)
    expected = a.double() @ w.double().t()
    for shift in range(41):
        flat = torch.empty(shift + a.numel(), device=DEV)
        flat[shift:] = a.flatten().to(DEV)
        result = flat[shift:].view(768, 64) @ w.to(DEV).t()
        check(result, expected, a.abs().double() @ w.abs().double().t(), torch.float32, f"offset {shift}")


@pytest.mark.skipif(not CPU_CLASS, reason="the packed kernels serve CPU-class devices")
@pytest.mark.parametrize("dtype", dtypes(), ids=str)
def test_products_past_the_scratch_limit_run_in_slices(dtype):
    """With the panels' scratch capped, a batch is multiplied a few matrices at a time and a long
    depth in slices that add up (beta applies once): every path of the slicing, against the CPU."""
    from drawbridge import _C

    gen = torch.Generator().manual_seed(6)
    cases = [(1, 50, 70, 3000, "transposed", "contiguous"),  # depth slices of one matrix (A packed)
             (1, 50, 70, 3000, "wide", "transposed"),        # the same with A read in place
             (7, 33, 49, 20, "contiguous", "broadcast"),     # batch slices
             (3, 9, 97, 700, "batch_slice", "transposed")]   # both, on three matrices
    try:
        _C._set_packed_gemm_scratch_bytes_for_testing(64 << 10)
        for batch, m, n, k, la, lb in cases:
            a, a_dev = batched_operand(gen, batch, m, k, la, dtype)
            b, b_dev = batched_operand(gen, batch, k, n, lb, dtype)
            c, c_dev = batched_operand(gen, batch, m, n, "contiguous", dtype)
            bound = c.abs() + 2 * (a.abs() @ b.abs())
            check(torch.baddbmm(c_dev, a_dev, b_dev, beta=0.5, alpha=2.0), 0.5 * c + 2 * (a @ b), bound, dtype,
                  f"baddbmm {batch}x{m}x{k} ({la}) @ {k}x{n} ({lb}) in slices")
    finally:
        _C._set_packed_gemm_scratch_bytes_for_testing(0)


@pytest.mark.skipif(CPU_CLASS, reason="CPU-class devices multiply with the packed kernels, whose scratch "
                    "comes from our allocator; make test runs this file with DRAWBRIDGE_DEVICE_CLASS=gpu too")
def test_a_gemm_out_of_memory_empties_the_cache_retries_then_raises():
    """CLBlast's own temporary buffers failing (injected: PoCL never refuses them): the cached
    blocks are freed and the GEMM runs again; failing twice raises torch.OutOfMemoryError and
    leaves the process usable."""
    from drawbridge import _C

    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(300, 200, generator=g), torch.randn(200, 100, generator=g)
    a_ocl, b_ocl = a.to("ocl"), b.to("ocl")
    torch.ocl.synchronize()
    for fail in (0, 1):
        cached = torch.empty(16 << 20, dtype=torch.uint8, device="ocl")
        del cached
        reserved = torch.ocl.memory_reserved()
        _C._fail_next_gemm_calls_for_testing(fail)
        c = a_ocl @ b_ocl
        torch.testing.assert_close(c.cpu(), a @ b, rtol=1e-4, atol=1e-4)  # sums of 200 in another order
        emptied = torch.ocl.memory_reserved() < reserved - (8 << 20)
        assert emptied == bool(fail), (fail, reserved, torch.ocl.memory_reserved())
    _C._fail_next_gemm_calls_for_testing(2)
    with pytest.raises(torch.OutOfMemoryError, match="CLBlast GEMM"):
        a_ocl @ b_ocl
    torch.testing.assert_close((a_ocl @ b_ocl).cpu(), a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_reduced_precision_products_round_once(dtype):
    """float16/bfloat16 products accumulate in float32 and round each result once, to nearest
    even, as the CPU does: beside the float32 product rounded, nearly every element is equal and
    the rest are an ulp away, plus float32's error where sums cancel (the order of the sums
    differs). A result truncated, or rounded twice, differs in far more elements."""
    g = torch.Generator().manual_seed(3)
    a, b, c = (torch.randn(shape, generator=g).to(dtype) for shape in ((130, 300), (300, 70), (130, 70)))
    products = {
        "mm": (torch.mm(a.to(DEV), b.to(DEV)), a.float() @ b.float(), 1),
        "addmm": (torch.addmm(c.to(DEV), a.to(DEV), b.to(DEV), beta=0.5, alpha=2.0),
                  0.5 * c.float() + 2.0 * (a.float() @ b.float()), 2),
        "bmm": (torch.bmm(a.view(2, 65, 300).to(DEV), b.expand(2, 300, 70).to(DEV)),
                a.view(2, 65, 300).float() @ b.float(), 1),
    }
    magnitude = a.float().abs() @ b.float().abs()
    for name, (got, exact, scale) in products.items():
        expected = exact.to(dtype)
        assert got.dtype == dtype, name
        got = got.cpu()
        assert (got != expected).float().mean() < 0.01, name
        bound = torch.finfo(dtype).eps * expected.float().abs() + 1e-5 * scale * magnitude.view(exact.shape)
        assert ((got.float() - expected.float()).abs() <= bound).all(), name
