"""Measures native ocl kernels against PyTorch's OpInfo database.

For each OpInfo entry and dtype, the sample inputs are built on the CPU, run on the CPU for the
expected result, moved to ocl and run there with DRAWBRIDGE_FALLBACK=error, so that only native
kernels count. Ops run in child processes, so a crash loses one op, not the run, and as many
children run at once as there are cores (--jobs): a cold run is bound by PoCL's compiler.

A result that differs from the CPU's still passes in three cases, each checked, not assumed:
positions of equal elements returned in another order by an op that leaves it unspecified (an
unstable sort, a selection) when they select equal elements; results that agree after the
sample's output_process_fn_grad (what PyTorch's test_compare_cpu compares: singular vectors up
to sign); and a floating result that agrees
with the op computed in float64 on the CPU (where the CPU's float32 kernel is the less accurate),
or is no farther from it than CPU_ERROR_FACTOR times the CPU's own result (and, for the few
functions in EXACT_REFERENCES, one that agrees with mpmath).

The "backward" column compares float32 gradients: each sample's tensors that require grad become
leaves on the CPU and on ocl, the op's differentiable outputs get the same upstream gradients
(drawn once on the CPU), and the gradients of every leaf must match the CPU's, None where the
CPU's is None; the forward and backward kernels must both be native. Gradients that differ from
the CPU's pass when they agree with the CPU's float64 gradients, or when they are no farther from
those than CPU_ERROR_FACTOR times the CPU's float32 ones. Samples whose backward fails on the
CPU are left out; entries without autograd or with random results are skips.

    python tests/opinfo/harness.py --out report.json [--ops add,mul] [--columns float32,out] [--jobs N]
                                   [--compiled] [--markdown docs/ops.md]
    python tests/opinfo/harness.py --from-report report.json --markdown docs/ops.md
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

DTYPES = ["float32", "float16", "bfloat16", "int64", "bool", "float64", "int32", "int16", "int8", "uint8"]
# float32 gradients, compared with the CPU's: a column of the report beside the dtypes.
BACKWARD = "backward"
# float32 forward through torch.compile (Inductor with drawbridge's OpenCL code generator): only
# with --compiled, since every sample is a compilation.
COMPILED = "compiled"
# float32 samples through the op's out= variant (entries that have one): half the samples get
# outputs of the right shape, half empty ones the op must resize.
OUT = "out"
# float32 samples made non-contiguous (SampleInput.noncontiguous(): the same values, strided).
NONCONTIGUOUS = "noncontiguous"
# Each entry's error_inputs on ocl, which must raise the exception type the CPU raises for them.
ERRORS = "errors"
COLUMNS = DTYPES + [BACKWARD, OUT, NONCONTIGUOUS, ERRORS]
# Every sample input of an entry runs, unless DRAWBRIDGE_OPINFO_MAX_SAMPLES caps them (a quick
# look; the suite and docs/ops.md run them all).
MAX_SAMPLES = int(os.environ.get("DRAWBRIDGE_OPINFO_MAX_SAMPLES", "0")) or None
MAX_COMPILED_SAMPLES = 2
# float32 kernels use OpenCL's math library, whose functions are within a few ulp, not
# correctly rounded: allow 1e-5 relative error (torch.testing's default is 1.3e-6).
# Keyed by the dtype of the result (integer inputs of float ops give float results).
TOLERANCES = {"float32": (1e-5, 1e-5), "float64": (1e-7, 1e-7), "float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-3)}
# Complex results (the FFTs') get their real type's tolerance.
TOLERANCES.update(complex64=TOLERANCES["float32"], complex128=TOLERANCES["float64"])


def op_key(op) -> str:
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


# Results that are random or uninitialised: compared by shape, dtype and device only (and their
# gradients not at all).
UNCHECKED_VALUES = ("empty", "rand", "normal", "bernoulli", "multinomial", "dropout", "uniform",
                    "exponential", "geometric", "log_normal", "cauchy", "rrelu", "fractional_max_pool")
# Entries whose names contain one of those words but whose results are deterministic.
CHECKED_VALUES = ("nn.functional.normalize", "masked.normalize", "__rand__", "signal.windows.exponential",
                  "native_dropout_backward", "nn.functional.feature_alpha_dropout.without_train")


def draws_dropout(op, sample) -> bool:
    """A sample of an attention entry that asks for dropout: its values depend on the generator
    (ocl's Philox stream is not the CPU's), so only its shapes are compared."""
    if op.name == "nn.functional.multi_head_attention_forward":
        return bool(sample.kwargs.get("training"))  # the samples train exactly when dropout_p > 0
    return bool(sample.kwargs.get("dropout_p", 0))


def sketches_full_rank(op, sample) -> bool:
    """A sample of a randomized low-rank entry whose matrix has a rank above q: the result then
    depends on the random sketch (ocl's stream is not the CPU's), so only its shapes are compared,
    as PyTorch's own test_compare_cpu skips these entries. The samples are a @ b.mT of rank q,
    made full rank by subtracting M (svd_lowrank) or the column means (pca_lowrank, center)."""
    if op.name == "svd_lowrank":
        return sample.kwargs.get("M") is not None
    return op.name == "pca_lowrank" and sample.kwargs.get("center", True)


def values_checked(op, sample=None) -> bool:
    if sample is not None and (draws_dropout(op, sample) or sketches_full_rank(op, sample)):
        return False
    return op_key(op) in CHECKED_VALUES or not any(w in op.name for w in UNCHECKED_VALUES)


def to_ocl(x, key=None, storages=None):
    """Moves a sample to ocl, keeping each tensor's storage, offset and strides (so views and
    non-contiguous inputs stay what they are), and pointing device arguments (device=, or a device
    among the positional `args`) at ocl. With a dict
    for `storages`, tensors that share a CPU storage share one ocl storage too (error inputs that
    pass an input as its own out=)."""
    import torch

    if isinstance(x, torch.Tensor):
        x = x.detach()
        if x.layout != torch.strided:
            return x.to("ocl")
        cpu_storage = x.untyped_storage()
        storage = None if storages is None else storages.get(cpu_storage.data_ptr())
        if storage is None:
            storage = cpu_storage.ocl()
            if storages is not None:
                storages[cpu_storage.data_ptr()] = storage
        return torch.empty(0, dtype=x.dtype, device="ocl").set_(storage, x.storage_offset(), x.size(), x.stride())
    if (key == "device" and isinstance(x, (str, torch.device))) or key == "positional" and (
            isinstance(x, torch.device) or (isinstance(x, str) and x == "cpu")):
        return torch.device("ocl")
    if isinstance(x, tuple) and key == "args":  # a device among them (Tensor.to's) is the target
        return tuple(to_ocl(v, "positional", storages) for v in x)
    if isinstance(x, (list, tuple)):
        return type(x)(to_ocl(v, None, storages) for v in x)
    if isinstance(x, dict):
        return {k: to_ocl(v, k, storages) for k, v in x.items()}
    return x


# Tensor arguments that PyTorch requires on the CPU whatever the input's device: entry -> the
# positions among the positional args.
CPU_ARGUMENTS = {"tensor_split": (0,)}


def sample_to_ocl(op, sample, storages=None):
    """(input, args, kwargs) of a SampleInput, moved by to_ocl (but for CPU_ARGUMENTS)."""
    args = to_ocl(sample.args, "args", storages)
    kept = CPU_ARGUMENTS.get(op.name, ())
    args = tuple(sample.args[i] if i in kept else a for i, a in enumerate(args))
    return to_ocl(sample.input, None, storages), args, to_ocl(sample.kwargs, None, storages)


def touches_ocl(x) -> bool:
    """Whether a moved sample holds an ocl tensor or names the ocl device (torch.arange(2) has
    neither: its result is rightly on the CPU, and it measures nothing here)."""
    import torch
    from torch.utils._pytree import tree_leaves

    return any((isinstance(v, torch.Tensor) and v.device.type == "ocl") or (isinstance(v, torch.device)
                                                                          and v.type == "ocl")
               for v in tree_leaves(x))


def to_cpu(x):
    import torch

    if isinstance(x, torch.Tensor):
        return x.cpu()
    if isinstance(x, (list, tuple)):
        return type(x)(to_cpu(v) for v in x)
    return x


# Ops that return positions of equal elements in an unspecified order (an unstable sort, a
# selection): where the positions differ, they must select elements equal to the CPU's. Value is
# where `dim` sits among the positional arguments.
TIE_ORDER_DIM_ARG = {"sort": 0, "argsort": 0, "msort": None, "topk": 1, "kthvalue": 1, "median": 0,
                     "nanmedian": 0, "mode": 0}


def same_selection(op_name, sample, actual, expected) -> bool:
    """True when the index results select equal elements of the input (ties in another order)."""
    import torch

    if op_name not in TIE_ORDER_DIM_ARG or sample.kwargs.get("stable"):
        return False
    x = sample.input
    pos = TIE_ORDER_DIM_ARG[op_name]
    dim = sample.kwargs.get("dim", sample.args[pos] if pos is not None and len(sample.args) > pos else -1)
    if op_name == "argsort":
        pairs = [(actual, expected)]
    else:
        if not isinstance(expected, (tuple, list)) or len(expected) != 2:
            return False
        compare(actual[0], expected[0], None)  # values must agree exactly
        pairs = [(actual[1], expected[1])]
    for a, e in pairs:
        a = a.cpu()
        if a.shape != e.shape or a.dtype != e.dtype:
            return False
        if x.dim() == 0:
            return bool(torch.equal(a, e))
        if a.dim() < x.dim():
            a, e = a.unsqueeze(dim), e.unsqueeze(dim)
        if not torch.equal(x.gather(dim, a), x.gather(dim, e)) and not (
                x.is_floating_point() and torch.equal(x.gather(dim, a).isnan(), x.gather(dim, e).isnan())
                and torch.equal(x.gather(dim, a).nan_to_num(), x.gather(dim, e).nan_to_num())):
            return False
    return True


def matches_float64_reference(op, sample, actual, expected, dtype_name, cpu_alternative=None) -> bool:
    """True when ocl agrees with the op computed in float64 on the CPU and rounded to the result's
    dtype: the CPU's own float32 kernel is then the less accurate one (digamma near its poles).
    cpu_alternative() gives the CPU's result of the same values by another path (the contiguous
    sample's, for a non-contiguous one), whose error also counts as the CPU's."""
    import torch
    from torch.utils._pytree import tree_leaves

    if dtype_name not in ("float32", "float16", "bfloat16"):
        return False

    def up(x, key=None):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            return x.double()
        if key == "dtype" and isinstance(x, torch.dtype) and x.is_floating_point:
            return torch.float64  # factories (linspace's dtype=float16) compute in float64 too
        if isinstance(x, (list, tuple)):
            return type(x)(up(v) for v in x)
        if isinstance(x, dict):
            return {k: up(v, k) for k, v in x.items()}
        return x

    def down(r, e):
        if isinstance(r, torch.Tensor) and isinstance(e, torch.Tensor):
            return r.to(e.dtype)
        if isinstance(r, (list, tuple)) and isinstance(e, (list, tuple)):
            return type(e)(down(a, b) for a, b in zip(r, e))
        return r

    def tensors(x):
        return [t for t in tree_leaves(x) if isinstance(t, torch.Tensor)]

    try:
        torch.manual_seed(0)
        exact = op(up(sample.input), *up(sample.args), **up(sample.kwargs))
    except Exception:
        return False
    try:
        compare(actual, down(exact, expected), dtype_name)
        return True
    except Exception:
        pass
    # Chains of GEMMs and reductions (attention over values near 1000) round on both backends:
    # ocl passes when it is as close to float64 as the CPU's float32 (CPU_ERROR_FACTOR). The CPU's
    # error on one layout is one draw of its rounding: on one machine its fused attention came 7x
    # closer on the non-contiguous sample than on the same values contiguous.
    try:
        a, e, r = tensors(actual), tensors(expected), tensors(exact)
        if not (len(a) == len(e) == len(r) and all(t.is_floating_point() for t in r)):
            return False
        if within_cpu_error(a, e, r):
            return True
        others = tensors(cpu_alternative()) if cpu_alternative else []
        return len(others) == len(e) and within_cpu_error(a, e, r, others)
    except Exception:
        return False


def compare(actual, expected, dtype_name, values=True):
    import torch

    if isinstance(expected, torch.Tensor):
        rtol, atol = TOLERANCES.get(str(expected.dtype).replace("torch.", ""), (0, 0))
        assert isinstance(actual, torch.Tensor), f"expected a tensor, got {type(actual)}"
        assert actual.device.type == "ocl", f"result on {actual.device}, not ocl"
        actual = actual.cpu()
        if not values:
            assert actual.shape == expected.shape and actual.dtype == expected.dtype
            return
        if expected.is_floating_point() or expected.is_complex():
            torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True, check_stride=False)
        else:
            torch.testing.assert_close(actual, expected, rtol=0, atol=0, check_stride=False)
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            compare(a, e, dtype_name, values)
    elif isinstance(expected, float):
        assert abs(actual - expected) <= 1e-5 * (1 + abs(expected)) or (actual != actual and expected != expected)
    elif isinstance(expected, (int, bool)):
        assert actual == expected


def over_samples(samples, check) -> tuple[str, str, list]:
    """(status, detail, failed sample indices) of check(index, sample) over every sample: check
    returns False for a sample it leaves out (the CPU rejects it) and raises when ocl disagrees.
    A fallback ends the column (the op is not native); a failing sample is recorded and the rest
    still run, so that an expected failure can name its samples."""
    import torch

    ran, failed, first = 0, [], ""
    for index, sample in enumerate(samples):
        try:
            if check(index, sample):
                ran += 1
        except Exception as e:
            status, detail = fallback_or_fail(e)
            if status == "fallback":
                return status, detail, []
            failed.append(index)
            first = first or f"sample {index}: {detail}"
            try:
                torch.ocl.synchronize()  # a device-side assert must not surface in the next sample
            except Exception:
                pass
    if failed:
        return "fail", f"{len(failed)} of {ran + len(failed)} samples; {first}"[:400], failed
    return ("pass", f"{ran} samples", []) if ran else ("skip", "CPU rejected every sample", [])


def same_up_to_gauge(sample, actual, expected, dtype_name) -> bool:
    """True when the results agree after the sample's output_process_fn_grad, as PyTorch's own
    test_compare_cpu compares a device with the CPU: decompositions whose factors are unique only
    up to signs (svd, eigh) map them to what is unique (|U|, U @ Vh)."""
    try:
        compare(sample.output_process_fn_grad(actual), sample.output_process_fn_grad(expected), dtype_name)
        return True
    except Exception:
        return False


def compare_result(op, sample, actual, expected, dtype_name, cpu_alternative=None) -> None:
    """compare(), with the three ways a differing result still passes (ties, signs of a
    decomposition, float64 reference)."""
    try:
        compare(actual, expected, dtype_name, values=values_checked(op, sample))
    except AssertionError:
        if not (same_selection(op.name, sample, actual, expected)
                or same_up_to_gauge(sample, actual, expected, dtype_name)
                or matches_float64_reference(op, sample, actual, expected, dtype_name, cpu_alternative)
                or matches_exact_reference(op, sample, actual, dtype_name)):
            raise


# Functions whose CPU kernels are less accurate than float64 somewhere (Cephes' j0 and y1 are off
# by 2e-7 near x = 5.4): ocl may instead match mpmath's value, computed to 30 digits.
EXACT_REFERENCES = {
    "special.bessel_j0": lambda mp, x: mp.besselj(0, x),
    "special.bessel_j1": lambda mp, x: mp.besselj(1, x),
    "special.bessel_y0": lambda mp, x: mp.bessely(0, x) if x >= 0 else mp.nan,
    "special.bessel_y1": lambda mp, x: mp.bessely(1, x) if x >= 0 else mp.nan,
}


def matches_exact_reference(op, sample, actual, dtype_name) -> bool:
    import mpmath
    import torch

    fn = EXACT_REFERENCES.get(op.name)
    if fn is None or sample.args or sample.kwargs or not isinstance(actual, torch.Tensor):
        return False
    mpmath.mp.dps = 30
    x = sample.input.detach().double().flatten().tolist()
    exact = torch.tensor([float(fn(mpmath.mp, v)) if v == v else float("nan") for v in x], dtype=torch.float64)
    exact = exact.view(sample.input.shape).to(actual.dtype)
    try:
        compare(actual, exact, dtype_name)
        return True
    except AssertionError:
        return False


def out_tensors(expected, index, device):
    """Outputs for the out= variant, shaped like `expected` (a tensor or a tuple of them): for odd
    sample indices empty ones, which the op must resize. None when a result is not a tensor."""
    import torch

    if isinstance(expected, torch.Tensor):
        shape = (0,) if index % 2 else expected.shape
        return torch.empty(shape, dtype=expected.dtype, device=device)
    if isinstance(expected, (tuple, list)) and expected and all(isinstance(e, torch.Tensor) for e in expected):
        return tuple(out_tensors(e, index, device) for e in expected)
    return None


def same_objects(result, out) -> bool:
    if isinstance(out, tuple):
        return isinstance(result, (tuple, list)) and len(result) == len(out) and all(
            r is o for r, o in zip(result, out))
    return result is out


def cpu_agrees(out, functional) -> bool:
    """True when the CPU's out= result holds its functional result: fft.ihfftn with one transformed
    dim, for one, passes its arguments to conj_physical_out swapped and never writes out."""
    import torch
    from torch.utils._pytree import tree_leaves

    try:
        for o, f in zip(tree_leaves(out), tree_leaves(functional), strict=True):
            if isinstance(f, torch.Tensor):
                torch.testing.assert_close(o, f, equal_nan=True, check_dtype=False, rtol=1e-5, atol=1e-5)
        return True
    except Exception:
        return False


def run_one(op, dtype_name, variant=None) -> tuple[str, str, list]:
    """(status, detail, failed samples) for one dtype column, or for float32 through the out=
    variant (variant OUT) or with non-contiguous samples (variant NONCONTIGUOUS). Status: pass,
    fallback, fail, skip."""
    import torch

    dtype = getattr(torch, dtype_name)
    if dtype not in op.supported_dtypes("cpu"):
        return "skip", "dtype not supported on CPU", []
    if variant == OUT and not op.supports_out:
        return "skip", "no out= variant", []
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:MAX_SAMPLES]
    except Exception as e:  # the OpInfo cannot build samples here
        return "skip", f"samples: {e!r}"[:300], []
    if not samples:
        return "skip", "no samples", []

    def check(index, sample):
        cpu_returns_out = True
        cpu_alternative = None
        if variant == NONCONTIGUOUS:
            contiguous = sample
            try:
                sample = sample.noncontiguous()
            except Exception:
                return False

            def cpu_alternative():
                torch.manual_seed(0)
                return op(contiguous.input, *contiguous.args, **contiguous.kwargs)
        try:
            torch.manual_seed(0)
            expected = op(sample.input, *sample.args, **sample.kwargs)
            if variant == OUT:
                cpu_out = out_tensors(expected, index, "cpu")
                if cpu_out is None:
                    return False
                torch.manual_seed(0)
                cpu_returns_out = same_objects(op(sample.input, *sample.args, **sample.kwargs, out=cpu_out), cpu_out)
                if values_checked(op, sample) and not cpu_agrees(cpu_out, expected):
                    return False  # PyTorch's own out= variant is broken for this sample
                expected = cpu_out
        except Exception:
            return False  # the CPU rejects this sample too
        inp, args, kwargs = sample_to_ocl(op, sample)
        if variant != OUT and not touches_ocl((inp, args, kwargs)):
            return False  # (through out= it does: the outputs are on ocl)
        torch.manual_seed(0)
        if variant == OUT:
            out = out_tensors(expected, index, "ocl")
            actual = op(inp, *args, **kwargs, out=out)
            if cpu_returns_out:
                assert same_objects(actual, out), "the out= variant did not return its out tensors"
            else:  # list outputs (split_with_sizes_copy's): the op returns nothing, as on the CPU
                assert actual is None, f"the out= variant returned {type(actual).__name__}, the CPU's None"
            actual = out
        else:
            actual = op(inp, *args, **kwargs)
        compare_result(op, sample, actual, expected, dtype_name, cpu_alternative)
        return True

    return over_samples(samples, check)


def run_compiled(op) -> tuple[str, str, list]:
    """float32 samples through torch.compile, each compiled afresh (a graph of the op alone)."""
    import torch

    if torch.float32 not in op.supported_dtypes("cpu"):
        return "skip", "dtype not supported on CPU", []
    try:
        samples = list(op.sample_inputs("cpu", torch.float32, requires_grad=False))[:MAX_COMPILED_SAMPLES]
    except Exception as e:
        return "skip", f"samples: {e!r}"[:300], []

    def check(index, sample):
        try:
            expected = op(sample.input, *sample.args, **sample.kwargs)
        except Exception:
            return False
        torch._dynamo.reset()
        compiled = torch.compile(lambda inp, args, kwargs: op(inp, *args, **kwargs), dynamic=False)
        try:
            actual = compiled(*sample_to_ocl(op, sample))
        except Exception as e:  # Inductor wraps what the op raised: report that
            cause = e
            while cause.__cause__ is not None and not isinstance(cause, NotImplementedError):
                cause = cause.__cause__
            raise cause from None
        compare_result(op, sample, actual, expected, "float32")
        return True

    return over_samples(samples, check)


def run_errors(op) -> tuple[str, str, list]:
    """The entry's error inputs on ocl: each must raise an exception of the type the CPU raises
    for it (device-side checks included: the device is synchronized inside the call). Error inputs
    the CPU accepts (written for another device) are left out."""
    import torch

    if op.error_inputs_func is None:
        return "skip", "no error inputs", []
    try:
        error_inputs = list(op.error_inputs("cpu"))
    except Exception as e:
        return "skip", f"error inputs: {e!r}"[:300], []

    def check(index, error_input):
        sample = error_input.sample_input
        try:
            op(sample.input, *sample.args, **sample.kwargs)
            return False  # the CPU accepts it
        except Exception as e:
            cpu_error = type(e)
        try:
            inp, args, kwargs = sample_to_ocl(op, sample, storages={})
            op(inp, *args, **kwargs)
            torch.ocl.synchronize()
        except Exception as e:
            if isinstance(e, NotImplementedError) and "DRAWBRIDGE_FALLBACK=error" in str(e):
                raise
            assert isinstance(e, cpu_error), f"raised {type(e).__name__} where the CPU raises {cpu_error.__name__}: {e}"
            return True
        raise AssertionError(f"no error where the CPU raises {cpu_error.__name__} ({error_input.error_regex!r})")

    status, detail, failed = over_samples(error_inputs, check)
    if status == "skip":
        detail = "the CPU accepts every error input"
    return status, detail.replace("samples", "error inputs").replace("sample ", "error input "), failed


def fallback_or_fail(e: Exception) -> tuple[str, str]:
    if isinstance(e, NotImplementedError) and "DRAWBRIDGE_FALLBACK=error" in str(e):
        return "fallback", str(e).split("'")[1] if "'" in str(e) else str(e)[:200]
    return "fail", f"{type(e).__name__}: {e}"[:400]


def map_tensors(x, fn, memo, device=None, key=None):
    """Rebuilds a sample's structure with fn applied to each tensor (one result per tensor object,
    so an argument passed twice stays one tensor) and device= arguments pointing at device."""
    import torch

    if isinstance(x, torch.Tensor):
        if id(x) not in memo:
            memo[id(x)] = fn(x)
        return memo[id(x)]
    if key == "device" and device is not None and isinstance(x, (str, torch.device)):
        return torch.device(device)
    if isinstance(x, (list, tuple)):
        return type(x)(map_tensors(v, fn, memo, device) for v in x)
    if isinstance(x, dict):
        return {k: map_tensors(v, fn, memo, device, k) for k, v in x.items()}
    return x


def grad_leaves(x, out):
    """The tensors of a rebuilt sample that require grad, in order, each once."""
    import torch

    if isinstance(x, torch.Tensor):
        if x.requires_grad and not any(x is t for t in out):
            out.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            grad_leaves(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            grad_leaves(v, out)
    return out


def differentiable_outputs(result):
    import torch

    if isinstance(result, torch.Tensor):
        return [result] if result.requires_grad and (result.is_floating_point() or result.is_complex()) else []
    if isinstance(result, (list, tuple)):
        return [t for r in result for t in differentiable_outputs(r)]
    return []


def sample_grads(op, sample, leaf, upstream=None, device=None):
    """Runs the op on the sample with every tensor rebuilt by leaf() (a fresh leaf that requires
    grad where the sample's tensor did) and returns (gradients of every such leaf, the upstream
    gradients used): deterministic random ones when upstream is None, else upstream's, moved."""
    import torch

    memo = {}
    inp, args, kwargs = (map_tensors(v, leaf, memo, device) for v in (sample.input, sample.args, sample.kwargs))
    if device is not None:
        kept = CPU_ARGUMENTS.get(op.name, ())
        args = tuple(sample.args[i] if i in kept else a for i, a in enumerate(args))
    leaves = grad_leaves([inp, args, kwargs], [])
    torch.manual_seed(0)
    result = op.gradcheck_wrapper(op.get_op(), inp, *args, **kwargs)
    outs = differentiable_outputs(sample.output_process_fn_grad(result))
    if not leaves or not outs:
        return None, None
    if upstream is None:
        gen = torch.Generator().manual_seed(0)
        upstream = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs]
    assert len(upstream) == len(outs), f"{len(outs)} differentiable outputs, the CPU had {len(upstream)}"
    grads = torch.autograd.grad(outs, leaves, [u.to(o.device, o.dtype) for u, o in zip(upstream, outs)],
                                allow_unused=True)
    return grads, upstream


