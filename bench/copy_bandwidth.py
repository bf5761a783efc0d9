"""Copy bandwidth: host->device and device->host (pageable and pinned), device->device,
for 1 MB ... 256 MB, beside the same copy between CPU tensors in the same run."""
import argparse

import torch

from common import report, time_it

parser = argparse.ArgumentParser()
parser.add_argument("--max-mb", type=int, default=256)
parser.add_argument("--device", default="ocl")
args = parser.parse_args()
dev = args.device

rows = []
mb = 1
while mb <= args.max_mb:
    n = mb * (1 << 20) // 4
    pageable = torch.rand(n)
    pinned = pageable.pin_memory()
    on_dev = pageable.to(dev)
    dev_dst = torch.empty_like(on_dev)
    host_dst = torch.empty(n)
    pinned_dst = torch.empty(n).pin_memory()
    cpu_dst = torch.empty(n)
    nbytes = n * 4
    cases = {
        "h2d pageable": lambda: on_dev.copy_(pageable),
        "h2d pinned": lambda: on_dev.copy_(pinned, non_blocking=True),
        "d2h pageable": lambda: host_dst.copy_(on_dev),
        "d2h pinned": lambda: pinned_dst.copy_(on_dev, non_blocking=True),
        "d2d": lambda: dev_dst.copy_(on_dev),
    }
    cpu_seconds = time_it(lambda: cpu_dst.copy_(pageable), "cpu")
    for name, fn in cases.items():
        seconds = time_it(fn, dev)
        rows.append({
            "size_mb": mb,
            "copy": name,
            "GB/s": round(nbytes / seconds / 1e9, 2),
            "cpu->cpu GB/s": round(nbytes / cpu_seconds / 1e9, 2),
            "ms": round(seconds * 1e3, 3),
        })
    del pageable, pinned, on_dev, dev_dst, host_dst, pinned_dst, cpu_dst
    mb *= 4

report("copy_bandwidth", ["size_mb", "copy", "GB/s", "cpu->cpu GB/s", "ms"], rows)
