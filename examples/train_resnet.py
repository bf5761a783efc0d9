"""A ResNet training loop as users write it for a GPU, on ocl: a DataLoader with worker processes
and pinned memory feeding non-blocking copies, bfloat16 autocast, SGD with momentum, and a
checkpoint written after the first epoch from which a fresh process-like restart (new model, new
optimizer, loaded state) resumes. The resumed run must reproduce the uninterrupted one.

`--epochs`, `--batches` and `--width` size it (the test suite runs it small).
"""
import argparse
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import drawbridge  # noqa: F401  (autoloaded by `import torch`; imported to say what this needs)

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--batches", type=int, default=8, help="batches per epoch")
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("--width", type=int, default=32)
parser.add_argument("--workers", type=int, default=2)
args = parser.parse_args()
device = torch.device("ocl")


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self, width, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.layers = nn.Sequential(BasicBlock(width, width, 1), BasicBlock(width, 2 * width, 2),
                                    BasicBlock(2 * width, 4 * width, 2))
        self.head = nn.Linear(4 * width, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def dataset():
    # 32x32 images whose class is the quadrant holding the brightest blob: learnable in a few steps.
    g = torch.Generator().manual_seed(0)
    n = args.batches * args.batch_size
    images = 0.3 * torch.randn(n, 3, 32, 32, generator=g)
    labels = torch.randint(0, 4, (n,), generator=g)
    for i, c in enumerate(labels.tolist()):
        y, x = divmod(c, 2)
        images[i, :, 16 * y + 4:16 * y + 12, 16 * x + 4:16 * x + 12] += 1.5
    return TensorDataset(images, labels)


def loader(data, epoch):
    return DataLoader(data, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                      pin_memory=True, generator=torch.Generator().manual_seed(100 + epoch),
                      persistent_workers=False)


def build():
    torch.manual_seed(0)
    model = ResNet(args.width).to(device).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    return model, opt


def train_epoch(model, opt, data, epoch):
    model.train()
    losses = []
    for images, labels in loader(data, epoch):
        assert images.is_pinned()
        images = images.to(device, non_blocking=True).to(memory_format=torch.channels_last)
        labels = labels.to(device, non_blocking=True)
        with torch.autocast(device_type="ocl", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(images), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


data = dataset()
model, opt = build()
checkpoint = os.path.join(tempfile.mkdtemp(), "resnet.pt")
uninterrupted = []
for epoch in range(args.epochs):
    uninterrupted += train_epoch(model, opt, data, epoch)
    if epoch == 0:
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": epoch}, checkpoint)
    print(f"epoch {epoch}  mean loss {sum(uninterrupted[-args.batches:]) / args.batches:.4f}")

# Resume: everything rebuilt, the state read back from the file (it holds ocl tensors).
model, opt = build()
state = torch.load(checkpoint, map_location="ocl")
model.load_state_dict(state["model"])
opt.load_state_dict(state["opt"])
assert all(v.device.type == "ocl" for v in opt.state_dict()["state"][0].values() if torch.is_tensor(v))
resumed = uninterrupted[:args.batches]
for epoch in range(state["epoch"] + 1, args.epochs):
    resumed += train_epoch(model, opt, data, epoch)
print(f"losses: first {uninterrupted[0]:.4f}, last {uninterrupted[-1]:.4f}; the resumed run's last {resumed[-1]:.4f}")
assert uninterrupted[-1] < uninterrupted[0], "the loss did not fall"
assert resumed == uninterrupted, "the resumed run diverged from the uninterrupted one"
