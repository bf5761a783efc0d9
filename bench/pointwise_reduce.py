"""Pointwise ops (add, mul, mul of a float by a bool tensor, gelu, where) and reductions (sum over
all, sum over the last dim, max over the last dim), 1K ... 64M float32 elements, contiguous and transposed inputs, in GB/s
(bytes read + written / time), beside the same op on PyTorch's CPU backend in the same run.

"GB/s" is per call in a stream of back-to-back calls lasting at least 20 ms with one
synchronization at the end (how a model runs: many ops between synchronizations), the best of
several such blocks; "synced GB/s" times one call with its synchronization, so it also pays the
device's launch-to-completion round trip (about 40 us on PoCL). The devices take turns, a few
blocks each, for several rounds; "ratio" (CPU time / ocl time) is the median over the rounds of
the two devices' times in the same round, so that a slow or fast stretch of a shared machine
counts on both sides."""
import argparse
import statistics

import torch

from common import calls_for, report, time_it

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="ocl")
parser.add_argument("--max-elements", type=int, default=64 << 20)
args = parser.parse_args()

OPS = {
    "add": (lambda x, y, m: x + y, 3),
    "mul": (lambda x, y, m: x * y, 3),
    # Inputs of two dtypes: the bool one is read through its run-time dtype (common.clh's load_dynamic).
    "mul (float by bool)": (lambda x, y, m: x * m, 2.25),
    "gelu": (lambda x, y, m: torch.nn.functional.gelu(x), 2),
    "where": (lambda x, y, m: torch.where(m, x, y), 3.25),
    "sum (all)": (lambda x, y, m: x.sum(), 1),
    "sum (last dim)": (lambda x, y, m: x.sum(-1), 1),
    "max (last dim)": (lambda x, y, m: x.amax(-1), 1),
}


def inputs(n, device, transposed):
    side = 1 << ((n.bit_length() - 1) // 2)
    shape = (side, n // side)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(shape, generator=g), torch.randn(shape, generator=g)
    m = x > 0
    x, y, m = x.to(device), y.to(device), m.to(device)
    if transposed:  # same data, read through a transposed (non-contiguous) view
        x, y, m = x.t(), y.t(), m.t()
    return x, y, m


rows = []
n = 1 << 10
while n <= args.max_elements:
    for transposed in (False, True):
        data = {dev: inputs(n, dev, transposed) for dev in (args.device, "cpu")}
        for name, (fn, tensors_moved) in OPS.items():
            nbytes = n * 4 * tensors_moved if "sum" not in name and "max" not in name else n * 4
            repeat, rounds = (20, 1) if n <= (1 << 20) else (2, 6)
            run = {dev: (lambda dev=dev: fn(*data[dev])) for dev in data}
            calls = {dev: calls_for(run[dev], dev, 0.02, at_least=10) for dev in data}
            secs = {dev: [] for dev in data}
            for r in range(rounds):
                for dev in (list(data) if r % 2 == 0 else list(data)[::-1]):
                    secs[dev].append(time_it(run[dev], dev, repeat=repeat, calls=calls[dev]))
            ratio = statistics.median(c / o for c, o in zip(secs["cpu"], secs[args.device]))
            synced = time_it(lambda: fn(*data[args.device]), args.device, repeat=repeat * rounds)
            rows.append({
                "op": name,
                "elements": n,
                "layout": "transposed" if transposed else "contiguous",
                f"{args.device} GB/s": round(nbytes / min(secs[args.device]) / 1e9, 3),
                "cpu GB/s": round(nbytes / min(secs["cpu"]) / 1e9, 3),
                f"{args.device} synced GB/s": round(nbytes / synced / 1e9, 3),
                "ratio": round(ratio, 3),
            })
        del data
    n <<= 4

report("pointwise_reduce", list(rows[0]), rows)
