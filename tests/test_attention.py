"""scaled_dot_product_attention on ocl: the fused kernel (and the math path where it does not
apply) against the CPU, forward and backward, and the fused forward's memory."""
import pytest
import torch
import torch.nn.functional as F

import drawbridge


@pytest.fixture
def native_only():
    drawbridge.set_fallback_mode("error")
    yield
    drawbridge.set_fallback_mode("silent")


def run(device, q, k, v, **kw):
    inputs = [t.detach().to(device).requires_grad_() for t in (q, k, v)]
    mask = kw.pop("attn_mask", None)
    if kw.pop("transposed", False):  # (batch, row, head, dim) in memory, as a projection's output is
        inputs = [t.detach().transpose(1, 2).contiguous().transpose(1, 2).requires_grad_() for t in inputs]
    out = F.scaled_dot_product_attention(*inputs, attn_mask=None if mask is None else mask.to(device), **kw)
    upstream = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(device, out.dtype)
    grads = torch.autograd.grad(out, inputs, upstream)
    return out, grads


def fully_masked_row_mask():
    mask = torch.rand(5, 6, generator=torch.Generator().manual_seed(2)) > 0.4
    mask[1] = False  # attends to nothing: zeros, as PyTorch's math path gives
    return mask


CASES = {
    "plain": ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6), {}),
    "causal": ((2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 8), dict(is_causal=True)),
    "causal_rectangular": ((1, 2, 4, 8), (1, 2, 6, 8), (1, 2, 6, 8), dict(is_causal=True)),
    # Scores of several blocks of query rows (about 4 MiB each, ops/attention.cpp): the causal
    # mask of the blocks after the first.
    "causal_several_blocks": ((2, 4, 1000, 16), (2, 4, 1000, 16), (2, 4, 1000, 16), dict(is_causal=True)),
    "causal_rectangular_several_blocks": ((2, 4, 700, 16), (2, 4, 1000, 16), (2, 4, 1000, 16),
                                          dict(is_causal=True)),
    "bool_mask": ((2, 3, 5, 8), (2, 3, 6, 8), (2, 3, 6, 8), dict(attn_mask=fully_masked_row_mask())),
    "float_mask": ((2, 3, 5, 8), (2, 3, 6, 8), (2, 3, 6, 8), dict(attn_mask=torch.randn(3, 5, 6))),
    "three_dims_scale": ((4, 5, 8), (4, 6, 8), (4, 6, 8), dict(scale=0.3)),
    "three_dims_mask": ((4, 5, 8), (4, 6, 8), (4, 6, 8), dict(attn_mask=torch.randn(4, 5, 6))),
    "strided_wide_rows": ((1, 2, 6, 16), (1, 2, 9, 16), (1, 2, 9, 24), dict(is_causal=True, transposed=True)),
    "grouped_query_heads": ((2, 4, 5, 8), (2, 2, 6, 8), (2, 2, 6, 8), dict(enable_gqa=True)),
}


@pytest.mark.parametrize("name", CASES)
def test_matches_cpu(native_only, name):
    q_shape, k_shape, v_shape, kw = CASES[name]
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(s, generator=g) for s in (q_shape, k_shape, v_shape))
    expected, expected_grads = run("cpu", q, k, v, **dict(kw))
    got, grads = run("ocl", q, k, v, **dict(kw))
    fused = "enable_gqa" not in kw  # grouped-query heads take the math path
    assert ("FusedAttentionOverrideable" in got.grad_fn.name()) == fused
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-5, atol=1e-5)
    for a, b in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_matches_cpu(native_only, dtype):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 9, 16, generator=g).to(dtype) for _ in range(3))
    # Computed in float32 and rounded once: the float32 results of the same inputs, rounded.
    upstream = torch.randn(q.shape, generator=g).to(dtype)
    for dense in (True, False):  # rows of 16 in float8 pieces, and element by element
        inputs = [t.detach().to("ocl").requires_grad_() for t in (q, k, v)]
        if not dense:
            inputs = [t.detach().transpose(-1, -2).contiguous().transpose(-1, -2).requires_grad_() for t in inputs]
        got = F.scaled_dot_product_attention(*inputs, is_causal=True)
        grads = torch.autograd.grad(got, inputs, upstream.to("ocl"))
        wide = [t.float().requires_grad_() for t in (q, k, v)]
        expected = F.scaled_dot_product_attention(*wide, is_causal=True)
        expected_grads = torch.autograd.grad(expected, wide, upstream.float())
        assert got.dtype == dtype and all(t.dtype == dtype for t in grads)
        torch.testing.assert_close(got.cpu(), expected.to(dtype))
        for a, b in zip(grads, expected_grads, strict=True):
            torch.testing.assert_close(a.cpu(), b.to(dtype))


def test_dropout_takes_the_math_path_and_drops(native_only):
    q = torch.randn(1, 1, 8, 4, device="ocl")
    out = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert "FusedAttentionOverrideable" not in str(out.grad_fn)
    assert out.shape == q.shape
    # Equal scores make every attention weight 1/L, and v = identity makes out the dropped-out
    # weight matrix itself: each element is 0 (dropped) or 1/(L (1 - p)) (kept, rescaled).
    length, p = 64, 0.3
    zeros = torch.zeros(1, 8, length, length, device="ocl")
    v = torch.eye(length, device="ocl").expand(1, 8, length, length)
    out = F.scaled_dot_product_attention(zeros, zeros, v, dropout_p=p).cpu()
    dropped = (out == 0).float().mean().item()
    assert abs(dropped - p) < 0.02, f"{dropped:.3f} of the weights dropped, expected {p}"
    kept = out[out != 0]
    torch.testing.assert_close(kept, torch.full_like(kept, 1 / (length * (1 - p))))


