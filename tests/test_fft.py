"""torch.fft on the device (csrc/ops/fft.cpp over VkFFT) against the CPU's pocketfft.

Every transform runs with the fallback set to raise. Lengths cover VkFFT's radix kernels, a
prime (its Bluestein path) and 1 (which VkFFT refuses and the op handles itself); batches cover
odd and even counts (VkFFT transforms two real sequences as one complex one); the inverse real
transforms get coefficients whose zero-frequency imaginary parts are not zero, which the CPU
ignores.
"""
import pytest
import torch

import drawbridge

from conftest import supports_fp64

DTYPES = [torch.float32] + ([torch.float64] if supports_fp64() else [])
TOL = {torch.float32: dict(rtol=2e-5, atol=2e-5), torch.float64: dict(rtol=1e-10, atol=1e-10)}


pytestmark = pytest.mark.usefixtures("native_only")


def signal(*shape, dtype, complex_=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=dtype)
    return torch.complex(x, torch.randn(*shape, generator=g, dtype=dtype)) if complex_ else x


def check(fn, x, dtype):
    try:
        expected = fn(x)
    except RuntimeError as e:  # irfft of one coefficient has no length: ocl must refuse it too
        with pytest.raises(type(e)):
            fn(x.to("ocl"))
        return
    actual = fn(x.to("ocl"))
    assert actual.device.type == "ocl" and actual.dtype == expected.dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual.cpu(), expected, **TOL[dtype])


ONE_DIM = {
    "fft": (torch.fft.fft, False), "fft_real": (torch.fft.fft, True), "ifft": (torch.fft.ifft, False),
    "rfft": (torch.fft.rfft, True), "irfft": (torch.fft.irfft, False), "hfft": (torch.fft.hfft, False),
    "ihfft": (torch.fft.ihfft, True),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [1, 2, 8, 12, 97], ids=str)
