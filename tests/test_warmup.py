"""`python -m drawbridge warmup` and DRAWBRIDGE_RECORD_PROGRAMS: a recorded list of programs,
built ahead in fresh caches, serves a later run without a single build."""
import json
import os

import torch

from drawbridge.cli.warmup import SHIPPED_LIST, read_list

SCRIPT = """
import torch
from drawbridge import _C
x = torch.linspace(-2, 2, 1000, device="ocl")
y = (x.abs() + 1).sum()
assert abs(y.item() - (torch.linspace(-2, 2, 1000).abs() + 1).sum().item()) < 1e-2
print("STATS", _C._program_cache_stats())
"""


def _stats(out):
    line = next(l for l in out.stdout.splitlines() if l.startswith("STATS"))
    return eval(line[len("STATS "):])  # a dict of ints, printed by our own script


def _pocl_programs(folder):
    """The programs in a PoCL kernel cache (one folder per program, under two-letter folders)."""
    if not folder.exists():
        return set()
    return {f"{a}/{b}" for a in os.listdir(folder) if len(a) == 2 for b in os.listdir(folder / a)}


def test_recorded_programs_built_ahead_serve_a_later_run(run_py, tmp_path):
    record = tmp_path / "programs.txt"
    env = {"DRAWBRIDGE_CACHE_DIR": str(tmp_path / "cache"), "POCL_CACHE_DIR": str(tmp_path / "pocl"),
           "DRAWBRIDGE_RECORD_PROGRAMS": str(record)}
    first = run_py(SCRIPT, env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    lines = record.read_text().splitlines()
    device_class = torch.ocl.get_device_properties(0).device_class
    assert lines and all(l.split("\t")[0] == device_class for l in lines)
    assert len(set(lines)) == len(lines)  # each program once per process

    # Fresh caches: warmup builds the list, then the same script builds nothing new. On PoCL the
    # builds land in PoCL's cache (a later build is a lookup there), elsewhere in ours.
    pocl = tmp_path / "pocl2"
    env.update(DRAWBRIDGE_CACHE_DIR=str(tmp_path / "cache2"), POCL_CACHE_DIR=str(pocl))
    del env["DRAWBRIDGE_RECORD_PROGRAMS"]
    warm = run_py(f"import sys; from drawbridge.cli import main; sys.exit(main(['warmup', '--list', {str(record)!r}, "
                  "'--jobs', '2', '--json']))", env=env)
    assert warm.returncode == 0, warm.stdout[-2000:] + warm.stderr[-2000:]
    summary = json.loads(warm.stdout[warm.stdout.index("{"):])
    assert summary["programs"] == len(lines) and summary["failed"] == [] and summary["jobs"] == 2
    built_ahead = _pocl_programs(pocl)
    later = run_py(SCRIPT, env=env)
    assert later.returncode == 0, later.stderr[-2000:]
    assert _pocl_programs(pocl) == built_ahead
    if not built_ahead:  # not PoCL: every program came from our disk cache
        assert _stats(later)["builds"] == 0


def test_a_program_that_does_not_build_is_reported(run_py, tmp_path):
    device_class = torch.ocl.get_device_properties(0).device_class
    bad = tmp_path / "bad.txt"
    bad.write_text(f"{device_class}\tunary.cl\t-DNARGS=2 -DT0=nonsense\n{device_class}\tno_such_file.cl\t\n")
    out = run_py(f"import sys; from drawbridge.cli import main; sys.exit(main(['warmup', '--list', {str(bad)!r}]))",
                 env={"POCL_CACHE_DIR": str(tmp_path / "pocl")})
    assert out.returncode == 1
    assert "built 0 of 2 programs" in out.stdout
    assert "unary.cl" in out.stdout and "no_such_file.cl" in out.stdout


def test_the_shipped_list_covers_both_device_classes():
    cpu, gpu = read_list(SHIPPED_LIST, "cpu"), read_list(SHIPPED_LIST, "gpu")
    assert len(cpu) > 100 and len(gpu) > 100
    files = {f for f, _ in cpu} | {f for f, _ in gpu}
    sources = {f for f in os.listdir(os.path.join(os.path.dirname(__file__), "..", "csrc", "kernels", "cl"))}
    assert files <= sources  # every listed program is one of ours
