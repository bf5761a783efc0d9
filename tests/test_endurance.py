"""1,000 training steps of the GPT-style model: device memory and the process's resident memory
come back to their level after the first steps (nothing leaks per step)."""
import torch

import drawbridge
from gpt import GPT
from test_training import adamw, gpt_batch, gpt_loss

STEPS = 1000


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_thousand_gpt_steps_leak_nothing():
    drawbridge.set_fallback_mode("error")
    try:
        torch.manual_seed(0)
        model = GPT().to("ocl")
        optimizer = adamw(model.parameters())
        g = torch.Generator().manual_seed(2)
        allocated, resident, losses = [], [], []
        for step in range(STEPS):
            inputs, targets = gpt_batch(g)
            loss = gpt_loss(model, inputs.to("ocl"), targets.to("ocl"))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 50 == 0 or step == STEPS - 1:
                losses.append(loss.item())  # synchronizes
                allocated.append(torch.ocl.memory_allocated())
                resident.append(resident_bytes())
    finally:
        drawbridge.set_fallback_mode("silent")
    # After the first step the optimizer state exists; from then on every step frees what it made.
    assert max(allocated[1:]) == allocated[1], allocated
    assert allocated[-1] == allocated[1], allocated
    # Host memory: the first 100 steps fill caches (kernels, allocator bookkeeping); the rest may
    # not grow by more than noise.
    assert resident[-1] - resident[2] < 32 << 20, [r >> 20 for r in resident]
    assert losses[-1] < losses[0] * 0.5, losses
