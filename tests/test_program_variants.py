"""Launches that differ only in what need not be compiled in share one OpenCL program: a cold run
builds fewer programs (docs/design.md, "Program variants"). Each case also checks the shared
program's results against the CPU."""
import pytest
import torch

import drawbridge


def programs_built(fn):
    """How many programs fn built (from source or the driver's cache) beyond those this process had."""
    before = drawbridge._C._program_cache_stats()["builds"]
    result = fn()
    torch.ocl.synchronize()
    return drawbridge._C._program_cache_stats()["builds"] - before, result


def operands(dtype, shape):
    cpu = (torch.arange(torch.Size(shape).numel()) % 7 - 3).reshape(shape).to(dtype)
    return cpu, cpu.to("ocl")


def assert_one_program_serves(ops, first, others):
    """ops(x, y) on `first`'s device operands builds what it needs; on each of `others`' it builds
    nothing more and gives the CPU's dtypes and values. Each is (x_cpu, y_cpu, x, y)."""
    programs_built(lambda: ops(first[2], first[3]))
    built, results = programs_built(lambda: [ops(x, y) for _, _, x, y in others])
    assert built == 0
    for (x_cpu, y_cpu, _, _), result in zip(others, results):
        for got, want in zip(result, ops(x_cpu, y_cpu)):
            assert got.dtype == want.dtype
            torch.testing.assert_close(got.cpu(), want)


# Dtypes a float32 tensor meets in float32 arithmetic (float64 would make it compute in float64).
MIXED = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool, torch.float16, torch.bfloat16]


def test_one_program_serves_every_mix_of_input_dtypes():
    a_cpu, a = operands(torch.float32, (33, 17))
    others = [operands(t, (33, 17)) for t in MIXED]

    def ops(b):  # the mixed operand second and first: one program each
        return a * b, b + a, torch.maximum(b, a)

    programs_built(lambda: ops(others[0][1]))
    built, results = programs_built(lambda: [ops(b) for _, b in others[1:]])
    assert built == 0
    for (b_cpu, _), (prod, total, high) in zip(others[1:], results):
        torch.testing.assert_close(prod.cpu(), a_cpu * b_cpu)
        torch.testing.assert_close(total.cpu(), b_cpu + a_cpu)
        torch.testing.assert_close(high.cpu(), torch.maximum(b_cpu, a_cpu))


def test_mixed_integer_inputs_keep_the_cpus_conversions():
    # int8 * int64: the int8 operand is read at run time and widened before the product, as on the CPU.
    a_cpu = torch.tensor([-128, 127, -1, 5], dtype=torch.int8)
    b_cpu = torch.tensor([2**40, -(2**35), 3, 2**62], dtype=torch.int64)
    torch.testing.assert_close((a_cpu.to("ocl") * b_cpu.to("ocl")).cpu(), a_cpu * b_cpu)
    c_cpu = torch.tensor([True, False, True, True])
    torch.testing.assert_close((c_cpu.to("ocl") + a_cpu.to("ocl")).cpu(), c_cpu + a_cpu)


def test_a_single_element_shares_the_dense_program():
    x_cpu, x = operands(torch.float32, (64,))
    programs_built(lambda: x * x)
    s_cpu, s = operands(torch.float32, ())
    one_cpu, one = operands(torch.float32, (1, 1))
    built, (ss, oo) = programs_built(lambda: (s * s, one * one))
    assert built == 0
    torch.testing.assert_close(ss.cpu(), s_cpu * s_cpu)
    torch.testing.assert_close(oo.cpu(), one_cpu * one_cpu)


def test_a_cpu_scalars_own_dtype_selects_no_program():
    # a Python float is a double, an int an int64, a bool a bool: all travel as compute-type bits
    x_cpu, x = operands(torch.float32, (5, 7))
    programs_built(lambda: x * 2.5)
    scalars = [3, True, torch.tensor(1.5, dtype=torch.float64), torch.tensor(-2, dtype=torch.int16)]
    built, results = programs_built(lambda: [x * s for s in scalars])
    assert built == 0
    for s, result in zip(scalars, results):
        torch.testing.assert_close(result.cpu(), x_cpu * s)


