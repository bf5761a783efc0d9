"""Measures native ocl kernels against PyTorch's OpInfo database.

For each OpInfo entry and dtype, the sample inputs are built on the CPU, run on the CPU for the
expected result, moved to ocl and run there with DRAWBRIDGE_FALLBACK=error, so that only native
kernels count. Ops run in child processes, so a crash loses one op, not the run.

A result that differs from the CPU's still passes in two cases, both checked, not assumed:
positions of equal elements returned in another order by an op that leaves it unspecified (an
unstable sort, a selection) when they select equal elements; and a floating result that agrees
with the op computed in float64 on the CPU (where the CPU's float32 kernel is the less accurate).

    python tests/opinfo/harness.py --out report.json [--ops add,mul] [--markdown docs/ops.md]
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

DTYPES = ["float32", "float16", "bfloat16", "int64", "bool"]
MAX_SAMPLES = 6
# float32 kernels use OpenCL's math library, whose functions are within a few ulp, not
# correctly rounded: allow 1e-5 relative error (torch.testing's default is 1.3e-6).
# Keyed by the dtype of the result (integer inputs of float ops give float results).
TOLERANCES = {"float32": (1e-5, 1e-5), "float64": (1e-7, 1e-7), "float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-3)}


def op_key(op) -> str:
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


# Results that are random or uninitialised: compared by shape, dtype and device only.
UNCHECKED_VALUES = ("empty", "rand", "normal", "bernoulli", "multinomial", "dropout", "uniform",
                    "exponential", "geometric", "log_normal", "cauchy")


def to_ocl(x, key=None):
    """Moves a sample to ocl, keeping each tensor's storage, offset and strides (so views and
    non-contiguous inputs stay what they are), and pointing device= arguments at ocl."""
    import torch

    if isinstance(x, torch.Tensor):
        x = x.detach()
        if x.layout != torch.strided:
            return x.to("ocl")
        storage = x.untyped_storage().ocl()
        return torch.empty(0, dtype=x.dtype, device="ocl").set_(storage, x.storage_offset(), x.size(), x.stride())
    if key == "device" and isinstance(x, (str, torch.device)):
        return torch.device("ocl")
    if isinstance(x, (list, tuple)):
        return type(x)(to_ocl(v) for v in x)
    if isinstance(x, dict):
        return {k: to_ocl(v, k) for k, v in x.items()}
    return x


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


def matches_float64_reference(op, sample, actual, expected, dtype_name) -> bool:
    """True when ocl agrees with the op computed in float64 on the CPU and rounded to the result's
    dtype: the CPU's own float32 kernel is then the less accurate one (digamma near its poles)."""
    import torch

    if dtype_name not in ("float32", "float16", "bfloat16"):
        return False

    def up(x):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            return x.double()
        if isinstance(x, (list, tuple)):
            return type(x)(up(v) for v in x)
        if isinstance(x, dict):
            return {k: up(v) for k, v in x.items()}
        return x

    def down(r, e):
        if isinstance(r, torch.Tensor) and isinstance(e, torch.Tensor):
            return r.to(e.dtype)
        if isinstance(r, (list, tuple)) and isinstance(e, (list, tuple)):
            return type(e)(down(a, b) for a, b in zip(r, e))
        return r

    try:
        torch.manual_seed(0)
        reference = down(op(up(sample.input), *up(sample.args), **up(sample.kwargs)), expected)
        compare(actual, reference, dtype_name)
        return True
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


def run_one(op, dtype_name) -> tuple[str, str]:
    """(status, detail): pass, fallback, fail, skip."""
    import torch

    dtype = getattr(torch, dtype_name)
    if dtype not in op.supported_dtypes("cpu"):
        return "skip", "dtype not supported on CPU"
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:MAX_SAMPLES]
    except Exception as e:  # the OpInfo cannot build samples here
        return "skip", f"samples: {e!r}"[:300]
    if not samples:
        return "skip", "no samples"
    ran = 0
    for sample in samples:
        try:
            torch.manual_seed(0)
            expected = op(sample.input, *sample.args, **sample.kwargs)
        except Exception:
            continue  # the CPU rejects this sample too
        try:
            inp, args, kwargs = to_ocl(sample.input), to_ocl(sample.args), to_ocl(sample.kwargs)
            torch.manual_seed(0)
            actual = op(inp, *args, **kwargs)
            try:
                compare(actual, expected, dtype_name, values=not any(w in op.name for w in UNCHECKED_VALUES))
            except AssertionError:
                if not (same_selection(op.name, sample, actual, expected)
                        or matches_float64_reference(op, sample, actual, expected, dtype_name)):
                    raise
            ran += 1
        except NotImplementedError as e:
            if "DRAWBRIDGE_FALLBACK=error" in str(e):
                return "fallback", str(e).split("'")[1] if "'" in str(e) else str(e)[:200]
            return "fail", f"NotImplementedError: {e}"[:400]
        except Exception as e:
            return "fail", f"{type(e).__name__}: {e}"[:400]
    return ("pass", f"{ran} samples") if ran else ("skip", "CPU rejected every sample")


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
            for dtype_name in DTYPES:
                status, detail = run_one(ops[name], dtype_name)
                out.write(json.dumps({"op": name, "dtype": dtype_name, "status": status, "detail": detail}) + "\n")
                out.flush()


