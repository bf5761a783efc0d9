"""occl's bus bandwidth beside gloo's on CPU tensors, and a DDP step on 2 ranks against 1.

`python bench/allreduce.py` launches itself under torchrun (2 ranks on this machine; PoCL's one
device is shared by both). For each message size: all_reduce and all_gather through occl on ocl
tensors and through gloo on CPU tensors in the same group ("cpu:gloo,ocl:occl"), as bus
bandwidth (nccl-tests' convention: all_reduce moves 2(n-1)/n of the buffer per rank, all_gather
(n-1)/n of the output) and occl's share of gloo's. Then a DDP training step of an MLP: on 2 ranks,
on 1 rank, with no_sync (the same step without communication), and the gradient all-reduce alone,
from which the share of communication hidden behind backward follows.
"""
import json
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report  # noqa: E402

SIZES = [1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28]  # bytes


def once(fn, device):
    import torch.distributed as dist

    dist.barrier()
    if device == "ocl":
        torch.ocl.synchronize()
    start = time.perf_counter()
    fn()
    if device == "ocl":
        torch.ocl.synchronize()
    return time.perf_counter() - start


def timed(fn, device, repeat):
    fn()
    return min(once(fn, device) for _ in range(repeat))


def bandwidth_rows(rank, size):
    import torch.distributed as dist

    rows = []
    for nbytes in SIZES:
        numel = nbytes // 4
        repeat = 10 if nbytes <= (1 << 22) else 5
        row = {"bytes": nbytes}
        x = {d: torch.ones(numel, device=d) for d in ("cpu", "ocl")}
        out = {d: torch.empty(numel * size, device=d) for d in ("cpu", "ocl")}
        calls = {("all_reduce", d): (lambda d=d: dist.all_reduce(x[d])) for d in x}
        calls.update({("all_gather", d): (lambda d=d: dist.all_gather_into_tensor(out[d], x[d])) for d in x})
        best = {key: float("inf") for key in calls}
        for fn in calls.values():
            fn()  # warm up
        # gloo and occl take turns, so that this machine's noise falls on both alike
        for _ in range(repeat):
            for key, fn in calls.items():
                best[key] = min(best[key], once(fn, key[1]))
        for (op, device), t in best.items():
            moved = 2 * (size - 1) / size * nbytes if op == "all_reduce" else (size - 1) * nbytes
            row[f"{op} {'gloo' if device == 'cpu' else 'occl'} GB/s"] = round(moved / t / 1e9, 3)
        del x, out
        for op in ("all_reduce", "all_gather"):
            row[f"{op} occl/gloo"] = round(row[f"{op} occl GB/s"] / row[f"{op} gloo GB/s"], 2)
        rows.append(row)
    return rows


def ddp_step_times(rank, size, steps=5):
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(1024, 1024), nn.ReLU())]).to("ocl")
    ddp = DDP(model, bucket_cap_mb=4)  # 16 MB of gradients in 4-5 buckets, to overlap
    x = torch.randn(64, 1024, device="ocl")

    def step():
        ddp(x).square().mean().backward()

    def step_no_sync():
        with ddp.no_sync():
            ddp(x).square().mean().backward()

    def allreduce_grads():  # DDP's buckets' worth, one tensor at a time
        for p in model.parameters():
            dist.all_reduce(p.grad)

    times = {"step": timed(step, "ocl", steps), "no_sync": timed(step_no_sync, "ocl", steps)}
    if size > 1:
        times["allreduce"] = timed(allreduce_grads, "ocl", steps)
    return times


def worker(out_path, what):
    import torch.distributed as dist

    dist.init_process_group("cpu:gloo,ocl:occl")
    rank, size = dist.get_rank(), dist.get_world_size()
    result = {"bandwidth": bandwidth_rows(rank, size)} if what == "all" else {}
    result["ddp"] = ddp_step_times(rank, size)
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()


def launch(nproc, what, path):
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
                    os.path.abspath(__file__), "--worker", path, what], check=True,
                   env={**os.environ, "PYTHONWARNINGS": "ignore"})
    with open(path) as f:
        return json.load(f)


def main():
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        two = launch(2, "all", os.path.join(tmp, "two.json"))
        one = launch(1, "ddp", os.path.join(tmp, "one.json"))
    print("\nall_reduce / all_gather bus bandwidth, 2 ranks (occl on ocl tensors, gloo on CPU tensors)")
    cols = ["bytes", "all_reduce gloo GB/s", "all_reduce occl GB/s", "all_reduce occl/gloo",
            "all_gather gloo GB/s", "all_gather occl GB/s", "all_gather occl/gloo"]
    rows = two["bandwidth"]
    d2, d1 = two["ddp"], one["ddp"]
    hidden = max(0.0, d2["no_sync"] + d2["allreduce"] - d2["step"]) / d2["allreduce"]
    ddp_rows = [{"ddp step (MLP 4x1024^2, batch 64/rank)": k, "ms": round(v * 1e3, 2)} for k, v in [
        ("1 rank", d1["step"]), ("2 ranks", d2["step"]), ("2 ranks, no_sync (no communication)", d2["no_sync"]),
        ("2 ranks, gradient all_reduce alone", d2["allreduce"])]]
    report("allreduce", cols, rows)
    print()
    for r in ddp_rows:
        print(f"{r['ddp step (MLP 4x1024^2, batch 64/rank)']:>40}: {r['ms']} ms")
    print(f"{'communication hidden behind backward':>40}: {hidden:.0%}")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "allreduce.json")
    with open(path) as f:
        data = json.load(f)
    data["ddp"] = {"one_rank_s": d1["step"], "two_ranks_s": d2["step"], "no_sync_s": d2["no_sync"],
                   "allreduce_alone_s": d2["allreduce"], "hidden_fraction": hidden}
    with open(path, "w") as f:
        json.dump(data, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
    else:
        main()