def test_strided_layouts_share_one_program():
    a_cpu, a = operands(torch.float32, (40, 30))
    b_cpu, b = operands(torch.float32, (30, 40))
    programs_built(lambda: a.t() + b)
    cases = [
        (lambda x, y: x[:, ::2] + y[:15, :40].t()),
        (lambda x, y: x.t()[::3] + y[::3]),
        (lambda x, y: x[::2, ::3] + y.t()[::2, ::3]),
    ]
    built, results = programs_built(lambda: [case(a, b) for case in cases])
    assert built == 0
    for case, result in zip(cases, results):
        torch.testing.assert_close(result.cpu(), case(a_cpu, b_cpu))


@pytest.mark.parametrize("count", [1, 3, 6])
def test_foreach_programs_do_not_depend_on_the_list_length(count):
    params = [torch.randn(5 + k, device="ocl") for k in range(8)]
    torch._foreach_mul_(params, 2.0)  # builds the program for this op and dtype
    expected = [p.cpu() * 3.0 for p in params[:count]]
    built, _ = programs_built(lambda: torch._foreach_mul_(params[:count], 3.0))
    assert built == 0
    for p, e in zip(params[:count], expected):
        torch.testing.assert_close(p.cpu(), e)


def test_small_foreach_calls_share_one_program_per_list_count():
    # Calls of at most 8192 elements pass their operation as an argument: every in-place operation
    # of one list count (add, mul, div, lerp, addcmul, addcdiv, sqrt) runs through one program.
    xs_cpu = [torch.rand(3 + k, 4) + 0.5 for k in range(5)]
    ys_cpu, zs_cpu = [x * 2 for x in xs_cpu], [x + 1 for x in xs_cpu]
    xs, ys, zs = ([t.to("ocl") for t in ts] for ts in (xs_cpu, ys_cpu, zs_cpu))

    def ops(xs, ys, zs):
        torch._foreach_add_(xs, 1.5)
        torch._foreach_mul_(xs, 0.5)
        torch._foreach_div_(xs, 3.0)
        torch._foreach_sqrt_(xs)
        torch._foreach_add_(xs, ys, alpha=2.0)
        torch._foreach_mul_(xs, ys)
        torch._foreach_div_(xs, zs)
        torch._foreach_lerp_(xs, ys, 0.25)
        torch._foreach_addcmul_(xs, ys, zs, value=0.5)
        torch._foreach_addcdiv_(xs, ys, zs, value=2.0)

    w = [torch.ones(3, device="ocl")]
    torch._foreach_add_(w, 1.0)  # the program of one list
    torch._foreach_add_(w, w)  # of two
    torch._foreach_addcmul_(w, w, w)  # of three
    built, _ = programs_built(lambda: ops(xs, ys, zs))
    assert built == 0
    ops(xs_cpu, ys_cpu, zs_cpu)
    for got, want in zip(xs, xs_cpu):
        torch.testing.assert_close(got.cpu(), want)


SHAPES_AND_LISTS = """
import torch
torch.manual_seed(0)
for m, k, n in [(96, 64, 80), (130, 257, 40), (300, 75, 190), (64, 1000, 33)]:
    a, b = torch.randn(m, k), torch.randn(k, n)
    torch.testing.assert_close((a.to("ocl") @ b.to("ocl")).cpu(), a @ b, atol=1e-3, rtol=1e-4)
    # A transposed: packed (an A of contiguous rows is read in place)
    a_t = a.t().contiguous().to("ocl").t()
    torch.testing.assert_close((a_t @ b.to("ocl")).cpu(), a @ b, atol=1e-3, rtol=1e-4)
for count in (3, 20):  # 20 tensors take several launches, each numbering its items on
    xs = [torch.randn(7 + 50 * i) for i in range(count)]
    ys = [x.to("ocl") for x in xs]
    torch._foreach_mul_(ys, 3.0)
    for x, y in zip(xs, ys):
        torch.testing.assert_close(y.cpu(), x * 3.0)
"""


