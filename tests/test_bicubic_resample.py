"""Plain bicubic interpolation (F.interpolate(mode="bicubic")) on the device against the CPU:
downscales and upscales, both align_corners, sizes and scale factors, four dtypes (float16 and
bfloat16 with the CPU's weights rounded to them), channels-last input, gradients, errors."""
import pytest
import torch
import torch.nn.functional as F

from conftest import supports_fp64

pytestmark = pytest.mark.usefixtures("native_only")

TOLERANCE = {
    torch.float32: (1e-5, 1e-5),
    torch.float64: (1e-12, 1e-12),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}


@pytest.mark.parametrize("dtype", list(TOLERANCE), ids=str)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("resize", [{"scale_factor": 1 / 3.7}, {"size": (40, 9)}, {"size": (1, 1)}], ids=str)
def test_matches_cpu(resize, align_corners, dtype):
    if dtype == torch.float64 and not supports_fp64():
        pytest.skip("no cl_khr_fp64")
    x = torch.randn(2, 3, 19, 23, generator=torch.Generator().manual_seed(0)).to(dtype)
    x = x.contiguous(memory_format=torch.channels_last) if align_corners else x
    results = []
    for leaf in (x.clone().requires_grad_(), x.to("ocl").requires_grad_()):
        y = F.interpolate(leaf, mode="bicubic", align_corners=align_corners, **resize)
        y.backward(torch.linspace(-1, 1, y.numel()).view(y.shape).to(dtype).to(leaf.device))
        results.append((y.detach().cpu(), leaf.grad.cpu(), y.is_contiguous(memory_format=torch.channels_last)))
    (expected, expected_grad, cpu_channels_last), (actual, actual_grad, ocl_channels_last) = results
    rtol, atol = TOLERANCE[dtype]
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)
    torch.testing.assert_close(actual_grad, expected_grad, rtol=rtol, atol=atol)
    assert ocl_channels_last == cpu_channels_last


def test_dtype_error_matches_cpu():
    x = torch.randint(0, 9, (1, 1, 4, 4), dtype=torch.int32)
    with pytest.raises(NotImplementedError) as on_cpu:
        F.interpolate(x, size=(2, 2), mode="bicubic")
    with pytest.raises(NotImplementedError) as on_ocl:
        F.interpolate(x.to("ocl"), size=(2, 2), mode="bicubic")
    assert str(on_ocl.value).startswith(str(on_cpu.value))  # ocl's adds " on ocl"