def test_fused_forward_does_not_store_the_score_matrix():
    length, dim = 8192, 32  # the scores would take 256 MiB; blocks of query rows take a few MiB
    q, k, v = (torch.randn(1, 1, length, dim, device="ocl") for _ in range(3))
    torch.ocl.synchronize()
    torch.ocl.reset_peak_memory_stats()
    before = torch.ocl.memory_allocated()
    with torch.no_grad():
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.ocl.synchronize()
    extra = torch.ocl.max_memory_allocated() - before
    assert extra < length * length * 4 / 8, f"{extra} bytes: the {length}x{length} scores were stored"
    expected = F.scaled_dot_product_attention(q.cpu()[..., :64, :], k.cpu()[..., :64, :], v.cpu()[..., :64, :],
                                              is_causal=True)
    torch.testing.assert_close(out.cpu()[..., :64, :], expected, rtol=1e-5, atol=1e-5)


def test_float_mask_gets_its_gradient(native_only):
    g = torch.Generator().manual_seed(3)
    q, k, v = torch.randn(2, 3, 5, 8, generator=g), torch.randn(2, 3, 6, 8, generator=g), torch.randn(2, 3, 6, 8, generator=g)
    mask = torch.randn(3, 5, 6, generator=g)  # broadcast over the batch: its gradient sums over it
    grads = {}
    for device in ("cpu", "ocl"):
        inputs = [t.detach().to(device).requires_grad_() for t in (q, k, v, mask)]
        out = F.scaled_dot_product_attention(*inputs[:3], attn_mask=inputs[3])
        if device == "ocl":
            assert "FusedAttentionOverrideable" in out.grad_fn.name()
        out.square().sum().backward()
        grads[device] = [t.grad for t in inputs]
    for a, b in zip(grads["ocl"], grads["cpu"], strict=True):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-4, atol=1e-5)


def test_fused_backward_does_not_store_the_score_matrix():
    length, dim = 8192, 32
    q, k, v = (torch.randn(1, 1, length, dim, device="ocl", requires_grad=True) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    upstream = torch.randn_like(out)
    torch.ocl.synchronize()
    torch.ocl.reset_peak_memory_stats()
    before = torch.ocl.memory_allocated()
    grads = torch.autograd.grad(out, (q, k, v), upstream)
    torch.ocl.synchronize()
    extra = torch.ocl.max_memory_allocated() - before
    assert extra < length * length * 4 / 8, f"{extra} bytes: the {length}x{length} scores were stored"
    # The first 64 queries see only the first 64 keys: their gradient is that of the cut-down problem.
    part = [t.detach().cpu()[..., :64, :].requires_grad_() for t in (q, k, v)]
    expected = torch.autograd.grad(F.scaled_dot_product_attention(*part, is_causal=True), part[0],
                                   upstream.cpu()[..., :64, :])[0]
    torch.testing.assert_close(grads[0].cpu()[..., :64, :], expected, rtol=1e-4, atol=1e-5)


def test_bad_masks_raise():
    q = torch.randn(2, 2, 3, 4, device="ocl")
    with pytest.raises(RuntimeError, match="attn_mask dtype"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(3, 3, dtype=torch.int64, device="ocl"))
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(3, 5, device="ocl"))
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, q[..., :3], q)  # head dims of q and k differ
    with pytest.raises(RuntimeError, match="same device"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(3, 3, dtype=torch.bool))


def test_sdpa_kernel_chooses_the_implementation(native_only):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q = torch.randn(1, 2, 4, 8, device="ocl", requires_grad=True)
    with sdpa_kernel(SDPBackend.MATH):
        assert "FusedAttentionOverrideable" not in F.scaled_dot_product_attention(q, q, q).grad_fn.name()
    with sdpa_kernel(SDPBackend.OVERRIDEABLE):
        assert "FusedAttentionOverrideable" in F.scaled_dot_product_attention(q, q, q).grad_fn.name()
        with pytest.raises(RuntimeError, match="no available kernel"):
            F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)  # the fused kernel has no dropout
    assert "FusedAttentionOverrideable" in F.scaled_dot_product_attention(q, q, q).grad_fn.name()


@pytest.mark.parametrize("causal", [False, True])
def test_fused_logsumexp_over_several_blocks(causal):
    # The logsumexp the fused forward returns (for its backward and for users of the op), block by
    # block of query rows: (2, 4, 1000, 16) takes 8 blocks of 128 rows.
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 4, 1000, 16, generator=g) for _ in range(3))
    out, lse = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(
        q.to("ocl"), k.to("ocl"), v.to("ocl"), is_causal=causal)[:2]
    scores = q @ k.transpose(-1, -2) / 4.0
    if causal:
        scores = scores.masked_fill(torch.ones(1000, 1000, dtype=torch.bool).triu(1), float("-inf"))
    torch.testing.assert_close(lse.cpu(), torch.logsumexp(scores, -1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out.cpu(), torch.softmax(scores, -1) @ v, rtol=1e-5, atol=1e-5)
