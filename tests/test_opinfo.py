"""Native ocl kernels measured against PyTorch's OpInfo database (tests/opinfo/harness.py).

Every OpInfo entry runs on ocl with DRAWBRIDGE_FALLBACK=error, in child processes, forward in
every dtype and backward in float32 (gradients compared with the CPU's). The test fails when an
entry gives a wrong result (or crashes) without being on the expected-failure list, and when
fewer entries pass natively in any column of docs/ops.md than this project has reached
(MIN_PASS).
The report is written to build/opinfo/report.json; `make ops-doc` turns it into docs/ops.md.

A second test runs GPU_CLASS_ENTRIES (the elementwise, reduction, scan, sort, indexing, matmul,
convolution, normalization and attention families) with DRAWBRIDGE_DEVICE_CLASS=gpu, so the
kernel variants chosen for GPUs are measured against OpInfo too.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS = os.path.join(ROOT, "tests", "opinfo", "harness.py")
EXPECTED = os.path.join(ROOT, "tests", "opinfo", "expected_failures.txt")
REPORT = os.path.join(ROOT, "build", "opinfo", "report.json")

# Raise this as kernels land; never lower it to make a failing run pass.
MIN_PASS = {"float32": 525, "backward": 418, "float16": 500, "bfloat16": 505, "int64": 402, "bool": 289,
            "errors": 200}


def expected_failures() -> dict:
    """'entry', 'entry:dtype' or 'entry:backward' -> reason, from expected_failures.txt."""
    out = {}
    for line in open(EXPECTED):
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, reason = line.partition("#")
            assert reason.strip(), f"expected failure without a reason: {line}"
            out[key.strip()] = reason.strip()
    return out


GPU_CLASS_ENTRIES = [
    "add", "mul", "div.no_rounding_mode", "div.floor_rounding", "remainder", "pow", "exp", "log", "sin", "tanh",
    "sigmoid", "nn.functional.gelu", "nn.functional.relu", "where", "clamp", "sum", "mean", "prod", "amax", "argmax",
    "max.reduction_with_dim", "std", "var", "linalg.vector_norm", "logsumexp", "cumsum", "cumprod", "softmax",
    "log_softmax", "sort", "topk", "index_select", "gather", "scatter_add", "index_put", "take", "masked_fill", "cat",
    "matmul", "mm", "bmm", "addmm", "baddbmm", "nn.functional.linear", "nn.functional.layer_norm",
    "nn.functional.conv2d", "nn.functional.embedding", "nn.functional.cross_entropy",
    "nn.functional.scaled_dot_product_attention", "nn.functional.max_pool2d", "nn.functional.avg_pool2d", "unique",
    "nonzero", "var_mean", "nansum", "any", "all", "cummax", "logcumsumexp", "searchsorted", "index_add",
    "scatter_reduce.amax", "flip", "roll", "tril", "nn.functional.interpolate.bilinear", "nn.functional.batch_norm",
    "nn.functional.group_norm",
]
MIN_GPU_CLASS_FLOAT32_PASS = 67  # of the 68; scaled_dot_product_attention's dropout samples fail

# Entries run through torch.compile in the suite (the compiled column; `make ops-doc` runs every
# entry): generated pointwise, reduction, indexing and normalization kernels, and the extern
# kernels inside compiled graphs.
COMPILED_ENTRIES = [
    "add", "mul", "div.no_rounding_mode", "div.floor_rounding", "remainder", "pow", "exp", "log", "sin", "tanh",
    "sigmoid", "nn.functional.gelu", "nn.functional.silu", "where", "clamp", "sum", "mean", "prod", "amax", "argmax",
    "argmin", "std", "var_mean", "linalg.vector_norm", "logsumexp", "softmax", "log_softmax", "cumsum", "sort",
    "index_select", "gather", "scatter_add", "index_put", "cat", "mm", "nn.functional.linear",
    "nn.functional.layer_norm", "nn.functional.embedding", "nn.functional.cross_entropy", "any", "all", "flip",
    "tril", "nn.functional.pad.constant", "nn.functional.max_pool2d", "nn.functional.conv2d", "to",
    "nn.functional.dropout",
]
MIN_COMPILED_PASS = 46  # of the 48: dropout is random (a skip), `to` copies to the CPU on purpose


def run_harness(report_path, ops=None, env=None):
    os.makedirs(os.path.dirname(report_path), exist_ok=True)
    args = [sys.executable, HARNESS, "--out", report_path] + (["--ops", ",".join(ops)] if ops else [])
    r = subprocess.run(args, cwd=os.path.dirname(report_path), capture_output=True, text=True, timeout=3600,
                       env=dict(os.environ, **(env or {})))
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.load(open(report_path))
    print(json.dumps(report["summary"], indent=1), f"\n{report['seconds']} s")
    return report


def unexpected_failures(results) -> list:
    expected = expected_failures()
    unexpected = []
    for name, per_dtype in results.items():
        for dtype, (status, detail) in per_dtype.items():
            if status in ("fail", "crash"):
                key = name if dtype == "float32" else f"{name}:{dtype}"
                if key not in expected and name not in expected:
                    unexpected.append(f"{key}: {detail[:200]}")
    return sorted(unexpected)


def stale_expected_failures(results) -> list:
    """Listed failures ('entry' or 'entry:column') whose entry ran in `results` and no longer
    fails in that column (any column for a whole entry): the list must shrink as entries pass."""
    stale = []
    for key in expected_failures():
        name, _, column = key.partition(":")
        per = results.get(name)
        if per is None or (column and column not in per):
            continue
        failing = ("fail", "crash", "fallback") if column == "compiled" else ("fail", "crash")
        statuses = [per[column][0]] if column else [status for status, _ in per.values()]
        if not any(status in failing for status in statuses):
            stale.append(key)
    return sorted(stale)


def test_opinfo_native_coverage():
    report = run_harness(REPORT)
    summary = report["summary"]
    unexpected = unexpected_failures(report["results"])
    assert not unexpected, "unexpected OpInfo failures:\n" + "\n".join(unexpected)
    stale = stale_expected_failures(report["results"])
    assert not stale, f"listed in expected_failures.txt but passing: {stale}"
    below = {column: summary[column].get("pass", 0) for column, floor in MIN_PASS.items()
             if summary[column].get("pass", 0) < floor}
    assert not below, f"fewer OpInfo entries pass natively than before: {below} (floors {MIN_PASS})"


def test_opinfo_gpu_class_paths():
    report = run_harness(REPORT.replace("report.json", "report_gpu_class.json"), GPU_CLASS_ENTRIES,
                         {"DRAWBRIDGE_DEVICE_CLASS": "gpu"})
    unexpected = unexpected_failures(report["results"])
    assert not unexpected, "unexpected OpInfo failures with the GPU paths:\n" + "\n".join(unexpected)
    stale = stale_expected_failures(report["results"])
    assert not stale, f"listed in expected_failures.txt but passing with the GPU paths: {stale}"
    passed = report["summary"]["float32"].get("pass", 0)
    assert passed >= MIN_GPU_CLASS_FLOAT32_PASS, f"only {passed} entries pass float32 with the GPU paths"


def test_opinfo_compiled_entries():
    """COMPILED_ENTRIES through torch.compile: results equal to the CPU's, nothing on the CPU."""
    report = run_harness(os.path.join(ROOT, "build", "opinfo", "compiled_report.json"), ops=COMPILED_ENTRIES,
                         env={"DRAWBRIDGE_OPINFO_COMPILED": "1"})
    compiled = {name: per["compiled"] for name, per in report["results"].items()}
    expected = expected_failures()
    unexpected = sorted(f"{name}: {detail[:200]}" for name, (status, detail) in compiled.items()
                        if status in ("fail", "crash", "fallback") and f"{name}:compiled" not in expected
                        and name not in expected)
    assert not unexpected, "\n".join(unexpected)
    stale = stale_expected_failures(report["results"])
    assert not stale, f"listed in expected_failures.txt but passing: {stale}"
    passed = sum(status == "pass" for status, _ in compiled.values())
    assert passed >= MIN_COMPILED_PASS, f"{passed} entries pass compiled, fewer than {MIN_COMPILED_PASS}"
