"""Native ocl kernels measured against PyTorch's OpInfo database (tests/opinfo/harness.py).

Every sample input of every OpInfo entry runs on ocl with DRAWBRIDGE_FALLBACK=error, in child
processes: forward in ten dtypes, float32 backward (gradients compared with the CPU's), float32
through the out= variant and with non-contiguous inputs, and the entry's error inputs (the CPU's
exception type). The test fails when an entry fails in a column (or crashes) that
expected_failures.txt does not list, or in samples beyond those it lists; when a listed failure
passes; and when fewer entries pass natively in any column of docs/ops.md than this project has
reached (MIN_PASS).
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

# Raise this as kernels land; never lower it to make a failing run pass. (Backward went from 418
# to 417 when every sample began to run instead of the first six: linalg.norm's later samples need
# an SVD, interpolate.area's a 3-d adaptive pool, while SDPA and tensor_split began to pass.)
MIN_PASS = {"float32": 659, "backward": 522, "float16": 534, "bfloat16": 540, "int64": 459, "bool": 342,
            "float64": 659, "int32": 448, "int16": 440, "int8": 440, "uint8": 447, "out": 328,
            "noncontiguous": 658, "errors": 208}


def expected_failures() -> dict:
    """From expected_failures.txt: 'entry' (every column) or 'entry:column' -> the indices of
    the samples expected to fail (None: the whole column), each line with its reason."""
    out = {}
    for line in open(EXPECTED):
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, reason = line.partition("#")
            assert reason.strip(), f"expected failure without a reason: {line}"
            key, samples = key.strip(), None
            if key.endswith("]"):
                key, _, listed = key[:-1].partition("[")
                key, samples = key.strip(), {int(i) for i in listed.split(",")}
            out[key] = samples
    return out


def failing(column, status, name) -> bool:
    # The COMPILED_ENTRIES must also be native compiled: a fallback inside their graphs is a failure.
    if column == "compiled" and status == "fallback":
        return name in COMPILED_ENTRIES
    return status in ("fail", "crash")


def unexpected_failures(results, columns=None) -> list:
    """Failures in `results` (of `columns`, default all) that expected_failures.txt does not
    list: an unlisted entry:column, or samples beyond those listed for it."""
    expected = expected_failures()
    unexpected = []
    for name, per_column in results.items():
        for column, (status, detail, failed) in per_column.items():
            if (columns and column not in columns) or not failing(column, status, name) or name in expected:
                continue
            key = f"{name}:{column}"
            if key not in expected:
                unexpected.append(f"{key}: {detail[:200]}")
            elif expected[key] is not None and (status == "crash" or not set(failed) <= expected[key]):
                unexpected.append(f"{key} {sorted(set(failed) - expected[key])}: {detail[:200]}")
    return sorted(unexpected)


def stale_expected_failures(results) -> list:
    """Listed failures whose entry ran in `results` and no longer fails in that column (any
    column for a whole entry), or listed samples that pass: the list must shrink as they pass."""
    stale = []
    for key, samples in expected_failures().items():
        name, _, column = key.partition(":")
        per = results.get(name)
        if per is None or (column and column not in per):
            continue
        if not column:
            if not any(failing(c, status, name) for c, (status, *_) in per.items()):
                stale.append(key)
            continue
        status, _, failed = per[column]
        if not failing(column, status, name):
            stale.append(key)
        elif samples is not None and status != "crash" and not samples <= set(failed):
            stale.append(f"{key} {sorted(samples - set(failed))}")
    return sorted(stale)


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
MIN_GPU_CLASS_FLOAT32_PASS = 68  # all of them (attention samples with dropout compare shapes only)

# Every entry runs through torch.compile (its first float32 samples); these must also run natively
# there (generated pointwise, reduction, indexing and normalization kernels, and the extern kernels
# inside compiled graphs), where elsewhere a fallback is a missing operator, as in eager mode.
COMPILED_ENTRIES = [
    "add", "mul", "div.no_rounding_mode", "div.floor_rounding", "remainder", "pow", "exp", "log", "sin", "tanh",
    "sigmoid", "nn.functional.gelu", "nn.functional.silu", "where", "clamp", "sum", "mean", "prod", "amax", "argmax",
    "argmin", "std", "var_mean", "linalg.vector_norm", "logsumexp", "softmax", "log_softmax", "cumsum", "sort",
    "index_select", "gather", "scatter_add", "index_put", "cat", "mm", "nn.functional.linear",
    "nn.functional.layer_norm", "nn.functional.embedding", "nn.functional.cross_entropy", "any", "all", "flip",
    "tril", "nn.functional.pad.constant", "nn.functional.max_pool2d", "nn.functional.conv2d", "to",
    "nn.functional.dropout",
]
MIN_COMPILED_PASS = 658  # entries that pass compiled (the compiled column of docs/ops.md)


def run_harness(report_path, ops=None, env=None):
    os.makedirs(os.path.dirname(report_path), exist_ok=True)
    args = [sys.executable, HARNESS, "--out", report_path] + (["--ops", ",".join(ops)] if ops else [])
    r = subprocess.run(args, cwd=os.path.dirname(report_path), capture_output=True, text=True, timeout=3600,
                       env=dict(os.environ, **(env or {})))
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.load(open(report_path))
    print(json.dumps(report["summary"], indent=1), f"\n{report['seconds']} s")
    return report


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


def test_opinfo_compiled():
    """Every entry's first float32 samples through torch.compile, each compiled alone: results equal
    to the CPU's, and nothing of the COMPILED_ENTRIES on the CPU."""
    report = run_harness(os.path.join(ROOT, "build", "opinfo", "compiled_report.json"),
                         env={"DRAWBRIDGE_OPINFO_COLUMNS": "compiled"})
    unexpected = unexpected_failures(report["results"], ["compiled"])
    assert not unexpected, "\n".join(unexpected)
    stale = stale_expected_failures(report["results"])
    assert not stale, f"listed in expected_failures.txt but passing: {stale}"
    assert {name for name in COMPILED_ENTRIES if name in report["results"]} == set(COMPILED_ENTRIES)
    passed = report["summary"]["compiled"].get("pass", 0)
    assert passed >= MIN_COMPILED_PASS, f"{passed} entries pass compiled, fewer than {MIN_COMPILED_PASS}"
