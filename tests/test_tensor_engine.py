"""The native tensor engine beyond OpInfo: errors like the CPU's, device-side index checks,
random numbers, and the everyday ops running without the fallback."""
import pytest
import torch
import torch.nn.functional as F

import drawbridge


@pytest.fixture
def native_only():
    drawbridge.set_fallback_mode("error")
    yield
    drawbridge.set_fallback_mode("silent")


def test_device_mismatch_names_both_devices():
    with pytest.raises(RuntimeError, match="ocl:0") as info:
        torch.ones(3, device="ocl") + torch.ones(3)
    assert "cpu" in str(info.value)
    assert (torch.ones(3, device="ocl") + 1).cpu().tolist() == [2, 2, 2]  # a Python scalar is fine


def test_shape_and_dtype_errors_match_cpu(native_only):
    for device in ("cpu", "ocl"):
        with pytest.raises(RuntimeError, match="must match"):
            torch.ones(2, 3, device=device) * torch.ones(4, device=device)
        with pytest.raises(RuntimeError, match="can't be cast"):
            torch.ones(3, dtype=torch.int64, device=device).add_(torch.ones(3, device=device) * 0.5)
        with pytest.raises(RuntimeError, match="cannot be multiplied"):
            torch.ones(2, 3, device=device) @ torch.ones(4, 2, device=device)
        with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
            torch.ones(3, device=device).bitwise_and(torch.ones(3, device=device))
        with pytest.raises(RuntimeError, match="Negation"):
            -torch.ones(3, dtype=torch.bool, device=device)


def test_out_of_range_index_raises_and_corrupts_nothing(native_only):
    x = torch.arange(10.0, device="ocl")
    other = torch.full((4,), 7.0, device="ocl")
    bad = torch.tensor([1, 12, 3], device="ocl")
    y = x.index_select(0, bad)  # enqueued; the kernel skips the bad index and flags it
    with pytest.raises(IndexError, match="out of range"):
        torch.ocl.synchronize()
    assert other.cpu().tolist() == [7.0] * 4 and x.cpu().tolist() == list(range(10))
    g = torch.gather(x.view(2, 5), 1, torch.tensor([[0, 5]], device="ocl"))
    with pytest.raises(RuntimeError, match="out of bounds"):  # gather raises RuntimeError on the CPU
        g.cpu()
    assert x.sum().item() == 45  # usable afterwards
    del y


def test_random_is_reproducible_and_plausible(native_only):
    torch.manual_seed(123)
    a = torch.randn(100_000, device="ocl")
    torch.manual_seed(123)
    b = torch.randn(100_000, device="ocl")
    assert torch.equal(a.cpu(), b.cpu())
    assert abs(a.mean().item()) < 0.02 and abs(a.std().item() - 1) < 0.02
    state = torch.ocl.get_rng_state()
    u1 = torch.rand(1000, device="ocl")
    torch.ocl.set_rng_state(state)
    u2 = torch.rand(1000, device="ocl")
    assert torch.equal(u1.cpu(), u2.cpu())
    assert 0 <= u1.min().item() and u1.max().item() < 1
    r = torch.randint(3, 9, (10_000,), device="ocl").cpu()
    assert r.min().item() == 3 and r.max().item() == 8
    p = torch.full((10_000,), 0.25, device="ocl")
    assert abs(torch.bernoulli(p).mean().item() - 0.25) < 0.02
    d = torch.nn.functional.dropout(torch.ones(10_000, device="ocl"), 0.5, training=True).cpu()
    assert set(d.unique().tolist()) <= {0.0, 2.0} and abs(d.mean().item() - 1) < 0.05


def test_everyday_ops_are_native(native_only):
    x = torch.randn(8, 16, device="ocl")
    w = torch.randn(16, 4, device="ocl")
    y = torch.nn.functional.gelu(x @ w).softmax(-1)
    z = torch.where(x > 0, x, x * 0.1).sum(-1) + x.amax(-1)
    idx = torch.tensor([0, 3, 5], device="ocl")
    parts = [x.index_select(0, idx), x[:2], torch.cat([x, x]).mean(0, keepdim=True)]
    vals, pos = x.max(1)
    out = sum(p.sum() for p in parts)
    for t in (y, z, vals, pos, out, x.cumsum(1), x.var(0), torch.linspace(0, 1, 5, device="ocl"),
              torch.arange(10, device="ocl"), x.clamp(-1, 1), x.to(torch.bfloat16), x.flip(0), x.roll(2, 1)):
        assert t.device.type == "ocl"
    expected = torch.nn.functional.gelu(x.cpu() @ w.cpu()).softmax(-1)
    torch.testing.assert_close(y.cpu(), expected, rtol=1e-4, atol=1e-5)


