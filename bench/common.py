"""Shared helpers for the benchmarks: timing, a printed table, and a JSON file of the results."""
import json
import math
import os
import platform
import time

import torch

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def sync(device: str) -> None:
    if device.startswith("ocl"):
        torch.ocl.synchronize()
    elif device.startswith("cuda"):
        torch.cuda.synchronize()


def time_block(fn, device: str, calls: int) -> float:
    """Seconds per call of `calls` back-to-back calls of fn, synchronized at the end."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync(device)
    return (time.perf_counter() - start) / calls


def time_it(fn, device: str, repeat: int = 5, warmup: int = 1, calls: int = 1) -> float:
    """Best wall-clock seconds per call of fn over `repeat` blocks of `calls` back-to-back calls,
    synchronized before and after each block. calls > 1 measures a stream of ops, as a model
    issues them (and as torch.utils.benchmark times CUDA ops); calls=1 adds the device's
    launch-to-completion round trip to every call."""
    for _ in range(warmup):
        fn()
    sync(device)
    return min(time_block(fn, device, calls) for _ in range(repeat))


SETTLE_SECONDS = 0.1


def time_interleaved(fns: dict, repeat: int = 5, warmup: int = 2) -> dict:
    """Best seconds per call of each device's fn (a dict device -> fn), the devices' calls taken
    in turn, so that a slow spell of a shared machine falls on every device alike instead of on
    whichever ran then."""
    for device, fn in fns.items():
        for _ in range(warmup):
            fn()
        sync(device)
    best = {device: math.inf for device in fns}
    for _ in range(repeat):
        for device, fn in fns.items():
            best[device] = min(best[device], time_block(fn, device, 1))
            # The CPU backend's OpenMP threads spin for a while after their last parallel region,
            # on the cores an OpenCL CPU device then needs: let them go to sleep before the next
            # device's turn, so that neither is timed against the other's idle threads (without
            # the pause, PoCL's 64-channel conv layer step took 66-67 ms here, with it 57-59; the
            # CPU's 45-47 either way).
            time.sleep(SETTLE_SECONDS)
    return best


def calls_for(fn, device: str, seconds: float, at_least: int = 1) -> int:
    """How many back-to-back calls of fn last `seconds`, so that the one synchronization of a
    block is a small part of it (torch.utils.benchmark's blocked_autorange also sizes its blocks
    by time). Also warms fn up."""
    fn()
    sync(device)
    return max(at_least, math.ceil(seconds / max(time_block(fn, device, at_least), 1e-9)))


def environment() -> dict:
    env = {"torch": torch.__version__, "python": platform.python_version(), "machine": platform.machine(),
           "cpu_threads": torch.get_num_threads()}
    if torch.ocl.is_available():
        p = torch.ocl.get_device_properties()
        env["ocl_device"] = f"{p.name} ({p.platform_name}, driver {p.driver_version})"
    return env


def report(name: str, columns: list[str], rows: list[dict]) -> str:
    widths = [max(len(c), *(len(f"{r[c]}") for r in rows)) for c in columns]
    print(" | ".join(c.rjust(w) for c, w in zip(columns, widths)))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(f"{r[c]}".rjust(w) for c, w in zip(columns, widths)))
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"{name}.json")
    with open(path, "w") as f:
        json.dump({"benchmark": name, "environment": environment(), "rows": rows}, f, indent=1)
    print(f"\nwrote {path}")
    return path
