"""The CPU fallback for ops that have no native kernel yet."""
import copy

import pytest
import torch
import torch.nn as nn

import drawbridge

# An op that has no native kernel in this build. If it becomes native, pick another one.
FALLBACK_OP = "aten::hash_tensor.out"  # the functional op reaches the backend as its out= variant


def run_fallback_op():
    a = torch.ones(5, device="ocl")
    return torch.hash_tensor(a)


def test_warn_once_per_op_and_report(run_py):
    r = run_py(
        """
        import warnings, torch, drawbridge
        warnings.simplefilter("always")
        with warnings.catch_warnings(record=True) as caught:
            a = torch.rand(5).to("ocl")
            for _ in range(3):
                b = torch.hash_tensor(a)
        msgs = [str(w.message) for w in caught if "hash_tensor" in str(w.message)]
        print(len(msgs), drawbridge.fallback_report().get("aten::hash_tensor.out"))
        print(b.device.type, torch.equal(b.cpu(), torch.hash_tensor(a.cpu())))
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "3", "ocl", "True"]


def test_error_mode_names_the_op_and_process_stays_usable(run_py):
    r = run_py(
        """
        import torch
        a = torch.ones(3, device="ocl")
        try:
            torch.hash_tensor(a)
        except NotImplementedError as e:
            print("NotImplementedError", "aten::hash_tensor" in str(e))
        print(a.cpu().tolist())
        """,
        env={"DRAWBRIDGE_FALLBACK": "error"},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["NotImplementedError True", "[1.0, 1.0, 1.0]"]


def test_silent_mode(run_py):
    r = run_py(
        """
        import warnings, torch
        warnings.simplefilter("error")
        a = torch.ones(3, device="ocl")
        print(torch.hash_tensor(a).item() == torch.hash_tensor(a.cpu()).item())
        """,
        env={"DRAWBRIDGE_FALLBACK": "silent"},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


def test_mode_switch_in_process():
    drawbridge.set_fallback_mode("error")
    with pytest.raises(NotImplementedError, match=FALLBACK_OP):
        run_fallback_op()
    drawbridge.set_fallback_mode("silent")
    drawbridge.reset_fallback_report()
    run_fallback_op()
    assert drawbridge.fallback_report()[FALLBACK_OP] == 1
    with pytest.raises(ValueError):
        drawbridge.set_fallback_mode("sometimes")


def test_mlp_trains_with_losses_equal_to_cpu():
    torch.manual_seed(0)
    cpu_model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    ocl_model = copy.deepcopy(cpu_model).ocl()
    data = torch.randn(32, 8)
    target = torch.randint(0, 3, (32,))

    def train(model, device):
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x, y = data.to(device), target.to(device)
        losses = []
        for _ in range(8):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    cpu_losses = train(cpu_model, "cpu")
    ocl_losses = train(ocl_model, "ocl")
    torch.testing.assert_close(ocl_losses, cpu_losses, rtol=1e-6, atol=1e-7)
    assert ocl_losses[-1] < ocl_losses[0]
    for p in ocl_model.parameters():
        assert p.device.type == "ocl" and p.grad.device.type == "ocl"


def test_complex_tensors_take_the_fallback_through_native_ops():
    # Native kernels are real-only but for complex mul and sgn (ops/complex_arithmetic.h); given
    # complex operands, the other ops that have one (add, sum, matmul, where, cumsum, ...) run on
    # the CPU like ops without one, instead of raising.
    x = torch.randn(2, 8, 6)
    angles = torch.polar(torch.ones(8, 3), torch.randn(8, 3))
    drawbridge.set_fallback_mode("silent")
    drawbridge.reset_fallback_report()
    try:
        # rotary embeddings as LLaMA writes them: complex multiply of a complex view
        z = torch.view_as_complex(x.to("ocl").reshape(2, 8, 3, 2)) * angles.to("ocl")
        rotated = torch.view_as_real(z).flatten(2)
        expected = torch.view_as_real(torch.view_as_complex(x.reshape(2, 8, 3, 2)) * angles).flatten(2)
        torch.testing.assert_close(rotated.cpu(), expected)
        a = torch.randn(4, 4, dtype=torch.complex64)
        d = a.to("ocl")
        for op in (lambda t: t + 2 * t, lambda t: t.sum(0), lambda t: t @ t, lambda t: t.abs(),
                   lambda t: torch.where(t.real > 0, t, 0 * t), lambda t: t.cumsum(1), lambda t: t.exp()):
            torch.testing.assert_close(op(d).cpu(), op(a))
        d.mul_(d)
        torch.testing.assert_close(d.cpu(), a * a)
        report = drawbridge.fallback_report()
        assert report.get("aten::add.Tensor", 0) >= 1 and not any("mul" in op for op in report), report
        drawbridge.set_fallback_mode("error")
        d * d  # native
        with pytest.raises(NotImplementedError, match="add.Tensor"):
            d + d
        assert (torch.ones(3, device="ocl") * 2).cpu().tolist() == [2, 2, 2]  # real ops stay native
    finally:
        drawbridge.set_fallback_mode("silent")