def test_advanced_indexing(native_only):
    x = torch.randn(5, 6, 7)
    ids = torch.tensor([[0, 4], [-1, 2]])
    d, i = x.to("ocl"), ids.to("ocl")
    for index in (lambda t, k: t[k], lambda t, k: t[:, k], lambda t, k: t[..., k], lambda t, k: t[k, :, k]):
        assert torch.equal(index(d, i).cpu(), index(x, ids))
    mask = x > 0
    assert torch.equal(d[mask.to("ocl")].cpu(), x[mask])
    assert torch.equal(d[:, mask[0].to("ocl")].cpu(), x[:, mask[0]])
    assert torch.equal(torch.nonzero(d > 1).cpu(), torch.nonzero(x > 1))
    big = torch.rand(3, 100_003) > 0.7  # many chunks of the two-pass nonzero
    assert torch.equal(torch.nonzero(big.to("ocl")).cpu(), torch.nonzero(big))
    e, c = x.clone(), d.clone()
    e[mask] = -1.0
    c[mask.to("ocl")] = -1.0
    assert torch.equal(c.cpu(), e)
    e.index_put_((ids[0], ids[1]), torch.ones(2, 7), accumulate=True)
    c.index_put_((i[0], i[1]), torch.ones(2, 7, device="ocl"), accumulate=True)
    assert torch.equal(c.cpu(), e)


def test_scatter_and_index_writes(native_only):
    torch.manual_seed(0)
    x = torch.randn(6, 5)
    index = torch.randint(0, 6, (8, 5))  # duplicates: the combining writes must all land
    src = torch.randn(8, 5)
    d, di, ds = x.to("ocl"), index.to("ocl"), src.to("ocl")
    torch.testing.assert_close(d.scatter_add(0, di, ds).cpu(), x.scatter_add(0, index, src))
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            torch.testing.assert_close(d.scatter_reduce(0, di, ds, reduce, include_self=include_self).cpu(),
                                       x.scatter_reduce(0, index, src, reduce, include_self=include_self))
    rows = torch.tensor([4, 0, 4])
    add = torch.randn(3, 5)
    torch.testing.assert_close(d.index_add(0, rows.to("ocl"), add.to("ocl"), alpha=2).cpu(),
                               x.index_add(0, rows, add, alpha=2))
    assert torch.equal(d.index_fill(1, torch.tensor([-1, 0], device="ocl"), 3.0).cpu(),
                       x.index_fill(1, torch.tensor([-1, 0]), 3.0))
    counts = torch.randint(0, 10, (1000,))
    assert torch.equal(torch.bincount(counts.to("ocl")).cpu(), torch.bincount(counts))
    h = x.half()
    torch.testing.assert_close(h.to("ocl").scatter_add(0, di, ds.half()).cpu(), h.scatter_add(0, index, src.half()),
                               rtol=1e-3, atol=2e-3)


