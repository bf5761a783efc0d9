"""A ResNet-style layer (3x3 convolution, batch norm, ReLU), forward and backward, on ocl beside
PyTorch's CPU backend in the same run: milliseconds per iteration and the convolution's GFLOP/s."""
import argparse

import torch
import torch.nn as nn

from common import report, time_it

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="ocl")
parser.add_argument("--batch", type=int, default=8)
args = parser.parse_args()

# (channels, spatial size): ResNet-18/34's four stages at 224x224 input.
STAGES = [(64, 56), (128, 28), (256, 14), (512, 7)]

rows = []
for channels, size in STAGES:
    torch.manual_seed(0)
    layer = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels), nn.ReLU())
    x = torch.randn(args.batch, channels, size, size)
    secs = {}
    for device in ("cpu", args.device):
        model, inp = layer.to(device), x.to(device).requires_grad_()

        def step():
            model(inp).sum().backward()

        secs[device] = time_it(step, device, repeat=3)
    # forward + the two backward products (input and weight) of the convolution
    flops = 3 * 2 * args.batch * channels * channels * 9 * size * size
    rows.append({
        "layer": f"{channels}ch {size}x{size}",
        f"{args.device} ms": round(secs[args.device] * 1e3, 1),
        "cpu ms": round(secs["cpu"] * 1e3, 1),
        f"{args.device} conv GFLOP/s": round(flops / secs[args.device] / 1e9, 1),
        "cpu conv GFLOP/s": round(flops / secs["cpu"] / 1e9, 1),
        "ratio": round(secs["cpu"] / secs[args.device], 3),
    })

report("conv_layer", list(rows[0]), rows)
