"""Complex multiplication and sign on ocl (through the real views of complex tensors), which the
backward passes of the inverse real FFTs and of polar need, and autograd's zero tensors: against
the CPU, with the fallback switched to error."""
import pytest
import torch

pytestmark = pytest.mark.usefixtures("native_only")


def complex_randn(*shape, dtype=torch.complex64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=dtype, generator=g)


def same(got, expected):
    assert got.device.type == "ocl" and got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_mul_matches_cpu(dtype):
    a, b = complex_randn(3, 4, dtype=dtype), complex_randn(4, dtype=dtype, seed=1)
    r = torch.randn(3, 1, dtype=torch.float64 if dtype == torch.complex128 else torch.float32)
    cases = [
        lambda x, y, s: x * y,                   # broadcast
        lambda x, y, s: x * s,                   # a real tensor
        lambda x, y, s: s * y,
        lambda x, y, s: x * 2.5,                 # a Python number (a CPU scalar)
        lambda x, y, s: x * (1 - 2j),
        lambda x, y, s: s * (1 - 2j),            # a real tensor, a complex CPU scalar
        lambda x, y, s: x.conj() * y,            # an unresolved conjugate
        lambda x, y, s: x[:, ::2] * y[::2],      # strided
        lambda x, y, s: x.mul_(y),               # in place
    ]
    for case in cases:
        same(case(a.to("ocl"), b.to("ocl"), r.to("ocl")), case(a.clone(), b, r))
    out = torch.empty(0, dtype=dtype, device="ocl")  # resized
    torch.mul(a.to("ocl"), b.to("ocl"), out=out)
    same(out, a * b)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.mul(a.to("ocl"), b.to("ocl"), out=torch.empty(3, 4, device="ocl"))


def test_complex_sgn_matches_cpu():
    z = complex_randn(5, 3)
    z[1, 1] = 0
    same(torch.sgn(z.to("ocl")), torch.sgn(z))
    w = z.to("ocl")
    w.sgn_()
    same(w, torch.sgn(z))


def test_real_sgn_gradient_is_a_zero_tensor():
    x = torch.randn(4, device="ocl", requires_grad=True)
    (grad,) = torch.autograd.grad(torch.sgn(x).sum(), x)
    assert grad.device.type == "ocl" and torch.equal(grad.cpu(), torch.zeros(4))


def test_inverse_real_fft_and_polar_gradients_match_cpu():
    x = complex_randn(6, 9)
    abs_, angle = torch.rand(7) + 0.5, torch.randn(7)
    for device in ("cpu", "ocl"):
        xs = x.detach().to(device).requires_grad_()
        parts = [t.detach().to(device).requires_grad_() for t in (abs_, angle)]
        torch.fft.irfft(xs, n=16).pow(2).sum().backward()
        torch.view_as_real(torch.polar(*parts)).pow(3).sum().backward()
        grads = [xs.grad] + [p.grad for p in parts]
        if device == "cpu":
            expected = grads
    for g, e in zip(grads, expected, strict=True):
        torch.testing.assert_close(g.cpu(), e, rtol=1e-4, atol=1e-5)
