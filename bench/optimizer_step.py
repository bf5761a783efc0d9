"""One optimizer step over the parameters of bench/train_step.py's GPT-style model (76 tensors,
gradients set), for each torch.optim implementation a user gets: the default (foreach) AdamW, the
fused AdamW, SGD with momentum, and clip_grad_norm_ — milliseconds per step and kernel launches
per step on ocl, beside the same on the CPU in the same run."""
import os
import sys

import torch

from common import report, sync, time_it

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from gpt import GPT  # noqa: E402

STEPS = {
    "adamw (foreach, the default)": lambda ps: torch.optim.AdamW(ps, lr=3e-4).step,
    "adamw fused=True": lambda ps: torch.optim.AdamW(ps, lr=3e-4, fused=True).step,
    "sgd momentum (foreach)": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9).step,
    "clip_grad_norm_": lambda ps: (lambda: torch.nn.utils.clip_grad_norm_(ps, 1.0)),
}


def launches() -> int:
    import drawbridge
    return drawbridge._C._launch_count()


rows = []
for name, make in STEPS.items():
    row = {"step": name}
    for device in ("ocl", "cpu"):
        torch.manual_seed(0)
        params = list(GPT(4096, 256, 384, 6, 6).to(device).parameters())
        for p in params:
            p.grad = torch.randn_like(p)
        step = make(params)
        step()
        sync(device)
        if device == "ocl":
            before = launches()
            step()
            sync(device)
            row["ocl launches"] = launches() - before
        row[f"{device} ms"] = round(time_it(step, device, repeat=10, warmup=2) * 1e3, 2)
    row["ocl / cpu time"] = round(row["ocl ms"] / row["cpu ms"], 2)
    rows.append(row)
print(f"{len(params)} parameter tensors")
report("optimizer_step", list(rows[0]), rows)