def test_out_of_range_writes_raise_and_corrupt_nothing(native_only):
    x = torch.zeros(4, 3, device="ocl")
    other = torch.full((5,), 2.0, device="ocl")
    # Each raises the CPU's exception type for the op: RuntimeError for scatter, IndexError for the rest.
    writes = [
        (RuntimeError, lambda: x.scatter_(0, torch.tensor([[0, 9, 1]], device="ocl"), 1.0)),
        (RuntimeError, lambda: x.scatter_add_(0, torch.tensor([[-1, 0, 1]], device="ocl"), torch.ones(1, 3, device="ocl"))),
        (IndexError, lambda: x.index_add_(0, torch.tensor([4], device="ocl"), torch.ones(1, 3, device="ocl"))),
        (IndexError, lambda: x.index_put_((torch.tensor([7], device="ocl"),), torch.ones(3, device="ocl"),
                                          accumulate=True)),
        (IndexError, lambda: x.put_(torch.tensor([12], device="ocl"), torch.ones(1, device="ocl"))),
    ]
    for raised, write in writes:
        write()
        with pytest.raises(raised, match="out of (range|bounds)"):
            torch.ocl.synchronize()
    # The valid elements of the partly bad writes landed; nothing outside the tensors changed.
    assert x.cpu().tolist() == [[1.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert other.cpu().tolist() == [2.0] * 5


def test_order_statistics_and_search(native_only):
    torch.manual_seed(0)
    x = torch.randn(5, 9)
    d = x.to("ocl")
    for name, fn in [("kthvalue", lambda t: t.kthvalue(4, 1)), ("median", lambda t: t.median(1)),
                     ("mode", lambda t: t.round().mode(1)), ("cummax", lambda t: t.cummax(1)),
                     ("aminmax", lambda t: t.aminmax(dim=0))]:
        for a, e in zip(fn(d), fn(x), strict=True):
            assert torch.equal(a.cpu(), e), name
    values, inverse, counts = torch.unique(d.round(), return_inverse=True, return_counts=True)
    ev, ei, ec = torch.unique(x.round(), return_inverse=True, return_counts=True)
    assert torch.equal(values.cpu(), ev) and torch.equal(inverse.cpu(), ei) and torch.equal(counts.cpu(), ec)
    edges = torch.linspace(-2, 2, 7)
    assert torch.equal(torch.bucketize(d, edges.to("ocl")).cpu(), torch.bucketize(x, edges))
    assert torch.equal(torch.histc(d, 6, -2, 2).cpu(), torch.histc(x, 6, -2, 2))
    perm = torch.randperm(1000, device="ocl").cpu()
    assert sorted(perm.tolist()) == list(range(1000))
    picks = torch.multinomial(torch.tensor([0.0, 1.0, 3.0], device="ocl"), 2).cpu().tolist()
    assert sorted(picks) == [1, 2]


@pytest.mark.parametrize("fn", ["unique", "unique_consecutive"])
def test_unique_along_a_dim_matches_cpu(native_only, fn):
    torch.manual_seed(0)
    cases = [torch.randint(0, 3, (7, 4)), torch.randint(0, 2, (5, 3, 2)), torch.randint(0, 2, (6,)).bool(),
             torch.tensor([[1.5, 2], [1.5, 2], [0, 5], [1.5, 2]]), torch.empty(0, 3)]
    for x in cases:
        for dim in range(-x.dim(), x.dim()) if x.numel() else [0]:
            expected = getattr(torch, fn)(x, dim=dim, return_inverse=True, return_counts=True)
            got = getattr(torch, fn)(x.to("ocl"), dim=dim, return_inverse=True, return_counts=True)
            for e, g in zip(expected, got, strict=True):
                assert torch.equal(g.cpu(), e), (fn, tuple(x.shape), dim)
    with pytest.raises(RuntimeError, match="aren't selected"):  # the CPU's message for an empty dim not chosen
        getattr(torch, fn)(torch.empty(0, 3, device="ocl"), dim=1)


def test_sync_mode_raises_at_the_op(run_py):
    r = run_py(
        """
        import torch
        x = torch.arange(5.0, device="ocl")
        try:
            x.index_select(0, torch.tensor([7], device="ocl"))
            print("no error at the op")
        except IndexError:
            print("IndexError at the op")
        print(x.sum().item())
        """,
        env={"DRAWBRIDGE_SYNC": "1"},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["IndexError at the op", "10.0"]


def test_sort_and_topk(native_only):
    x = torch.randn(7, 33)
    x[0, 3] = float("nan")
    x[1, :5] = 1.0  # ties keep their order (stable)
    d = x.to("ocl")
    for descending in (False, True):
        v, i = d.sort(dim=1, descending=descending, stable=True)
        ev, ei = x.sort(dim=1, descending=descending, stable=True)
        assert torch.equal(v.cpu().nan_to_num(), ev.nan_to_num()) and torch.equal(i.cpu(), ei)
    v, i = d.topk(4, 1)
    ev, _ = x.topk(4, 1)  # the CPU leaves the order of ties unspecified; ocl keeps them stable
    stable = x.sort(dim=1, descending=True, stable=True)[1][:, :4]
    assert torch.equal(v.cpu().nan_to_num(), ev.nan_to_num()) and torch.equal(i.cpu(), stable)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_reductions_over_runs_of_every_length(native_only, dtype):
    # Row lengths around the vector blocks of a CPU device's dense runs (whole blocks, then a
    # scalar tail), with NaN and infinities in the blocks, in the tails and at the ends.
    for length in (1, 15, 16, 63, 64, 65, 200, 2055):
        x = (torch.randn(6, length, dtype=torch.float64) * 4).to(dtype)
        if dtype.is_floating_point:
            x[1, length // 2] = float("nan")
            x[2, -1] = float("nan")
            x[3, 0] = float("inf")
            x[4, -1] = float("-inf")
            x[5, (2 * length) // 3] = -float("nan")  # sign bit set
        d = x.to("ocl")
        ops = [lambda t: t.sum(-1), lambda t: t.amax(-1), lambda t: t.amin(-1), lambda t: t.sum(), lambda t: t.amax()]
        if dtype.is_floating_point:
            ops += [lambda t: t.mean(-1), lambda t: t.nansum(-1), lambda t: t.norm(dim=-1),
                    lambda t: t.norm(1, dim=-1), lambda t: (1 + t / 64).prod(-1)]
        # float32 sums of a few thousand values differ from the CPU's in the order of summation.
        tol = dict(rtol=1e-4, atol=1e-3) if dtype == torch.float32 else {}
        for op in ops:
            torch.testing.assert_close(op(d).cpu(), op(x), equal_nan=True, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_reductions_over_several_dims(native_only, dtype):
    # Reduced dims whose innermost one is contiguous: CPU devices reduce each of its rows as a
    # dense run, so indices (argmax of a transposed tensor) must count across rows and chunks.
    for shape, dims in [((3, 5, 200), (0, 2)), ((4, 70, 3), (0, 1)), ((3, 65, 2, 66), (1, 3)), ((2, 3, 9000), (0, 2))]:
        x = (torch.randn(shape, dtype=torch.float64) * 10).to(dtype)
        d = x.to("ocl")
        ops = [lambda t: t.sum(dims), lambda t: t.amax(dims), lambda t: t.count_nonzero(dims),
               lambda t: t.transpose(0, -1).argmax(), lambda t: t.transpose(0, -1).argmin()]
        if dtype.is_floating_point:
            ops += [lambda t: t.mean(dims), lambda t: t.var(dims), lambda t: t.logsumexp(dims)]
        for op in ops:
            got, expected = op(d).cpu(), op(x)
            if expected.dtype.is_floating_point:
                torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-3)
            else:  # indices and integer sums: exactly (a relative tolerance would let an index be off)
                assert torch.equal(got, expected), (got, expected)


def test_sum_over_several_dims_is_as_accurate_as_the_cpu():
    # A convolution's bias gradient: 18392 values per channel, the batch dim between the rows.
    g = torch.randn(2, 4, 22, 22, 19, generator=torch.Generator().manual_seed(0))
    exact = g.double().sum((0, 2, 3, 4))
    cpu_error = (g.sum((0, 2, 3, 4)).double() - exact).abs().max()
    ocl_error = (g.to("ocl").sum((0, 2, 3, 4)).cpu().double() - exact).abs().max()
    assert ocl_error <= 4 * cpu_error


def test_more_dims_than_a_kernel_descriptor(native_only):
    # A permuted operand beside a contiguous one does not coalesce: 12 dims reach the launcher,
    # which splits the launch instead of refusing it.
    x = torch.randn([2] * 12)
    p = x.permute(*reversed(range(12)))
    y = torch.randn([2] * 12)
    po = p.to("ocl")
    assert po.stride() == p.stride()
    assert torch.equal((po + y.to("ocl")).cpu(), p + y)
    assert torch.equal((po * 2).contiguous().cpu(), (p * 2).contiguous())


def test_exp_underflows_and_overflows_as_the_cpu(native_only):
    """The kernels' own float32 exp (softmax, sigmoid, silu, compiled exp) gives the CPU's zeros,
    denormals and infinities at the ends of its range: exp(-inf) once came out as 2^-126, which
    left the masked part of every causal softmax full of denormals (slow in every product after)."""
    ends = torch.tensor([float("-inf"), -1000.0, -104.0, -103.0, -95.0, -88.0, -87.0, 0.0, 88.0, 88.5, 88.8, 89.0,
                         1000.0, float("inf")])
    rows = torch.stack([torch.zeros(ends.numel()), ends]).t().contiguous()  # softmax of (0, x) = (1, e^x) / (1 + e^x)
    got = torch.softmax(rows.to("ocl"), -1).cpu()
    expected = torch.softmax(rows.double(), -1).float()
    assert torch.equal(got == 0, expected == 0), (got, expected)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=0, equal_nan=True)  # denormals included
    for fn in (torch.sigmoid, F.silu):
        torch.testing.assert_close(fn(-ends.to("ocl")).cpu(), fn(-ends), rtol=1e-6, atol=0, equal_nan=True)
    compiled = torch.compile(lambda x: torch.exp(x) * 1.0, backend="ocl")
    got = compiled(ends.to("ocl")).cpu()
    expected = torch.exp(ends.double()).float()
    assert torch.equal(got.isinf(), expected.isinf()) and torch.equal(got == 0, expected == 0), (got, expected)
    torch.testing.assert_close(got, expected, rtol=2e-7, atol=0)