def test_the_driver_compiles_a_kernel_once_for_every_shape(run_py, tmp_path):
    """PoCL compiles a kernel again for every local size and for a non-zero global offset it runs
    with: the packing kernels of the GEMM use one local size whatever the matrix shape, and the
    multi-tensor kernels number their items from an argument, not from the launch's offset."""
    if "Portable Computing Language" not in torch.ocl.get_device_properties(0).platform_name:
        pytest.skip("counts the compiled kernels in PoCL's kernel cache")
    pocl = tmp_path / "pocl"
    out = run_py(SHAPES_AND_LISTS, env={"POCL_CACHE_DIR": str(pocl), "DRAWBRIDGE_DEVICE_CLASS": "cpu"})
    assert out.returncode == 0, out.stderr[-3000:]
    compiled = {}  # (program, kernel) -> the work-group functions PoCL compiled for it
    for binary in pocl.glob("*/*/*/*/*.so"):
        kernel_dir = binary.parent.parent
        compiled.setdefault((kernel_dir.parent, kernel_dir.name), []).append(binary.parent.name)
    kernels = {name for _, name in compiled}
    assert {"pack_a_panels", "pack_b_panels", "packed_gemm", "foreach_apply"} <= kernels, kernels
    for (_, name), variants in compiled.items():
        if name in ("pack_a_panels", "pack_b_panels", "packed_gemm", "foreach_apply"):
            assert len(variants) == 1, (name, variants)



def test_small_iterations_of_every_layout_share_one_program():
    # Up to one work-item's chunk (2048 elements) the row steps are not compiled in.
    a_cpu, a = operands(torch.float32, (40, 30))
    b_cpu, b = operands(torch.float32, (30, 40))
    col_cpu, col = operands(torch.float32, (40, 1))
    programs_built(lambda: a - b.t())
    cases = [lambda x, y, c: x - x, lambda x, y, c: x - c, lambda x, y, c: c - x, lambda x, y, c: x - 2.5,
             lambda x, y, c: x[:, ::2] - y.t()[:, ::2]]
    built, results = programs_built(lambda: [case(a, b, col) for case in cases])
    assert built == 0
    for case, result in zip(cases, results):
        torch.testing.assert_close(result.cpu(), case(a_cpu, b_cpu, col_cpu))


def test_small_iterations_of_other_dtypes_share_one_program_per_compute_type():
    # Up to 2048 elements, inputs not of the compute type's dtype make every operand's dtype a
    # run-time value (token dyn<k> of common.clh): float16, bfloat16 and their mixes compute in
    # float32 through one program, for inputs, outputs, copies, scans and where alike.
    def ops(x, y):
        return (torch.sin(x), x + y, x < y, torch.where(x < y, x, y), x.cumsum(1), x.to(torch.float16),
                x.to(torch.bfloat16), torch.add(x, y, out=torch.empty(x.shape, dtype=torch.float32, device=x.device)))

    def pair(tx, ty):
        (x_cpu, x), (y_cpu, y) = operands(tx, (6, 7)), operands(ty, (6, 7))
        return x_cpu, y_cpu.flip(0), x, y.flip(0)

    assert_one_program_serves(ops, pair(torch.float16, torch.float16),
                              [pair(torch.bfloat16, torch.bfloat16), pair(torch.float16, torch.bfloat16),
                               pair(torch.bfloat16, torch.float16)])


def integer_operands(dtype):
    """Values across the dtype's whole range (int8's -128..127 in every narrower case), and small
    ones of either sign for divisors and shift amounts."""
    x_cpu = (torch.arange(42) * 37 % 256 - 128).reshape(6, 7).to(dtype)
    y_cpu = (torch.arange(42) * 11 % 19 - 9).reshape(6, 7).to(dtype)
    y_cpu[y_cpu == 0] = 1  # divisors
    return x_cpu, y_cpu, x_cpu.to("ocl"), y_cpu.to("ocl")


def integer_ops(x, y):
    # Products that wrap in the narrow dtype, comparisons with scalars of either sign and past its
    # range, a negative alpha, floor division and remainder of negatives, shifts past the width.
    return (x * y + x, x * 100, x < y, x < -3, x < 200, torch.add(x, y, alpha=-2), torch.div(x, y, rounding_mode="floor"),
            torch.remainder(x, y), torch.bitwise_left_shift(x, y.abs() * 5), torch.bitwise_right_shift(x, y.abs() * 5),
            ~x, x.clamp(-2, 2), torch.where(x < y, x, y), torch.addcmul(x, x, y, value=3), x.abs(), -x)


