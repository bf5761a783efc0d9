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

    # Binaries are kept for every device with DRAWBRIDGE_CACHE_BINARIES=1 (PoCL's default leaves
    # them to its own cache): the path GPU drivers take.
    env = {"DRAWBRIDGE_CACHE_DIR": str(tmp_path), "DRAWBRIDGE_CACHE_BINARIES": "1"}
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


def test_processes_sharing_a_cache_build_each_program_once(tmp_path):
    """A process that needs a program another process is building waits for it, then loads the
    binary it stored: held here from outside, the folder's build lock keeps both children from
    building until it is released, after which they built each program once between them."""
    import fcntl
    import json
    import os
    import subprocess
    import sys
    import time

    env = dict(os.environ, DRAWBRIDGE_CACHE_DIR=str(tmp_path), DRAWBRIDGE_CACHE_BINARIES="1")
    code = "import torch, drawbridge\nprint('ready', flush=True)\n" + PROGRAM_USER
    with open(tmp_path / ".build.lock", "w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)  # every byte: whatever program each child builds first
        children = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd="/") for _ in range(2)]
        for child in children:
            assert child.stdout.readline().strip() == "ready", child.stderr.read()
        time.sleep(3)
        assert [child.poll() for child in children] == [None, None]  # waiting for the lock
        fcntl.lockf(lock, fcntl.LOCK_UN)
    stats = []
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        stats.append(json.loads(out))
    builds, hits = sum(s["builds"] for s in stats), sum(s["disk_hits"] for s in stats)
    assert builds >= 1 and hits == builds, stats


def test_binaries_are_left_to_a_driver_that_caches_its_builds(run_py, tmp_path):
    """On PoCL (its kernel cache on), nothing is written to the kernel cache: asking PoCL for a
    program's binary compiles every kernel of the program; DRAWBRIDGE_CACHE_BINARIES=0 turns the
    binaries off for any device."""
    import json

    pocl = "Portable Computing Language" in torch.ocl.get_device_properties(0).platform_name
    cases = [({"DRAWBRIDGE_CACHE_BINARIES": "0"}, False)]
    if pocl:
        cases += [({}, False), ({"POCL_KERNEL_CACHE": "0"}, True)]
    for i, (extra, kept) in enumerate(cases):
        folder = tmp_path / str(i)
        out = run_py(PROGRAM_USER + "print(drawbridge._C._program_binaries_cached(0))",
                     env={"DRAWBRIDGE_CACHE_DIR": str(folder), **extra})
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout.splitlines()[0])["builds"] >= 1
        assert out.stdout.splitlines()[1] == str(kept), extra
        assert bool(list(folder.glob("*.clbin"))) == kept, extra


def test_build_failure_includes_build_log():
    with pytest.raises(RuntimeError) as info:
        drawbridge._C._build_program(0, "__kernel void k(__global int* p) { p[0] = not_declared_anywhere; }", "")
    message = str(info.value)
    assert "Build log" in message and "not_declared_anywhere" in message
    assert torch.ones(2, device="ocl").cpu().tolist() == [1, 1]  # still usable


# A fill: a program of few kernels (binaries are kept, so PoCL compiles every kernel of it).
FIRST_OPS = "import torch; print(torch.full((3,), 2.0, device='ocl').cpu().sum().item())"


def _stderr_of_a_cold_run(cache_dir, terminal):
    """stderr of a process that builds its programs into an empty cache, on a terminal or a pipe."""
    import os
    import pty
    import subprocess
    import sys

    env = dict(os.environ, DRAWBRIDGE_CACHE_DIR=str(cache_dir), DRAWBRIDGE_CACHE_BINARIES="1")
    env.pop("DRAWBRIDGE_VERBOSE_BUILD", None)
    if not terminal:
        out = subprocess.run([sys.executable, "-c", FIRST_OPS], capture_output=True, text=True, env=env, cwd="/")
        assert out.stdout.strip() == "6.0"
        return out.stderr
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", FIRST_OPS], stdout=subprocess.PIPE, stderr=slave, env=env, cwd="/")
    os.close(slave)
    assert proc.stdout.read().decode().strip() == "6.0"
    proc.wait()
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return b"".join(chunks).decode()


def test_a_cold_run_on_a_terminal_shows_its_builds(tmp_path):
    err = _stderr_of_a_cold_run(tmp_path / "cache", terminal=True)
    assert f"the kernel cache {tmp_path / 'cache'} is empty" in err
    assert "\r[drawbridge] building OpenCL program 1 (" in err
    assert err.rstrip("\n").endswith("\r\x1b[K")  # the progress line is erased when the builds end


def test_a_cold_run_into_a_pipe_prints_nothing(tmp_path):
    assert "[drawbridge]" not in _stderr_of_a_cold_run(tmp_path / "cache", terminal=False)