def compare_grads(actual, expected) -> None:
    assert len(actual) == len(expected), f"{len(actual)} gradients, expected {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert (a is None) == (e is None), f"gradient {i}: {'None' if a is None else 'a tensor'}, expected " + (
            "None" if e is None else "a tensor")
        if e is not None:
            compare(a, e, "float32")


# Gradients chain several kernels and reductions, whose rounding an ill-conditioned backward
# formula amplifies (logcumsumexp's): where both backends are off the float64 gradient, ocl passes
# when it is no farther from it than this many times the CPU's float32 gradient is.
CPU_ERROR_FACTOR = 4


def within_cpu_error(actual, expected, reference, alternative=None) -> bool:
    """True when every ocl tensor is as close to the float64 one as the CPU's (up to
    CPU_ERROR_FACTOR; the larger error of `expected` and `alternative`, another CPU result of the
    same values), with NaN and infinities at the same places."""
    import torch

    for i, (a, e, r) in enumerate(zip(actual, expected, reference)):
        if e is None:
            continue
        a, e = a.cpu().double(), e.double()
        if a.shape != e.shape:
            return False
        finite = e.isfinite() & r.isfinite()
        if not torch.equal(a.isfinite(), e.isfinite()) or not torch.equal(a[~a.isfinite()].nan_to_num(),
                                                                          e[~e.isfinite()].nan_to_num()):
            return False
        if finite.any():
            ocl_error = (a[finite] - r[finite]).abs().max().item()
            cpu_error = (e[finite] - r[finite]).abs().max().item()
            if alternative is not None and alternative[i].shape == e.shape:
                cpu_error = max(cpu_error, (alternative[i].double() - r)[finite].abs().max().item())
            if not ocl_error <= CPU_ERROR_FACTOR * cpu_error:
                return False
    return True


