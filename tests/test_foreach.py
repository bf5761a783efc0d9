"""The _foreach_* ops of csrc/ops/foreach.cpp against the CPU: multi-tensor launches for lists of
contiguous floating tensors (more tensors than one launch takes, empty ones, 16-bit and float64),
and PyTorch's per-tensor loop, with its errors, for everything else."""
import pytest
import torch

import drawbridge

SHAPES = [(7, 5), (33,), (0,), (2, 3, 4), (4097,), (1,), (3, 3), (128, 9), (5,), (6, 7), (2,), (300,)]


@pytest.fixture
def native_only():
    drawbridge.set_fallback_mode("error")
    yield
    drawbridge.set_fallback_mode("silent")


def lists(n, dtype=torch.float32, positive=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        ts = [torch.randn(s, generator=g) for s in SHAPES]
        out.append([(t.abs() + 0.5 if positive else t).to(dtype) for t in ts])
    return out


def ocl(ts):
    return [t.to("ocl") for t in ts]


SCALARS = [0.5 + i / 10 for i in range(len(SHAPES))]
CASES = {
    "add_scalar": (1, lambda a: torch._foreach_add(a, 0.7), lambda a: torch._foreach_add_(a, 0.7)),
    "add_scalarlist": (1, lambda a: torch._foreach_add(a, SCALARS), lambda a: torch._foreach_add_(a, SCALARS)),
    "add_list_alpha": (2, lambda a, b: torch._foreach_add(a, b, alpha=-0.3),
                       lambda a, b: torch._foreach_add_(a, b, alpha=-0.3)),
    "mul_scalar": (1, lambda a: torch._foreach_mul(a, 1.5), lambda a: torch._foreach_mul_(a, 1.5)),
    "mul_scalarlist": (1, lambda a: torch._foreach_mul(a, SCALARS), lambda a: torch._foreach_mul_(a, SCALARS)),
    "mul_list": (2, lambda a, b: torch._foreach_mul(a, b), lambda a, b: torch._foreach_mul_(a, b)),
    "mul_tensor": (1, lambda a: torch._foreach_mul(a, torch.tensor(0.25, device=a[0].device)),
                   lambda a: torch._foreach_mul_(a, torch.tensor(0.25, device=a[0].device))),
    "mul_cpu_tensor": (1, lambda a: torch._foreach_mul(a, torch.tensor(3.0)),
                       lambda a: torch._foreach_mul_(a, torch.tensor(3.0))),
    "div_scalar": (1, lambda a: torch._foreach_div(a, 3.0), lambda a: torch._foreach_div_(a, 3.0)),
    "div_scalarlist": (1, lambda a: torch._foreach_div(a, SCALARS), lambda a: torch._foreach_div_(a, SCALARS)),
    "div_list": (2, lambda a, b: torch._foreach_div(a, b), lambda a, b: torch._foreach_div_(a, b)),
    "lerp": (2, lambda a, b: torch._foreach_lerp(a, b, 0.3), lambda a, b: torch._foreach_lerp_(a, b, 0.8)),
    "addcmul": (3, lambda a, b, c: torch._foreach_addcmul(a, b, c, value=0.4),
                lambda a, b, c: torch._foreach_addcmul_(a, b, c, value=0.4)),
    "addcmul_scalarlist": (3, lambda a, b, c: torch._foreach_addcmul(a, b, c, SCALARS),
                           lambda a, b, c: torch._foreach_addcmul_(a, b, c, SCALARS)),
    "addcdiv": (3, lambda a, b, c: torch._foreach_addcdiv(a, b, c, value=-2.0),
                lambda a, b, c: torch._foreach_addcdiv_(a, b, c, value=-2.0)),
    "addcdiv_scalarlist": (3, lambda a, b, c: torch._foreach_addcdiv(a, b, c, SCALARS),
                           lambda a, b, c: torch._foreach_addcdiv_(a, b, c, SCALARS)),
    "sqrt": (1, lambda a: torch._foreach_sqrt(a), lambda a: torch._foreach_sqrt_(a)),
    "zero": (1, None, lambda a: torch._foreach_zero_(a)),
}


def check(got, expected, dtype):
    tol = {torch.float16: 2e-3, torch.bfloat16: 1e-2}.get(dtype, 1e-6)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.device.type == "ocl" and g.dtype == e.dtype and g.shape == e.shape
        torch.testing.assert_close(g.cpu(), e, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("name", CASES)
def test_foreach_matches_cpu(native_only, name, dtype):
    if dtype == torch.float64 and not torch.ocl.get_device_properties(0).supports_fp64:
        pytest.skip("no fp64")
    arity, functional, inplace = CASES[name]
    inputs = lists(arity, dtype, positive=name.startswith(("sqrt", "div", "addcdiv")))
    if functional is not None:
        check(functional(*[ocl(ts) for ts in inputs]), functional(*inputs), dtype)
    on_device = [ocl(ts) for ts in inputs]
    inplace(*on_device)
    inplace(*inputs)
    check(on_device[0], inputs[0], dtype)


def test_a_step_is_a_few_launches():
    params, grads = (ocl(ts) for ts in lists(2))
    before = drawbridge._C._launch_count()
    torch._foreach_addcmul_(params, grads, grads, value=0.1)
    launches = drawbridge._C._launch_count() - before
    nonempty = sum(1 for s in SHAPES if s != (0,))
    assert 1 <= launches <= (nonempty + 3) // 4, launches  # at least 4 tensors per launch on any device


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("ord", [2, 1, float("inf")])
def test_foreach_norm_matches_cpu(native_only, ord, dtype):
    """Passes over partial norms until one is left per tensor: one 4.5M-element tensor takes three
    passes on CPU devices and four on GPUs; empty tensors have norm 0."""
    if dtype == torch.float64 and not torch.ocl.get_device_properties(0).supports_fp64:
        pytest.skip("no fp64")
    tensors = lists(1, dtype)[0] + [torch.randn(4_500_000).to(dtype)]
    tensors[3][1, 2, 3] = -40.0  # the largest |x| is negative
    if ord == float("inf"):  # which has no identity: an empty tensor is an error, as on the CPU
        with pytest.raises(RuntimeError, match="empty tensor"):
            torch._foreach_norm(ocl(tensors), ord)
        tensors = [t for t in tensors if t.numel()]
    # Against float64: the CPU's own float32 norm of the 4.5M elements is 1e-4 off (ocl's 5e-8).
    expected = [n.to(dtype) for n in torch._foreach_norm([t.double() for t in tensors], ord)]
    got = torch._foreach_norm(ocl(tensors), ord)
    tol = {torch.float16: 2e-3, torch.bfloat16: 1e-2, torch.float32: 1e-5}.get(dtype, 1e-12)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.device.type == "ocl" and g.dtype == e.dtype and g.shape == e.shape == ()
        torch.testing.assert_close(g.cpu(), e, rtol=tol, atol=tol)


def test_foreach_norm_is_a_few_launches_and_keeps_nan():
    tensors = ocl(lists(1)[0])
    torch.ocl.synchronize()
    before = drawbridge._C._launch_count()
    norms = torch._foreach_norm(tensors)
    launches = drawbridge._C._launch_count() - before
    nonempty = sum(1 for s in SHAPES if s != (0,))
    assert launches < nonempty, launches  # the per-tensor ops take at least one launch each
    expected = torch._foreach_norm([t.cpu() for t in tensors])
    torch.testing.assert_close(torch.stack(norms).cpu(), torch.stack(expected))
    tensors = [t for t in tensors if t.numel()]  # (the infinity norm refuses empty tensors)
    tensors[1][5] = float("nan")
    for ord in (2, 1, float("inf")):
        norms = torch._foreach_norm(tensors, ord)
        assert norms[1].isnan().item() and not norms[0].isnan().item(), ord


def test_clip_grad_norm_matches_cpu(native_only):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 10))
    copy = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 10)).to("ocl")
    copy.load_state_dict(model.state_dict())
    x = torch.randn(32, 64)
    model(x).square().sum().backward()
    copy(x.to("ocl")).square().sum().backward()
    total = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    total_ocl = torch.nn.utils.clip_grad_norm_(copy.parameters(), 0.5)
    torch.testing.assert_close(total_ocl.cpu(), total, rtol=1e-5, atol=1e-5)
    for p, q in zip(model.parameters(), copy.parameters(), strict=True):
        torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=1e-5, atol=1e-6)


