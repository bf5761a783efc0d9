"""``drawbridge.compare(model, *inputs)``: where a model's numbers part between the CPU and ocl.

The model runs forward and backward twice from the same weights, on the CPU and on ocl, with a
hook on every submodule. The report lists, in the order the modules ran, how far each module's
output and each parameter's gradient on ocl is from the CPU's, and names the first module whose
output is off by more than the tolerance: when the numbers disagree after moving a model, that
module is where to look (the modules after it inherit its difference).
"""

from __future__ import annotations

import copy
import dataclasses

import torch


@dataclasses.dataclass
class Difference:
    name: str  # module (output) or parameter (gradient) name; "" is the model itself
    kind: str  # "output" or "grad"
    shape: tuple
    max_abs: float  # largest |ocl - cpu|
    max_rel: float  # largest |ocl - cpu| / max(|cpu|, tiny), over the same elements
    close: bool  # within rtol/atol of the CPU's (NaN and infinities at the same places)


@dataclasses.dataclass
class Comparison:
    rows: list
    rtol: float
    atol: float

    @property
    def first_divergence(self) -> Difference | None:
        """The first module output (in the order the modules ran) that is not close, else the
        first gradient that is not; None when everything agrees."""
        for kind in ("output", "grad"):
            for row in self.rows:
                if row.kind == kind and not row.close:
                    return row
        return None

    @property
    def all_close(self) -> bool:
        return self.first_divergence is None

    def __str__(self) -> str:
        width = max([len(r.name or "(model)") for r in self.rows] + [6])
        lines = [f"{'module / parameter':<{width}}  kind    {'shape':<18} {'max abs':>10} {'max rel':>10}",
                 "-" * (width + 54)]
        for r in self.rows:
            flag = "" if r.close else "  <- differs"
            lines.append(f"{r.name or '(model)':<{width}}  {r.kind:<6}  {str(list(r.shape)):<18} "
                         f"{r.max_abs:>10.3g} {r.max_rel:>10.3g}{flag}")
        first = self.first_divergence
        lines.append(f"all outputs and gradients within rtol={self.rtol:g}, atol={self.atol:g}" if first is None
                     else f"first difference beyond rtol={self.rtol:g}, atol={self.atol:g}: {first.kind} of "
                          f"{first.name or '(model)'} (max abs {first.max_abs:.3g})")
        return "\n".join(lines)


def _tensors(x) -> list:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return []


def _to(x, device):
    if isinstance(x, torch.Tensor):
        return x.detach().to(device).requires_grad_(x.requires_grad)
    if isinstance(x, (list, tuple)):
        return type(x)(_to(v, device) for v in x)
    if isinstance(x, dict):
        return {k: _to(v, device) for k, v in x.items()}
    return x


def _difference(name, kind, actual, expected, rtol, atol) -> Difference:
    actual, expected = actual.detach().cpu(), expected.detach().cpu()
    if not (actual.is_floating_point() or actual.is_complex()):
        actual, expected = actual.double(), expected.double()
    finite = expected.isfinite() & actual.isfinite()
    delta = (actual - expected).abs()[finite].double()
    scale = expected.abs()[finite].double().clamp_min(torch.finfo(torch.float32).tiny)
    close = actual.shape == expected.shape and torch.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    return Difference(name, kind, tuple(expected.shape), delta.max().item() if delta.numel() else 0.0,
                      (delta / scale).max().item() if delta.numel() else 0.0, bool(close))


def _run(model, inputs, device, upstream_seed):
    """Runs forward and backward on `device`; returns ([(module name, output tensors)] in the order
    the modules returned, {parameter name: gradient})."""
    model = copy.deepcopy(model).to(device)
    outputs = []
    hooks = [module.register_forward_hook(lambda m, args, out, name=name: outputs.append((name, _tensors(out))))
             for name, module in model.named_modules()]
    try:
        result = model(*_to(inputs, device))
    finally:
        for hook in hooks:
            hook.remove()
    differentiable = [t for t in _tensors(result) if t.requires_grad and t.is_floating_point()]
    if differentiable:
        # Random upstream gradients drawn on the CPU, the same for both runs: a sum's gradient of
        # ones would hide differences that cancel.
        gen = torch.Generator().manual_seed(upstream_seed)
        grads = [torch.randn(t.shape, generator=gen, dtype=t.dtype).to(device) for t in differentiable]
        torch.autograd.backward(differentiable, grads)
    gradients = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    return outputs, gradients


def compare(model: torch.nn.Module, *inputs, device: str = "ocl", train: bool = False, rtol: float = 1e-4,
            atol: float = 1e-5, seed: int = 0) -> Comparison:
    """Runs `model` forward and backward on the CPU and on `device` from the same weights and
    reports, module by module, how far `device`'s outputs and gradients are from the CPU's.

    The model is copied for each run (the original is left as it is). `train=False` runs both
    copies in eval mode, so that dropout does not draw different numbers on the two devices.
    Gradients flow from random upstream gradients drawn once with `seed`."""
    was_training = model.training
    model.train(train)
    try:
        cpu_outputs, cpu_grads = _run(model, inputs, "cpu", seed)
        dev_outputs, dev_grads = _run(model, inputs, device, seed)
    finally:
        model.train(was_training)
    if [n for n, _ in cpu_outputs] != [n for n, _ in dev_outputs]:
        raise RuntimeError("the modules ran in a different order on the two devices: "
                           f"{[n for n, _ in cpu_outputs]} vs {[n for n, _ in dev_outputs]}")
    rows = []
    for (name, expected), (_, actual) in zip(cpu_outputs, dev_outputs):
        for i, (a, e) in enumerate(zip(actual, expected)):
            rows.append(_difference(name if len(expected) == 1 else f"{name}[{i}]", "output", a, e, rtol, atol))
    for name, expected in cpu_grads.items():
        actual = dev_grads.get(name)
        if actual is None:
            raise RuntimeError(f"parameter {name} has a gradient on the CPU and none on {device}")
        rows.append(_difference(name, "grad", actual, expected, rtol, atol))
    return Comparison(rows, rtol, atol)
