"""torch.segment_reduce on ocl against the CPU: every reduction, lengths and offsets (1-d, and
batched for an inner axis), axis 0 and 1 of a 3-d input, empty segments with and without initial,
unsafe=True, gradients (ties for max/min, zeros for prod) and bad input. The kernels follow the
CPU's arithmetic step by step (float16/bfloat16 round after every step, as c10::Half does), so
results are compared exactly."""
import pytest
import torch

from conftest import supports_fp64

pytestmark = pytest.mark.usefixtures("native_only")

REDUCTIONS = ["sum", "mean", "max", "min", "prod"]
DTYPES = [torch.float32, torch.float16, torch.bfloat16] + ([torch.float64] if supports_fp64() else [])


def exact(actual, expected):
    assert actual.device.type == "ocl"
    torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=0, equal_nan=True)


def to_offsets(lengths):
    zeros = lengths.new_zeros(lengths.shape[:-1] + (1,))
    return torch.cat((zeros, lengths), -1).cumsum(-1)


def bounds(mode, lengths):
    return {"lengths": lengths} if mode == "lengths" else {"offsets": to_offsets(lengths)}


def on_ocl(kwargs):
    return {k: v.to("ocl") if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}


# (data shape, axis, lengths): empty segments first, last and between; for axis 1 one row of
# lengths per position before the axis.
CASES = [
    ((7, 3, 2), 0, torch.tensor([0, 2, 0, 4, 1, 0])),
    ((3, 7, 2), 1, torch.tensor([[0, 2, 0, 4, 1], [7, 0, 0, 0, 0], [1, 1, 1, 1, 3]])),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("initial", [None, 2.5])
@pytest.mark.parametrize("mode", ["lengths", "offsets"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=["axis0", "axis1"])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_forward_matches_cpu(reduce, case, mode, initial, dtype):
    shape, axis, lengths = CASES[case]
    data = torch.randn(shape).to(dtype)
    kwargs = dict(bounds(mode, lengths), axis=axis, initial=initial)
    expected = torch.segment_reduce(data, reduce, **kwargs)
    exact(torch.segment_reduce(data.to("ocl"), reduce, **on_ocl(kwargs)), expected)


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_empty_segments(reduce):
    # Without initial: 0 for sum, NaN for mean, -inf / +inf for max / min, 1 for prod.
    data = torch.arange(1.0, 5.0)
    lengths = torch.tensor([0, 4, 0])
    for initial in (None, -3.0):
        expected = torch.segment_reduce(data, reduce, lengths=lengths, initial=initial)
        actual = torch.segment_reduce(data.to("ocl"), reduce, lengths=lengths.to("ocl"), initial=initial)
        exact(actual, expected)
    # Data with nothing along the axis (no buffer behind it): every segment is empty.
    nothing = torch.zeros(0, 3)
    for initial in (None, 2.0):
        expected = torch.segment_reduce(nothing, reduce, lengths=torch.tensor([0, 0]), initial=initial)
        exact(torch.segment_reduce(nothing.to("ocl"), reduce, lengths=torch.tensor([0, 0], device="ocl"),
                                   initial=initial), expected)
    empty = torch.segment_reduce(data.to("ocl"), reduce, lengths=lengths.to("ocl"))[0].item()
    identity = {"sum": 0.0, "mean": float("nan"), "max": float("-inf"), "min": float("inf"), "prod": 1.0}[reduce]
    assert empty == identity or (empty != empty and identity != identity)


@pytest.mark.parametrize("mode", ["lengths", "offsets"])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_unsafe_and_int32_bounds(reduce, mode):
    # Segments that cover only part of the axis (unsafe skips the sum check), int32 lengths.
    data = torch.randn(10, 4)
    lengths = torch.tensor([1, 2, 0, 6, 0], dtype=torch.int32)
    kwargs = dict(bounds(mode, lengths), unsafe=True)
    exact(torch.segment_reduce(data.to("ocl"), reduce, **on_ocl(kwargs)), torch.segment_reduce(data, reduce, **kwargs))


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_strided_data_and_out(reduce):
    data = torch.randn(4, 9, 5).transpose(0, 1)[:, ::2]  # (9, 2, 5), no dense layout
    lengths = torch.tensor([3, 0, 6])
    expected = torch.segment_reduce(data, reduce, lengths=lengths)
    ocl = data.to("ocl")
    assert not ocl.is_contiguous()
    exact(torch.segment_reduce(ocl, reduce, lengths=lengths.to("ocl")), expected)
    out = torch.empty(0, device="ocl")
    torch.ops.aten.segment_reduce.out(ocl, reduce, lengths=lengths.to("ocl"), out=out)
    exact(out, expected)


def grads(device, data, reduce, upstream, kwargs):
    leaf = data.detach().to(device, copy=True).requires_grad_()
    out = torch.segment_reduce(leaf, reduce, **{k: v.to(device) if isinstance(v, torch.Tensor) else v
                                               for k, v in kwargs.items()})
    out.backward(upstream.to(device))
    return out, leaf.grad


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("mode", ["lengths", "offsets"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=["axis0", "axis1"])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_gradients_match_cpu(reduce, case, mode, dtype):
    shape, axis, lengths = CASES[case]
    # Few distinct values: ties for max/min, zeros (single and repeated) for prod.
    data = torch.randint(-2, 3, shape).to(dtype)
    kwargs = dict(bounds(mode, lengths), axis=axis, initial=None if reduce != "prod" else 1.5)
    shape_out = torch.segment_reduce(data, reduce, **kwargs).shape
    upstream = torch.randn(shape_out).to(dtype)  # negative gradients are not split among ties
    expected_out, expected = grads("cpu", data, reduce, upstream, kwargs)
    actual_out, actual = grads("ocl", data, reduce, upstream, kwargs)
    exact(actual_out.detach(), expected_out.detach())
    exact(actual, expected)


def test_max_ties_and_nan_gradient():
    data = torch.tensor([1.0, 3.0, 3.0, 3.0, float("nan"), 2.0, float("nan"), 0.0, 0.0])
    lengths = torch.tensor([4, 3, 2])
    for reduce in ("max", "min", "prod"):
        upstream = torch.tensor([2.0, -1.0, 3.0])
        _, expected = grads("cpu", data, reduce, upstream, {"lengths": lengths})
        _, actual = grads("ocl", data, reduce, upstream, {"lengths": lengths})
        exact(actual, expected)


def test_bad_input_raises_the_cpu_exception():
    data = torch.randn(6)
    cases = [
        ("sum", {"lengths": torch.tensor([2, 3])}),  # lengths do not sum to the axis
        ("sum", {"lengths": torch.tensor([-1, 7])}),  # negative length
        ("median", {"lengths": torch.tensor([2, 4])}),  # unknown reduction
        ("sum", {}),  # neither lengths nor offsets
        ("sum", {"lengths": torch.tensor([2, 4]), "axis": 1}),  # axis out of range: IndexError
        ("sum", {"lengths": torch.tensor([[2, 4]])}),  # lengths of more dims than data
        ("sum", {"lengths": torch.tensor([2.0, 4.0])}),  # float lengths: NotImplementedError
    ]
    for reduce, kwargs in cases:
        with pytest.raises(Exception) as cpu:
            torch.segment_reduce(data, reduce, **kwargs)
        with pytest.raises(cpu.type):
            torch.segment_reduce(data.to("ocl"), reduce, **on_ocl(kwargs))
    with pytest.raises(NotImplementedError):
        torch.segment_reduce(data.to("ocl").int(), "sum", lengths=torch.tensor([2, 4], device="ocl"))
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.segment_reduce(data.to("ocl").half(), "max", lengths=torch.tensor([2, 4], device="ocl"), initial=1e6)


def test_segment_outside_data_is_a_device_assert():
    # The CPU checks segment_length >= 0 in its kernel (RuntimeError) and, for offsets past the
    # data, reads outside its buffer; ocl raises RuntimeError at the next synchronization.
    data = torch.randn(6, device="ocl")
    for kwargs in ({"offsets": torch.tensor([0, 4, 2, 6])}, {"offsets": torch.tensor([0, 3, 9])},
                   {"lengths": torch.tensor([-1, 7]), "unsafe": True}):
        with pytest.raises(RuntimeError):
            torch.segment_reduce(data, "sum", **on_ocl(kwargs))
            torch.ocl.synchronize()
    torch.ocl.synchronize()  # the flag was cleared
