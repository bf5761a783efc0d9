"""The GPT-style decoder of tests/gpt.py (embeddings with tied output weights, causal SDPA,
LayerNorm, GELU) trained under DDP and under FSDP2 on ocl through occl equals one process
training it on the whole batch."""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gpt import GPT  # noqa: E402

from common import init  # noqa: E402


def fresh():
    torch.manual_seed(0)
    return GPT().to("ocl")


def train(rank, size, wrap, steps=3):
    reference, model = fresh(), fresh()
    wrapped = wrap(model)
    # SGD, not Adam: the key bias's gradient is zero up to rounding (softmax ignores a shift of
    # every key), and Adam would turn that noise into full steps that differ between the runs.
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(4)
    per_rank = 2
    for _ in range(steps):
        tokens = torch.randint(0, 64, (size * per_rank, 17), generator=g).to("ocl")
        x, y = tokens[:, :-1], tokens[:, 1:]
        mine = slice(rank * per_rank, (rank + 1) * per_rank)
        F.cross_entropy(wrapped(x[mine]).flatten(0, 1), y[mine].flatten()).backward()
        opt.step()
        opt.zero_grad()
        F.cross_entropy(reference(x).flatten(0, 1), y.flatten()).backward()
        ref_opt.step()
        ref_opt.zero_grad()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        p = p.full_tensor() if hasattr(p, "full_tensor") else p
        torch.testing.assert_close(p.detach().cpu(), q.detach().cpu(), rtol=1e-4, atol=1e-5,
                                   msg=lambda m: f"{name}: {m}")


def fsdp(model):
    for block in model.blocks:
        fully_shard(block)
    return fully_shard(model)  # the root holds the embeddings and the tied output weights


if __name__ == "__main__":
    rank, size = init("occl")
    train(rank, size, DDP)
    train(rank, size, fsdp)
    dist.destroy_process_group()
    print(f"rank {rank}: gpt ok")
