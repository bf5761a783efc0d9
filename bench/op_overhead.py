"""Host overhead per op: a chain of 1000 small ops enqueued without synchronization, timed on
the host (enqueue only) and to completion, beside the same chain on CPU tensors. Of the enqueue
time, the part spent inside the OpenCL driver's enqueue calls (kernel arguments, launches,
transfers) is shown apart: the rest is Drawbridge's and PyTorch's host path (dispatch, TensorIterator, kernel
lookup, argument packing, allocation)."""
import argparse
import time

import torch

from drawbridge import _C

from common import report, sync

parser = argparse.ArgumentParser()
parser.add_argument("--ops", type=int, default=1000)
parser.add_argument("--device", default="ocl")
args = parser.parse_args()


def chains(device):
    x = torch.ones(256, device=device)
    y = torch.empty(256, device=device)
    z = torch.full((256,), 0.5, device=device)
    h = torch.empty(256, device=device, dtype=torch.float16)
    return {
        "add_ (256 floats)": lambda: x.add_(z),
        "x + z (256 floats, allocates)": lambda: x + z,
        "fill_ (256 floats)": lambda: x.fill_(1.5),
        "copy_ (256 floats)": lambda: y.copy_(x),
        "copy_ strided (16x16 .t())": lambda: y.view(16, 16).copy_(x.view(16, 16).t()),
        "to(float16) (256 floats)": lambda: h.copy_(x),
    }


rows = []
cpu_chains = chains("cpu")
for name, op in chains(args.device).items():
    results = {}
    for device, fn in ((args.device, op), ("cpu", cpu_chains[name])):
        for _ in range(50):
            fn()
        sync(device)
        in_driver = _C._driver_enqueue_seconds()
        start = time.perf_counter()
        for _ in range(args.ops):
            fn()
        enqueued = time.perf_counter() - start
        in_driver = _C._driver_enqueue_seconds() - in_driver
        sync(device)
        done = time.perf_counter() - start
        results[device] = (enqueued, done, in_driver)
    rows.append({
        "op": name,
        f"{args.device} enqueue us/op": round(results[args.device][0] / args.ops * 1e6, 2),
        f"{args.device} complete us/op": round(results[args.device][1] / args.ops * 1e6, 2),
        "in OpenCL enqueue calls us/op": round(results[args.device][2] / args.ops * 1e6, 2),
        "host path us/op": round((results[args.device][0] - results[args.device][2]) / args.ops * 1e6, 2),
        "cpu us/op": round(results["cpu"][1] / args.ops * 1e6, 2),
    })

report("op_overhead", list(rows[0]), rows)
