"""The command-line tools, run as a user runs them: `python -m drawbridge doctor|ops`."""
import json
import os
import subprocess
import sys

import pytest
import torch

import drawbridge
from conftest import gemm_kernel_name


def tool(*args, **env):
    return subprocess.run([sys.executable, "-m", "drawbridge", *args], capture_output=True, text=True,
                          env=dict(os.environ, **env), cwd=os.path.dirname(os.path.abspath(__file__)))


def test_help_names_every_command():
    out = tool("--help")
    assert out.returncode == 0
    assert "doctor" in out.stdout and "ops" in out.stdout
    for command in ("doctor", "ops", "check"):
        assert tool(command, "--help").returncode == 0


def test_doctor_reports_the_device_and_passes():
    out = tool("doctor")
    assert out.returncode == 0, out.stdout + out.stderr
    props = torch.ocl.get_device_properties(0)
    assert f"[ocl:0] {props.name}" in out.stdout
    assert "smoke test passed" in out.stdout and "checks: all passed" in out.stdout


def test_doctor_json_matches_the_device_properties():
    out = tool("doctor", "--json", DRAWBRIDGE_SYNC="1")
    assert out.returncode == 0
    report = json.loads(out.stdout)
    (device,) = [d for d in report["devices"] if d["ocl_index"] == 0]
    assert device["properties"]["max_alloc_size"] == drawbridge._C._device_properties(0)["max_alloc_size"]
    assert device["smoke_test"] == "passed"
    assert report["torch"] == torch.__version__ and report["environment"]["DRAWBRIDGE_SYNC"] == "1"
    assert all(k.startswith("DRAWBRIDGE_") or k in ("OCL_ICD_VENDORS", "OPENCL_VENDOR_PATH", "TORCHINDUCTOR_CACHE_DIR",
                                                    "TORCH_DEVICE_BACKEND_AUTOLOAD")
               for k in report["environment"])
    assert report["ok"] is True


def test_doctor_fails_when_no_device_is_selected():
    out = tool("doctor", DRAWBRIDGE_DEVICES="no-such-device")
    assert out.returncode == 1
    assert "[not selected]" in out.stdout
    assert "ERROR: no device is selected" in out.stdout and "fix: set DRAWBRIDGE_DEVICES" in out.stdout


def test_doctor_notes_a_cache_it_cannot_write(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = tool("doctor", "--json", DRAWBRIDGE_CACHE_DIR=str(blocker / "cache"))
    report = json.loads(out.stdout)
    assert out.returncode == 0 and report["cache"]["writable"] is False  # slower, still works
    assert any("not writable" in c["problem"] and not c["fatal"] for c in report["checks"])


@pytest.fixture(scope="module")
def op_kinds():
    out = tool("ops", "--json")
    assert out.returncode == 0
    return json.loads(out.stdout)


def test_ops_reads_the_dispatcher(op_kinds):
    assert op_kinds["add.Tensor"] == "native" and op_kinds["mm"] == "native"
    assert op_kinds["matmul"] == "composite"
    for op, kind in op_kinds.items():
        assert (kind == "native") == torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{op}", "PrivateUse1") \
            or kind == "cpu fallback", op
    assert sum(k == "native" for k in op_kinds.values()) > 500


def test_ops_missing_lists_operators_that_really_fall_back(op_kinds):
    missing = json.loads(tool("ops", "--missing", "--json").stdout)
    assert missing and set(missing.values()) == {"cpu fallback"}
    assert set(missing) == {op for op, kind in op_kinds.items() if kind == "cpu fallback"}
    # Operators without an ocl kernel today, each with a call.
    calls = {"hash_tensor.out": lambda x: torch.hash_tensor(x),
             "special_bessel_j0.out": lambda x: torch.special.bessel_j0(x),
             "linalg_eig": lambda x: torch.linalg.eig(x.reshape(1, 1))}
    candidates = [op for op in calls if op in missing]
    if not candidates:
        pytest.skip("every candidate operator has become native")
    drawbridge.reset_fallback_report()
    mode = drawbridge.get_fallback_mode()
    drawbridge.set_fallback_mode("silent")
    try:
        calls[candidates[0]](torch.ones(1, device="ocl"))
    finally:
        drawbridge.set_fallback_mode(mode)
    assert any(candidates[0] in op for op in drawbridge.fallback_report()), drawbridge.fallback_report()


# The script calls an operator without an ocl kernel today (hash_tensor) when given --fallback.
SCRIPT = """
import sys
import torch
x = torch.randn(32, 32, device="ocl")
print("sum", (x @ x).relu().sum().item() > 0, sys.argv[1:])
if "--fallback" in sys.argv:
    torch.hash_tensor(x)
if "--fail" in sys.argv:
    sys.exit(3)
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return str(path)


def test_check_runs_the_script_and_reports_no_fallback(script):
    out = tool("check", script, "a", "b")
    assert out.returncode == 0, out.stderr
    assert "sum True ['a', 'b']" in out.stdout
    assert "no operator fell back to the CPU" in out.stderr and "peak memory on ocl:0" in out.stderr
    assert "device time in kernels" in out.stderr and gemm_kernel_name() in out.stderr


def test_check_fails_on_a_fallback_and_reports_it_as_json(script):
    out = tool("check", script, "--", "--fallback")
    assert out.returncode == 1
    assert "aten::hash_tensor.out" in out.stderr
    out = tool("check", "--json", "--allow-fallback", script, "--", "--fallback")
    assert out.returncode == 0
    report = json.loads(out.stdout[out.stdout.index("{"):])
    assert report["fallback"]["aten::hash_tensor.out"]["calls"] == 1 and report["fallback"]["aten::hash_tensor.out"]["seconds"] > 0
    assert report["peak_memory_bytes"]["ocl:0"] >= 32 * 32 * 4 and report["kernel_launches"] >= 2
    # device time per kernel, from profiling events: the GEMM, the relu and the sum's kernels
    kernels = report["top_kernels"]
    assert kernels[gemm_kernel_name()]["launches"] == 1 and kernels[gemm_kernel_name()]["seconds"] > 0, kernels
    assert sum(k["launches"] for k in kernels.values()) <= report["kernel_launches"], kernels
    assert 0 < report["kernel_device_s"] <= report["wall_s"], report


def test_check_passes_on_the_scripts_exit_status(script):
    assert tool("check", script, "--", "--fail").returncode == 3
