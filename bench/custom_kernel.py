"""The fused RMSNorm of examples/kernels (a custom OpenCL kernel, drawbridge.kernel) against the
same RMSNorm composed of PyTorch ops, on ocl, beside PyTorch's CPU backend in the same run:
forward, and forward + backward. ms per call in a stream of back-to-back calls (bench/common.py);
"speed-up" is composed ocl time / fused ocl time.

The composed form is what a model without the kernel runs: x * rsqrt(mean(x^2) + eps) * w, five
kernels forward (and more backward), each a pass over memory."""
import pathlib
import sys

import torch
import torch.nn.functional as F

from common import calls_for, report, time_it

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples" / "kernels"))
from rmsnorm import rms_norm  # noqa: E402

EPS = 1e-6
SHAPES = [(256, 128), (4096, 768), (1024, 4096), (8192, 1024)]


def composed(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


def cases(device):
    cases = {"composed": composed, "cpu F.rms_norm": lambda x, w: F.rms_norm(x, (x.shape[-1],), w, EPS)}
    if device == "ocl":
        cases = {"fused kernel": lambda x, w: rms_norm(x, w, EPS), "composed": composed}
    return cases


def step(fn, x, w, backward):
    if not backward:
        return lambda: fn(x, w)
    grad = torch.ones_like(x)

    def run():
        x.grad = w.grad = None
        fn(x, w).backward(grad)
    return run


rows = []
for rows_, cols in SHAPES:
    for backward in (False, True):
        row = {"shape": f"{rows_}x{cols}", "pass": "fwd+bwd" if backward else "fwd"}
        for device in ("ocl", "cpu"):
            g = torch.Generator().manual_seed(0)
            x = torch.randn(rows_, cols, generator=g).to(device).requires_grad_(backward)
            w = torch.randn(cols, generator=g).to(device).requires_grad_(backward)
            for name, fn in cases(device).items():
                run = step(fn, x, w, backward)
                calls = calls_for(run, device, 0.05, at_least=3)
                row[f"{device} {name} ms" if device == "ocl" else "cpu ms" if name != "composed" else
                    "cpu composed ms"] = round(1e3 * time_it(run, device, repeat=5, calls=calls), 3)
        row["speed-up"] = round(row["ocl composed ms"] / row["ocl fused kernel ms"], 2)
        rows.append(row)

report("custom_kernel", ["shape", "pass", "ocl fused kernel ms", "ocl composed ms", "speed-up", "cpu ms",
                         "cpu composed ms"], rows)
