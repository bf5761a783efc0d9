"""OpenCL programs are built once and cached on disk; build errors carry the build log."""
import pytest
import torch

import drawbridge

PROGRAM_USER = """
import json, torch, drawbridge
x = torch.arange(10, dtype=torch.int16, device="ocl")
y = x.t().to(torch.float16)[::2].contiguous()   # a conversion kernel and a strided copy kernel
print(json.dumps(drawbridge._C._program_cache_stats()))
"""


def test_second_process_loads_from_disk(run_py, tmp_path):
    import json

    env = {"DRAWBRIDGE_CACHE_DIR": str(tmp_path)}
    first = run_py(PROGRAM_USER, env=env)
    assert first.returncode == 0, first.stderr
    stats1 = json.loads(first.stdout)
    assert stats1["builds"] >= 1 and stats1["disk_hits"] == 0
    assert list(tmp_path.glob("*.clbin"))
    second = run_py(PROGRAM_USER, env=env)
    assert second.returncode == 0, second.stderr
    stats2 = json.loads(second.stdout)
    assert stats2["builds"] == 0
    assert stats2["disk_hits"] == stats1["builds"]


def test_build_failure_includes_build_log():
    with pytest.raises(RuntimeError) as info:
        drawbridge._C._build_program(0, "__kernel void k(__global int* p) { p[0] = not_declared_anywhere; }", "")
    message = str(info.value)
    assert "Build log" in message and "not_declared_anywhere" in message
    assert torch.ones(2, device="ocl").cpu().tolist() == [1, 1]  # still usable
