"""CTC loss on the device (csrc/ops/ctc_loss.cpp, cl/ctc_loss.cl) against the CPU's.

Every case runs with the fallback set to raise, forward and gradient of log_probs: padded and
concatenated targets, int-list and tensor lengths, unbatched input, the three reductions,
zero_infinity on a target that cannot be aligned, a long input, repeated labels (the transitions
that skip a blank, and several positions of one label summed into one gradient entry), empty
inputs and targets, strided operands, and the CPU's errors for bad arguments. The GPU paths (many
lanes per batch element, a tree over the blank's positions) run too, in a child process.
"""
import os
import re

import pytest
import torch
import torch.nn.functional as F

from conftest import supports_fp64

DTYPES = [torch.float32] + ([torch.float64] if supports_fp64() else [])
TOL = {torch.float32: dict(rtol=2e-5, atol=2e-5), torch.float64: dict(rtol=1e-10, atol=1e-10)}

pytestmark = pytest.mark.usefixtures("native_only")


def log_probs(T, N, C, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    shape = (T, N, C) if N is not None else (T, C)
    return torch.randn(*shape, generator=g, dtype=dtype).log_softmax(-1)


def labels(shape, C, seed=1, low=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(low, C, shape, generator=g)


def to_ocl(x):
    return x.to("ocl") if isinstance(x, torch.Tensor) else x


def assert_close(actual, expected, reference, dtype):
    """actual (ocl) equal to expected (the CPU's) within TOL, or, in float32, no farther from the
    float64 reference than the CPU's own result is: a gradient is exp(lp) - exp(sum + loss - lp),
    so a loss in the thousands carries its float32 rounding (1e-4 there) into every entry."""
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True, **TOL[dtype])
    except AssertionError:
        if reference is None:
            raise
        assert torch.equal(actual.isnan(), expected.isnan())
        ours = (actual.double() - reference).nan_to_num(0).abs().max()
        cpus = (expected.double() - reference).nan_to_num(0).abs().max()
        assert ours <= 2 * cpus, f"ocl is {ours} off the float64 result, the CPU {cpus}"


def ctc_with_grad(lp, targets, input_lengths, target_lengths, upstream, **kwargs):
    lp = lp.detach().requires_grad_()
    loss = F.ctc_loss(lp, targets, input_lengths, target_lengths, **kwargs)
    loss.backward(upstream.to(loss.device, loss.dtype))
    return loss.detach().cpu(), lp.grad.cpu()


def check(lp, targets, input_lengths, target_lengths, dtype, lengths_on_ocl=False, ocl_targets=None, **kwargs):
    """F.ctc_loss and its gradient by log_probs, on the CPU and on ocl, with the same upstream
    gradient (ocl_targets: the targets on ocl, where they should not be targets.to("ocl"))."""
    shape = F.ctc_loss(lp, targets, input_lengths, target_lengths, **kwargs).shape
    upstream = torch.rand(shape, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    cpu_loss, cpu_grad = ctc_with_grad(lp, targets, input_lengths, target_lengths, upstream, **kwargs)
    move = to_ocl if lengths_on_ocl else (lambda x: x)
    ocl_targets = targets.to("ocl") if ocl_targets is None else ocl_targets
    loss, grad = ctc_with_grad(lp.to("ocl"), ocl_targets, move(input_lengths), move(target_lengths), upstream, **kwargs)
    assert loss.shape == cpu_loss.shape and loss.dtype == cpu_loss.dtype and grad.shape == cpu_grad.shape
    ref_loss = ref_grad = None
    if dtype == torch.float32:
        ref_loss, ref_grad = ctc_with_grad(lp.double(), targets, input_lengths, target_lengths, upstream, **kwargs)
    assert_close(loss, cpu_loss, ref_loss, dtype)
    assert_close(grad, cpu_grad, ref_grad, dtype)
    return loss, grad


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_padded_targets_int_lengths(dtype, reduction):
    T, N, C, S = 30, 5, 12, 8
    targets = labels((N, S), C)
    check(log_probs(T, N, C, dtype), targets, [30, 25, 30, 12, 1], [8, 3, 0, 6, 1], dtype, reduction=reduction)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_concatenated_targets_tensor_lengths(dtype, reduction):
    T, N, C = 24, 4, 9
    target_lengths = torch.tensor([5, 0, 7, 2])
    targets = labels((int(target_lengths.sum()),), C)
    input_lengths = torch.tensor([24, 10, 20, 3])
    check(log_probs(T, N, C, dtype), targets, input_lengths, target_lengths, dtype, reduction=reduction)
    check(log_probs(T, N, C, dtype), targets, input_lengths, target_lengths, dtype, lengths_on_ocl=True,
          reduction=reduction)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_unbatched(dtype, reduction):
    T, C = 20, 7
    targets = labels((6,), C)
    check(log_probs(T, None, C, dtype), targets, [T], [6], dtype, reduction=reduction)
    check(log_probs(T, None, C, dtype), targets, torch.tensor(T), torch.tensor(6), dtype, reduction=reduction)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_impossible_alignment(dtype, zero_infinity, reduction):
    # Element 1 has 3 steps for a target of 5 labels, element 2 3 steps for "a a b" (the repeat
    # needs a blank between: 4 steps): no path, an infinite loss; zero_infinity makes it and its
    # gradient zero, and without it the gradient is NaN as on the CPU.
    T, N, C = 10, 3, 6
    targets = torch.tensor([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [2, 2, 3, 0, 0]])
    loss, grad = check(log_probs(T, N, C, dtype), targets, [10, 3, 3], [4, 5, 3], dtype, reduction=reduction,
                       zero_infinity=zero_infinity)
    if reduction == "none":
        assert torch.isfinite(loss[0])
        assert (loss[1:] == 0).all() if zero_infinity else torch.isinf(loss[1:]).all()
    if zero_infinity:
        assert (grad[:, 1:] == 0).all()
    else:
        assert torch.isnan(grad[:3, 1:]).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_long_sequence(dtype):
    T, N, C, S = 500, 3, 40, 120
    targets = labels((N, S), C)
    check(log_probs(T, N, C, dtype), targets, [500, 420, 300], [120, 100, 60], dtype, reduction="sum")


@pytest.mark.parametrize("dtype", DTYPES)
def test_repeated_labels(dtype):
    # Few classes: every label recurs, consecutive repeats block the skip transition, and each
    # gradient entry collects several target positions.
    T, N, C = 40, 4, 3
    targets = torch.tensor([[1, 1, 2, 1, 1, 1, 2, 2], [2, 1, 2, 1, 2, 1, 2, 1], [1] * 8, [2, 2, 1, 1, 0, 0, 0, 0]])
    check(log_probs(T, N, C, dtype), targets, [40, 30, 20, 9], [8, 8, 8, 4], dtype, reduction="none")


@pytest.mark.parametrize("blank", [0, 4, 9])
def test_blank_index(blank):
    T, N, C = 16, 3, 10
    classes = torch.tensor([c for c in range(C) if c != blank])
    targets = classes[labels((N, 5), len(classes), low=0)]
    check(log_probs(T, N, C, torch.float32), targets, [16, 12, 16], [5, 4, 2], torch.float32, blank=blank)


def test_targets_holding_the_blank():
    # Not valid targets, but the CPU computes with them: labels drawn from every class, the last
    # of a target the blank.
    T, N, C = 14, 4, 4
    targets = labels((N, 6), C, low=0)
    targets[:, 3] = 0
    check(log_probs(T, N, C, torch.float64 if supports_fp64() else torch.float32), targets, [14, 14, 10, 14],
          [4, 6, 2, 3], torch.float64 if supports_fp64() else torch.float32, reduction="none")


def test_empty_inputs_and_targets():
    # Input length 0: loss 0 for an empty target, inf otherwise; target length 0: the all-blank path.
    T, N, C = 6, 4, 5
    targets = labels((N, 3), C)
    check(log_probs(T, N, C, torch.float32), targets, [0, 0, 6, 2], [0, 2, 0, 0], torch.float32, reduction="none")
    check(log_probs(T, N, C, torch.float32), targets, [0, 0, 6, 2], [0, 2, 0, 0], torch.float32, reduction="none",
          zero_infinity=True)


def test_strided_operands():
    # log_probs laid out (N, T, C) and transposed (the move to ocl keeps the strides), targets
    # every other column of a wider tensor with an offset.
    T, N, C = 18, 4, 8
    lp = log_probs(T, N, C, torch.float32).transpose(0, 1).contiguous().transpose(0, 1)
    assert not lp.is_contiguous() and lp.to("ocl").stride() == lp.stride()
    wide = labels((N, 13), C)
    ocl_targets = wide.to("ocl")[:, 1::2]
    assert ocl_targets.stride() == (13, 2) and ocl_targets.storage_offset() == 1
    check(lp, wide[:, 1::2], [18, 15, 10, 18], [6, 5, 3, 6], torch.float32, ocl_targets=ocl_targets, reduction="sum")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("target_dtype", [torch.int32, torch.int64])
def test_aten_ops_direct(dtype, target_dtype):
    # _ctc_loss's log_alpha where the CPU defines it (the rows the input reaches, the positions of
    # each target), int32 targets (the composite always passes int64), and both backward overloads.
    T, N, C, S = 12, 3, 6, 4
    lp = log_probs(T, N, C, dtype)
    targets = labels((N, S), C).to(target_dtype)
    il, tl = [12, 7, 5], [4, 2, 0]
    nll, alpha = torch._ctc_loss(lp, targets, il, tl, 0, False)
    o_nll, o_alpha = torch._ctc_loss(lp.to("ocl"), targets.to("ocl"), il, tl, 0, False)
    torch.testing.assert_close(o_nll.cpu(), nll, **TOL[dtype])
    assert o_alpha.shape == alpha.shape
    for b in range(N):
        torch.testing.assert_close(o_alpha[b, : il[b], : 2 * tl[b] + 1].cpu(), alpha[b, : il[b], : 2 * tl[b] + 1],
                                   **TOL[dtype])
    t_nll, t_alpha = torch._ctc_loss(lp.to("ocl"), targets.to("ocl"), torch.tensor(il), torch.tensor(tl).to("ocl"))
    torch.testing.assert_close(t_nll.cpu(), nll, **TOL[dtype])
    grad = torch.rand(N, dtype=dtype)
    expected = torch.ops.aten._ctc_loss_backward(grad, lp, targets, il, tl, nll, alpha, 0, False)
    args = (lp.to("ocl"), targets.to("ocl"))
    actual = torch.ops.aten._ctc_loss_backward(grad.to("ocl"), *args, il, tl, o_nll, o_alpha, 0, False)
    torch.testing.assert_close(actual.cpu(), expected, **TOL[dtype])
    actual = torch.ops.aten._ctc_loss_backward.Tensor(grad.to("ocl"), *args, torch.tensor(il).to("ocl"),
                                                      torch.tensor(tl, dtype=torch.int32), o_nll, o_alpha, 0, False)
    torch.testing.assert_close(actual.cpu(), expected, **TOL[dtype])


def test_tensor_lengths_autograd():
    # _ctc_loss.Tensor records its own backward node, which calls _ctc_loss_backward.Tensor.
    T, N, C = 10, 3, 5
    lp = log_probs(T, N, C, torch.float32)
    targets = labels((N, 4), C)
    il, tl = torch.tensor([10, 9, 8]), torch.tensor([4, 3, 2])
    results = []
    for device in ("cpu", "ocl"):
        x = lp.to(device).detach().requires_grad_()
        nll, _ = torch._ctc_loss(x, targets.to(device), il.to(device), tl.to(device))
        nll.sum().backward()
        results.append((nll.detach().cpu(), x.grad.cpu()))
    torch.testing.assert_close(results[1], results[0], **TOL[torch.float32])


BAD_INPUTS = [
    # (description, log_probs shape, dtype, targets, input_lengths, target_lengths, blank)
    ("input length past T", (5, 2, 4), torch.float32, torch.ones(2, 2, dtype=torch.long), [5, 6], [2, 2], 0),
    ("negative input length", (5, 2, 4), torch.float32, torch.ones(2, 2, dtype=torch.long), [5, -1], [2, 2], 0),
    ("negative target length", (5, 2, 4), torch.float32, torch.ones(2, 2, dtype=torch.long), [5, 5], [2, -1], 0),
    ("target longer than its row", (5, 2, 4), torch.float32, torch.ones(2, 2, dtype=torch.long), [5, 5], [3, 2], 0),
    ("concatenated size", (5, 2, 4), torch.float32, torch.ones(3, dtype=torch.long), [5, 5], [2, 2], 0),
    ("blank out of range", (5, 2, 4), torch.float32, torch.ones(2, 2, dtype=torch.long), [5, 5], [2, 2], 4),
    ("lengths per batch", (5, 2, 4), torch.float32, torch.ones(2, 2, dtype=torch.long), [5], [2, 2], 0),
    ("float targets", (5, 2, 4), torch.float32, torch.ones(2, 2), [5, 5], [2, 2], 0),
    ("2-d log_probs", (5, 4), torch.float32, torch.ones(1, 2, dtype=torch.long), [5], [2], 0),
    ("float16", (5, 2, 4), torch.float16, torch.ones(2, 2, dtype=torch.long), [5, 5], [2, 2], 0),
]


def normalized(message: str) -> str:
    # checkScalarType names the tensor's type, which says its backend (torch.FloatTensor on the
    # CPU, oclFloatType here).
    return re.sub(r"torch\.\w+Tensor|ocl\w+Type", "<type>", message)


@pytest.mark.parametrize("case", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_inputs_raise_as_on_cpu(case):
    _, shape, dtype, targets, il, tl, blank = case
    lp = torch.randn(*shape).log_softmax(-1).to(dtype)
    with pytest.raises(Exception) as cpu_error:
        torch._ctc_loss(lp, targets, il, tl, blank)
    with pytest.raises(type(cpu_error.value)) as ocl_error:
        torch._ctc_loss(lp.to("ocl"), targets.to("ocl"), il, tl, blank)
    assert normalized(str(ocl_error.value)) == normalized(str(cpu_error.value))


def test_bad_input_through_functional():
    lp = torch.randn(50, 3, 15).log_softmax(2)
    targets = torch.randint(1, 15, (3, 30))
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 50, but got value 51"):
        F.ctc_loss(lp.to("ocl"), targets.to("ocl"), [50, 50, 51], [30, 25, 20])
    with pytest.raises(RuntimeError, match="target_lengths must be integral"):
        F.ctc_loss(lp.to("ocl"), targets.to("ocl"), torch.tensor([50] * 3), torch.tensor([30.0, 25.0, 20.0]))


GPU_CLASS_TESTS = [
    "test_padded_targets_int_lengths(torch.float32, 'mean')",
    "test_concatenated_targets_tensor_lengths(torch.float32, 'none')",
    "test_unbatched(torch.float32, 'sum')",
    "test_impossible_alignment(torch.float32, False, 'none')",
    "test_impossible_alignment(torch.float32, True, 'none')",
    "test_long_sequence(torch.float32)",
    "test_repeated_labels(torch.float32)",
    "test_blank_index(4)",
    "test_targets_holding_the_blank()",
    "test_empty_inputs_and_targets()",
    "test_strided_operands()",
]


def test_gpu_class_paths(run_py):
    """The GPU paths on this device (256 lanes per element, the blank's positions summed by a
    tree) through this file's own cases, in a child process."""
    r = run_py(
        f"""
        import sys
        sys.path.insert(0, {repr(os.path.dirname(os.path.abspath(__file__)))})
        import torch
        from test_ctc_loss import *
        assert torch.ocl.get_device_properties().device_class == "gpu"
        for case in {GPU_CLASS_TESTS!r}:
            eval(case)
        print("ok")
        """,
        env={"DRAWBRIDGE_DEVICE_CLASS": "gpu", "DRAWBRIDGE_FALLBACK": "error"},
    )
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]
