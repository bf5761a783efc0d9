"""Runs a Python script as `python SCRIPT ARGS...` would, with the CPU fallback counting, then
reports what the script did on the device: the operators that fell back to the CPU (calls and
the time they took), kernel launches, the kernels that took the most device time (from OpenCL's
profiling events), the peak device memory and the wall time. The exit status
is the script's when it fails, else 1 when an operator fell back (unless --allow-fallback), else 0:
a CI job can gate on "no fallback"."""

from __future__ import annotations

import json
import os
import runpy
import sys
import time
import traceback

import torch

from .. import _C
from . import human_bytes

NAME = "check"
HELP = "run a script and report which operators fell back to the CPU (the migration report)"


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="write the report as JSON (to stdout, after the script)")
    parser.add_argument("--allow-fallback", action="store_true", help="exit 0 even when operators fell back")
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs="*", help="its arguments (put -- before them if they start with -)")


def run_script(path: str, args: list[str]) -> int:
    """Runs the script as __main__ in this process; its exit status."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        runpy.run_path(path, run_name="__main__")
        return 0
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Exception:  # noqa: BLE001 -- reported like Python reports it, then the report follows
        traceback.print_exc()
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


TOP_KERNELS = 10


def report_of(status: int, seconds: float, launches: int) -> dict:
    uses = _C._fallback_uses()
    devices = range(torch.ocl.device_count())
    kernels = sorted(_C._kernel_times().items(), key=lambda kv: -kv[1][1])
    return {
        "exit_status": status,
        "wall_s": round(seconds, 3),
        "kernel_launches": launches,
        "kernel_device_s": round(sum(secs for _, (_, secs) in kernels), 6),
        "top_kernels": {name: {"launches": n, "seconds": round(secs, 6)} for name, (n, secs) in kernels[:TOP_KERNELS]},
        "fallback": {op: {"calls": calls, "seconds": round(secs, 6)}
                     for op, (calls, secs) in sorted(uses.items(), key=lambda kv: -kv[1][1])},
        "peak_memory_bytes": {f"ocl:{i}": torch.ocl.max_memory_allocated(i) for i in devices},
    }


def print_report(report: dict) -> None:
    print("\n== drawbridge check", file=sys.stderr)
    print(f"script exit status {report['exit_status']}, {report['wall_s']} s, "
          f"{report['kernel_launches']} kernel launches", file=sys.stderr)
    for device, peak in report["peak_memory_bytes"].items():
        print(f"peak memory on {device}: {human_bytes(peak)}", file=sys.stderr)
    if report["top_kernels"]:
        print(f"device time in kernels: {report['kernel_device_s'] * 1e3:.2f} ms; the most:", file=sys.stderr)
        for name, k in report["top_kernels"].items():
            print(f"  {name:50s} {k['launches']:8d} launches {k['seconds'] * 1e3:10.2f} ms", file=sys.stderr)
    if not report["fallback"]:
        print("no operator fell back to the CPU", file=sys.stderr)
        return
    print(f"operators that fell back to the CPU: {len(report['fallback'])}", file=sys.stderr)
    for op, use in report["fallback"].items():
        print(f"  {op:50s} {use['calls']:8d} calls {use['seconds'] * 1e3:10.2f} ms", file=sys.stderr)


def run(args) -> int:
    from .. import get_fallback_mode, reset_fallback_report, set_fallback_mode

    mode = get_fallback_mode()
    if mode == "warn":
        set_fallback_mode("silent")  # the report lists them all at the end
    reset_fallback_report()
    for i in range(torch.ocl.device_count()):
        torch.ocl.reset_peak_memory_stats(i)
    _C._reset_kernel_times()
    _C._set_kernel_timing(True)
    launches, start = _C._launch_count(), time.perf_counter()
    status = run_script(args.script, args.args)
    for i in range(torch.ocl.device_count()):
        torch.ocl.synchronize(i)
    report = report_of(status, time.perf_counter() - start, _C._launch_count() - launches)
    _C._set_kernel_timing(False)
    set_fallback_mode(mode)
    if args.json:
        sys.stdout.flush()
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    if status != 0:
        return status
    return 1 if report["fallback"] and not args.allow_fallback else 0
