"""Collectives inside torch.compile on ocl: functional collectives in a compiled graph, and a
compiled DDP model (Dynamo's DDPOptimizer splits the graph at bucket boundaries) training as
the eager DDP model does."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from common import init


def graph_with_collective(rank):
    def f(x):
        y = funcol.all_reduce((x * 2).relu(), "sum", dist.group.WORLD)
        return y.sum(-1) + 1

    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(rank)).to("ocl")
    torch.testing.assert_close(torch.compile(f, backend="ocl", fullgraph=True)(x).cpu(), f(x).cpu())


def compiled_ddp(rank, steps=3):
    def train(compiled):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 2)).to("ocl")
        ddp = DDP(model)
        run = torch.compile(ddp, backend="ocl") if compiled else ddp
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(10 + rank)
        losses = []
        for _ in range(steps):
            x, t = torch.randn(4, 8, generator=g).to("ocl"), torch.randn(4, 2, generator=g).to("ocl")
            loss = nn.functional.mse_loss(run(x), t)
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
        return losses, [p.detach().cpu() for p in model.parameters()]

    eager_losses, eager_params = train(False)
    losses, params = train(True)
    torch.testing.assert_close(losses, eager_losses, rtol=1e-4, atol=1e-6)
    for p, q in zip(params, eager_params):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)


if __name__ == "__main__":
    rank, size = init("occl")
    graph_with_collective(rank)
    compiled_ddp(rank)
    dist.destroy_process_group()
    print(f"rank {rank}: compiled ok")