def float64_grads_agreement(op, sample, actual, expected, upstream) -> str:
    """How ocl's gradients agree with the CPU's computed in float64: "float64" (rounded to float32,
    within the tolerance), "cpu error" (within_cpu_error), or "" (they do not)."""
    def float64_leaf(t):
        if not t.is_floating_point():
            return t.detach()
        return t.detach().double().requires_grad_(t.requires_grad)

    try:
        reference, _ = sample_grads(op, sample, float64_leaf, upstream)
        assert len(reference) == len(expected)
    except Exception:
        return ""
    try:
        compare_grads(actual, [r.to(e.dtype) if e is not None and r is not None else r
                               for r, e in zip(reference, expected)])
        return "float64"
    except Exception:
        pass
    try:
        return "cpu error" if within_cpu_error(actual, expected, reference) else ""
    except Exception:
        return ""


def run_backward(op) -> tuple[str, str, list]:
    """float32 gradients on ocl against the CPU's: (status, detail, failed samples) as run_one's.
    A sample whose backward fails on the CPU, or whose values are random, is left out; an entry
    with none left is a skip."""
    import torch

    if not op.supports_autograd:
        return "skip", "no autograd", []
    if torch.float32 not in op.supported_dtypes("cpu"):
        return "skip", "dtype not supported on CPU", []
    if not values_checked(op):
        return "skip", "random values", []
    try:
        samples = list(op.sample_inputs("cpu", torch.float32, requires_grad=True))[:MAX_SAMPLES]
    except Exception as e:
        return "skip", f"samples: {e!r}"[:300], []

    def cpu_leaf(t):
        return t.detach().requires_grad_(t.requires_grad)

    def ocl_leaf(t):
        return to_ocl(t).requires_grad_(t.requires_grad)

    loose = 0

    def check(index, sample):
        nonlocal loose
        if not values_checked(op, sample):
            return False
        try:
            expected, upstream = sample_grads(op, sample, cpu_leaf)
        except Exception:
            return False  # the CPU cannot run this sample's backward either
        if expected is None:
            return False  # nothing differentiable
        actual, _ = sample_grads(op, sample, ocl_leaf, upstream, "ocl")
        assert actual is not None, "no differentiable output on ocl"
        try:
            compare_grads(actual, expected)
        except AssertionError:
            agreement = float64_grads_agreement(op, sample, actual, expected, upstream)
            if not agreement:
                raise
            loose += agreement == "cpu error"
        return True

    status, detail, failed = over_samples(samples, check)
    if status == "skip":
        detail = "no sample whose backward runs on the CPU"
    elif status == "pass" and loose:
        detail += f" ({loose} within {CPU_ERROR_FACTOR}x the CPU's error)"
    return status, detail, failed


