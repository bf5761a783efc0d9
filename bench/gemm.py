"""Square GEMM (C = A @ B) GFLOP/s for 256 ... 4096 (powers of two, and 768 and 1536, which fill
whole 48-wide tiles of the CPU-device parameters), float32 and float16, on ocl (CLBlast; float16
converts to float32 around it where the device has no half arithmetic) beside PyTorch's CPU
backend in the same run. The CPU's float16 product is skipped above 2048 (--cpu-half-max): it
runs at well under 1 GFLOP/s there and would take minutes."""
import argparse

import torch

from common import report, time_it

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="ocl")
parser.add_argument("--max-size", type=int, default=4096)
parser.add_argument("--cpu-half-max", type=int, default=2048)
args = parser.parse_args()

rows = []
for n in [s for s in (256, 512, 768, 1024, 1536, 2048, 4096) if s <= args.max_size]:
    for dtype in (torch.float32, torch.float16):
        g = torch.Generator().manual_seed(0)
        a, b = torch.randn(n, n, generator=g).to(dtype), torch.randn(n, n, generator=g).to(dtype)
        data = {args.device: (a.to(args.device), b.to(args.device))}
        if dtype == torch.float32 or n <= args.cpu_half_max:
            data["cpu"] = (a, b)
        repeat = 5 if n <= 1024 else 2
        secs = {dev: time_it(lambda: torch.mm(*data[dev]), dev, repeat=repeat) for dev in data}
        flops = 2 * n ** 3
        rows.append({
            "size": n,
            "dtype": str(dtype).replace("torch.", ""),
            f"{args.device} GFLOP/s": round(flops / secs[args.device] / 1e9, 1),
            "cpu GFLOP/s": round(flops / secs["cpu"] / 1e9, 1) if "cpu" in secs else "-",
            "ratio": round(secs["cpu"] / secs[args.device], 3) if "cpu" in secs else "-",
        })

report("gemm", list(rows[0]), rows)
