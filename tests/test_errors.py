"""Bad input raises what the CPU raises, of the same exception type, and the process stays usable.

Index and divisor checks that need the data run on the device and are raised at the next
synchronization (here, the .cpu() of the result), as CUDA's device-side asserts are.
"""
import pytest
import torch


def outcome(fn, device):
    """('ok', result on the CPU) or (exception type, message)."""
    try:
        result = fn(device)
        return "ok", result.cpu() if isinstance(result, torch.Tensor) else result
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e), str(e)


def ints(values, device):
    return torch.tensor(values, device=device)


BAD_INPUTS = {
    # Division and remainder of integers by zero: RuntimeError "ZeroDivisionError" on the CPU.
    "floor_divide": lambda d: ints([2, 3], d) // ints([0, 1], d),
    "floor_divide_scalar": lambda d: ints([2, 3], d) // 0,
    "div_trunc": lambda d: torch.div(ints([2, 3], d), ints([1, 0], d), rounding_mode="trunc"),
    "div_floor": lambda d: torch.div(ints([2, 3], d), ints([1, 0], d), rounding_mode="floor"),
    "remainder": lambda d: torch.remainder(ints([2, 3], d), ints([0, 1], d)),
    "fmod": lambda d: torch.fmod(ints([2, 3], d), ints([0, 1], d)),
    "remainder_int8": lambda d: torch.remainder(ints([2, 3], d).to(torch.int8), 0),
    # Integers to negative integer powers: RuntimeError for a scalar exponent.
    "pow_negative_scalar": lambda d: torch.pow(ints([2, 3], d), -1),
    "pow_negative_scalar_": lambda d: ints([2, 3], d).pow_(-2),
    # Out-of-range indices: RuntimeError for gather/scatter and their relatives...
    "gather": lambda d: torch.gather(torch.zeros(3, device=d), 0, ints([5], d)),
    "gather_negative": lambda d: torch.gather(torch.zeros(2, 3, device=d), 1, ints([[-1], [0]], d)),
    "scatter": lambda d: torch.zeros(3, device=d).scatter_(0, ints([5], d), 1.0),
    "scatter_src": lambda d: torch.zeros(3, device=d).scatter(0, ints([0, 3], d), torch.ones(2, device=d)),
    "scatter_add": lambda d: torch.zeros(3, device=d).scatter_add_(0, ints([5], d), torch.ones(1, device=d)),
    "scatter_reduce": lambda d: torch.zeros(3, device=d).scatter_reduce_(0, ints([5], d), torch.ones(1, device=d),
                                                                        "amax"),
    "take_along_dim": lambda d: torch.take_along_dim(torch.zeros(3, device=d), ints([5], d)),
    "one_hot": lambda d: torch.nn.functional.one_hot(ints([5], d), 3),
    # ... and IndexError for the index_* ops, take/put, advanced indexing, embedding and losses.
    "index_select": lambda d: torch.zeros(3, device=d).index_select(0, ints([5], d)),
    "index_add": lambda d: torch.zeros(3, device=d).index_add_(0, ints([5], d), torch.ones(1, device=d)),
    "index_copy": lambda d: torch.zeros(3, device=d).index_copy_(0, ints([5], d), torch.ones(1, device=d)),
    "index_fill": lambda d: torch.zeros(3, device=d).index_fill_(0, ints([5], d), 1.0),
    "take": lambda d: torch.take(torch.zeros(3, device=d), ints([5], d)),
    "put": lambda d: torch.zeros(3, device=d).put_(ints([5], d), torch.ones(1, device=d)),
    "advanced_index": lambda d: torch.zeros(3, device=d)[ints([5], d)],
    "index_put": lambda d: torch.zeros(3, device=d).index_put_((ints([5], d),), torch.tensor(1.0, device=d)),
    "embedding": lambda d: torch.nn.functional.embedding(ints([5], d), torch.zeros(3, 2, device=d)),
    "cross_entropy": lambda d: torch.nn.functional.cross_entropy(torch.zeros(2, 3, device=d), ints([5, 1], d)),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_raises_the_cpu_exception_type(name):
    fn = BAD_INPUTS[name]
    cpu_kind, cpu_detail = outcome(fn, "cpu")
    assert cpu_kind != "ok", f"{name}: the CPU accepts this input; the case is wrong"
    ocl_kind, ocl_detail = outcome(fn, "ocl")
    assert ocl_kind is cpu_kind, f"{name}: ocl raised {ocl_kind} ({ocl_detail!r}), the CPU {cpu_kind} ({cpu_detail!r})"
    for phrase in ("ZeroDivisionError", "negative integer powers"):
        if phrase in cpu_detail:
            assert phrase in ocl_detail, f"{name}: {ocl_detail!r}"
    # The error is consumed: the device keeps working and raises nothing later.
    assert torch.arange(4, device="ocl").sum().item() == 6
    torch.ocl.synchronize()


def test_integer_division_without_zero_divisors_matches_the_cpu():
    a = torch.tensor([7, -7, 7, -7, 0, 5], dtype=torch.int64)
    b = torch.tensor([2, 2, -2, -2, 3, 1], dtype=torch.int64)
    for op in (torch.floor_divide, torch.remainder, torch.fmod,
               lambda x, y: torch.div(x, y, rounding_mode="trunc")):
        assert torch.equal(op(a.to("ocl"), b.to("ocl")).cpu(), op(a, b))


def test_integer_pow_with_negative_tensor_exponents_matches_the_cpu():
    # The CPU accepts a tensor of negative exponents (1, -1 and 0 results); so must ocl.
    base = torch.tensor([2, 1, -1, -1, 3, 0], dtype=torch.int64)
    exponent = torch.tensor([-1, -3, -3, -2, 2, 4], dtype=torch.int64)
    assert torch.equal(torch.pow(base.to("ocl"), exponent.to("ocl")).cpu(), torch.pow(base, exponent))


def test_complex_backward_ops_take_the_fallback():
    # Complex activations differentiate through tanh_backward/sigmoid_backward with complex
    # operands: they run on the CPU like the forward ops, never NotImplementedError.
    z = torch.tensor([0.5 + 0.25j, -1.0 + 2.0j], dtype=torch.complex64)
    for fn in (torch.tanh, torch.sigmoid):
        expected_leaf = z.clone().requires_grad_()
        fn(expected_leaf).abs().sum().backward()
        leaf = z.to("ocl").requires_grad_()
        fn(leaf).abs().sum().backward()
        torch.testing.assert_close(leaf.grad.cpu(), expected_leaf.grad)
