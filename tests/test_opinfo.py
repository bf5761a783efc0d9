"""Native ocl kernels measured against PyTorch's OpInfo database (tests/opinfo/harness.py).

Every OpInfo entry runs on ocl with DRAWBRIDGE_FALLBACK=error, in child processes, forward in
every dtype and backward in float32 (gradients compared with the CPU's). The test fails when an
entry gives a wrong result (or crashes) without being on the expected-failure list, and when
fewer entries pass float32 natively than this project has reached (MIN_FLOAT32_PASS forward,
MIN_FLOAT32_BACKWARD_PASS backward).
The report is written to build/opinfo/report.json; `make ops-doc` turns it into docs/ops.md.
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
MIN_FLOAT32_PASS = 525
MIN_FLOAT32_BACKWARD_PASS = 418


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


def test_opinfo_native_coverage():
    os.makedirs(os.path.dirname(REPORT), exist_ok=True)
    r = subprocess.run([sys.executable, HARNESS, "--out", REPORT], cwd=os.path.dirname(REPORT),
                       capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.load(open(REPORT))
    summary, results = report["summary"], report["results"]
    print(json.dumps(summary, indent=1), f"\n{report['seconds']} s")
    expected = expected_failures()
    unexpected = []
    for name, per_dtype in results.items():
        for dtype, (status, detail) in per_dtype.items():
            if status in ("fail", "crash"):
                key = name if dtype == "float32" else f"{name}:{dtype}"
                if key not in expected and name not in expected:
                    unexpected.append(f"{key}: {detail[:200]}")
    assert not unexpected, "unexpected OpInfo failures:\n" + "\n".join(sorted(unexpected))
    passed = summary["float32"].get("pass", 0)
    assert passed >= MIN_FLOAT32_PASS, f"only {passed} OpInfo entries pass float32 natively"
    passed = summary["backward"].get("pass", 0)
    assert passed >= MIN_FLOAT32_BACKWARD_PASS, f"only {passed} OpInfo entries pass float32 backward natively"