def test_lists_the_kernels_cannot_take_go_through_the_per_tensor_ops():
    a, b = lists(2)
    mixed = [t.double() if i % 2 else t for i, t in enumerate(a)]
    strided = [t.t().contiguous().t() if t.dim() == 2 else t for t in b]  # same shapes, not contiguous
    integers = [torch.arange(5) for _ in range(3)]
    for fn, args in [(torch._foreach_add, (mixed, 2.0)), (torch._foreach_mul, (strided, b)),
                     (torch._foreach_add, (integers, 3)), (torch._foreach_mul, (a, 1 + 2j)),
                     (torch._foreach_lerp, (a, strided, 0.5))]:
        expected = fn(*args)
        got = fn(*[[t.to("ocl") for t in x] if isinstance(x, list) else x for x in args])
        for g, e in zip(got, expected, strict=True):
            assert g.dtype == e.dtype
            torch.testing.assert_close(g.cpu(), e)


def test_a_tensor_twice_in_an_in_place_list_is_updated_twice():
    x = torch.ones(5000)
    on_device = x.to("ocl")
    torch._foreach_add_([x, x], 1.0)
    torch._foreach_add_([on_device, on_device], 1.0)
    assert torch.equal(on_device.cpu(), x) and x[0] == 3


def test_errors_are_the_per_tensor_ops_errors():
    a, b = (ocl(ts) for ts in lists(2))
    with pytest.raises(RuntimeError, match="same number of tensors|Tensor lists must have the same"):
        torch._foreach_add_(a, b[:-1])
    with pytest.raises(RuntimeError):
        torch._foreach_mul_(a, SCALARS[:-1])
    x = torch.zeros(10, device="ocl")
    with pytest.raises(RuntimeError, match="single memory location|unsupported operation"):
        torch._foreach_add_([x[1:]], [x[:-1]])