@pytest.mark.parametrize("batch", [1, 2, 3], ids=str)
@pytest.mark.parametrize("name", sorted(ONE_DIM))
def test_one_dimensional(name, batch, n, dtype):
    fn, real = ONE_DIM[name]
    check(fn, signal(batch, n, dtype=dtype, complex_=not real), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_multi_dimensional_and_norms(norm, dtype):
    x = signal(4, 6, 5, dtype=dtype)
    c = signal(4, 6, 5, dtype=dtype, complex_=True)
    check(lambda t: torch.fft.fftn(t, norm=norm), c, dtype)
    check(lambda t: torch.fft.ifft2(t, norm=norm), c, dtype)
    check(lambda t: torch.fft.rfftn(t, dim=(0, 2), norm=norm), x, dtype)
    check(lambda t: torch.fft.irfftn(t, s=(6, 8), norm=norm), c, dtype)
    check(lambda t: torch.fft.hfft2(t, norm=norm), c, dtype)
    check(lambda t: torch.fft.ihfftn(t, norm=norm), x, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_strided_padded_and_trimmed_inputs(dtype):
    x = signal(6, 10, 4, dtype=dtype)
    check(lambda t: torch.fft.fft(t[:, ::2], dim=1), x, dtype)
    check(lambda t: torch.fft.rfft(t.transpose(0, 2), n=9, dim=-1), x, dtype)
    check(lambda t: torch.fft.fft(t, n=5, dim=0), x, dtype)
    check(lambda t: torch.fft.fftshift(torch.fft.fft2(t)), x, dtype)


def test_out_variants_write_out():
    c = signal(3, 8, dtype=torch.float32, complex_=True)
    out = torch.empty(3, 8, dtype=torch.complex64, device="ocl")
    result = torch.fft.fft(c.to("ocl"), out=out)
    assert result is out
    torch.testing.assert_close(out.cpu(), torch.fft.fft(c), **TOL[torch.float32])
    real_out = torch.empty(3, 14, device="ocl")
    torch.fft.irfft(c.to("ocl"), out=real_out)
    torch.testing.assert_close(real_out.cpu(), torch.fft.irfft(c), **TOL[torch.float32])


def test_stft_matches_cpu():
    x = signal(2, 400, dtype=torch.float32)
    window = torch.hann_window(64)
    spec = lambda t, w: torch.stft(t, 64, hop_length=16, window=w, return_complex=True)
    expected = spec(x, window)
    actual = spec(x.to("ocl"), window.to("ocl"))
    torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("center,window", [(True, torch.hann_window), (False, torch.ones)])
def test_istft_matches_cpu_and_inverts_stft(center, window):
    """istft's overlap-add (unfold_backward) and the window envelope's division, forward and
    backward; the spectrogram's gradient against the CPU's."""
    x = signal(2, 600, dtype=torch.float32)
    w = window(64)
    spec = torch.stft(x, 64, hop_length=16, window=w, return_complex=True, center=center)
    length = 600 if center else None

    def inverse(s, win):
        return torch.istft(s, 64, hop_length=16, window=win, center=center, length=length)

    cpu_spec, ocl_spec = spec.clone().requires_grad_(), spec.to("ocl").requires_grad_()
    expected, actual = inverse(cpu_spec, w), inverse(ocl_spec, w.to("ocl"))
    torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(actual.cpu()[..., :expected.shape[-1]], x[..., :expected.shape[-1]], rtol=1e-4, atol=1e-4)
    upstream = torch.randn(expected.shape)
    expected.backward(upstream)
    actual.backward(upstream.to("ocl"))
    torch.testing.assert_close(ocl_spec.grad.cpu(), cpu_spec.grad, rtol=1e-4, atol=1e-5)


def test_empty_and_launch_count():
    assert torch.fft.fft(torch.empty(0, 8, device="ocl")).shape == (0, 8)
    x = signal(16, 32, dtype=torch.float32, complex_=True).to("ocl")
    torch.fft.fft(x)  # builds the plan
    before = drawbridge._C._launch_count()
    torch.fft.fft(x)
    # One VkFFT transform for the whole batch, however many kernels it splits into (the copy of
    # the input into the result is a buffer copy, not a launch).
    assert drawbridge._C._launch_count() - before == 1


def test_plans_serve_one_direction_and_padded_batches():
    # A plan compiles VkFFT's kernel for one direction and one batch count; small transforms run
    # over their batch rounded up to a power of four, and a single short sequence as four (the
    # added rows zero), so batches 1 to 4 share one plan. The length is one no other test plans.
    def plans_built(fn, x):
        before = drawbridge._C._fft_plan_count()
        torch.testing.assert_close(fn(x.to("ocl")).cpu(), fn(x), **TOL[torch.float32])
        return drawbridge._C._fft_plan_count() - before

    assert plans_built(torch.fft.fft, signal(2, 37, dtype=torch.float32, complex_=True)) == 1
    assert plans_built(torch.fft.fft, signal(37, dtype=torch.float32, complex_=True)) == 0
    assert plans_built(torch.fft.fft, signal(1, 37, dtype=torch.float32, complex_=True)) == 0
    assert plans_built(torch.fft.fft, signal(3, 37, dtype=torch.float32, complex_=True)) == 0
    assert plans_built(torch.fft.fft, signal(4, 37, dtype=torch.float32, complex_=True)) == 0
    assert plans_built(torch.fft.ifft, signal(3, 37, dtype=torch.float32, complex_=True)) == 1
    assert plans_built(torch.fft.fft, signal(5, 37, dtype=torch.float32, complex_=True)) == 1
    assert plans_built(lambda x: torch.fft.rfft(x, dim=0), signal(37, 3, dtype=torch.float32)) == 1
    assert plans_built(lambda x: torch.fft.irfft(x, n=37, dim=0), signal(19, 3, dtype=torch.float32, complex_=True)) == 1


def test_building_a_plan_keeps_the_process_locale():
    # VkFFT switches to the "C" locale to print its kernels and restored it wrongly: Python then
    # read files as ASCII (torch.compile's caches failed after any FFT).
    import locale

    before = locale.setlocale(locale.LC_ALL)
    torch.fft.fft(signal(5, 7919, dtype=torch.float32).to("ocl"))  # a length no other test plans
    assert locale.setlocale(locale.LC_ALL) == before


@pytest.mark.parametrize("n", [16381, 16384, 16385, 32749, 131072], ids=str)
def test_long_lengths(n):
    # Up to kFftMaxLength through VkFFT (16381 is prime: Bluestein), past it through the CPU's
    # pocketfft (VkFFT's multi-pass kernels crash on PoCL there).
    # Coefficients reach ~400 here, so float32 rounding alone puts both backends ~1e-4 from the
    # exact transform: ocl must be as close to the float64 result as the CPU's float32 (4x).
    x = signal(2, n, dtype=torch.float32)
    for fn, t in [(torch.fft.rfft, x), (lambda t: torch.fft.fft(t, norm="ortho"), x),
                  (lambda t: torch.fft.irfft(t, n=n), torch.fft.rfft(x))]:
        exact, expected, actual = fn(t.to(torch.complex128 if t.is_complex() else torch.float64)), fn(t), fn(t.to("ocl"))
        assert actual.device.type == "ocl" and actual.dtype == expected.dtype and actual.shape == expected.shape
        cpu_error = (expected.to(exact.dtype) - exact).abs().max().item()
        assert (actual.cpu().to(exact.dtype) - exact).abs().max().item() <= 4 * cpu_error
