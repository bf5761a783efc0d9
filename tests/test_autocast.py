"""torch.autocast(device_type="ocl") with CUDA's cast lists, and torch.amp.GradScaler("ocl")."""
import pytest
import torch
import torch.nn.functional as F

import drawbridge


@pytest.fixture
def native_only():
    drawbridge.set_fallback_mode("error")
    yield
    drawbridge.set_fallback_mode("silent")


def randn(*shape):
    return torch.randn(*shape, device="ocl")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_cast_lists_are_cudas(native_only, dtype):
    x, w, img = randn(4, 8), randn(3, 8), randn(1, 2, 5, 5)
    q = randn(1, 2, 4, 8)
    with torch.autocast("ocl", dtype=dtype):
        lower = {
            "mm": x @ w.t(), "linear": F.linear(x, w), "bmm": torch.bmm(x[None], w.t()[None]),
            "addmm": torch.addmm(randn(3), x, w.t()), "conv2d": F.conv2d(img, randn(3, 2, 3, 3)),
            "sdpa": F.scaled_dot_product_attention(q, q, q, is_causal=True),
        }
        low = x.to(dtype)
        fp32 = {
            "exp": low.exp(), "softmax": low.softmax(-1), "log_softmax": F.log_softmax(low, -1),
            "layer_norm": F.layer_norm(low, (8,)), "sum": low.sum(), "cumsum": low.cumsum(0),
            "mse_loss": F.mse_loss(low, low), "pow": low.pow(2),
        }
        promoted = torch.addcmul(x, low, low)
        untouched = low.relu()
        with torch.autocast("ocl", enabled=False):
            plain = x @ w.t()
    assert {k: v.dtype for k, v in lower.items()} == {k: dtype for k in lower}
    assert {k: v.dtype for k, v in fp32.items()} == {k: torch.float32 for k in fp32}
    assert promoted.dtype == torch.float32 and untouched.dtype == dtype and plain.dtype == torch.float32


def test_autocast_matches_explicit_casts_on_cpu(native_only):
    torch.manual_seed(0)
    x, w = torch.randn(16, 32), torch.randn(24, 32)
    with torch.autocast("ocl", dtype=torch.bfloat16):
        got = F.linear(x.to("ocl"), w.to("ocl")).softmax(-1)
    expected = F.linear(x.bfloat16(), w.bfloat16()).float().softmax(-1)
    torch.testing.assert_close(got.cpu(), expected)


def test_binary_cross_entropy_is_refused_as_on_cuda():
    p = torch.rand(4, device="ocl")
    with torch.autocast("ocl", dtype=torch.float16), pytest.raises(RuntimeError, match="unsafe to autocast"):
        F.binary_cross_entropy(p, p)


def test_grad_scaler_unscales_skips_and_adapts_the_scale(native_only):
    p = torch.nn.Parameter(torch.ones(5, device="ocl"))
    optimizer = torch.optim.SGD([p], lr=0.5)
    scaler = torch.amp.GradScaler("ocl", init_scale=2.0**10, growth_interval=2)
    for step, poison in enumerate([False, True, False, False]):
        optimizer.zero_grad()
        loss = (p * p).sum() * (float("inf") if poison else 1.0)
        scaler.scale(loss).backward()
        before = p.detach().clone()
        scaler.step(optimizer)
        scaler.update()
        if poison:  # skipped, and the scale backs off
            torch.testing.assert_close(p.detach(), before)
            assert scaler.get_scale() == 2.0**9
        else:  # the update saw the true gradient 2p
            torch.testing.assert_close(p.detach(), before - 0.5 * 2 * before)
    assert scaler.get_scale() == 2.0**10  # grew again after two clean steps


@pytest.mark.parametrize("fused", [False, True])
def test_float16_training_with_grad_scaler_matches_cpu(native_only, fused):
    def train(device):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-2, fused=fused)
        scaler = torch.amp.GradScaler(device)
        g = torch.Generator().manual_seed(1)
        losses = []
        for _ in range(20):
            x = torch.randn(32, 16, generator=g)
            y = x[:, :4].argmax(1)
            with torch.autocast(device, dtype=torch.float16):
                loss = F.cross_entropy(model(x.to(device)), y.to(device))
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            losses.append(loss.item())
        return losses, scaler.get_scale()

    (ocl, ocl_scale), (cpu, cpu_scale) = train("ocl"), train("cpu")
    assert ocl_scale == cpu_scale
    assert ocl[-1] < 0.8 * ocl[0], ocl
    for a, b in zip(ocl, cpu, strict=True):  # float16 products accumulate in another order on each device
        assert abs(a - b) <= 5e-3 * abs(b), (ocl, cpu)