def all_op_names() -> list[str]:
    import torch  # noqa: F401
    from torch.testing._internal.common_methods_invocations import op_db

    return [op_key(op) for op in op_db]


def run(names: list[str], workers: int = 1, chunk: int = 60) -> dict:
    """Runs the ops in child processes; returns {op: {dtype: [status, detail]}}."""
    results: dict = {}
    pending = list(names)
    tmp = tempfile.mkdtemp(prefix="opinfo-")
    while pending:
        batch, pending = pending[:chunk], pending[chunk:]
        while batch:
            path = os.path.join(tmp, f"batch{time.monotonic_ns()}.jsonl")
            proc = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--child", path, "--ops", ",".join(batch)],
                cwd=tmp, capture_output=True, text=True, timeout=3600,
            )
            started, done = [], set()
            if os.path.exists(path):
                for line in open(path):
                    rec = json.loads(line)
                    if rec.get("started"):
                        started.append(rec["op"])
                    else:
                        results.setdefault(rec["op"], {})[rec["dtype"]] = [rec["status"], rec["detail"]]
                        if len(results[rec["op"]]) == len(DTYPES):
                            done.add(rec["op"])
            if proc.returncode == 0:
                break
            # The child died inside the last op it started: record a crash and go on after it.
            crashed = started[-1] if started else batch[0]
            for dtype_name in DTYPES:
                results.setdefault(crashed, {}).setdefault(
                    dtype_name, ["crash", f"child exited with {proc.returncode}: {proc.stderr[-300:]}"])
            batch = batch[batch.index(crashed) + 1:]
    return results


def summarize(results: dict) -> dict:
    counts = {d: {} for d in DTYPES}
    for per_dtype in results.values():
        for d, (status, _) in per_dtype.items():
            counts[d][status] = counts[d].get(status, 0) + 1
    return counts


def markdown(results: dict) -> str:
    counts = summarize(results)
    lines = [
        "# Operator coverage",
        "",
        "Generated by `tests/opinfo/harness.py` from PyTorch's OpInfo database (`op_db`): each entry's",
        "sample inputs run on ocl with `DRAWBRIDGE_FALLBACK=error` and are compared with the CPU.",
        "**pass**: every sample matched, natively. **fallback**: the op needs an operator that has no",
        "native kernel yet (named in the last column); on a user's machine it runs through the CPU",
        "fallback. **fail**: wrong result or error. **skip**: the CPU does not support the dtype.",
        "",
        "| dtype | " + " | ".join(["pass", "fallback", "fail", "crash", "skip"]) + " |",
        "|---|---|---|---|---|---|",
    ]
    for d in DTYPES:
        c = counts[d]
        lines.append(f"| {d} | " + " | ".join(str(c.get(s, 0)) for s in ["pass", "fallback", "fail", "crash", "skip"]) + " |")
    lines += ["", "| OpInfo entry | " + " | ".join(DTYPES) + " | first missing operator or failure (float32) |",
              "|---|" + "---|" * (len(DTYPES) + 1)]
    for name in sorted(results):
        per = results[name]
        cells = [per.get(d, ["?", ""])[0] for d in DTYPES]
        note = per.get("float32", ["", ""])
        detail = note[1] if note[0] in ("fallback", "fail", "crash") else ""
        detail = detail.replace("|", "\\|").replace("\n", " ")[:120]
        lines.append(f"| `{name}` | " + " | ".join(cells) + f" | {detail} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child")
    parser.add_argument("--ops", default="")
    parser.add_argument("--out", default="opinfo_report.json")
    parser.add_argument("--markdown")
    parser.add_argument("--from-report", help="only render --markdown from an existing report")
    args = parser.parse_args()
    if args.from_report:
        with open(args.markdown, "w") as f:
            f.write(markdown(json.load(open(args.from_report))["results"]))
        return
    names = [n for n in args.ops.split(",") if n]
    if args.child:
        child(names, args.child)
        return
    names = names or all_op_names()
    start = time.time()
    results = run(names)
    report = {"seconds": round(time.time() - start, 1), "summary": summarize(results), "results": results}
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    print(json.dumps(report["summary"], indent=1))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(results))


if __name__ == "__main__":
    main()
