"""Training natively: the same model, weights and batches on ocl and on the CPU give the same
losses step by step, with the fallback switched to error so that every op runs on the device."""
import pytest
import torch
import torch.nn as nn

import drawbridge
from gpt import GPT as TinyGPT


@pytest.fixture
def native_only():
    drawbridge.set_fallback_mode("error")
    yield
    drawbridge.set_fallback_mode("silent")


def train(device, make_model, make_optimizer, batch, loss_of, steps=20, autocast=None):
    """Losses of `steps` training steps from the same initial weights and batches on `device`,
    the forward pass under torch.autocast to the dtype `autocast` when one is given."""
    torch.manual_seed(0)
    model = make_model().to(device)
    optimizer = make_optimizer(model.parameters())
    g = torch.Generator().manual_seed(2)
    losses = []
    for _ in range(steps):
        inputs, targets = batch(g)
        with torch.autocast(device, dtype=autocast, enabled=autocast is not None):
            loss = loss_of(model, inputs.to(device), targets.to(device))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses


def assert_same_and_falling(ocl, cpu, rtol=1e-3, fall=0.8, atol=1e-6):
    # atol: a loss trained near 0 (the CNN's reaches 2e-5) is a difference of nearly equal log
    # terms, whose rounding depends on the summation order of each device's softmax.
    for step, (a, b) in enumerate(zip(ocl, cpu, strict=True)):
        assert abs(a - b) <= rtol * abs(b) + atol, f"step {step}: ocl {a} vs cpu {b}"
    assert ocl[-1] < fall * ocl[0], f"the loss did not fall: {ocl[0]} -> {ocl[-1]}"


def adamw(params):
    return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01)


TEACHER = torch.randn(20, 5, generator=torch.Generator().manual_seed(1))


def classification_batch(g):  # a learnable task: labels from a fixed linear map
    x = torch.randn(64, 20, generator=g)
    return x, (x @ TEACHER).argmax(1)


def cross_entropy(model, inputs, targets):
    return nn.functional.cross_entropy(model(inputs), targets)


def mlp():
    return nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 5))


@pytest.mark.parametrize("name,make_optimizer", [
    ("sgd", lambda p: torch.optim.SGD(p, lr=0.2, momentum=0.9, nesterov=True, weight_decay=1e-4)),
    ("adam", lambda p: torch.optim.Adam(p, lr=1e-2)),
    ("adamw", adamw),
])
def test_mlp_classifier_matches_cpu(native_only, name, make_optimizer):
    cpu = train("cpu", mlp, make_optimizer, classification_batch, cross_entropy)
    ocl = train("ocl", mlp, make_optimizer, classification_batch, cross_entropy)
    assert_same_and_falling(ocl, cpu, fall=0.7)


def small_cnn():
    def stage(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2)]
    return nn.Sequential(*stage(1, 8), *stage(8, 16), nn.Flatten(), nn.Linear(16 * 4 * 4, 4))


def test_small_cnn_matches_cpu(native_only):
    def batch(g):  # classify which quadrant of a 16x16 image holds a bright square
        labels = torch.randint(0, 4, (16,), generator=g)
        images = torch.randn(16, 1, 16, 16, generator=g) * 0.3
        for n, q in enumerate(labels.tolist()):
            r, c = (q // 2) * 8, (q % 2) * 8
            images[n, 0, r + 2:r + 6, c + 2:c + 6] += 2.0
        return images, labels

    cpu = train("cpu", small_cnn, adamw, batch, cross_entropy)
    ocl = train("ocl", small_cnn, adamw, batch, cross_entropy)
    assert_same_and_falling(ocl, cpu)


def gpt_batch(g):  # a learnable sequence: each token is the previous one plus one
    start = torch.randint(0, 64, (8, 1), generator=g)
    seq = (start + torch.arange(17)) % 64
    return seq[:, :-1], seq[:, 1:]


def gpt_loss(model, inputs, targets):
    return nn.functional.cross_entropy(model(inputs).reshape(-1, 64), targets.reshape(-1))


def test_gpt_decoder_matches_cpu(native_only):
    cpu = train("cpu", TinyGPT, adamw, gpt_batch, gpt_loss)
    ocl = train("ocl", TinyGPT, adamw, gpt_batch, gpt_loss)
    assert_same_and_falling(ocl, cpu)


def test_gpt_decoder_trains_under_bfloat16_autocast(native_only):
    # Matrix products run in bfloat16 (8 bits of mantissa) on both devices, in another summation
    # order, so the losses agree to bfloat16's precision rather than float32's.
    cpu = train("cpu", TinyGPT, adamw, gpt_batch, gpt_loss, autocast=torch.bfloat16)
    ocl = train("ocl", TinyGPT, adamw, gpt_batch, gpt_loss, autocast=torch.bfloat16)
    assert_same_and_falling(ocl, cpu, rtol=1e-2)


def first_step_gradients(device, autocast):
    torch.manual_seed(0)
    model = TinyGPT().to(device)
    inputs, targets = gpt_batch(torch.Generator().manual_seed(2))
    with torch.autocast(device, dtype=autocast):
        gpt_loss(model, inputs.to(device), targets.to(device)).backward()
    return {name: p.grad.cpu() for name, p in model.named_parameters()}


@pytest.mark.parametrize("autocast", [torch.bfloat16, torch.float16])
def test_gpt_decoder_gradients_under_autocast_match_cpu(native_only, autocast):
    # Every parameter's gradient, not only the loss: a wrong low-precision backward kernel that
    # the optimizer would smooth over still shows here. Per tensor, to the relative precision of
    # the autocast dtype (bfloat16 keeps 8 bits of mantissa, float16 11).
    cpu, ocl = first_step_gradients("cpu", autocast), first_step_gradients("ocl", autocast)
    assert cpu.keys() == ocl.keys()
    rtol = 1.5e-2 if autocast is torch.bfloat16 else 4e-3
    for name, expected in cpu.items():
        error = (ocl[name] - expected).norm().item()
        assert error <= rtol * expected.norm().item() + 1e-6, f"{name}: |ocl - cpu| = {error}, |cpu| = {expected.norm()}"


class SequenceRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 32, num_layers=2, batch_first=True)
        self.out = nn.Linear(32, 1)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.out(y[:, -1])


def test_two_layer_lstm_matches_cpu(native_only):
    def batch(g):  # predict the sum of a sequence's first feature
        x = torch.randn(16, 12, 4, generator=g)
        return x, x[:, :, 0].sum(1, keepdim=True)

    def loss_of(model, inputs, targets):
        return nn.functional.mse_loss(model(inputs), targets)

    cpu = train("cpu", SequenceRegressor, adamw, batch, loss_of)
    ocl = train("ocl", SequenceRegressor, adamw, batch, loss_of)
    assert_same_and_falling(ocl, cpu)


def test_tied_weights_stay_tied_on_the_device():
    model = TinyGPT().to("ocl")
    assert model.head.weight is model.tokens.weight
    assert model.half().head.weight is model.tokens.weight
