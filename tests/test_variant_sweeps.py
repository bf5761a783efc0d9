"""Kernels that pick a variant by size, swept across the sizes where the choice changes.

Convolution (im2col + GEMM: output channels and in_channels * kernel area around the GEMM tiles),
split reductions (lengths around the 2 x 4096-element split threshold and its chunk multiples,
with few outputs), the attention kernel (head dims around its 8-wide vector rows and up to its
512 limit, sequence lengths around powers of two) and sort (row lengths around powers of two,
with ties and NaN), and pointwise layouts around the 2048-element chunk below which CPU devices
compile no row steps in. Each result is compared with the CPU's. `make test` runs this file in both
device classes.
"""
import pytest
import torch
import torch.nn.functional as F

import drawbridge

DEV = "ocl"


@pytest.fixture
def native_only():
    drawbridge.set_fallback_mode("error")
    yield
    drawbridge.set_fallback_mode("silent")


def close(got, expected, what, rtol=1e-4, atol=1e-4):
    torch.testing.assert_close(got.cpu(), expected, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{what}: {m}")


@pytest.mark.parametrize("out_channels,in_channels,kernel", [(47, 3, 3), (48, 16, 3), (49, 5, 1), (96, 48, 1),
                                                             (16, 16, 3), (1, 64, 1), (65, 7, 2)])
def test_convolution_gemm_shapes(native_only, out_channels, in_channels, kernel):
    g = torch.Generator().manual_seed(out_channels * 100 + in_channels)
    x = torch.randn(2, in_channels, 9, 12, generator=g)
    w = torch.randn(out_channels, in_channels, kernel, kernel, generator=g) / (in_channels * kernel) ** 0.5
    b = torch.randn(out_channels, generator=g)
    xs, ws, bs = (t.clone().requires_grad_() for t in (x, w, b))
    xd, wd, bd = (t.to(DEV).requires_grad_() for t in (x, w, b))
    expected = F.conv2d(xs, ws, bs, padding=1)
    got = F.conv2d(xd, wd, bd, padding=1)
    what = f"conv2d {in_channels}->{out_channels} k{kernel}"
    close(got, expected.detach(), what)
    upstream = torch.randn(expected.shape, generator=g)
    expected.backward(upstream)
    got.backward(upstream.to(DEV))
    for name, a, e in (("input", xd, xs), ("weight", wd, ws), ("bias", bd, bs)):
        close(a.grad, e.grad, f"{what} grad {name}", rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("length", [8191, 8192, 8193, 12287, 12289, 4096 * 24 - 1, 4096 * 24 + 1, 300_001])
def test_split_reductions_around_the_threshold(native_only, length):
    g = torch.Generator().manual_seed(length)
    for rows in (1, 3):
        x = torch.randn(rows, length, generator=g)
        x[0, length // 3] = 50.0  # a unique maximum away from the chunk boundaries
        d = x.to(DEV)
        what = f"{rows}x{length}"
        close(d.sum(-1), x.sum(-1), what + " sum", rtol=1e-4, atol=1e-3)
        close(d.var(-1), x.var(-1), what + " var", rtol=1e-4, atol=1e-4)
        close(d.amax(-1), x.amax(-1), what + " amax")
        assert torch.equal(d.argmax(-1).cpu(), x.argmax(-1)), what + " argmax"
        assert torch.equal(d.max(-1).indices.cpu(), x.max(-1).indices), what + " max indices"
        n = (x > 0).to(torch.int64)
        assert torch.equal(n.to(DEV).sum(-1).cpu(), n.sum(-1)), what + " int64 sum"
        y = x.clone()
        y[-1, -1] = float("nan")
        assert torch.isnan(y.to(DEV).amax(-1).cpu()[-1]), what + " NaN in the last chunk"


@pytest.mark.parametrize("head_dim", [1, 7, 8, 9, 24, 63, 64, 65, 128, 512])
def test_attention_head_dims_and_lengths(head_dim):
    g = torch.Generator().manual_seed(head_dim)
    for q_len, kv_len, causal in [(1, 1, False), (17, 17, True), (16, 33, False), (64, 64, True), (5, 128, False)]:
        q = torch.randn(2, 3, q_len, head_dim, generator=g)
        k = torch.randn(2, 3, kv_len, head_dim, generator=g)
        v = torch.randn(2, 3, kv_len, head_dim, generator=g)
        expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        got = F.scaled_dot_product_attention(q.to(DEV), k.to(DEV), v.to(DEV), is_causal=causal)
        close(got, expected, f"attention d={head_dim} L={q_len} S={kv_len} causal={causal}", rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("length", [0, 1, 2, 3, 15, 16, 17, 255, 256, 257, 1023, 1025, 4097])
def test_sort_row_lengths(native_only, length):
    g = torch.Generator().manual_seed(length)
    x = torch.randint(-20, 20, (3, length), generator=g).float()  # many ties: stability matters
    if length > 2:
        x[1, length // 2] = float("nan")
    for descending in (False, True):
        values, indices = torch.sort(x, dim=-1, descending=descending, stable=True)
        got_values, got_indices = torch.sort(x.to(DEV), dim=-1, descending=descending, stable=True)
        assert torch.equal(got_values.cpu().nan_to_num(123.0), values.nan_to_num(123.0)), (length, descending)
        assert torch.equal(got_indices.cpu(), indices), (length, descending)
    k = min(length, 5)
    assert torch.equal(torch.topk(x.to(DEV), k, -1).values.cpu().nan_to_num(123.0),
                       torch.topk(x, k, -1).values.nan_to_num(123.0)), length


@pytest.mark.parametrize("length", [1, 2, 3, 63, 64, 65, 255, 256, 257, 1000, 4097])
def test_softmax_row_lengths_and_layouts(native_only, length):
    """Contiguous rows take cl/softmax.cl (lanes per row by device class), strided ones cl/row.cl;
    forward and backward of softmax and log_softmax, rows with -inf and NaN, 16-bit inputs."""
    g = torch.Generator().manual_seed(length)
    x = torch.randn(5, length, generator=g) * 4
    x[1, : length // 2] = float("-inf")
    x[2, length // 3] = float("nan")
    grad = torch.randn(5, length, generator=g)
    cases = [("contiguous", x, grad, -1), ("strided rows", x.t().contiguous().t(), grad, -1),
             ("middle dim", x.t().contiguous(), grad.t().contiguous(), 0)]
    for what, inp, g_out, dim in cases:
        for fn in (torch.softmax, torch.log_softmax):
            ref_in = inp.double().requires_grad_()
            expected = fn(ref_in, dim)
            expected.backward(g_out.double())
            got_in = inp.to(DEV).requires_grad_()
            got = fn(got_in, dim)
            got.backward(g_out.to(DEV))
            name = f"{fn.__name__} {what} n={length}"
            close(got, expected.float(), name, rtol=1e-5, atol=1e-5)
            close(got_in.grad, ref_in.grad.float(), name + " backward", rtol=1e-4, atol=1e-4)
    for dtype in (torch.float16, torch.bfloat16):
        inp = x[:, :].nan_to_num(0.0, 0.0, 0.0).to(dtype)
        close(torch.softmax(inp.to(DEV), -1), torch.softmax(inp.float(), -1).to(dtype), f"softmax {dtype}",
              rtol=1e-2, atol=1e-3)
        half_to_float = torch._softmax(inp.to(DEV), -1, dtype == torch.float16)
        assert half_to_float.dtype == (torch.float32 if dtype == torch.float16 else dtype)


# Pointwise loops on CPU devices compile the operands' row steps in (dense, broadcast, scalar)
# only past one work-item's chunk of 2048 elements: the layouts on both sides of it.
@pytest.mark.parametrize("rows,cols", [(32, 64), (1, 2049), (41, 50), (7, 3001)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.uint8])
def test_pointwise_layouts_around_the_chunk(native_only, rows, cols, dtype):
    g = torch.Generator().manual_seed(rows * cols)
    def make(*shape):
        return (torch.randn(*shape, generator=g) * 20).to(dtype)
    a, b, row, col = make(rows, cols), make(rows, cols), make(1, cols), make(rows, 1)
    cases = {
        "dense": lambda a, b, row, col: a - b,
        "broadcast second": lambda a, b, row, col: a - col,
        "broadcast first": lambda a, b, row, col: col - a,
        "broadcast row": lambda a, b, row, col: row * a,
        "scalar": lambda a, b, row, col: a - 3,
        "compare": lambda a, b, row, col: a < col,
        "where": lambda a, b, row, col: torch.where(a > b, a, col),
        "unary": lambda a, b, row, col: a.abs(),
        "convert": lambda a, b, row, col: a.to(torch.float16),
        "strided": lambda a, b, row, col: a.t() - b.t(),
    }
    for what, case in cases.items():
        close(case(*(t.to(DEV) for t in (a, b, row, col))), case(a, b, row, col), f"{what} {dtype}", rtol=0, atol=0)
