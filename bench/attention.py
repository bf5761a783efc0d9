"""Causal scaled_dot_product_attention, forward and backward, at growing sequence lengths: ocl's
fused kernels beside ocl's math path (the composition of matrix products and softmax that
PyTorch falls back to, which stores the L x L scores) and PyTorch's CPU backend, in one run.
Milliseconds per step and the step's peak extra ocl memory."""
import argparse
import contextlib

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from common import report, sync, time_it

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="ocl")
parser.add_argument("--heads", type=int, default=8)
parser.add_argument("--dim", type=int, default=64)
parser.add_argument("--lengths", default="256,1024,2048")
args = parser.parse_args()


def step_of(q, k, v):
    def step():
        q.grad = k.grad = v.grad = None
        F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    return step


def peak_extra_bytes(step, device):
    if not device.startswith("ocl"):
        return None
    sync(device)
    torch.ocl.reset_peak_memory_stats()
    before = torch.ocl.memory_allocated()
    step()
    sync(device)
    return torch.ocl.max_memory_allocated() - before


rows = []
for length in map(int, args.lengths.split(",")):
    g = torch.Generator().manual_seed(0)
    inputs = [torch.randn(1, args.heads, length, args.dim, generator=g) for _ in range(3)]
    row = {"L": length}
    for label, device, backend in (("fused", args.device, SDPBackend.OVERRIDEABLE),
                                   ("math", args.device, SDPBackend.MATH), ("cpu", "cpu", None)):
        q, k, v = (t.to(device).requires_grad_() for t in inputs)
        step = step_of(q, k, v)
        with sdpa_kernel(backend) if backend is not None else contextlib.nullcontext():
            row[f"{label} ms"] = round(time_it(step, device, repeat=3) * 1e3, 1)
            peak = peak_extra_bytes(step, device)
        if peak is not None:
            row[f"{label} peak MiB"] = round(peak / 2**20, 1)
    row["fused vs cpu"] = round(row["cpu ms"] / row["fused ms"], 2)
    row["fused vs math"] = round(row["math ms"] / row["fused ms"], 2)
    rows.append(row)

report("attention", list(rows[0]), rows)
