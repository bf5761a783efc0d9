"""Fused optimizer steps (fused=True) and foreach steps on ocl against the same optimizer on the
CPU, from the same weights and gradients, with the fallback switched to error."""
import pytest
import torch

import drawbridge


@pytest.fixture
def native_only():
    drawbridge.set_fallback_mode("error")
    yield
    drawbridge.set_fallback_mode("silent")


def run_steps(device, make_optimizer, dtype, steps=4, grad_scale=None, found_inf=None):
    g = torch.Generator().manual_seed(0)
    shapes = [(7, 5), (33,), (2, 3, 4), (0,)]
    params = [torch.randn(s, generator=g).to(device, dtype).requires_grad_() for s in shapes]
    optimizer = make_optimizer(params)
    for _ in range(steps):
        for p in params:
            p.grad = torch.randn(p.shape, generator=g).to(device, dtype)
        if grad_scale is not None:  # what GradScaler hands a fused optimizer
            optimizer.grad_scale = torch.tensor(grad_scale, device=device)
            optimizer.found_inf = torch.tensor(found_inf, device=device)
        optimizer.step()
    states = [t.cpu() for p in params for t in optimizer.state[p].values() if torch.is_tensor(t)]
    return [p.detach().cpu() for p in params] + [p.grad.cpu() for p in params] + states


CONFIGS = [
    ("adam", lambda p, **kw: torch.optim.Adam(p, lr=1e-2, **kw)),
    ("adam_amsgrad_wd", lambda p, **kw: torch.optim.Adam(p, lr=1e-2, amsgrad=True, weight_decay=0.1, **kw)),
    ("adam_maximize_tensor_lr", lambda p, **kw: torch.optim.Adam(p, lr=torch.tensor(1e-2), maximize=True, **kw)),
    ("adamw", lambda p, **kw: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.05, **kw)),
    ("adamw_amsgrad", lambda p, **kw: torch.optim.AdamW(p, lr=1e-2, amsgrad=True, **kw)),
    ("sgd", lambda p, **kw: torch.optim.SGD(p, lr=0.1, **kw)),
    ("sgd_momentum", lambda p, **kw: torch.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=1e-2, **kw)),
    ("sgd_nesterov_maximize",
     lambda p, **kw: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, maximize=True, **kw)),
]


@pytest.mark.parametrize("mode", ["fused", "foreach"])
@pytest.mark.parametrize("name,make", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_step_matches_cpu(native_only, mode, name, make):
    if mode == "foreach" and "tensor_lr" in name:
        pytest.skip("PyTorch allows a tensor lr with foreach only when capturable")

    def make_optimizer(params):
        return make(params, **{mode: True})

    expected = run_steps("cpu", make_optimizer, torch.float32)
    got = run_steps("ocl", make_optimizer, torch.float32)
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fused_adamw_low_precision_matches_cpu(native_only, dtype):
    def make_optimizer(params):
        return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.05, fused=True)

    for a, b in zip(run_steps("ocl", make_optimizer, dtype), run_steps("cpu", make_optimizer, dtype), strict=True):
        # The state is rounded to float16/bfloat16 between steps: one unit in the last place.
        torch.testing.assert_close(a, b, rtol=2e-3 if dtype == torch.float16 else 1.6e-2, atol=1e-3)


@pytest.mark.parametrize("found_inf", [0.0, 1.0])
@pytest.mark.parametrize("name,make", [CONFIGS[1], CONFIGS[6]], ids=["adam", "sgd"])
def test_fused_step_unscales_and_skips_on_inf(native_only, name, make, found_inf):
    def make_optimizer(params):
        return make(params, fused=True)

    expected = run_steps("cpu", make_optimizer, torch.float32, grad_scale=64.0, found_inf=found_inf)
    got = run_steps("ocl", make_optimizer, torch.float32, grad_scale=64.0, found_inf=found_inf)
    if found_inf:  # every step skipped: SGD's momentum buffers were never written, on either device
        got, expected = got[:8], expected[:8]
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_fused_step_rejects_mismatched_lists():
    p = [torch.zeros(3, device="ocl")]
    with pytest.raises(RuntimeError, match="tensor list"):
        torch._fused_sgd_(p, [], [], weight_decay=0.0, momentum=0.9, lr=0.1, dampening=0.0, nesterov=False,
                          maximize=False, is_first_step=True)


@pytest.mark.parametrize("name,make", [CONFIGS[1], CONFIGS[3], CONFIGS[6]], ids=["adam_amsgrad_wd", "adamw", "sgd"])
def test_fused_steps_over_many_and_strided_params(native_only, name, make):
    """More parameters than one multi-tensor launch takes, an empty one and a transposed one (a
    strided view, updated through a contiguous copy); few launches a step. The reference is the
    CPU's for-loop step: the CPU's fused kernels pair a transposed parameter's memory with its
    contiguous gradient's element by element (a PyTorch CPU defect)."""
    results, launches = {}, 0
    for device in ("cpu", "ocl"):
        g = torch.Generator().manual_seed(1)
        shapes = [(5, 7), (0,), (300,), (3, 4, 5)] + [(i + 1, 3) for i in range(14)]
        params = [torch.randn(s, generator=g).to(device).requires_grad_() for s in shapes]
        params[0] = torch.randn(7, 5, generator=g).to(device).t().detach().requires_grad_()  # not contiguous
        opt = make(params, **({"fused": True} if device == "ocl" else {"foreach": False}))
        for step in range(3):
            for p in params:
                p.grad = torch.randn(p.shape, generator=g).to(device)
            before = drawbridge._C._launch_count()
            opt.step()
            if device == "ocl" and step == 2:
                launches = drawbridge._C._launch_count() - before
                strided = sum(not t.is_contiguous() for t in [params[0], *opt.state[params[0]].values()]
                              if torch.is_tensor(t) and t.dim())
        results[device] = [p.detach().cpu() for p in params] + [t.cpu() for p in params
                                                                 for t in opt.state[p].values() if torch.is_tensor(t)]
    for a, b in zip(results["ocl"], results["cpu"], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    # 17 non-empty parameters and 18 step counts, at least 4 a launch; a copy in and out per strided tensor
    assert launches <= 5 + 5 + 2 * strided, (launches, strided)
