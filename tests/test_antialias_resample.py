"""Anti-aliased bilinear and bicubic interpolation (F.interpolate(..., antialias=True)) on the
device against the CPU: downscales (whose filter support grows with the factor) and upscales,
both align_corners, sizes and scale factors, channels-last and strided inputs, gradients, and the
CPU's errors. The CPU computes these in float32 and float64 only."""
import pytest
import torch
import torch.nn.functional as F

from conftest import supports_fp64

pytestmark = pytest.mark.usefixtures("native_only")

MODES = ["bilinear", "bicubic"]
RESIZES = [
    {"scale_factor": 0.5},
    {"scale_factor": 1 / 3.7},
    {"scale_factor": (1 / 3.7, 2.0)},
    {"size": (7, 5)},
    {"size": (40, 53)},
    {"size": (1, 1)},
    {"size": (19, 9)},  # H unchanged: the CPU skips that pass
]
TOLERANCE = {torch.float32: (2e-6, 2e-6), torch.float64: (1e-13, 1e-13)}


def both(x_cpu, fn):
    """fn's result and x's gradient (for the same upstream gradient) on the CPU and on ocl."""
    leaves = [x_cpu.detach().clone().requires_grad_(), x_cpu.detach().to("ocl").requires_grad_()]
    outs = [fn(leaf) for leaf in leaves]
    upstream = torch.randn(outs[0].shape, dtype=outs[0].dtype, generator=torch.Generator().manual_seed(1))
    outs[0].backward(upstream)
    outs[1].backward(upstream.to("ocl"))
    return [(o.detach().cpu(), leaf.grad.cpu(), o) for o, leaf in zip(outs, leaves)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("resize", RESIZES, ids=str)
@pytest.mark.parametrize("mode", MODES)
def test_matches_cpu(mode, resize, align_corners, dtype):
    if dtype == torch.float64 and not supports_fp64():
        pytest.skip("no cl_khr_fp64")
    x = torch.randn(2, 3, 19, 23, dtype=dtype, generator=torch.Generator().manual_seed(0))
    fn = lambda t: F.interpolate(t, mode=mode, antialias=True, align_corners=align_corners, **resize)  # noqa: E731
    (expected, expected_grad, _), (actual, actual_grad, _) = both(x, fn)
    rtol, atol = TOLERANCE[dtype]
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)
    torch.testing.assert_close(actual_grad, expected_grad, rtol=rtol, atol=atol)


@pytest.mark.parametrize("mode", MODES)
def test_channels_last_and_strided(mode):
    base = torch.randn(2, 5, 31, 44, generator=torch.Generator().manual_seed(2))
    inputs = {
        "channels_last": base.contiguous(memory_format=torch.channels_last),
        "strided": base[:, 1:4, ::2, 1::3],
    }
    for name, x in inputs.items():
        fn = lambda t: F.interpolate(t, scale_factor=(0.37, 0.6), mode=mode, antialias=True)  # noqa: E731
        (expected, expected_grad, cpu_out), (actual, actual_grad, ocl_out) = both(x, fn)
        torch.testing.assert_close(actual, expected, rtol=2e-6, atol=2e-6, msg=name)
        torch.testing.assert_close(actual_grad, expected_grad, rtol=2e-6, atol=2e-6, msg=name)
        assert ocl_out.stride() == cpu_out.stride(), name  # channels-last in, channels-last out


def test_out_variant():
    x = torch.randn(1, 2, 17, 12, generator=torch.Generator().manual_seed(3))
    expected = torch.ops.aten._upsample_bicubic2d_aa(x, [5, 4], False)
    out = torch.empty(0, device="ocl")
    torch.ops.aten._upsample_bicubic2d_aa.out(x.to("ocl"), [5, 4], False, out=out)
    torch.testing.assert_close(out.cpu(), expected, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize(
    "call",
    [
        lambda x: torch.ops.aten._upsample_bilinear2d_aa(x[0], [2, 2], False),  # 3-d input
        lambda x: torch.ops.aten._upsample_bilinear2d_aa(x, [0, 2], False),
        lambda x: torch.ops.aten._upsample_bicubic2d_aa(x.half(), [2, 2], False),
        lambda x: torch.ops.aten._upsample_bilinear2d_aa_backward(x, [2, 2], [1, 2, 6, 7], False),
    ],
    ids=["rank", "empty_output", "half", "grad_shape"],
)
def test_errors_match_cpu(call):
    x = torch.randn(1, 2, 6, 7)
    with pytest.raises(Exception) as on_cpu:
        call(x)
    with pytest.raises(type(on_cpu.value)) as on_ocl:
        call(x.to("ocl"))
    assert str(on_ocl.value) == str(on_cpu.value)


@pytest.mark.parametrize("mode", MODES)
def test_width_one(mode):
    # The CPU's forward resamples H wrongly when the image is one column wide (every output row
    # repeats row 0); the same resampling transposed, H for W, is what it computes correctly.
    x = torch.arange(12.0).view(1, 2, 3, 2)
    actual = F.interpolate(x.to("ocl"), size=(4, 1), mode=mode, antialias=True).cpu()
    columns = F.interpolate(x, size=(3, 1), mode=mode, antialias=True)
    expected = F.interpolate(columns.transpose(2, 3), size=(1, 4), mode=mode, antialias=True).transpose(2, 3)
    torch.testing.assert_close(actual, expected, rtol=2e-6, atol=2e-6)
    assert not torch.equal(actual[0, 0, 0], actual[0, 0, 1])
