"""Layers beyond the everyday ones, forward and backward, against the CPU: transposed convolution,
unfold/fold, padding modes, upsampling, adaptive max pooling, group norm, embedding_bag and
embedding's max_norm. The fallback is switched to error, so every op runs natively."""
import pytest
import torch
import torch.nn.functional as F

import drawbridge


@pytest.fixture
def native_only():
    drawbridge.set_fallback_mode("error")
    yield
    drawbridge.set_fallback_mode("silent")


def check_against_cpu(fn, *shapes, rtol=1e-5, atol=1e-5, seed=0):
    """fn on random float32 inputs of `shapes`, on ocl and on the CPU: results and gradients."""
    g = torch.Generator().manual_seed(seed)
    cpu_inputs = [torch.randn(s, generator=g).requires_grad_() for s in shapes]
    ocl_inputs = [t.detach().to("ocl").requires_grad_() for t in cpu_inputs]
    expected, got = fn(*cpu_inputs), fn(*ocl_inputs)
    torch.testing.assert_close(got.cpu(), expected, rtol=rtol, atol=atol)
    upstream = torch.randn(expected.shape, generator=g)
    expected_grads = torch.autograd.grad(expected, cpu_inputs, upstream, allow_unused=True)
    grads = torch.autograd.grad(got, ocl_inputs, upstream.to("ocl"), allow_unused=True)
    for a, b in zip(grads, expected_grads):
        assert (a is None) == (b is None)
        if b is not None:
            torch.testing.assert_close(a.cpu(), b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("kw", [
    dict(), dict(stride=2), dict(stride=2, padding=1, output_padding=1), dict(dilation=2, padding=2),
    dict(stride=3, groups=2, output_padding=2),
])
def test_conv_transpose2d(native_only, kw):
    check_against_cpu(lambda x, w, b: F.conv_transpose2d(x, w, b, **kw), (2, 4, 5, 6), (4, 3, 3, 2), (6 if kw.get("groups") else 3,))


def test_conv_transpose1d_and_3d(native_only):
    check_against_cpu(lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=1), (2, 3, 7), (3, 5, 4))
    check_against_cpu(lambda x, w: F.conv_transpose3d(x, w, stride=(1, 2, 1)), (1, 2, 3, 4, 3), (2, 2, 2, 2, 2))


def test_conv_transpose_rejects_bad_output_padding():
    x, w = torch.randn(1, 2, 4, 4, device="ocl"), torch.randn(2, 2, 3, 3, device="ocl")
    with pytest.raises(RuntimeError, match="output padding must be smaller"):
        F.conv_transpose2d(x, w, stride=1, output_padding=1)


@pytest.mark.parametrize("kw", [dict(kernel_size=3), dict(kernel_size=(2, 3), stride=2, padding=1, dilation=(1, 2))])
def test_unfold_and_fold(native_only, kw):
    check_against_cpu(lambda x: F.unfold(x, **kw), (2, 3, 7, 8))
    blocks = F.unfold(torch.zeros(2, 3, 7, 8), **kw).shape
    check_against_cpu(lambda c: F.fold(c, (7, 8), **kw), tuple(blocks))