def test_small_integer_launches_compute_in_int64_through_one_program():
    # Up to 2048 elements, the unary, binary and ternary kernels of every integer dtype narrower
    # than int64 compute in int64 (one generic program per family), with the narrow dtype's results.
    assert_one_program_serves(integer_ops, integer_operands(torch.int64),
                              [integer_operands(t) for t in (torch.int8, torch.int16, torch.int32, torch.uint8)])


def kernels_made(fn):
    """How many kernel objects fn made beyond those this process had (PoCL compiles each on its
    first launch)."""
    before = drawbridge._C._program_cache_stats()["kernels"]
    result = fn()
    torch.ocl.synchronize()
    return drawbridge._C._program_cache_stats()["kernels"] - before, result


def test_small_launches_of_every_operation_share_one_kernel_per_arity():
    # Up to 2048 elements, the one-line operations of the unary, binary, ternary, special-function
    # and activation-backward files run as cases of their generic program's dispatch kernel (one
    # per arity and compute type), whatever their parameters: one compile serves every operation.
    x_cpu, y_cpu = torch.linspace(-3, 3, 42).reshape(6, 7), torch.linspace(0.5, 4, 42).reshape(6, 7).flip(0)
    i_cpu, j_cpu = integer_operands(torch.int64)[:2]
    x, y, i, j = (t.to("ocl") for t in (x_cpu, y_cpu, i_cpu, j_cpu))
    first = [lambda x, y, i, j: (x + y, -x, torch.addcmul(x, x, y), torch.special.i0(x), torch.special.zeta(y, y),
                                 torch.ops.aten.tanh_backward(x, y), i + j, -i, torch.addcmul(i, i, j))]
    cases = [
        lambda x, y, i, j: (x * y, x - y, torch.sub(x, y, alpha=0.5), torch.atan2(x, y), x / y, x < y, x.sin(),
                            x.exp(), y.log(), x.clamp(-1, 1), x.clamp(min=0.5), torch.nn.functional.softplus(x, 2, 3),
                            torch.nn.functional.leaky_relu(x, 0.3), torch.addcdiv(x, x, y, value=0.5), torch.lerp(x, y, 0.25),
                            torch.clamp(x, -y, y), torch.special.digamma(y), torch.special.i1e(x),
                            torch.special.xlog1py(x, y), torch.ops.aten.sigmoid_backward(x, y),
                            torch.ops.aten.hardtanh_backward(x, y, -1.0, 1.0)),
        lambda x, y, i, j: (i * j, i // j, i % j, i << 2, i & j, ~i, i.abs(), i.clamp(-50, 50), torch.addcmul(i, j, j, value=2),
                            torch.clamp(i, j, j + 10)),
    ]
    kernels_made(lambda: [case(x, y, i, j) for case in first])
    made, results = kernels_made(lambda: [case(x, y, i, j) for case in cases])
    assert made == 0
    for case, result in zip(cases, results):
        for got, want in zip(result, case(x_cpu, y_cpu, i_cpu, j_cpu)):
            assert got.dtype == want.dtype
            torch.testing.assert_close(got.cpu(), want, equal_nan=True)
    # The integer division's zero divisor still raises, and the dispatch kernel serves on after it.
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        (i // (j * 0)).cpu()
    torch.testing.assert_close((i // j).cpu(), i_cpu // j_cpu)


SMALL_THEN_LARGE = """
import torch, drawbridge
small, large = torch.randn(40, 30, device="ocl"), torch.randn(50, 50, device="ocl")
(small - small).cpu()
before = drawbridge._C._program_cache_stats()["builds"]
(large - large).cpu()
print(drawbridge._C._program_cache_stats()["builds"] - before)
halves = [small.half(), small.bfloat16(), large.half()]
built = []
for h in halves:  # small: the float32 one's generic program, of run-time dtypes; large: float16 compiled in
    before = drawbridge._C._program_cache_stats()["builds"]
    (h - h).cpu()
    built.append(drawbridge._C._program_cache_stats()["builds"] - before)
print(*built)
"""


def test_beyond_a_chunk_dense_operands_get_their_own_program(run_py):
    # in a fresh process: the vectorizing program of dense operands is not the small iterations'
    # one, and it compiles its dtype in
    if torch.ocl.get_device_properties(0).device_class != "cpu":
        pytest.skip("GPU-class launches compile no row steps in")
    out = run_py(SMALL_THEN_LARGE)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["1", "0", "0", "1"]


def test_integer_inputs_of_a_float_kernel_share_one_program():
    # True division of integer tensors: every integer dtype and layout reads through one program.
    def divisor(dtype, shape):
        cpu = (torch.arange(torch.Size(shape).numel()) % 5 + 1).reshape(shape).to(dtype)
        return cpu, cpu.to("ocl")

    cases = [(torch.int16, (8, 5), (8, 5)), (torch.int32, (8, 5), (8, 5)), (torch.int64, (8, 5), (5,)),
             (torch.uint8, (8, 5), (8, 1)), (torch.int8, (5, 8), (5, 8)), (torch.bool, (8, 5), (8, 5))]
    inputs = [(operands(t, a), divisor(t, b)) for t, a, b in cases]
    programs_built(lambda: inputs[0][0][1] / inputs[0][1][1])
    built, results = programs_built(lambda: [x / y for (_, x), (_, y) in inputs[1:]])
    assert built == 0
    for ((x_cpu, _), (y_cpu, _)), result in zip(inputs[1:], results):
        torch.testing.assert_close(result.cpu(), x_cpu / y_cpu)



def test_small_reductions_of_other_dtypes_share_one_program_per_compute_type():
    # Up to 2048 input elements, an input not of the compute type's dtype makes the input's and
    # the output's dtypes run-time values: float16 and bfloat16 reduce through one float32 program,
    # the integer sums (widened to int64) through one int64 program.
    def ops(x):
        return x.sum(1), x.amax(0), x.argmax(1)

    floats = [operands(t, (9, 13)) for t in (torch.float16, torch.bfloat16)]
    ints = [operands(t, (9, 13)) for t in (torch.int8, torch.int16, torch.uint8, torch.bool)]
    programs_built(lambda: (ops(floats[0][1]), ints[0][1].sum(1)))
    built, results = programs_built(lambda: [ops(x) for _, x in floats[1:]] + [(x.sum(1),) for _, x in ints[1:]])
    assert built == 0
    expected = [ops(x) for x, _ in floats[1:]] + [(x.sum(1),) for x, _ in ints[1:]]
    for got, want in zip(results, expected):
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            torch.testing.assert_close(g.cpu(), w)


def assert_int64_programs_serve(ops, dtypes):
    """ops(x) on an int64 matrix builds what it needs; on the same values in each of `dtypes` it
    builds nothing more and gives the CPU's dtypes and values (sums in a narrow dtype wrap)."""
    def values(dtype):
        cpu = (torch.arange(117) * 37 % 256 - 128).reshape(9, 13).to(dtype)
        return cpu, cpu.to("ocl")

    programs_built(lambda: ops(values(torch.int64)[1]))
    others = [values(t) for t in dtypes]
    built, results = programs_built(lambda: [ops(x) for _, x in others])
    assert built == 0
    for (x_cpu, _), result in zip(others, results):
        for got, want in zip(result, ops(x_cpu)):
            assert got.dtype == want.dtype
            torch.testing.assert_close(got.cpu(), want)


def test_small_integer_reductions_compute_in_int64_through_one_program():
    # Up to 2048 input elements, reductions of integers and bools compute in int64 through run-time
    # dtypes: one program per reduction serves every integer dtype, with each dtype's results
    # (sums in the narrow dtype wrap as on the CPU).
    def ops(x):  # argmax and argmin take no bools
        indices = (x.argmax(1), x.argmin(0)) if x.dtype != torch.bool else ()
        return (x.amax(1), x.amin(0), x.any(1), x.all(0), torch.count_nonzero(x, 1), x.sum(1),
                x.sum(0, dtype=x.dtype), x.prod(1), x.max(1).values, x.max(1).indices) + indices

    assert_int64_programs_serve(ops, (torch.int8, torch.int16, torch.int32, torch.uint8, torch.bool))


def test_small_integer_scans_and_copies_compute_in_int64_through_one_program():
    # Row kernels (scans, cummax and cummin; mode's too, after its sort) and copies between integer
    # dtypes of at most 2048 elements compute in int64: the int64 programs serve every integer
    # dtype, with each dtype's results (a sum kept in int8 wraps as on the CPU, a copy to int8
    # truncates as the CPU's).
    def ops(x):
        return (x.cumsum(1, dtype=x.dtype), x.cumprod(0, dtype=x.dtype), x.cummax(1).values, x.cummax(1).indices,
                x.cummin(0).values, x.to(torch.int8 if x.dtype == torch.int16 else torch.int16), x.t().to(torch.int32))

    assert_int64_programs_serve(ops, (torch.int8, torch.int16, torch.int32, torch.uint8))


def test_small_gpu_launches_of_dense_and_strided_operands_share_one_program():
    # On GPUs, launches of at most 2048 elements walk the descriptor whatever their layout: a dense
    # one builds no CONTIGUOUS program beside the strided one (fill takes raw bits, no run-time dtypes).
    if torch.ocl.get_device_properties().device_class != "gpu":
        pytest.skip("CPU devices compile no CONTIGUOUS variant")
    a, every_other = torch.empty(10, 12, device="ocl"), torch.empty(10, 24, device="ocl")[:, ::2]
    programs_built(lambda: every_other.fill_(1.5))
    built, _ = programs_built(lambda: a.fill_(2.5))
    assert built == 0
    assert torch.equal(a.cpu(), torch.full((10, 12), 2.5))


def test_small_reductions_of_every_kind_share_one_kernel_per_compute_type():
    # Up to 2048 input elements, every reduction of reduce.cl runs as a case of its compute type's
    # dispatch kernel (r_dispatch), whatever its accumulator (sums, Welford moments, value-index
    # pairs), layout or parameter: one compile serves them all.
    x_cpu = torch.linspace(-3, 3, 63).reshape(7, 9)
    i_cpu = (torch.arange(63) * 37 % 101 - 50).reshape(7, 9)
    x, i = x_cpu.to("ocl"), i_cpu.to("ocl")
    kernels_made(lambda: (x.sum(1), i.sum(1)))
    cases = [
        lambda x, i: (x.sum(0), x.t().sum(1), x.prod(1), x.mean(0), x.amax(1), x.amin(0), x.nansum(1), x.var(1),
                      x.std(0, correction=0), x.argmax(1), x.argmin(0), x.max(1).indices, x.norm(3, 1), x.norm(2, 0),
                      x.norm(1, 1), x.norm(0, 1), x.norm(float("inf"), 0), x.norm(float("-inf"), 1), x.any(1),
                      x.all(0), torch.count_nonzero(x, 1)),
        lambda x, i: (i.sum(0), i.prod(1), i.amax(1), i.amin(0), i.argmax(1), i.argmin(0), i.any(1), i.all(0),
                      torch.count_nonzero(i, 0)),
    ]
    made, results = kernels_made(lambda: [case(x, i) for case in cases])
    assert made == 0
    for case, result in zip(cases, results):
        for got, want in zip(result, case(x_cpu, i_cpu)):
            assert got.dtype == want.dtype
            torch.testing.assert_close(got.cpu(), want)


def test_arg_extremes_of_several_nans_return_the_first():
    # NaN is the extreme and the first index wins ties, also between NaNs that separate
    # accumulators (lanes, work-items) found: the CPU's answer for short rows and long ones.
    for length in (40, 5000):
        x_cpu = torch.zeros(3, length)
        x_cpu[:, 3] = x_cpu[:, 18] = float("nan")
        x = x_cpu.to("ocl")
        for op in (torch.argmax, torch.argmin):
            assert torch.equal(op(x, 1).cpu(), op(x_cpu, 1))
            assert op(x.flatten()).item() == op(x_cpu.flatten()).item()


REDUCTIONS_OF_ONE_DTYPE = """
import torch, drawbridge
x = torch.randn(300, 200, device="ocl", dtype=torch.float64)
stats = drawbridge._C._program_cache_stats
x.sum(1).cpu()
before = stats()["builds"]
x.sum(0).cpu(); x.sum().cpu()  # the same reduction, other shapes: its program again
same = stats()["builds"] - before
before = stats()["builds"]
x.amax(1).cpu()
print(same, stats()["builds"] - before)
"""


def test_each_reduction_builds_a_program_of_its_own(run_py):
    # PoCL builds a program of the whole reduce.cl in 1.5-2.4 s, one reduction's in 0.2-0.3: a
    # process that sums float64 does not build amax, var and the rest with it.
    out = run_py(REDUCTIONS_OF_ONE_DTYPE)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["0", "1"]


def optimizer_state(count=3, seed=0):
    """Parameters, gradients and two state lists (CPU tensors), of a few sizes."""
    g = torch.Generator().manual_seed(seed)
    return [[torch.randn(5 + 7 * k, generator=g).abs() + 0.1 for k in range(count)] for _ in range(4)]


def fused_step(step, lists, device, **flags):
    """`step` (a torch._fused_* op) on copies of `lists` on `device`, with a fresh step count;
    returns the updated lists on the CPU."""
    lists = [[t.to(device) for t in ts] for ts in lists]
    for name in ("grad_scale", "found_inf"):
        if flags.get(name) is not None:
            flags[name] = flags[name].to(device)
    if step is not torch._fused_sgd_:
        steps = [torch.tensor(3.0, device=device) for _ in lists[0]]
        step(*lists, [], steps, **flags)
    else:
        step(lists[0], lists[1], lists[2], **flags)
    return [[t.cpu() for t in ts] for ts in lists]


ADAM = dict(lr=0.01, beta1=0.9, beta2=0.999, weight_decay=0.1, eps=1e-8, amsgrad=False)
SGD = dict(weight_decay=0.1, momentum=0.9, lr=0.1, dampening=0.1)


@pytest.mark.parametrize("step, base, variants", [
    (torch._fused_adam_, ADAM, [dict(maximize=True), dict(grad_scale=torch.tensor(4.0)),
                                dict(grad_scale=torch.tensor(2.0), found_inf=torch.tensor(0.0)),
                                dict(found_inf=torch.tensor(1.0))]),
    (torch._fused_adamw_, ADAM, [dict(maximize=True), dict(grad_scale=torch.tensor(4.0))]),
    (torch._fused_sgd_, SGD, [dict(nesterov=True), dict(is_first_step=True), dict(maximize=True),
                              dict(grad_scale=torch.tensor(4.0), found_inf=torch.tensor(0.0))]),
])
def test_fused_optimizer_options_share_one_program(step, base, variants):
    # maximize, AdamW's decay, Nesterov, the first step, a grad_scale and a found_inf are
    # arguments of the step's kernel: only a list more (AMSGRAD's, SGD's momentum) takes a program.
    lists = optimizer_state()
    defaults = dict(maximize=False) if step is not torch._fused_sgd_ else dict(
        maximize=False, nesterov=False, is_first_step=False)
    fused_step(step if step is not torch._fused_adamw_ else torch._fused_adam_, lists, "ocl", **base, **defaults)
    for variant in variants:
        flags = {**base, **defaults, **variant}
        built, got = programs_built(lambda: fused_step(step, lists, "ocl", **flags))
        assert built == 0, f"{step.__name__} with {variant} built a program"
        want = fused_step(step, lists, "cpu", **flags)
        for got_list, want_list in zip(got, want):
            for g, w in zip(got_list, want_list):
                torch.testing.assert_close(g, w, atol=1e-6, rtol=1e-5)


def test_foreach_norms_of_every_order_and_pass_share_one_program():
    # Tensors past a work-item's elements take passes over their partials: every order and pass
    # runs one program per dtype.
    xs_cpu = [torch.randn(n) for n in (3, 5000, 70000)]
    xs_cpu[1][17] = float("nan")
    xs = [x.to("ocl") for x in xs_cpu]
    torch._foreach_norm(xs[:1], 2)  # builds the program of float32
    built, got = programs_built(lambda: [torch._foreach_norm(xs, ord) for ord in (1, 2, float("inf"))])
    assert built == 0
    for ord, norms in zip((1, 2, float("inf")), got):
        for g, w in zip(norms, torch._foreach_norm(xs_cpu, ord)):
            torch.testing.assert_close(g.cpu(), w, equal_nan=True, rtol=1e-5, atol=1e-5)
