"""Layers beyond the everyday ones, forward and backward, against the CPU: transposed convolution,
unfold/fold, padding modes, upsampling, adaptive max pooling, group and batch norm, embedding_bag and
embedding's max_norm. The fallback is switched to error, so every op runs natively."""
import random

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
    for a, b in zip(grads, expected_grads, strict=True):
        assert (a is None) == (b is None)
        if b is not None:
            torch.testing.assert_close(a.cpu(), b, rtol=rtol, atol=atol)


# Convolutions multiply per sample when a sample has at least 512 output positions, and the
# whole batch in one GEMM below that (csrc/ops/convolution.cpp): both sides of the line, with
# groups, stride and padding, forward and both gradients.
@pytest.mark.parametrize("image", [12, 24, 46])
def test_conv2d_on_both_sides_of_the_one_gemm_line(native_only, image):
    check_against_cpu(lambda x, w, b: F.conv2d(x, w, b, stride=1 if image < 46 else 2, padding=1, groups=2),
                      (3, 4, image, image), (6, 2, 3, 3), (6,), rtol=1e-4, atol=1e-4)
    check_against_cpu(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, groups=2),
                      (2, 4, image // 2, image // 2 + 1), (4, 3, 3, 3), rtol=1e-4, atol=1e-4)
    # the layout convolution's meta function promises (torch.compile asserts it)
    x, w = torch.randn(3, 4, image, image), torch.randn(6, 2, 3, 3)
    assert F.conv2d(x.to("ocl"), w.to("ocl"), groups=2).stride() == F.conv2d(x, w, groups=2).stride()


# With one group, CPU devices have im2col write the packed GEMM's panels directly (PANEL_COLUMNS in
# cl/windows.cl), per sample (at least 512 output positions) or with the batch in the columns
# (fewer, so that samples share panels): whole and partial last panels, strides, dilation, 1-d and
# 3-d, a strided input, float64, and a transposed convolution's input gradient, which is such a
# convolution.
@pytest.mark.parametrize("case", [
    ((2, 3, 24, 24), (5, 3, 3, 3), dict(padding=1)),
    ((4, 8, 7, 7), (6, 8, 3, 3), dict(padding=1)),
    ((3, 4, 9, 10), (5, 4, 2, 3), dict(stride=(2, 1))),
    ((2, 3, 46, 46), (4, 3, 3, 3), dict(stride=2, padding=1)),
    ((1, 2, 30, 31), (3, 2, 3, 2), dict(dilation=2, padding=(2, 1))),
    ((2, 3, 601), (4, 3, 5), dict(padding=2)),
    ((1, 2, 8, 8, 9), (3, 2, 3, 3, 3), dict(padding=1)),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_conv_columns_as_gemm_panels(native_only, case, dtype):
    image, weight, kw = case
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[len(image)]
    tolerance = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    check_against_cpu(lambda x, w: conv(x.to(dtype), w.to(dtype), **kw), image, weight, **tolerance)
    if len(image) == 4:
        wide = image[:-1] + (image[-1] * 2,)  # every other column: a strided input
        check_against_cpu(lambda x, w: conv(x[..., ::2].to(dtype), w.to(dtype), **kw), wide, weight, **tolerance)
        check_against_cpu(lambda x, w: F.conv_transpose2d(x.to(dtype), w.to(dtype), padding=1),
                          (2, 4, 24, 24), (4, 3, 3, 3), **tolerance)


# An empty batch: ATen answers it before our kernels (F.conv2d), and our weight gradient called
# directly, per sample (30x30) and with the batch in the columns (5x5), is zeros, not an
# unwritten block (the freed NaN blocks are there for the allocator to hand out again).
@pytest.mark.parametrize("image", [30, 5])
def test_conv_of_an_empty_batch(native_only, image):
    x = torch.empty(0, 3, image, image, device="ocl", requires_grad=True)
    w = torch.randn(4, 3, 3, 3, device="ocl", requires_grad=True)
    out = F.conv2d(x, w, padding=1)
    out.sum().backward()
    assert out.shape == (0, 4, image, image) and x.grad.shape == x.shape
    assert torch.equal(w.grad.cpu(), torch.zeros(4, 3, 3, 3))
    for _ in range(8):
        torch.full((4, 3, 3, 3), float("nan"), device="ocl")
    grad_output = torch.empty(0, 4, image, image, device="ocl")
    _, grad_weight, _ = torch.ops.aten.convolution_backward_overrideable(
        grad_output, x.detach(), w.detach(), [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False])
    assert torch.equal(grad_weight.cpu(), torch.zeros(4, 3, 3, 3))


# Depthwise convolutions (every input channel its own group) have direct kernels (cl/windows.cl):
# channel multipliers 1 and 3, stride, dilation, asymmetric padding, 1-d to 3-d, a strided input,
# float64, an empty batch; a transposed one keeps the GEMM path.
@pytest.mark.parametrize("case", [
    ((2, 8, 12, 12), (8, 1, 3, 3), dict(padding=1)),
    ((3, 4, 13, 11), (12, 1, 3, 3), dict(stride=2, padding=(2, 1), dilation=2)),
    ((2, 6, 40), (6, 1, 7), dict(padding=3)),
    ((1, 3, 20), (6, 1, 4), dict(stride=3)),
    ((2, 3, 5, 6, 7), (6, 1, 3, 3, 3), dict(padding=1)),
    ((2, 5, 9, 17), (5, 1, 5, 2), dict(stride=(1, 2))),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_depthwise_conv(native_only, case, dtype):
    image, weight, kw = case
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[len(image)]
    tolerance = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    groups = image[1]
    check_against_cpu(lambda x, w, b: conv(x.to(dtype), w.to(dtype), b.to(dtype), groups=groups, **kw),
                      image, weight, (weight[0],), **tolerance)
    strided = image[:-1] + (image[-1] * 2,)
    check_against_cpu(lambda x, w: conv(x[..., ::2].to(dtype), w.to(dtype), groups=groups, **kw), strided, weight,
                      **tolerance)
    empty = torch.empty((0,) + image[1:], device="ocl", requires_grad=True)
    w = torch.randn(weight, device="ocl", requires_grad=True)
    out = conv(empty, w, groups=groups, **kw)
    out.sum().backward()
    assert out.shape == conv(empty.detach().cpu(), w.detach().cpu(), groups=groups, **kw).shape
    assert torch.equal(w.grad.cpu(), torch.zeros(weight))
    check_against_cpu(lambda x, w: F.conv_transpose2d(x, w, groups=4, padding=1), (2, 4, 6, 6), (4, 1, 3, 3))


# A 1x1 convolution at unit stride without padding multiplies the image as it is (no im2col or
# col2im): groups, a channels-last input, a transposed one, and a strided one that keeps im2col.
@pytest.mark.parametrize("image", [(2, 8, 30, 30), (3, 6, 5, 7)])
def test_pointwise_conv(native_only, image):
    check_against_cpu(lambda x, w, b: F.conv2d(x, w, b), image, (5, image[1], 1, 1), (5,), rtol=1e-4, atol=1e-4)
    check_against_cpu(lambda x, w: F.conv2d(x, w, groups=2), image, (4, image[1] // 2, 1, 1), rtol=1e-4, atol=1e-4)
    check_against_cpu(lambda x, w: F.conv2d(x.contiguous(memory_format=torch.channels_last), w), image,
                      (5, image[1], 1, 1), rtol=1e-4, atol=1e-4)
    check_against_cpu(lambda x, w: F.conv_transpose2d(x, w), image, (image[1], 3, 1, 1), rtol=1e-4, atol=1e-4)
    check_against_cpu(lambda x, w: F.conv2d(x, w, stride=2), image, (5, image[1], 1, 1), rtol=1e-4, atol=1e-4)
    check_against_cpu(lambda x, w: F.conv1d(x, w), (2, 6, 700), (3, 6, 1), rtol=1e-4, atol=1e-4)


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


def test_window_geometries_forward_and_backward(native_only):
    # im2col and col2im split each row of windows into the part that hangs over the image and the
    # part inside it (cl/windows.cl): seeded kernel sizes, strides, dilations and paddings.
    rng = random.Random(0)
    for _ in range(40):
        k, s, d, p = ((rng.randint(1, lo_hi), rng.randint(1, lo_hi)) for lo_hi in (4, 3, 2, 3))
        p = (p[0] - 1, p[1] - 1)
        size = (rng.randint(k[0] * d[0], 13), rng.randint(k[1] * d[1], 13))
        x, w = torch.randn(2, 3, *size), torch.randn(4, 3, *k)
        expected = F.conv2d(x, w, stride=s, padding=p, dilation=d)
        g = torch.randn_like(expected)
        xo, wo = x.to("ocl").requires_grad_(), w.to("ocl").requires_grad_()
        got = F.conv2d(xo, wo, stride=s, padding=p, dilation=d)
        got.backward(g.to("ocl"))
        x.requires_grad_(), w.requires_grad_()
        F.conv2d(x, w, stride=s, padding=p, dilation=d).backward(g)
        for a, b in ((got, expected), (xo.grad, x.grad), (wo.grad, w.grad)):
            torch.testing.assert_close(a.cpu(), b.detach(), rtol=1e-4, atol=1e-4)
        columns = F.unfold(x.detach(), k, d, p, s)
        assert torch.equal(F.unfold(x.detach().to("ocl"), k, d, p, s).cpu(), columns)
        torch.testing.assert_close(F.fold(columns.to("ocl"), size, k, d, p, s).cpu(), F.fold(columns, size, k, d, p, s))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_padding_modes(native_only, mode):
    check_against_cpu(lambda x: F.pad(x, (2, 1), mode=mode), (2, 3, 5))
    check_against_cpu(lambda x: F.pad(x, (1, 2, 3, 0), mode=mode), (2, 3, 5, 4))
    check_against_cpu(lambda x: F.pad(x, (1, 1, 0, 2, 1, 0), mode=mode), (1, 2, 3, 4, 3))


def test_reflection_pad_rejects_padding_as_large_as_the_input():
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        F.pad(torch.randn(1, 2, 3, device="ocl"), (3, 0), mode="reflect")


@pytest.mark.parametrize("kw", [
    dict(scale_factor=2, mode="nearest"), dict(size=(7, 5), mode="nearest"), dict(size=(7, 5), mode="nearest-exact"),
    dict(scale_factor=1.7, mode="nearest"), dict(size=(9, 13), mode="bilinear"),
    dict(size=(9, 13), mode="bilinear", align_corners=True), dict(scale_factor=0.6, mode="bilinear"),
    dict(size=(3, 4), mode="bilinear"),
])
def test_upsample_2d(native_only, kw):
    check_against_cpu(lambda x: F.interpolate(x, **kw), (2, 3, 6, 8))


@pytest.mark.parametrize("mode,kw", [
    ("linear", dict(size=11)), ("linear", dict(scale_factor=2.5, align_corners=True)), ("nearest", dict(size=11)),
])
def test_upsample_1d(native_only, mode, kw):
    check_against_cpu(lambda x: F.interpolate(x, mode=mode, **kw), (2, 3, 6))


def test_upsample_3d(native_only):
    check_against_cpu(lambda x: F.interpolate(x, size=(3, 5, 4), mode="trilinear"), (1, 2, 2, 3, 4))
    check_against_cpu(lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), (1, 2, 2, 3, 4))


def test_upsample_half_precision_rounds_once(native_only):
    x = torch.randn(1, 2, 5, 5)
    for dtype in (torch.float16, torch.bfloat16):
        got = F.interpolate(x.to("ocl", dtype), size=(8, 9), mode="bilinear").cpu()
        torch.testing.assert_close(got, F.interpolate(x.to(dtype), size=(8, 9), mode="bilinear"))


@pytest.mark.parametrize("size", [(3, 3), (4, 5), (1, 1), (7, 6)])
def test_adaptive_max_pool2d(native_only, size):
    check_against_cpu(lambda x: F.adaptive_max_pool2d(x, size), (2, 3, 7, 6))
    x = torch.randn(2, 3, 7, 6)
    _, expected = F.adaptive_max_pool2d(x, size, return_indices=True)
    _, got = F.adaptive_max_pool2d(x.to("ocl"), size, return_indices=True)
    assert torch.equal(got.cpu(), expected)


def test_adaptive_max_pool1d(native_only):
    check_against_cpu(lambda x: F.adaptive_max_pool1d(x, 4), (2, 3, 10))


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_group_norm(native_only, groups):
    check_against_cpu(lambda x, w, b: F.group_norm(x, groups, w, b), (3, 4, 5, 2), (4,), (4,))
    check_against_cpu(lambda x: F.group_norm(x, groups), (2, 4, 7))


# Batch norm is one kernel each way for float32, float16 and bfloat16 (channels of N runs of the
# spatial size; GPUs' lanes cross the runs): 1-d to 3-d, a channel of many runs of one element,
# affine or not, training (running statistics updated) and evaluation, all gradients.
@pytest.mark.parametrize("shape,affine", [((8, 16, 12, 12), True), ((4, 3, 5), True), ((64, 7), True),
                                          ((2, 5, 3, 4, 6), False), ((3, 300, 2, 2), True)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(native_only, shape, affine, dtype, training):
    g = torch.Generator().manual_seed(0)
    channels = shape[1]
    x = (torch.randn(shape, generator=g) * 3 + 1).to(dtype)
    params = [torch.randn(channels, generator=g).to(dtype) for _ in range(2)] if affine else []
    upstream = torch.randn(shape, generator=g).to(dtype)
    results = {}
    for device in ("cpu", "ocl"):
        inputs = [t.to(device).requires_grad_() for t in [x, *params]]
        running = [torch.linspace(-1, 1, channels, dtype=dtype, device=device),
                   torch.linspace(0.5, 2, channels, dtype=dtype, device=device)]
        y = F.batch_norm(inputs[0], *running, *(inputs[1:] or [None, None]), training=training, momentum=0.3)
        grads = torch.autograd.grad(y, inputs, upstream.to(device))
        results[device] = [t.cpu().float() for t in [y, *grads, *running]]
    tolerance = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)
    for got, expected in zip(results["ocl"], results["cpu"], strict=True):
        torch.testing.assert_close(got, expected, **tolerance)


def test_addbmm(native_only):
    check_against_cpu(lambda s, a, b: torch.addbmm(s, a, b, beta=0.5, alpha=2), (3, 5), (4, 3, 6), (4, 6, 5),
                      rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag(native_only, mode, padding_idx):
    indices = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 2, 2])
    offsets = torch.tensor([0, 4, 4, 8])  # the second bag is empty; the last holds only padding (when set)
    check_against_cpu(lambda w: F.embedding_bag(indices.to(w.device), w, offsets.to(w.device), mode=mode,
                                                padding_idx=padding_idx), (10, 3))
    closed = torch.tensor([0, 4, 4, 8, 10])  # include_last_offset: the last offset is len(indices)
    check_against_cpu(lambda w: F.embedding_bag(indices.to(w.device), w, closed.to(w.device), mode=mode,
                                                include_last_offset=True), (10, 3))


def test_embedding_bag_per_sample_weights_and_2d_input(native_only):
    indices = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    check_against_cpu(lambda w, p: F.embedding_bag(indices.to(w.device), w, torch.tensor([0, 3]).to(w.device),
                                                   per_sample_weights=p, mode="sum"), (10, 3), (8,))
    check_against_cpu(lambda w: F.embedding_bag(indices.view(2, 4).to(w.device), w, mode="mean"), (10, 3))


def test_embedding_bag_scale_grad_by_freq_divides_by_each_index_count(native_only):
    # The documented rule (CUDA's): each index's gradient is divided by how often it occurs in the
    # batch. (The CPU kernel of torch 2.13 scales some positions by another index's count.)
    indices = torch.tensor([[1, 2, 4, 5], [4, 3, 2, 9]], device="ocl")
    w = torch.randn(10, 3, device="ocl", requires_grad=True)
    F.embedding_bag(indices, w, mode="mean", scale_grad_by_freq=True).sum().backward()
    expected = torch.zeros(10)
    expected[[1, 5, 3, 9]] = 0.25
    expected[[2, 4]] = 0.25  # twice, each 0.25 / 2
    torch.testing.assert_close(w.grad[:, 0].cpu(), expected)


def test_embedding_max_norm_renormalises_in_place(native_only):
    weight = torch.randn(10, 4) * 3
    indices = torch.tensor([[1, 2, 2], [7, 1, 0]])
    on_ocl = weight.to("ocl")
    got = F.embedding(indices.to("ocl"), on_ocl, max_norm=1.5)
    expected = F.embedding(indices, weight, max_norm=1.5)
    torch.testing.assert_close(got.cpu(), expected)
    torch.testing.assert_close(on_ocl.cpu(), weight)  # the CPU's weight was renormalised in place too


@pytest.mark.parametrize("p,reduction", [(1, "mean"), (2, "sum"), (1, "none")])
def test_multi_margin_loss(native_only, p, reduction):
    target = torch.tensor([1, 0, 4, 4])
    weight = torch.rand(5) + 0.5
    check_against_cpu(lambda x: F.multi_margin_loss(x, target.to(x.device), p=p, margin=0.7,
                                                    weight=weight.to(x.device), reduction=reduction), (4, 5))
    check_against_cpu(lambda x: F.multi_margin_loss(x, target[:1].to(x.device), reduction=reduction), (1, 5))


BAD_INPUTS = {
    "mm": lambda d: torch.randn(3, 4, device=d) @ torch.randn(5, 6, device=d),
    "bmm": lambda d: torch.bmm(torch.randn(2, 3, 4, device=d), torch.randn(3, 4, 5, device=d)),
    "linear": lambda d: F.linear(torch.randn(3, 4, device=d), torch.randn(5, 6, device=d)),
    "conv_channels": lambda d: F.conv2d(torch.randn(1, 3, 8, 8, device=d), torch.randn(4, 2, 3, 3, device=d)),
    "conv_kernel_too_big": lambda d: F.conv2d(torch.randn(1, 3, 2, 2, device=d), torch.randn(4, 3, 3, 3, device=d)),
    "cross_entropy_batch": lambda d: F.cross_entropy(torch.randn(4, 5, device=d), torch.zeros(3, dtype=torch.long,
                                                                                           device=d)),
    "nll_target_dtype": lambda d: F.nll_loss(torch.randn(4, 5, device=d), torch.zeros(4, device=d)),
    "mse_shapes": lambda d: F.mse_loss(torch.randn(4, 5, device=d), torch.randn(3, 5, device=d)),
    "sdpa_head_dims": lambda d: F.scaled_dot_product_attention(
        torch.randn(2, 2, 3, 4, device=d), torch.randn(2, 2, 3, 5, device=d), torch.randn(2, 2, 3, 4, device=d)),
}


@pytest.mark.filterwarnings("ignore:Using a target size")
@pytest.mark.parametrize("name", BAD_INPUTS)
def test_bad_input_raises_what_the_cpu_raises(name):
    with pytest.raises(Exception) as on_cpu:
        BAD_INPUTS[name]("cpu")
    with pytest.raises(type(on_cpu.value)) as on_ocl:
        BAD_INPUTS[name]("ocl")
    assert str(on_ocl.value).split("\n")[0] == str(on_cpu.value).split("\n")[0]


@pytest.mark.parametrize("loss", [F.cross_entropy, F.nll_loss])
def test_out_of_range_class_raises_and_corrupts_nothing(loss):
    logits = torch.randn(4, 5, device="ocl")
    before = logits.cpu()
    with pytest.raises(IndexError):
        loss(logits, torch.tensor([0, 1, 7, -3], device="ocl")).item()
    assert torch.equal(logits.cpu(), before)
    assert loss(logits, torch.tensor([0, 1, 4, 3], device="ocl")).isfinite().item()  # still usable


def test_rrelu(native_only):
    """Evaluation: leaky_relu at the mean slope, as on the CPU. Training: every negative element's
    slope drawn on the device from U(lower, upper), reproducible under manual_seed, and the
    gradient is the slope (1 for the rest)."""
    check_against_cpu(lambda x: F.rrelu(x, 0.1, 0.3, training=False), (4, 50))
    x = torch.randn(20000).to("ocl").requires_grad_()
    torch.manual_seed(3)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    negative = (x < 0).detach()
    slopes = (y / x)[negative].detach().cpu()
    assert 0.1 <= slopes.min() and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.005
    assert slopes.std() > 0.05  # drawn, not one value
    assert torch.equal(y[~negative].detach().cpu(), x[~negative].detach().cpu())
    y.sum().backward()
    torch.testing.assert_close(x.grad[negative].cpu(), slopes)
    assert bool((x.grad[~negative] == 1).all())
    torch.manual_seed(3)
    torch.testing.assert_close(F.rrelu(x.detach(), 0.1, 0.3, training=True), y.detach())
    with pytest.raises(RuntimeError, match="noise tensor shape must match"):
        torch.ops.aten.rrelu_with_noise(x.detach(), torch.empty(3, device="ocl"), 0.1, 0.3, True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("spatial", [2, 3])
def test_fractional_max_pool_matches_cpu(native_only, spatial, dtype):
    """Given the same samples, the CPU's windows (computed in the dtype, as the CPU does), values
    and indices exactly, including NaN; the gradient through the indices, and the CPU's error for
    a pool too large."""
    g = torch.Generator().manual_seed(0)
    image = (2, 3, 17, 13) if spatial == 2 else (2, 3, 9, 11, 7)
    x = torch.randn(image, generator=g).to(dtype)
    x.view(-1)[5] = float("nan")
    samples = torch.rand(2, 3, spatial, generator=g).to(dtype)
    pool = F.fractional_max_pool2d if spatial == 2 else F.fractional_max_pool3d
    kernel, out = (3,) * spatial, (7, 5) if spatial == 2 else (4, 5, 3)
    for size in (dict(output_size=out), dict(output_size=(1,) * spatial), dict(output_ratio=(0.5,) * spatial)):
        expected = pool(x, kernel, return_indices=True, _random_samples=samples, **size)
        xo = x.to("ocl").requires_grad_(dtype == torch.float32)
        got = pool(xo, kernel, return_indices=True, _random_samples=samples.to("ocl"), **size)
        torch.testing.assert_close(got[0].detach().cpu(), expected[0], rtol=0, atol=0, equal_nan=True)
        assert torch.equal(got[1].cpu(), expected[1])
    check_against_cpu(lambda t: pool(t, kernel, output_size=out, _random_samples=samples.float().to(t.device)), image)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        pool(x.to("ocl"), kernel, output_size=out, _random_samples=samples)
    with pytest.raises(RuntimeError, match="too large relative to input"):
        pool(x.to("ocl"), (20,) * spatial, output_size=out, _random_samples=samples.to("ocl"))
