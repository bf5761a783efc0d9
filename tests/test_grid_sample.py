"""grid_sample (grid_sampler_2d/3d and their backward) against the CPU: every interpolation and
padding mode with and without align_corners, 2-d and 3-d, the output and the gradients of input
and grid; strided operands, 16-bit dtypes, many grid points landing on one pixel (the input
gradient's atomic adds), output_mask, empty shapes and the CPU's errors for bad arguments. The
fallback raises, so every op here runs natively."""
import itertools

import pytest
import torch
import torch.nn.functional as F

import drawbridge
from conftest import supports_fp64


@pytest.fixture(autouse=True)
def native_only():
    drawbridge.set_fallback_mode("error")
    yield
    drawbridge.set_fallback_mode("silent")


MODES_2D = list(itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [False, True]))
# The CPU has no bicubic for volumes.
MODES_3D = list(itertools.product(["bilinear", "nearest"], ["zeros", "border", "reflection"], [False, True]))


def sample(dims, dtype=torch.float32, seed=0):
    """An input and a grid whose points reach past [-1, 1], so that every padding mode matters."""
    g = torch.Generator().manual_seed(seed)
    if dims == 2:
        x, grid = torch.randn(2, 3, 5, 7, generator=g), torch.rand(2, 4, 6, 2, generator=g) * 2.6 - 1.3
    else:
        x, grid = torch.randn(2, 3, 4, 5, 6, generator=g), torch.rand(2, 3, 4, 5, 3, generator=g) * 2.6 - 1.3
    return x.to(dtype), grid.to(dtype)


