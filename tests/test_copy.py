"""Copies and views for every dtype, in every direction, compared bit for bit with the CPU."""
import pytest
import torch

from conftest import device_dtypes

DTYPES = device_dtypes()
BITS = {torch.float32: torch.int32, torch.float64: torch.int64, torch.float16: torch.int16, torch.bfloat16: torch.int16}


def sample(dtype, shape=(6, 10), seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype is torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        x = (torch.randn(shape, generator=g) * 100).to(dtype)
        flat = x.view(-1)
        specials = [float("inf"), float("-inf"), float("nan"), -0.0, 1e-30, 65504.0, -3.0e38]
        n = min(len(specials), flat.numel())
        flat[:n] = torch.tensor(specials[:n]).to(dtype)
        return x
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(dtype)


def assert_bits_equal(actual, expected):
    assert actual.device.type == "cpu"
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if expected.dtype in BITS:
        assert torch.equal(actual.contiguous().view(BITS[expected.dtype]), expected.contiguous().view(BITS[expected.dtype]))
    else:
        assert torch.equal(actual, expected)


def views(t):
    """Non-contiguous views a user makes every day."""
    return {
        "transpose": lambda x: x.t(),
        "permute": lambda x: x.unsqueeze(0).permute(2, 0, 1),
        "step": lambda x: x[::2, 1::3],
        "expand": lambda x: x[:, :1].expand(6, 5),
        "narrow": lambda x: x.narrow(1, 2, 5),
        "as_strided": lambda x: x.as_strided((3, 4), (7, 2), 3),
        "diagonal": lambda x: x.diagonal(),
        "unfold": lambda x: x.unfold(1, 3, 2),
    }


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_roundtrip_is_bit_exact(dtype):
    x = sample(dtype)
    y = x.to("ocl")
    assert y.device.type == "ocl" and y.dtype == dtype
    assert_bits_equal(y.cpu(), x)
    assert_bits_equal(y.clone().cpu(), x)  # ocl -> ocl


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("view", list(views(None)))
def test_non_contiguous_sources(dtype, view):
    x = sample(dtype)
    make = views(x)[view]
    assert_bits_equal(make(x).to("ocl").cpu(), make(x))  # CPU view -> ocl
    assert_bits_equal(make(x.to("ocl")).cpu(), make(x))  # ocl view -> CPU
    assert_bits_equal(make(x.to("ocl")).contiguous().cpu(), make(x).contiguous())  # ocl view -> ocl


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("view", ["transpose", "step", "narrow", "diagonal", "permute"])
def test_non_contiguous_destinations(dtype, view):
    x = sample(dtype, seed=1)
    src = sample(dtype, seed=2)
    make = views(x)[view]
    expected = x.clone()
    make(expected).copy_(make(src))
    from_cpu = x.to("ocl")
    make(from_cpu).copy_(make(src))
    assert_bits_equal(from_cpu.cpu(), expected)
    from_ocl = x.to("ocl")
    make(from_ocl).copy_(make(src.to("ocl")))
    assert_bits_equal(from_ocl.cpu(), expected)
    into_cpu = x.clone()
    make(into_cpu).copy_(make(src.to("ocl")))
    assert_bits_equal(into_cpu, expected)


def convertible(value_dtype, target):
    # Float -> integer conversion is undefined in C++ outside the target's range, so keep values
    # small when the target is an integer type.
    return sample(value_dtype) if target.is_floating_point else (sample(torch.float32) / 10).clamp(-100, 100).to(value_dtype)


@pytest.mark.parametrize("src", DTYPES, ids=str)
@pytest.mark.parametrize("dst", DTYPES, ids=str)
def test_dtype_conversion_matches_cpu(src, dst):
    x = convertible(src, dst)
    expected = x.to(dst)
    on_device = x.to("ocl").to(dst)  # converted by an ocl kernel
    assert on_device.dtype == dst
    torch.testing.assert_close(on_device.cpu(), expected, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(x.to("ocl", dst).cpu(), expected, rtol=0, atol=0, equal_nan=True)
    strided = x.to("ocl").t().to(dst)
    torch.testing.assert_close(strided.cpu(), expected.t(), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_factories_and_fill(dtype):
    value = True if dtype is torch.bool else 3.7 if dtype.is_floating_point else 7
    for make in (
        lambda d: torch.zeros(3, 5, dtype=dtype, device=d),
        lambda d: torch.ones(4, dtype=dtype, device=d),
        lambda d: torch.full((2, 3), value, dtype=dtype, device=d),
        lambda d: torch.zeros_like(torch.empty(2, 2, dtype=dtype, device=d)),
    ):
        assert_bits_equal(make("ocl").cpu(), make("cpu"))
    e = torch.empty(5, 7, dtype=dtype, device="ocl")
    assert e.shape == (5, 7) and e.dtype == dtype and e.device.type == "ocl"
    s = torch.empty_strided((3, 4), (1, 3), dtype=dtype, device="ocl")
    assert s.stride() == (1, 3)
    x = sample(dtype)
    d = x.to("ocl")
    d.t().fill_(value)
    assert_bits_equal(d.cpu(), x.clone().fill_(value))
    d[::2].zero_()
    expected = x.clone().fill_(value)
    expected[::2].zero_()
    assert_bits_equal(d.cpu(), expected)


def test_fill_rounds_like_cpu():
    for dtype in (torch.float16, torch.bfloat16):
        for value in (0.1, 1 / 3, 65500.0, 1e-8, -2.5e38 if dtype is torch.bfloat16 else -65504.0):
            assert_bits_equal(torch.full((3,), value, dtype=dtype, device="ocl").cpu(), torch.full((3,), value, dtype=dtype))
    for device in ("cpu", "ocl"):
        with pytest.raises(RuntimeError, match="overflow"):
            torch.full((3,), -70000.0, dtype=torch.float16, device=device)
        with pytest.raises(RuntimeError, match="overflow"):
            torch.zeros(3, dtype=torch.float16, device=device).fill_(1e6)
    t = torch.zeros(4, device="ocl")
    t.fill_(torch.tensor(2.5, device="ocl"))
    assert t.cpu().tolist() == [2.5] * 4


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_item(dtype):
    x = sample(dtype, shape=(4,))
    d = x.to("ocl")
    for i in range(4):
        a, b = d[i].item(), x[i].item()
        assert a == b or (a != a and b != b)


def test_resize_and_set():
    x = torch.arange(6.0, device="ocl")
    x.resize_(2, 3)
    assert x.shape == (2, 3) and x.cpu().tolist() == [[0, 1, 2], [3, 4, 5]]
    x.resize_(4, 4)  # grows the storage, keeps the data
    assert x.shape == (4, 4) and x.view(-1)[:6].cpu().tolist() == [0, 1, 2, 3, 4, 5]
    x.resize_(2)
    assert x.cpu().tolist() == [0, 1]
    y = torch.empty(0, device="ocl")
    y.set_(x.untyped_storage(), 0, (3,), (1,))
    assert y.data_ptr() == x.data_ptr() and y.cpu().tolist() == [0, 1, 2]
    z = torch.empty(0, device="ocl").set_(x)
    assert z.data_ptr() == x.data_ptr() and z.shape == x.shape
    w = torch.empty(3, device="ocl").set_()
    assert w.numel() == 0
    s = torch.ones(5, device="ocl")
    s.untyped_storage().resize_(40)
    assert s.untyped_storage().nbytes() == 40 and s.cpu().tolist() == [1] * 5


def test_print():
    text = str(torch.arange(4, device="ocl"))
    assert "device='ocl:0'" in text and "0, 1, 2, 3" in text


def test_pinned_non_blocking_copies_overlap_host_work():
    n = 32 << 20  # 128 MiB of float32: long enough that the copy is still running when we look
    host = torch.arange(n, dtype=torch.float32).pin_memory()
    assert host.is_pinned()
    dev = host.to("ocl", non_blocking=True)
    back = torch.empty(n, dtype=torch.float32).pin_memory()
    back.copy_(dev, non_blocking=True)
    done = torch.ocl.Event()
    done.record()
    queued = done.query()  # returned to the host before the device finished
    done.synchronize()
    assert not queued
    assert torch.equal(back, host)


def test_copy_shape_mismatch_raises_like_cpu():
    with pytest.raises(RuntimeError):
        torch.ones(2, device="ocl").copy_(torch.ones(3, device="ocl"))
    with pytest.raises(RuntimeError, match="must match"):
        torch.ones(2).copy_(torch.ones(3))


def test_conjugate_and_negative_views_copy_their_values():
    # Copies move raw storage; the lazy conj/neg bits must still reach the values, in every direction.
    z = torch.randn(4, 3, dtype=torch.cfloat)
    d = z.to("ocl")
    expected = z.conj().resolve_conj()
    assert torch.equal(d.conj().cpu(), expected)  # device -> host
    assert torch.equal(d.conj().clone().cpu(), expected)  # on the device
    assert torch.equal(z.conj().to("ocl").cpu(), expected)  # host -> device
    imag = d.conj().imag  # a float32 view with the negative bit
    assert imag.is_neg()
    assert torch.equal(imag.clone().cpu(), -z.imag)
    assert torch.equal((imag * 2).cpu(), -2 * z.imag)
    pairs = torch.view_as_real(d)  # a view, not a copy: writes reach d
    pairs[..., 1].zero_()
    assert torch.equal(d.cpu(), torch.complex(z.real, torch.zeros_like(z.real)))
    into_conj = torch.zeros(4, 3, dtype=torch.cfloat, device="ocl").conj()
    into_conj.copy_(d)  # the destination carries the bit
    assert torch.equal(into_conj.resolve_conj().cpu(), d.cpu())


def test_copy_onto_a_view_of_the_same_elements_is_a_no_op():
    # load_state_dict(model.state_dict()) copies each parameter onto an alias of itself
    a = torch.randn(4, 3).to("ocl")
    want = a.cpu()
    a.view(4, 3).copy_(a)
    a.t().t().copy_(a.view(12).view(4, 3))
    assert torch.equal(a.cpu(), want)


def test_copy_between_partly_overlapping_views_raises_as_on_cpu():
    for device in ("cpu", "ocl"):
        a = torch.arange(8.0).to(device)
        with pytest.raises(RuntimeError, match="single memory location"):
            a[1:].copy_(a[:-1])
