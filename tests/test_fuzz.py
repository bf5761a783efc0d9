"""The fuzzer of tests/fuzz_ops.py, seeded, for a bounded time in a child process.

DRAWBRIDGE_FUZZ_SECONDS sets its length (default 90 s; longer runs on demand). The child must
not crash, and every case must give the CPU's exception type or values; the report names the
number of cases, ops and checks it made.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZER = os.path.join(ROOT, "tests", "fuzz_ops.py")
REPORT = os.path.join(ROOT, "build", "fuzz", "report.json")


def test_fuzzed_ops_match_the_cpu_and_never_crash():
    seconds = float(os.environ.get("DRAWBRIDGE_FUZZ_SECONDS", "90"))
    os.makedirs(os.path.dirname(REPORT), exist_ok=True)
    r = subprocess.run([sys.executable, FUZZER, "--seed", "20261201", "--seconds", str(seconds), "--out", REPORT],
                       cwd=os.path.dirname(REPORT), capture_output=True, text=True, timeout=seconds + 900)
    assert r.returncode == 0, f"the fuzzer's process died ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    report = json.load(open(REPORT))
    print(r.stdout.splitlines()[0])
    assert report["cases"] >= 100, r.stdout
    assert not report["mismatches"], r.stdout
