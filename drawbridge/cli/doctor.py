"""Every OpenCL platform and device with what matters to Drawbridge, which of them are ocl:N,
the versions, the kernel cache and the environment in effect; then checks, each with its fix.
The exit status is 1 when the backend cannot work (no device, or a device that computes wrongly)."""

from __future__ import annotations

import json
import os
import sys

import torch

from .. import _C, __version__
from . import human_bytes

NAME = "doctor"
HELP = "check that the OpenCL devices are seen and work"

# Variables of other projects that change what Drawbridge does (docs/env.md).
OTHER_VARIABLES = ("OCL_ICD_VENDORS", "OPENCL_VENDOR_PATH", "TORCHINDUCTOR_CACHE_DIR", "TORCH_DEVICE_BACKEND_AUTOLOAD")
ICD_FOLDER = "/etc/OpenCL/vendors"


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")


def _folder_size(path: str) -> tuple[int, int]:
    files = size = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                size += os.path.getsize(os.path.join(root, name))
                files += 1
            except OSError:
                pass
    return files, size


def _cache() -> dict:
    path = _C._program_cache_dir()
    info = {"path": path or None, "files": 0, "bytes": 0, "writable": False}
    if not path:
        return info
    files, size = _folder_size(path)
    probe = path
    while probe and not os.path.exists(probe):  # the cache folder is made on first write
        probe = os.path.dirname(probe)
    writable = os.path.isdir(probe) and os.access(probe, os.W_OK | os.X_OK)
    info.update(files=files, bytes=size, writable=writable)
    return info


def _smoke_test(index: int) -> str | None:
    """A few ops on the device against the CPU; None when they agree, else what went wrong."""
    try:
        x = torch.arange(1000, dtype=torch.float32).reshape(10, 100) / 100
        expected = (x.sin() @ x.t()).softmax(-1).sum(0)
        got = (x.to(f"ocl:{index}").sin() @ x.to(f"ocl:{index}").t()).softmax(-1).sum(0).cpu()
        if not torch.allclose(got, expected, rtol=1e-4, atol=1e-5):
            return f"results differ from the CPU's by up to {(got - expected).abs().max().item():.3g}"
    except Exception as e:  # noqa: BLE001 -- the report says what failed
        return f"{type(e).__name__}: {e}"
    return None


def collect() -> dict:
    listed = _C._listed_devices()
    devices = []
    for entry in listed:
        device = dict(entry)
        if entry["ocl_index"] is not None:
            device["properties"] = _C._device_properties(entry["ocl_index"])
            device["smoke_test"] = _smoke_test(entry["ocl_index"]) or "passed"
            # PoCL keeps its own cache of builds; our cache then holds no binaries for it.
            device["binaries_cached"] = _C._program_binaries_cached(entry["ocl_index"])
        devices.append(device)
    icd_files = sorted(os.listdir(ICD_FOLDER)) if os.path.isdir(ICD_FOLDER) else []
    report = {
        "torch": torch.__version__,
        "drawbridge": __version__,
        "python": sys.version.split()[0],
        "devices": devices,
        "icd_files": icd_files,
        "cache": _cache(),
        "environment": {k: v for k, v in sorted(os.environ.items())
                        if k.startswith("DRAWBRIDGE_") or k in OTHER_VARIABLES},
    }
    report["checks"] = _checks(report)
    report["ok"] = not any(c["fatal"] for c in report["checks"])
    return report


def _check(problem: str, fix: str, fatal: bool) -> dict:
    return {"problem": problem, "fix": fix, "fatal": fatal}


def _checks(report: dict) -> list[dict]:
    checks = []
    selected = [d for d in report["devices"] if d["ocl_index"] is not None]
    if not report["devices"]:
        if not report["icd_files"] and "OCL_ICD_VENDORS" not in report["environment"]:
            checks.append(_check(f"no OpenCL driver is installed ({ICD_FOLDER} lists none)",
                                 "install your GPU vendor's OpenCL driver, or PoCL for the CPU: "
                                 "apt-get install pocl-opencl-icd", True))
        else:
            checks.append(_check(f"no OpenCL device: {_C._no_device_reason()}",
                                 "check the driver with `clinfo -l`", True))
    elif not selected:
        checks.append(_check(f"no device is selected: {_C._no_device_reason()}",
                             "set DRAWBRIDGE_DEVICES to a name `clinfo -l` shows, or unset it", True))
    for d in selected:
        props, where = d["properties"], f"ocl:{d['ocl_index']}"
        if d["smoke_test"] != "passed":
            checks.append(_check(f"{where} fails a small computation: {d['smoke_test']}",
                                 "update the OpenCL driver; report it with this output if it persists", True))
        if not props["supports_fp64"]:
            checks.append(_check(f"{where} has no float64 (cl_khr_fp64): float64 tensors raise TypeError there",
                                 "use float32 on this device (or a device with fp64)", False))
    cache = report["cache"]
    if cache["path"] and not cache["writable"]:
        checks.append(_check(f"the kernel cache {cache['path']} is not writable: every run compiles its kernels again",
                             "set DRAWBRIDGE_CACHE_DIR to a writable folder", False))
    if not cache["path"]:
        checks.append(_check("the kernel cache is off (DRAWBRIDGE_CACHE_DIR is empty): every run compiles its kernels",
                             "unset DRAWBRIDGE_CACHE_DIR or point it at a folder", False))
    return checks


def print_report(report: dict) -> None:
    print(f"torch {report['torch']}, drawbridge {report['drawbridge']}, Python {report['python']}")
    print(f"OpenCL devices ({len(report['devices'])}):")
    for d in report["devices"]:
        where = f"ocl:{d['ocl_index']}" if d["ocl_index"] is not None else "not selected"
        print(f"  [{where}] {d['name']} ({d['type']}) on {d['platform_name']}, {d['vendor']}")
        if "properties" in d:
            p = d["properties"]
            print(f"      memory {human_bytes(p['total_memory'])}, "
                  f"largest allocation {human_bytes(p['max_alloc_size'])}, "
                  f"{p['multi_processor_count']} compute units, local memory {human_bytes(p['local_memory'])}")
            print(f"      fp16 {'yes' if p['supports_fp16'] else 'no'}, fp64 {'yes' if p['supports_fp64'] else 'no'}, "
                  f"{p['opencl_version']}, driver {p['driver_version']}, kernel paths for {p['device_class']} "
                  f"devices; smoke test {d['smoke_test']}")
            print("      programs cached " + ("in the kernel cache" if d["binaries_cached"] else
                                              "by the driver (DRAWBRIDGE_CACHE_BINARIES, docs/env.md)"))
    cache = report["cache"]
    if cache["path"]:
        print(f"kernel cache: {cache['path']} ({cache['files']} programs, {human_bytes(cache['bytes'])}"
              f"{'' if cache['writable'] else ', not writable'})")
    else:
        print("kernel cache: off")
    env = report["environment"]
    print("environment: " + (", ".join(f"{k}={v}" for k, v in env.items()) if env else "no DRAWBRIDGE_* variable set"))
    if not report["checks"]:
        print("checks: all passed")
    for c in report["checks"]:
        print(f"{'ERROR' if c['fatal'] else 'note'}: {c['problem']}\n  fix: {c['fix']}")


def run(args) -> int:
    report = collect()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0 if report["ok"] else 1
