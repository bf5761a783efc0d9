"""DistributedDataParallel on ocl through occl trains as one process on the whole batch does.

Each rank trains on its shard of a global batch; the reference, in the same process, trains an
identical model without DDP on the whole batch (DDP averages gradients, so the two agree).
Covers gradient buckets (several, small), no_sync accumulation, find_unused_parameters and
communication hooks (a built-in one and a Python one on the future API).
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

from common import init


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 32), nn.LayerNorm(32), nn.Linear(32, 4))
        self.unused = nn.Linear(32, 4)  # never reached when skip_unused

    def forward(self, x, use_extra=False):
        y = self.body(x)
        return y + self.unused(self.body[0](x)) if use_extra else y


def python_allreduce_hook(process_group, bucket):
    """A comm hook on the future API: average, then hand back the bucket's tensor."""
    t = bucket.buffer().div_(dist.get_world_size(process_group))
    fut = dist.all_reduce(t, group=process_group, async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])


def run(rank, size, *, hook=None, accumulate=1, find_unused=False, steps=4):
    torch.manual_seed(0)
    reference = Net().to("ocl")
    model = Net().to("ocl")
    model.load_state_dict(reference.state_dict())
    ddp = DDP(model, bucket_cap_mb=0.004, find_unused_parameters=find_unused)  # several buckets
    if hook is not None:
        ddp.register_comm_hook(None if hook is python_allreduce_hook else dist.group.WORLD, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    per_rank = 6
    for step in range(steps):
        batches = [torch.randn(size * per_rank, 12, generator=g) for _ in range(accumulate)]
        targets = [torch.randn(size * per_rank, 4, generator=g) for _ in range(accumulate)]
        opt.zero_grad()
        ref_opt.zero_grad()
        for i, (x, t) in enumerate(zip(batches, targets)):
            mine = slice(rank * per_rank, (rank + 1) * per_rank)
            x_ocl, t_ocl = x.to("ocl"), t.to("ocl")
            last = i == accumulate - 1
            ctx = ddp.no_sync() if not last else torch.enable_grad()
            with ctx:
                loss = nn.functional.mse_loss(ddp(x_ocl[mine], use_extra=not find_unused), t_ocl[mine]) / accumulate
                loss.backward()
            ref_loss = nn.functional.mse_loss(reference(x_ocl, use_extra=not find_unused), t_ocl) / accumulate
            ref_loss.backward()
        opt.step()
        ref_opt.step()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        if find_unused and name.startswith("unused"):
            assert p.grad is None or not p.grad.any(), name
        torch.testing.assert_close(p.detach().cpu(), q.detach().cpu(), rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")
    # every rank holds the same parameters
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(size)]
    dist.all_gather(gathered, flat)
    for other in gathered:
        assert torch.equal(other.cpu(), flat.cpu()), "ranks disagree on parameters"


if __name__ == "__main__":
    rank, size = init("occl")
    run(rank, size)
    run(rank, size, accumulate=2)
    run(rank, size, find_unused=True)
    run(rank, size, hook=default_hooks.allreduce_hook)
    run(rank, size, hook=python_allreduce_hook)
    dist.destroy_process_group()
    print(f"rank {rank}: ddp ok")