def columns() -> list[str]:
    """The columns to run: DRAWBRIDGE_OPINFO_COLUMNS (comma-separated) if set, else every column,
    with the compiled one where DRAWBRIDGE_OPINFO_COMPILED=1 (the children inherit both)."""
    chosen = [c for c in os.environ.get("DRAWBRIDGE_OPINFO_COLUMNS", "").split(",") if c]
    if chosen:
        unknown = set(chosen) - set(COLUMNS + [COMPILED])
        assert not unknown, f"unknown columns {sorted(unknown)}; the columns are {COLUMNS + [COMPILED]}"
        return chosen
    return COLUMNS + [COMPILED] if os.environ.get("DRAWBRIDGE_OPINFO_COMPILED") == "1" else COLUMNS


def child(names: list[str], out_path: str) -> None:
    os.environ["DRAWBRIDGE_FALLBACK"] = "error"
    import warnings

    warnings.simplefilter("ignore")
    import torch
    import drawbridge  # noqa: F401

    drawbridge.set_fallback_mode("error")
    from torch.testing._internal.common_methods_invocations import op_db

    ops = {op_key(op): op for op in op_db}
    with open(out_path, "a") as out:
        for name in names:
            out.write(json.dumps({"op": name, "started": True}) + "\n")
            out.flush()
            for column in columns():
                if column == BACKWARD:
                    status, detail, failed = run_backward(ops[name])
                elif column == COMPILED:
                    status, detail, failed = run_compiled(ops[name])
                elif column == ERRORS:
                    status, detail, failed = run_errors(ops[name])
                elif column in (OUT, NONCONTIGUOUS):
                    status, detail, failed = run_one(ops[name], "float32", column)
                else:
                    status, detail, failed = run_one(ops[name], column)
                out.write(json.dumps({"op": name, "dtype": column, "status": status, "detail": detail,
                                      "failed": failed}) + "\n")
                out.flush()


