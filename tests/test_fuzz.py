"""The fuzzer of tests/fuzz_ops.py, seeded, for a bounded time in a child process.

DRAWBRIDGE_FUZZ_CASES sets how many cases it draws (default 300, the same ones on every run, so
their kernels come from the cache after the first; more on demand). The child must not crash,
and every case must give the CPU's exception type or values; the report names the number of
cases, ops and checks it made.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZER = os.path.join(ROOT, "tests", "fuzz_ops.py")
REPORT = os.path.join(ROOT, "build", "fuzz", "report.json")


def test_fuzzed_ops_match_the_cpu_and_never_crash():
    cases = int(os.environ.get("DRAWBRIDGE_FUZZ_CASES", "300"))
    os.makedirs(os.path.dirname(REPORT), exist_ok=True)
    r = subprocess.run([sys.executable, FUZZER, "--seed", "20261201", "--max-cases", str(cases), "--seconds", "3000",
                        "--out", REPORT, "--trace"], cwd=os.path.dirname(REPORT), capture_output=True, text=True, timeout=3600)
    last_case = [line for line in r.stderr.splitlines() if line.startswith("case ")][-1:]
    assert r.returncode == 0, f"the fuzzer's process died ({r.returncode}) in {last_case}:\n{r.stderr[-3000:]}"
    report = json.load(open(REPORT))
    print(r.stdout.splitlines()[0])
    assert report["cases"] == cases, r.stdout
    assert not report["mismatches"], r.stdout
