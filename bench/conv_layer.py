"""ResNet-style layers (3x3 convolution, batch norm, ReLU), forward and backward, on ocl beside
PyTorch's CPU backend in the same run, the two devices' steps taken in turn: milliseconds per
iteration and the convolution's GFLOP/s.
Also a bottleneck's 1x1 convolution and a MobileNet-style depthwise 3x3 one."""
import argparse
import copy

import torch
import torch.nn as nn

from common import report, time_interleaved

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="ocl")
parser.add_argument("--batch", type=int, default=8)
args = parser.parse_args()

# (name, input channels, output channels, spatial size, kernel size, groups): ResNet-18/34's four
# stages at 224x224 input, a ResNet-50 bottleneck's 1x1 reduction, a MobileNetV2 depthwise layer.
LAYERS = [("64ch 56x56", 64, 64, 56, 3, 1), ("128ch 28x28", 128, 128, 28, 3, 1), ("256ch 14x14", 256, 256, 14, 3, 1),
          ("512ch 7x7", 512, 512, 7, 3, 1), ("1x1 256->64 56x56", 256, 64, 56, 1, 1),
          ("depthwise 144ch 56x56", 144, 144, 56, 3, 144)]

rows = []
for name, channels, out_channels, size, kernel, groups in LAYERS:
    torch.manual_seed(0)
    layer = nn.Sequential(nn.Conv2d(channels, out_channels, kernel, padding=kernel // 2, groups=groups, bias=False),
                          nn.BatchNorm2d(out_channels), nn.ReLU())
    x = torch.randn(args.batch, channels, size, size)
    steps = {}
    for device in ("cpu", args.device):
        model, inp = copy.deepcopy(layer).to(device), x.to(device).requires_grad_()
        steps[device] = lambda model=model, inp=inp: model(inp).sum().backward()
    secs = time_interleaved(steps, repeat=5)
    # forward + the two backward products (input and weight) of the convolution
    flops = 3 * 2 * args.batch * out_channels * channels // groups * kernel * kernel * size * size
    rows.append({
        "layer": name,
        f"{args.device} ms": round(secs[args.device] * 1e3, 1),
        "cpu ms": round(secs["cpu"] * 1e3, 1),
        f"{args.device} conv GFLOP/s": round(flops / secs[args.device] / 1e9, 1),
        "cpu conv GFLOP/s": round(flops / secs["cpu"] / 1e9, 1),
        "ratio": round(secs["cpu"] / secs[args.device], 3),
    })

report("conv_layer", list(rows[0]), rows)
