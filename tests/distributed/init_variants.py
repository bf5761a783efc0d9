"""The ways a script starts a group on ocl: each must give an occl group that works.

Usage: init_variants.py MODE, MODE one of
  default     init_process_group() with no backend: ocl is torch's accelerator, so occl (for
              ocl tensors only, as a default group on CUDA has nccl only)
  occl        init_process_group("occl"): CPU tensors go through the same group (to Gloo)
  split       init_process_group("cpu:gloo,ocl:occl")
  device_id   init_process_group("occl", device_id=ocl:LOCAL_RANK), then a device mesh
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh


def main(mode):
    local = int(os.environ["LOCAL_RANK"])
    device = torch.device("ocl", local % torch.ocl.device_count())
    torch.ocl.set_device(device)
    if mode == "default":
        dist.init_process_group()
    elif mode == "split":
        dist.init_process_group("cpu:gloo,ocl:occl")
    elif mode == "device_id":
        dist.init_process_group("occl", device_id=device)
    else:
        dist.init_process_group("occl")
    rank, size = dist.get_rank(), dist.get_world_size()
    names = dist.get_backend_config()
    assert "occl" in names, names

    x = torch.full((3,), float(rank + 1), device="ocl")
    dist.all_reduce(x)
    assert x.cpu().tolist() == [size * (size + 1) / 2] * 3, x
    # CPU tensors: Gloo (the split config's, or occl's own route). A group made with no backend
    # named has the accelerator's backend only, as with CUDA's, and no cpu backend.
    if mode != "default":
        c = torch.full((2,), float(rank))
        dist.all_reduce(c)
        assert c.tolist() == [sum(range(size))] * 2, c
    # object collectives and barrier
    objs = [None] * size
    dist.all_gather_object(objs, {"rank": rank, "name": f"r{rank}"})
    assert [o["rank"] for o in objs] == list(range(size)), objs
    box = [{"from": 0}] if rank == 0 else [None]
    dist.broadcast_object_list(box, src=0)
    assert box == [{"from": 0}], box
    dist.barrier()
    if mode == "device_id":
        mesh = init_device_mesh("ocl", (size,))
        assert mesh.device_type == "ocl"
        y = torch.ones(2, device="ocl")
        dist.all_reduce(y, group=mesh.get_group())
        assert y.cpu().tolist() == [float(size)] * 2
    dist.destroy_process_group()
    print(f"rank {rank}: init {mode} ok ({names})")


if __name__ == "__main__":
    main(sys.argv[1])
