"""One training step (forward, backward, AdamW) of a GPT-style decoder at a realistic size
(batch 8 x 256 tokens, 6 layers, width 384, 6 heads) on ocl beside PyTorch's CPU backend: seconds
per step and peak memory (ocl: torch.ocl.max_memory_allocated; CPU: growth of the process's peak
resident set during the steps, measured in a child process). Each device's child runs --rounds
times, the devices in turn, and the best round counts: a slow spell of a shared machine then
falls on both devices alike."""
import argparse
import json
import os
import resource
import subprocess
import sys

import torch
import torch.nn as nn

from common import report, time_it

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from gpt import GPT  # noqa: E402  (the decoder the training test trains, at another size)

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="ocl")
parser.add_argument("--batch", type=int, default=8)
parser.add_argument("--context", type=int, default=256)
parser.add_argument("--layers", type=int, default=6)
parser.add_argument("--width", type=int, default=384)
parser.add_argument("--heads", type=int, default=6)
parser.add_argument("--vocab", type=int, default=4096)
parser.add_argument("--steps", type=int, default=2)
parser.add_argument("--rounds", type=int, default=2)
parser.add_argument("--autocast", choices=["none", "bfloat16"], default="none")
parser.add_argument("--child", help=argparse.SUPPRESS)  # run one device, print JSON
args = parser.parse_args()


def measure(device):
    torch.manual_seed(0)
    model = GPT(args.vocab, args.context, args.width, args.heads, args.layers).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, args.vocab, (args.batch, args.context + 1), generator=g).to(device)
    dtype = torch.bfloat16 if args.autocast == "bfloat16" else None

    def step():
        with torch.autocast(device, dtype=dtype, enabled=dtype is not None):
            logits = model(tokens[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, args.vocab).float(), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    step()  # warm-up: kernel compilation, optimizer state
    if device == "cpu":
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    else:
        torch.ocl.synchronize()
        torch.ocl.reset_peak_memory_stats()
    seconds = time_it(step, device, repeat=args.steps, warmup=0)
    if device == "cpu":
        peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) * 1024
    else:
        peak = torch.ocl.max_memory_allocated()
    return {"seconds": seconds, "peak_bytes": peak, "params": sum(p.numel() for p in model.parameters())}


if args.child:
    print(json.dumps(measure(args.child)))
    sys.exit(0)

results = {}
for _ in range(args.rounds):
    for device in ("cpu", args.device):
        child = subprocess.run([sys.executable, __file__, "--child", device] + sys.argv[1:], capture_output=True,
                               text=True, check=True)
        result = json.loads(child.stdout.strip().splitlines()[-1])
        if device not in results or result["seconds"] < results[device]["seconds"]:
            results[device] = result
tokens = args.batch * args.context
rows = [{
    "model": f"{args.layers}x{args.width} b{args.batch}x{args.context}" + (" bf16" if args.autocast != "none" else ""),
    "params (M)": round(results["cpu"]["params"] / 1e6, 1),
    f"{args.device} s/step": round(results[args.device]["seconds"], 3),
    "cpu s/step": round(results["cpu"]["seconds"], 3),
    f"{args.device} tokens/s": round(tokens / results[args.device]["seconds"]),
    "cpu tokens/s": round(tokens / results["cpu"]["seconds"]),
    f"{args.device} peak MiB": round(results[args.device]["peak_bytes"] / 2**20),
    "cpu peak RSS growth MiB": round(results["cpu"]["peak_bytes"] / 2**20),
}]
report("train_step", list(rows[0]), rows)
