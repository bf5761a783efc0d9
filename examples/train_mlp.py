"""Trains a small MLP classifier on ocl for a few steps and checks it against the CPU.

Ops that have no native ocl kernel yet run through the CPU fallback; the script prints which.
"""
import copy

import torch
import torch.nn as nn

import drawbridge

drawbridge.set_fallback_mode("silent")  # the report below says what fell back
torch.manual_seed(0)

# A toy task: which of three Gaussian blobs a point came from.
centers = torch.tensor([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
labels = torch.randint(0, 3, (512,))
points = centers[labels] + 0.6 * torch.randn(512, 2)

cpu_model = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 3))
model = copy.deepcopy(cpu_model).to("ocl")


def train(net, device, steps=10):
    opt = torch.optim.SGD(net.parameters(), lr=0.2, momentum=0.9)
    x, y = points.to(device), labels.to(device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


print(f"training on {torch.ocl.get_device_name()} (ocl:0)")
ocl_losses = train(model, "ocl")
cpu_losses = train(cpu_model, "cpu")
for step, (a, b) in enumerate(zip(ocl_losses, cpu_losses)):
    print(f"step {step:2d}  loss ocl {a:.6f}  cpu {b:.6f}")
accuracy = (model(points.to("ocl")).argmax(1).cpu() == labels).float().mean().item()
print(f"accuracy after training: {accuracy:.1%}")
assert ocl_losses[-1] < ocl_losses[0], "the loss did not fall"
torch.testing.assert_close(ocl_losses, cpu_losses, rtol=1e-5, atol=1e-6)
report = drawbridge.fallback_report()
print(f"{len(report)} operators ran through the CPU fallback:", ", ".join(report))
