"""FSDP2 (fully_shard) on ocl through occl trains as one process on the whole batch does.

Parameters are sharded over the ranks (all-gathered for forward and backward, gradients
reduce-scattered); the reference trains an unsharded copy on the whole batch in the same
process. Runs with and without resharding after forward, and under a MixedPrecisionPolicy
(bfloat16 compute, float32 reduction), whose reference computes with bfloat16 copies of its
float32 parameters (as FSDP's all-gathered ones are) and is compared at bfloat16's precision;
that case steps with SGD, since Adam turns gradients rounded near zero into full steps.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from common import init


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8))


def run(rank, size, *, reshard_after_forward=True, mp=None, steps=4, rtol=1e-4, atol=1e-5):
    reference = make_model().to("ocl")
    model = make_model().to("ocl")
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, reshard_after_forward=reshard_after_forward, mp_policy=mp or MixedPrecisionPolicy())
    fully_shard(model, reshard_after_forward=reshard_after_forward, mp_policy=mp or MixedPrecisionPolicy())
    optimizer = (lambda ps: torch.optim.SGD(ps, lr=0.1)) if mp else (lambda ps: torch.optim.AdamW(ps, lr=1e-2))
    opt, ref_opt = optimizer(model.parameters()), optimizer(reference.parameters())
    g = torch.Generator().manual_seed(2)
    per_rank = 4
    for _ in range(steps):
        x = torch.randn(size * per_rank, 16, generator=g).to("ocl")
        t = torch.randn(size * per_rank, 8, generator=g).to("ocl")
        mine = slice(rank * per_rank, (rank + 1) * per_rank)
        loss = nn.functional.mse_loss(model(x[mine]), t[mine])
        loss.backward()
        opt.step()
        opt.zero_grad()
        if mp:
            low = {k: v.to(mp.param_dtype) for k, v in reference.named_parameters()}
            out = torch.func.functional_call(reference, low, (x.to(mp.param_dtype),)).float()
        else:
            out = reference(x)
        ref_loss = nn.functional.mse_loss(out, t)
        ref_loss.backward()
        ref_opt.step()
        ref_opt.zero_grad()
    # the sharded parameters are DTensors: gather them whole and compare
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        full = p.full_tensor().detach().cpu()
        torch.testing.assert_close(full, q.detach().cpu(), rtol=rtol, atol=atol, msg=lambda m: f"{name}: {m}")


if __name__ == "__main__":
    rank, size = init("occl")
    run(rank, size)
    run(rank, size, reshard_after_forward=False)
    run(rank, size, mp=MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32),
        rtol=2e-2, atol=4e-3)
    dist.destroy_process_group()
    print(f"rank {rank}: fsdp ok")