def all_op_names() -> list[str]:
    import torch  # noqa: F401
    from torch.testing._internal.common_methods_invocations import op_db

    return [op_key(op) for op in op_db]


def run_batch(batch: list[str], tmp: str) -> dict:
    """Runs `batch` in child processes, one after another, each going on after the op that
    crashed the one before it; returns {op: {column: [status, detail, failed samples]}}."""
    results: dict = {}
    while batch:
        path = os.path.join(tmp, f"batch{time.monotonic_ns()}.jsonl")
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--child", path, "--ops", ",".join(batch)],
            cwd=tmp, capture_output=True, text=True, timeout=3600,
        )
        started = []
        if os.path.exists(path):
            for line in open(path):
                rec = json.loads(line)
                if rec.get("started"):
                    started.append(rec["op"])
                else:
                    results.setdefault(rec["op"], {})[rec["dtype"]] = [rec["status"], rec["detail"], rec["failed"]]
        if proc.returncode == 0:
            break
        # The child died inside the last op it started: record a crash and go on after it.
        crashed = started[-1] if started else batch[0]
        for dtype_name in columns():
            results.setdefault(crashed, {}).setdefault(
                dtype_name, ["crash", f"child exited with {proc.returncode}: {proc.stderr[-300:]}", []])
        batch = batch[batch.index(crashed) + 1:]
    return results


