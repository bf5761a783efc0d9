"""torch.distributed on ocl: the ``occl`` backend (``csrc/distributed/``), registered at import.

``init_process_group("occl")`` serves ocl and CPU tensors; ``"cpu:gloo,ocl:occl"`` splits them;
``init_process_group()`` with no backend picks occl when ocl is torch's accelerator. Gloo, which
ships inside torch, is the transport: each occl backend owns a ProcessGroupGloo of the same
group (same store, ranks and timeout) and stages ocl tensors through pinned host memory.
"""

import torch
import torch.distributed as dist

from . import _C

BACKEND = "occl"


def _create_backend(options, backend_options):
    # Keys of its own in the group's store: the occl backend and a "gloo" one of the same group
    # may both exist ("cpu:gloo,ocl:occl").
    store = dist.PrefixStore("occl-transport/", options.store)
    gloo = dist.ProcessGroupGloo(store, options.group_rank, options.group_size, options.timeout)
    return _C.ProcessGroupOCCL(gloo, options.group_rank, options.group_size, options.timeout)


def register() -> None:
    if not dist.is_available() or not dist.is_gloo_available() or BACKEND in dist.Backend.backend_list:
        return
    # cpu: a group made with "occl" alone also runs CPU tensors (they go to Gloo as they are);
    # the default backend for cpu stays gloo.
    dist.Backend.register_backend(BACKEND, _create_backend, extended_api=True, devices=["cpu", "ocl"])