@pytest.mark.parametrize("name", ["adam", "adamw", "sgd_momentum"])
def test_default_foreach_optimizers_match_cpu(native_only, name):
    make = {"adam": lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=0.1),
            "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2),
            "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-2)}[name]
    results = {}
    for device in ("cpu", "ocl"):
        g = torch.Generator().manual_seed(0)
        params = [torch.randn(s, generator=g).to(device).requires_grad_() for s in SHAPES]
        opt = make(params)
        for _ in range(3):
            for p in params:
                p.grad = torch.randn(p.shape, generator=g).to(device)
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
        results[device] = [p.detach().cpu() for p in params]
    for got, expected in zip(results["ocl"], results["cpu"], strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("poison", [None, float("inf"), float("nan")])
def test_grad_scaler_unscale_matches_cpu_in_a_few_launches(native_only, dtype, poison):
    """GradScaler's _amp_foreach_non_finite_check_and_unscale_: the gradients times inv_scale and
    the flag as on the CPU; the contiguous gradients of one dtype share launches, a transposed
    one and one of another dtype are updated on their own."""
    grads = lists(1, dtype)[0]
    if poison is not None:
        grads[-1].view(-1)[-1] = poison
    extra = [torch.randn(6, 5).t(), torch.randn(7, dtype=torch.float64)]
    on_device = ocl(grads) + [extra[0].to("ocl"), extra[1].to("ocl")]
    assert not on_device[-2].is_contiguous()
    inputs = grads + extra
    found, inv = torch.zeros(1), torch.full((1,), 0.25)
    found_ocl, inv_ocl = found.to("ocl"), inv.to("ocl")
    torch.ocl.synchronize()
    before = drawbridge._C._launch_count()
    torch._amp_foreach_non_finite_check_and_unscale_(on_device, found_ocl, inv_ocl)
    launches = drawbridge._C._launch_count() - before
    torch._amp_foreach_non_finite_check_and_unscale_(inputs, found, inv)
    assert found_ocl.item() == found.item() == (0.0 if poison is None else 1.0)
    for g, e in zip(on_device, inputs, strict=True):
        torch.testing.assert_close(g.cpu(), e, equal_nan=True)
    nonempty = sum(1 for s in SHAPES if s != (0,))
    assert launches <= (nonempty + 3) // 4 + 2 + 1, launches  # + the two alone + inv_scale's conversion
