"""torch.compile on ocl beside eager ocl, and PyTorch's CPU Inductor beside the CPU's eager mode,
all in one run: seconds per step, kernels launched per step, and the time of the first call with
cold caches (Inductor's and the OpenCL program cache both empty) and with warm ones (a second
process). Each measurement runs in its own process so that caches and Dynamo's state start
clean."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from common import report, sync, time_it

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from gpt import GPT  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--workloads", default="gpt_train,mlp_train,norm_chain")
parser.add_argument("--steps", type=int, help="timed steps per measurement (default: 3 for gpt_train, 20 otherwise)")
parser.add_argument("--child", help=argparse.SUPPRESS)  # workload,device,mode: run one, print JSON
args = parser.parse_args()


def gpt_train(device):
    """bench/train_step.py's GPT-style decoder step: batch 8 x 256 tokens, 6 layers, width 384."""
    torch.manual_seed(0)
    model = GPT(4096, 256, 384, 6, 6).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)  # as bench/train_step.py
    tokens = torch.randint(0, 4096, (8, 257), generator=torch.Generator().manual_seed(1)).to(device)
    forward = model

    def step(run):
        logits = run(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 4096), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return forward, step


def mlp_train(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.LayerNorm(1024), nn.Linear(1024, 1024), nn.GELU(),
                          nn.Linear(1024, 10)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    x = torch.randn(256, 512).to(device)
    y = torch.randint(0, 10, (256,)).to(device)

    def step(run):
        loss = F.cross_entropy(run(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return model, step


class NormChain(nn.Module):
    """A pre-norm residual block's pointwise tail: layer norm, bias, GELU, scale, residual, RMS norm."""

    def __init__(self, width=1024):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.bias = nn.Parameter(torch.randn(width))
        self.scale = nn.Parameter(torch.randn(width))

    def forward(self, x):
        h = F.gelu(self.norm(x) + self.bias) * self.scale + x
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)


def norm_chain(device):
    torch.manual_seed(0)
    model = NormChain().to(device)
    x = torch.randn(4096, 1024).to(device)

    def step(run):
        with torch.no_grad():
            run(x)

    return model, step


WORKLOADS = {"gpt_train": gpt_train, "mlp_train": mlp_train, "norm_chain": norm_chain}
# Timed steps: the small workloads take milliseconds, and three of them vary by tens of percent.
STEPS = {"gpt_train": 3, "mlp_train": 20, "norm_chain": 20}


def launches():
    import drawbridge
    return drawbridge._C._launch_count()


def child(workload, device, mode):
    module, step = WORKLOADS[workload](device)
    run = torch.compile(module) if mode == "compiled" else module
    start = time.perf_counter()
    step(run)
    sync(device)
    first = time.perf_counter() - start
    result = {"first_call_s": first}
    if device == "ocl":
        before = launches()
        step(run)
        sync(device)
        result["launches_per_step"] = launches() - before
    result["step_s"] = time_it(lambda: step(run), device, repeat=args.steps or STEPS[workload], warmup=1)
    print(json.dumps(result))


def run_child(workload, device, mode, env):
    steps = ["--steps", str(args.steps)] if args.steps else []
    out = subprocess.run([sys.executable, __file__, "--child", f"{workload},{device},{mode}", *steps], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{workload} {device} {mode} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    rows = []
    for workload in args.workloads.split(","):
        row = {"workload": workload}
        for device in ("ocl", "cpu"):
            eager = run_child(workload, device, "eager", dict(os.environ))
            with tempfile.TemporaryDirectory() as caches:
                env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(caches, "inductor"),
                           DRAWBRIDGE_CACHE_DIR=os.path.join(caches, "kernels"))
                cold = run_child(workload, device, "compiled", env)
                warm = run_child(workload, device, "compiled", env)
            row[f"{device} eager s"] = round(eager["step_s"], 4)
            row[f"{device} compiled s"] = round(warm["step_s"], 4)
            row[f"{device} speed-up"] = round(eager["step_s"] / warm["step_s"], 2)
            if device == "ocl":
                row["ocl launches eager"] = eager["launches_per_step"]
                row["ocl launches compiled"] = warm["launches_per_step"]
            row[f"{device} compile cold s"] = round(cold["first_call_s"], 1)
            row[f"{device} compile warm s"] = round(warm["first_call_s"], 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
    columns = list(rows[0])
    report("compile", columns, rows)


if __name__ == "__main__":
    if args.child:
        w, d, m = args.child.split(",")
        child(w, d, m)
    else:
        main()
