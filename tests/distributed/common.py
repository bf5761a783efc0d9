"""What the distributed worker scripts share: start-up, data, comparison."""
import os

import torch
import torch.distributed as dist


def init(backend="occl"):
    """Joins torchrun's group; each rank uses ocl:LOCAL_RANK when there are enough devices."""
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.ocl.set_device(local % torch.ocl.device_count())
    dist.init_process_group(backend)
    return dist.get_rank(), dist.get_world_size()


def rank_data(shape, dtype, rank, salt=0):
    """Different on every rank, the same on every call."""
    g = torch.Generator().manual_seed(1000 * rank + salt)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-50, 50, shape, generator=g).to(dtype)


def check(got, want, what):
    got = got.cpu()
    assert got.dtype == want.dtype and got.shape == want.shape, f"{what}: {got.dtype}{tuple(got.shape)} vs {want.dtype}{tuple(want.shape)}"
    assert torch.equal(got, want), f"{what}: occl differs from gloo\n{got}\n{want}"
