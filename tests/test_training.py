"""Training natively: the same model, weights and batches on ocl and on the CPU give the same
losses step by step, with the fallback switched to error so that every op runs on the device."""
import pytest
import torch
import torch.nn as nn

import drawbridge


@pytest.fixture
def native_only():
    drawbridge.set_fallback_mode("error")
    yield
    drawbridge.set_fallback_mode("silent")


def train_mlp(device, make_optimizer, steps=20):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 5)).to(device)
    optimizer = make_optimizer(model.parameters())
    g = torch.Generator().manual_seed(1)
    teacher = torch.randn(20, 5, generator=g)  # a learnable task: labels from a fixed linear map
    losses = []
    for _ in range(steps):
        x = torch.randn(64, 20, generator=g)
        y = (x @ teacher).argmax(1)
        loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("name,make_optimizer", [
    ("sgd", lambda p: torch.optim.SGD(p, lr=0.2, momentum=0.9, nesterov=True, weight_decay=1e-4)),
    ("adam", lambda p: torch.optim.Adam(p, lr=1e-2)),
    ("adamw", lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.01)),
])
def test_mlp_classifier_matches_cpu(native_only, name, make_optimizer):
    cpu = train_mlp("cpu", make_optimizer)
    ocl = train_mlp("ocl", make_optimizer)
    for step, (a, b) in enumerate(zip(ocl, cpu)):
        assert abs(a - b) <= 1e-3 * abs(b), f"step {step}: ocl {a} vs cpu {b}"
    assert ocl[-1] < 0.7 * ocl[0], f"the loss did not fall: {ocl[0]} -> {ocl[-1]}"
