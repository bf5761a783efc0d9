"""Data-parallel training on ocl: `torchrun --nproc-per-node=2 examples/train_ddp.py`.

The same script as with CUDA, with "ocl" for "cuda" and "occl" for "nccl". Each rank trains on
its own shard of the data; DDP averages the gradients through the occl backend. Ranks use
ocl:LOCAL_RANK when there are enough devices (PoCL has one, which the ranks share).
"""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("ocl", local_rank % torch.ocl.device_count())
    torch.ocl.set_device(device)
    dist.init_process_group("occl", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts them)
    model = DDP(nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 1)).to(device))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)

    data = torch.Generator().manual_seed(1)
    w_true = torch.randn(20, 1, generator=data)
    for step in range(50):
        x = torch.randn(world * 32, 20, generator=data)
        y = x @ w_true
        mine = slice(rank * 32, (rank + 1) * 32)  # this rank's shard of the global batch
        loss = nn.functional.mse_loss(model(x[mine].to(device)), y[mine].to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == 49:
            avg = loss.detach().clone()
            dist.all_reduce(avg, op=dist.ReduceOp.AVG)
            if rank == 0:
                print(f"step {step:2d}  loss {avg.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
