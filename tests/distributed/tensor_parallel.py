"""DTensor tensor parallelism on an ocl device mesh, and a sharded checkpoint saved and loaded.

An MLP (ColwiseParallel then RowwiseParallel) and an attention block (the q/k/v projections
column-wise, the output projection row-wise, heads split over the ranks) train on a 1-D mesh;
with 4 ranks a 2-D mesh adds FSDP2 over the other dimension. The reference trains an unsharded
copy on the same batch in the same process. The last part saves the sharded state with
torch.distributed.checkpoint, loads it into a freshly sharded model and compares.
"""
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

from common import init


class MLP(nn.Module):
    def __init__(self, dim=16, hidden=32):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class Attention(nn.Module):
    def __init__(self, dim=16, heads=4):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))

    def forward(self, x):
        b, s, _ = x.shape
        # -1 heads: under tensor parallelism each rank holds heads / world_size of them
        split = lambda t: t.view(b, s, -1, self.head_dim).transpose(1, 2)
        y = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)), is_causal=True)
        return self.o(y.transpose(1, 2).reshape(b, s, -1))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn, self.mlp = Attention(), MLP()

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.mlp(x)


PLAN = {"attn.q": ColwiseParallel(), "attn.k": ColwiseParallel(), "attn.v": ColwiseParallel(),
        "attn.o": RowwiseParallel(), "mlp.up": ColwiseParallel(), "mlp.down": RowwiseParallel()}


def fresh():
    torch.manual_seed(0)
    return Block().to("ocl")


def train(model, steps, data):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for x, t in data[:steps]:
        F.mse_loss(model(x), t).backward()
        opt.step()
        opt.zero_grad()


def full(p):
    return p.full_tensor() if hasattr(p, "full_tensor") else p


def compare(model, reference, what):
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(full(p).detach().cpu(), q.detach().cpu(), rtol=1e-4, atol=1e-5,
                                   msg=lambda m: f"{what} {name}: {m}")


def main(checkpoint_dir):
    rank, size = init("occl")
    g = torch.Generator().manual_seed(3)
    data = [(torch.randn(2, 6, 16, generator=g).to("ocl"), torch.randn(2, 6, 16, generator=g).to("ocl"))
            for _ in range(3)]
    reference = fresh()
    train(reference, 3, data)

    if size == 4:  # 2-D: data parallel (FSDP2) over dim 0, tensor parallel over dim 1
        mesh = init_device_mesh("ocl", (2, 2), mesh_dim_names=("dp", "tp"))
        model = parallelize_module(fresh(), mesh["tp"], PLAN)
        fully_shard(model, mesh=mesh["dp"])
        dp = mesh["dp"].get_local_rank()
        # each data-parallel rank takes half the batch: the same gradient as the whole batch
        shards = [(x[dp:dp + 1], t[dp:dp + 1]) for x, t in data]
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for x, t in shards:
            F.mse_loss(model(x), t).backward()
            opt.step()
            opt.zero_grad()
        compare(model, reference, "2-D mesh")
    else:
        mesh = init_device_mesh("ocl", (size,))
        model = parallelize_module(fresh(), mesh, PLAN)
        train(model, 3, data)
        compare(model, reference, "tensor parallel")

    # torch.distributed.checkpoint: save the sharded state, load it into a new sharded model
    dcp.save({"model": model.state_dict()}, checkpoint_id=checkpoint_dir)
    restored = parallelize_module(fresh(), mesh if size != 4 else mesh["tp"], PLAN)
    if size == 4:
        fully_shard(restored, mesh=mesh["dp"])
    state = {"model": restored.state_dict()}
    dcp.load(state, checkpoint_id=checkpoint_dir)
    restored.load_state_dict(state["model"])
    compare(restored, reference, "after checkpoint load")
    dist.destroy_process_group()
    print(f"rank {rank}: tensor parallel and checkpoint ok")


if __name__ == "__main__":
    main(sys.argv[1])