def compare(x, grid, mode, padding, align_corners, rtol, atol, prepare=lambda t: t, grads=(True, True),
            reference=None):
    """Output and gradients of F.grid_sample on ocl against the CPU's; `prepare` lays out the ocl
    operands (strided views), grads says which of (input, grid) require grad, and `reference` is
    the dtype the CPU computes in (default: the operands')."""
    kwargs = dict(mode=mode, padding_mode=padding, align_corners=align_corners)
    reference = reference or x.dtype
    cpu = [x.to(reference).requires_grad_(grads[0]), grid.to(reference).requires_grad_(grads[1])]
    ocl = [prepare(t.detach().to("ocl")).requires_grad_(r) for t, r in zip((x, grid), grads)]
    expected, got = F.grid_sample(*cpu, **kwargs), F.grid_sample(*ocl, **kwargs)
    assert got.dtype == x.dtype
    torch.testing.assert_close(got.cpu().to(reference), expected, rtol=rtol, atol=atol)
    upstream = torch.randn(expected.shape, generator=torch.Generator().manual_seed(1)).to(x.dtype)
    leaves = [i for i in range(2) if grads[i]]
    expected_grads = torch.autograd.grad(expected, [cpu[i] for i in leaves], upstream.to(reference))
    got_grads = torch.autograd.grad(got, [ocl[i] for i in leaves], upstream.to("ocl"))
    for a, b in zip(got_grads, expected_grads, strict=True):
        assert a.dtype == x.dtype
        torch.testing.assert_close(a.cpu().to(reference), b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("mode,padding,align_corners", MODES_2D)
def test_2d_against_cpu(mode, padding, align_corners):
    compare(*sample(2), mode, padding, align_corners, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,padding,align_corners", MODES_3D)
def test_3d_against_cpu(mode, padding, align_corners):
    compare(*sample(3), mode, padding, align_corners, rtol=1e-5, atol=1e-5)


# In float64 the only differences are the order of the input gradient's sums (and, in 2-d, the
# CPU's vectorized arithmetic).
@pytest.mark.skipif(not supports_fp64(), reason="the device has no float64")
@pytest.mark.parametrize("dims,mode,padding,align_corners", [(2,) + m for m in MODES_2D] + [(3,) + m for m in MODES_3D])
def test_float64_against_cpu(dims, mode, padding, align_corners):
    compare(*sample(dims, torch.float64, seed=2), mode, padding, align_corners, rtol=1e-12, atol=1e-12)


def strided(t):
    """The same values in a non-contiguous layout: the last two dims swapped in memory, then
    every other element of a doubled leading dim."""
    wide = torch.empty((t.shape[0] * 2,) + t.shape[1:], dtype=t.dtype, device=t.device)
    view = wide.transpose(-1, -2).contiguous().transpose(-1, -2)[::2]
    return view.copy_(t)


@pytest.mark.parametrize("dims,mode", [(2, "bilinear"), (2, "bicubic"), (2, "nearest"), (3, "bilinear"), (3, "nearest")])
def test_non_contiguous_operands(dims, mode):
    x, grid = sample(dims, seed=3)
    assert not strided(x.to("ocl")).is_contiguous()
    compare(x, grid, mode, "reflection", False, rtol=1e-5, atol=1e-5, prepare=strided)


# The CPU computes float16/bfloat16 grid samples in 16-bit arithmetic (a bilinear float16 output
# 1e-2 off the exact one, a bfloat16 nearest pick a pixel off); ocl computes in float32 and rounds
# once, so it is compared with the CPU's float64 result of the same 16-bit values.
@pytest.mark.parametrize("dtype,tol", [(torch.float16, 2e-3), (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize("dims,mode", [(2, "bilinear"), (2, "bicubic"), (2, "nearest"), (3, "bilinear"), (3, "nearest")])
def test_16_bit_dtypes(dtype, tol, dims, mode):
    x, grid = sample(dims, seed=4)
    compare(x.to(dtype), grid.to(dtype), mode, "border", True, rtol=tol, atol=tol, reference=torch.float64)


def test_many_points_on_one_pixel_accumulate():
    # Every grid point reads the same four pixels: the input gradient sums 4096 atomic adds each.
    x = torch.randn(1, 2, 4, 4)
    grid = torch.full((1, 64, 64, 2), 0.1)
    compare(x, grid, "bilinear", "zeros", False, rtol=1e-5, atol=1e-4)
    compare(x, grid, "nearest", "zeros", False, rtol=1e-5, atol=1e-4)


def test_concurrent_adds_into_one_pixel_are_not_lost():
    # 2^18 grid points on one pixel, from many work-groups at once: each adds 1 (exact in
    # float32), so a lost update shows.
    x = torch.randn(1, 1, 4, 4, device="ocl", requires_grad=True)
    grid = torch.zeros(1, 512, 512, 2, device="ocl")
    F.grid_sample(x, grid, mode="nearest", align_corners=False).sum().backward()
    expected = torch.zeros(1, 1, 4, 4)
    expected[0, 0, 2, 2] = 512 * 512  # (0, 0) rounds half to even: pixel 2 of 4
    torch.testing.assert_close(x.grad.cpu(), expected, rtol=0, atol=0)


# NaN, infinite and huge grid points: a 2-d border clip sends NaN to 0 and a 3-d one to the last
# pixel, zeros padding gives a 2-d NaN (its masked corners still add 0 * NaN) and a 3-d 0, as the
# CPU's vectorized 2-d kernel and scalar 3-d kernel do.
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("dims,mode", [(2, "bilinear"), (2, "nearest"), (2, "bicubic"), (3, "bilinear"), (3, "nearest")])
def test_non_finite_grid_points(dims, mode, padding):
    special = torch.tensor([float("nan"), float("inf"), -float("inf"), 1e30, -1e30, 0.3])
    x = torch.randn((1, 2) + (4,) * dims, generator=torch.Generator().manual_seed(8))
    points = torch.cartesian_prod(*[special] * dims).view((1, 1, -1, dims) if dims == 2 else (1, 1, 1, -1, 3))
    for align_corners in (False, True):
        kwargs = dict(mode=mode, padding_mode=padding, align_corners=align_corners)
        expected = F.grid_sample(x, points, **kwargs)
        got = F.grid_sample(x.to("ocl"), points.to("ocl"), **kwargs).cpu()
        torch.testing.assert_close(got, expected, equal_nan=True, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("grads", [(True, False), (False, True)])
@pytest.mark.parametrize("dims", [2, 3])
def test_only_one_gradient_asked_for(dims, grads):
    compare(*sample(dims, seed=5), "bilinear", "zeros", True, rtol=1e-5, atol=1e-5, grads=grads)


def test_backward_output_mask_is_respected():
    x, grid = sample(2, seed=6)
    x, grid = x.to("ocl"), grid.to("ocl")
    upstream = torch.ones(2, 3, 4, 6, device="ocl")
    grad_input, grad_grid = torch.ops.aten.grid_sampler_2d_backward(upstream, x, grid, 0, 0, False, [False, True])
    assert grad_input is None and grad_grid.shape == grid.shape
    cpu_grad_grid = torch.ops.aten.grid_sampler_2d_backward(upstream.cpu(), x.cpu(), grid.cpu(), 0, 0, False,
                                                            [False, True])[1]
    torch.testing.assert_close(grad_grid.cpu(), cpu_grad_grid)


@pytest.mark.parametrize("input_shape,grid_shape", [((0, 3, 5, 5), (0, 4, 4, 2)), ((2, 0, 5, 5), (2, 4, 4, 2)),
                                                    ((2, 3, 5, 5), (2, 0, 4, 2)), ((1, 2, 3, 3, 3), (1, 2, 0, 2, 3))])
def test_empty_shapes(input_shape, grid_shape):
    x, grid = torch.randn(input_shape), torch.rand(grid_shape) * 2 - 1
    compare(x, grid, "bilinear", "zeros", False, rtol=0, atol=0)


@pytest.mark.parametrize("make", [
    lambda: (torch.randn(1, 2, 3, 3), torch.rand(2, 2, 2, 2), "bilinear"),  # batch sizes differ
    lambda: (torch.randn(1, 2, 3, 3, 3), torch.rand(1, 2, 2, 2, 3), "bicubic"),  # bicubic volume
    lambda: (torch.randn(1, 2, 3, 3), torch.rand(1, 2, 2, 3), "bilinear"),  # 3 coordinates for 2-d
    lambda: (torch.randn(1, 2, 0, 3), torch.rand(1, 2, 2, 2), "bilinear"),  # empty spatial dim
    lambda: (torch.randn(1, 2, 3, 3).int(), torch.rand(1, 2, 2, 2).int(), "nearest"),  # integer dtype
    lambda: (torch.randn(1, 2, 3, 3), torch.rand(1, 2, 2, 2).half(), "bilinear"),  # dtypes differ
])
def test_bad_arguments_raise_as_on_cpu(make):
    x, grid, mode = make()
    with pytest.raises(Exception) as cpu:
        F.grid_sample(x, grid, mode=mode, align_corners=False)
    with pytest.raises(type(cpu.value)) as ocl:
        F.grid_sample(x.to("ocl"), grid.to("ocl"), mode=mode, align_corners=False)
    assert type(ocl.value) is type(cpu.value)
