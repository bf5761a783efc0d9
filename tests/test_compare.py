"""drawbridge.compare: module-by-module differences between the CPU and ocl."""
import torch
from torch import nn

import drawbridge


class OffOnOcl(nn.Module):
    """Adds 0.01 on ocl only: the module compare() must name."""

    def forward(self, x):
        return x + (0.01 if x.device.type == "ocl" else 0.0)


def small_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(), nn.Dropout(0.5), nn.Linear(32, 4))


def test_a_model_that_agrees_reports_every_module_and_gradient():
    model = small_model()
    report = drawbridge.compare(model, torch.randn(8, 16))
    assert report.all_close, str(report)
    outputs = [r.name for r in report.rows if r.kind == "output"]
    assert outputs == ["0", "1", "2", "3", "4", ""]  # in the order the modules returned; "" is the model
    grads = {r.name for r in report.rows if r.kind == "grad"}
    assert grads == {name for name, _ in model.named_parameters()}
    assert all(r.max_abs < 1e-4 for r in report.rows), str(report)
    assert model.training and next(model.parameters()).device.type == "cpu"  # the model is left alone


def test_the_first_module_that_differs_is_named():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), OffOnOcl(), nn.Linear(32, 4))
    report = drawbridge.compare(model, torch.randn(8, 16))
    first = report.first_divergence
    assert first is not None and (first.name, first.kind) == ("2", "output"), str(report)
    assert abs(first.max_abs - 0.01) < 1e-4
    by_name = {(r.name, r.kind): r for r in report.rows}
    assert by_name[("0", "output")].close and by_name[("1", "output")].close
    assert not by_name[("3", "output")].close  # inherited downstream
    assert "<- differs" in str(report) and "first difference" in str(report)


def test_gradients_are_compared_from_the_same_upstream():
    class WrongBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.ocl = x.device.type == "ocl"
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * (2.5 if ctx.ocl else 2.0)

    class Doubler(nn.Module):
        def forward(self, x):
            return WrongBackward.apply(x)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), Doubler(), nn.Linear(8, 2))
    report = drawbridge.compare(model, torch.randn(4, 8))
    assert all(r.close for r in report.rows if r.kind == "output"), str(report)
    first = report.first_divergence
    assert first is not None and (first.name, first.kind) == ("0.weight", "grad"), str(report)
    assert {r.name for r in report.rows if r.kind == "grad" and not r.close} == {"0.weight", "0.bias"}
