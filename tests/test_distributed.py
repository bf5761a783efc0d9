"""torch.distributed on ocl through the occl backend, under torchrun, as users launch it.

Each test launches the worker scripts of tests/distributed/ (two ranks share PoCL's one device)
and checks that every rank reported success. The workers compare with gloo on CPU tensors or with
a single-process run of the same training, inside the ranks.
"""
import os
import re
import socket
import subprocess
import sys

import pytest

WORKERS = os.path.join(os.path.dirname(__file__), "distributed")
ENV = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(script, *args, nproc=2, nnodes=1, timeout=300, env=None):
    """Runs `script` with torchrun (nnodes launches on this host, rendezvous'd); returns stdout.
    stderr stays apart: a rank's warning written there could otherwise land inside another rank's
    line of stdout."""
    port = free_port()
    launches = []
    for node in range(nnodes):
        where = ["--standalone"] if nnodes == 1 else [
            f"--nnodes={nnodes}", "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=occl-test"]
        cmd = [sys.executable, "-m", "torch.distributed.run", *where, f"--nproc-per-node={nproc}", script, *args]
        launches.append(subprocess.Popen(cmd, cwd=WORKERS, env={**ENV, **(env or {})}, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=timeout) for p in launches]
    for p, (out, err) in zip(launches, outputs):
        assert p.returncode == 0, (out + err)[-6000:]
    return "".join(out for out, _ in outputs)


def assert_every_rank(output, size, words):
    for rank in range(size):
        assert f"rank {rank}: {words}" in output, output[-4000:]


def test_every_collective_equals_gloo_on_two_ranks():
    assert_every_rank(torchrun("collectives.py"), 2, "collectives ok")


def test_every_collective_equals_gloo_on_three_ranks_with_small_pieces():
    # 256-byte pieces: the large in-place collectives' chunked path runs on small tensors
    out = torchrun("collectives.py", nproc=3, env={"DRAWBRIDGE_OCCL_CHUNK_BYTES": "256"})
    assert_every_rank(out, 3, "collectives ok")


def test_ddp_trains_as_one_process():
    assert_every_rank(torchrun("ddp.py"), 2, "ddp ok")


def test_fsdp2_trains_as_one_process():
    assert_every_rank(torchrun("fsdp.py"), 2, "fsdp ok")


def test_gpt_trains_under_ddp_and_fsdp2_as_one_process():
    assert_every_rank(torchrun("gpt_models.py"), 2, "gpt ok")


def test_the_ddp_example_trains():
    example = os.path.join(os.path.dirname(WORKERS), os.pardir, "examples", "train_ddp.py")
    losses = [float(line.split("loss ")[1]) for line in torchrun(os.path.abspath(example)).splitlines()
              if line.startswith("step ")]
    assert len(losses) == 6 and losses[-1] < losses[0] / 10, losses


def test_collectives_in_compiled_graphs_and_compiled_ddp():
    assert_every_rank(torchrun("compiled.py"), 2, "compiled ok")


def test_tensor_parallel_and_checkpoint(tmp_path):
    assert_every_rank(torchrun("tensor_parallel.py", str(tmp_path / "ckpt")), 2, "tensor parallel and checkpoint ok")


def test_2d_mesh_fsdp_and_tensor_parallel_on_four_ranks(tmp_path):
    assert_every_rank(torchrun("tensor_parallel.py", str(tmp_path / "ckpt"), nproc=4), 4,
                      "tensor parallel and checkpoint ok")


def test_two_nodes_on_localhost():
    out = torchrun("collectives.py", nproc=1, nnodes=2)
    assert_every_rank(out, 2, "collectives ok")
    assert_every_rank(torchrun("ddp.py", nproc=1, nnodes=2), 2, "ddp ok")


@pytest.mark.parametrize("mode", ["default", "occl", "split", "device_id"])
def test_ways_to_start_a_group(mode):
    assert_every_rank(torchrun("init_variants.py", mode), 2, f"init {mode} ok")


FAULT_TIMEOUT = 4.0


def run_fault(case, mode="non-blocking"):
    """Two ranks started by hand (env:// rendezvous, no torchrun to kill the survivor)."""
    port = free_port()
    env = {**ENV, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": "2",
           "FAULT_TIMEOUT": str(FAULT_TIMEOUT), "DRAWBRIDGE_OCCL_BLOCKING_WAIT": "1" if mode == "blocking" else "0"}
    procs = [subprocess.Popen([sys.executable, "faults.py", case], cwd=WORKERS, env={**env, "RANK": str(r)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(2)]
    outs = [p.communicate(timeout=FAULT_TIMEOUT * 10)[0] for p in procs]
    return [(p.returncode, out) for p, out in zip(procs, outs)]


WAITS = ["non-blocking", "blocking"]


def outcome(out, rank):
    lines = [line for line in out.splitlines() if line.startswith(f"rank {rank}: ")]
    assert lines, out[-3000:]
    return lines[-1]


@pytest.mark.parametrize("mode", WAITS)
@pytest.mark.parametrize("case", ["dies", "stalls"])
def test_a_lost_rank_makes_the_other_raise_within_the_timeout(case, mode):
    results = run_fault(case, mode)
    rc0, out0 = results[0]
    assert rc0 == 0, out0[-3000:]  # no crash, and ocl still computes after the error
    line = outcome(out0, 0)
    assert line.startswith("rank 0: raised RuntimeError after "), line
    seconds = float(line.split(" after ")[1].split(" s")[0])
    assert seconds <= FAULT_TIMEOUT + 3, line
    if case == "stalls" and mode == "non-blocking":  # wait() returned: the read of the result raised
        assert "failed after wait() returned" in line, line


@pytest.mark.parametrize("mode", WAITS)
@pytest.mark.parametrize("case", ["shapes", "dtypes"])
def test_mismatched_collectives_raise_on_every_rank(case, mode):
    results = run_fault(case, mode)
    for rank, (rc, out) in enumerate(results):
        assert rc == 0, out[-3000:]  # Gloo alone aborts the receiving process here
        line = outcome(out, rank)
        assert "raised RuntimeError" in line and "the ranks called different collectives" in line, line
        assert ("Long" in line) if case == "dtypes" else ("1024 elements" in line), line


def test_a_cpu_tensor_among_ocl_ones_raises_clearly():
    results = run_fault("mixed")
    for rank, (rc, out) in enumerate(results):
        assert rc == 0, out[-3000:]
        assert "expected tensors on ocl (or all on the cpu), got one on cpu" in outcome(out, rank)


def late_call(mode):
    """Rank 0's call and read times when rank 1 calls the all-reduce 2 s late."""
    (rc0, out0), (rc1, out1) = run_fault("late", mode)
    assert rc0 == 0 and rc1 == 0, (out0 + out1)[-3000:]
    line = outcome(out0, 0)
    match = re.fullmatch(r"rank 0: completed: call ([\d.]+) s, read ([\d.]+) s, values (.*)", line)
    assert match, line
    assert match.group(3) == "[4.0, 4.0, 4.0, 4.0]", line  # two all-reduces of ones over 2 ranks
    return float(match.group(1)), float(match.group(2))


def test_wait_does_not_block_the_host():
    call, read = late_call("non-blocking")
    assert call < 1.0 and read > 1.5, (call, read)  # the read of the result waits, the call did not


def test_blocking_wait_blocks_the_host():
    call, read = late_call("blocking")
    assert call > 1.5 and read < 1.0, (call, read)