def default_jobs() -> int:
    # PoCL builds each program on one thread: a cold run is bound by compilation, so one child
    # per core keeps every core busy; more would only add memory.
    return max(1, min(4, os.cpu_count() or 1))


def run(names: list[str], jobs: int = 1, max_chunk: int = 200) -> dict:
    """Runs the ops in batches of at most `max_chunk`, `jobs` child processes at a time (they
    share the disk caches of programs); returns {op: {column: [status, detail, failed samples]}}.
    Batches are few and long: each child pays for importing torch and op_db and for loading the
    OpenCL programs it uses from the caches (all 702 entries, warm, two at a time: 12 children
    took 320 s, 4 children 283 s); their count is a multiple of `jobs`, so that the children end
    together."""
    from concurrent.futures import ThreadPoolExecutor

    tmp = tempfile.mkdtemp(prefix="opinfo-")
    batch_count = max(jobs, jobs * -(-len(names) // (jobs * max_chunk)))
    chunk = max(1, -(-len(names) // batch_count))
    batches = [names[i:i + chunk] for i in range(0, len(names), chunk)]
    results: dict = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for part in pool.map(lambda batch: run_batch(batch, tmp), batches):
            results.update(part)
    return results


def summarize(results: dict) -> dict:
    counts = {d: {} for d in COLUMNS}
    for per_dtype in results.values():
        for d, (status, *_) in per_dtype.items():
            counts.setdefault(d, {})
            counts[d][status] = counts[d].get(status, 0) + 1
    return counts


def missing_operators(results: dict) -> list[tuple[str, int, int]]:
    """(operator, float32 entries it blocks forward, backward) for each operator named by a
    fallback, most blocking first."""
    blocked: dict = {}
    for per in results.values():
        for i, column in enumerate(("float32", BACKWARD)):
            status, detail, *_ = per.get(column, ["", ""])
            if status == "fallback":
                blocked.setdefault(detail, [0, 0])[i] += 1
    return sorted(((k, f, b) for k, (f, b) in blocked.items()), key=lambda r: (-(r[1] + r[2]), -r[2], r[0]))


def cell_detail(per: dict, column: str) -> str:
    status, detail, *_ = per.get(column, ["", ""])
    detail = detail if status in ("fallback", "fail", "crash") else ""
    return detail.replace("|", "\\|").replace("\n", " ")[:120]


def markdown(results: dict) -> str:
    counts = summarize(results)
    statuses = ["pass", "fallback", "fail", "crash", "skip"]
    columns = ["float32", BACKWARD] + DTYPES[1:] + [OUT, NONCONTIGUOUS, ERRORS]
    if any(COMPILED in per for per in results.values()):
        columns.append(COMPILED)
    lines = [
        "# Operator coverage",
        "",
        "Generated by `tests/opinfo/harness.py` from PyTorch's OpInfo database (`op_db`): every",
        "sample input of each entry runs on ocl with `DRAWBRIDGE_FALLBACK=error` and is compared with",
        "the CPU. **pass**: every sample matched, natively. **fallback**: the op needs an operator that has no",
        "native kernel yet (named in the last columns); on a user's machine it runs through the CPU",
        "fallback. **fail**: wrong result or error. **skip**: the CPU does not support the dtype.",
        "",
        "**backward**: the float32 gradients of every sample input that requires grad, for upstream",
        "gradients drawn once on the CPU, compared with the CPU's (forward and backward both native).",
        "An entry without autograd, with random results, or whose backward fails on the CPU is a skip.",
        "",
        "**out**: float32 samples through the op's `out=` variant (half with outputs of the right",
        "shape, half with empty ones to resize): the op must return its out tensors, holding the CPU's",
        "values. **noncontiguous**: float32 samples made non-contiguous (`SampleInput.noncontiguous()`).",
        "",
        "Expected failures (`tests/opinfo/expected_failures.txt`) name a column and, where only some",
        "samples fail, those samples' indices; the others must pass.",
        "",
        "**errors**: each of the entry's `error_inputs` that the CPU rejects must raise the CPU's",
        "exception type on ocl too (device-side checks included); an entry without error inputs is a skip.",
        "",
        "**compiled**: the first float32 samples through `torch.compile` (Inductor with drawbridge's",
        "OpenCL code generator), each compiled alone, compared with the CPU; ops Inductor does not",
        "generate code for run as ATen kernels inside the compiled graph, and must be native too.",
        "",
        "Native kernels take real dtypes. Complex tensors are copied, viewed (`view_as_real`,",
        "`view_as_complex`, `real`, `imag`), conjugated (`conj_physical`), built (`complex`,",
        "`polar`, `randn`), multiplied (`mul`), given their `sgn` and transformed (`torch.fft` through",
        "VkFFT) natively, which is what the backward of the FFTs and of `polar` needs; every other op",
        "given a complex operand runs through the CPU fallback (not measured here). FFT lengths past",
        "16384 are transformed by the CPU's pocketfft, explicitly (VkFFT's multi-pass kernels crash",
        "on PoCL).",
        "",
        "Linear algebra (`csrc/ops/factorizations.cpp`, `spectral.cpp`) factors each matrix in one",
        "work-item: Cholesky, LU, QR, triangular solves and what is built on them for matrices up",
        "to order 512, symmetric eigendecomposition and SVD (Jacobi) up to 64. Larger matrices are",
        "copied to the CPU, factored by its LAPACK and copied back, outside the fallback (so they",
        "count as native here); `linalg.eig` (complex results) and `ldl_factor` are fallbacks.",
        "",
        "| dtype | " + " | ".join(statuses) + " |",
        "|---|---|---|---|---|---|",
    ]
    for d in columns:
        c = counts.get(d, {})
        label = {BACKWARD: "float32 backward", COMPILED: "float32 compiled", ERRORS: "error inputs",
                 OUT: "float32 out=", NONCONTIGUOUS: "float32 noncontiguous"}.get(d, d)
        lines.append(f"| {label} | " + " | ".join(str(c.get(s, 0)) for s in statuses) + " |")
    missing = missing_operators(results)
    lines += ["", "Operators without a native kernel, by the number of float32 entries they block "
              "(the first missing operator of each entry):", "",
              "| operator | forward | backward |", "|---|---|---|"]
    lines += [f"| `{k}` | {f} | {b} |" for k, f, b in missing]
    lines += ["", "| OpInfo entry | " + " | ".join(columns)
              + " | first missing operator or failure (float32) | (backward) |",
              "|---|" + "---|" * (len(columns) + 2)]
    for name in sorted(results):
        per = results[name]
        cells = [per.get(d, ["?", ""])[0] for d in columns]
        lines.append(f"| `{name}` | " + " | ".join(cells)
                     + f" | {cell_detail(per, 'float32')} | {cell_detail(per, BACKWARD)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child")
    parser.add_argument("--ops", default="")
    parser.add_argument("--out", default="opinfo_report.json")
    parser.add_argument("--markdown")
    parser.add_argument("--from-report", help="only render --markdown from an existing report")
    parser.add_argument("--compiled", action="store_true", help="add the compiled column (torch.compile)")
    parser.add_argument("--columns", help="run only these columns (comma-separated)")
    parser.add_argument("--jobs", type=int, default=default_jobs(), help="child processes at a time")
    args = parser.parse_args()
    if args.compiled:
        os.environ["DRAWBRIDGE_OPINFO_COMPILED"] = "1"  # the children inherit it
    if args.columns:
        os.environ["DRAWBRIDGE_OPINFO_COLUMNS"] = args.columns
        columns()  # fails here on an unknown name, not in every child
    if args.from_report:
        results = json.load(open(args.from_report))["results"]
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(markdown(results))
        print(json.dumps(summarize(results), indent=1))
        return
    names = [n for n in args.ops.split(",") if n]
    if args.child:
        child(names, args.child)
        return
    names = names or all_op_names()
    start = time.time()
    results = run(names, args.jobs)
    report = {"seconds": round(time.time() - start, 1), "summary": summarize(results), "results": results}
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    print(json.dumps(report["summary"], indent=1))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(results))


if __name__ == "__main__":
    main()
