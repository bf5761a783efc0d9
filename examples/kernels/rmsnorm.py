"""A fused RMSNorm as a PyTorch operator from OpenCL C (rmsnorm.cl), with its backward.

    python examples/kernels/rmsnorm.py

`rms_norm(x, weight, eps)` matches `torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)`,
in eager mode, under autograd and inside torch.compile.
"""

import functools
import pathlib

import torch

import drawbridge

SOURCE = pathlib.Path(__file__).with_name("rmsnorm.cl")
DTYPES = (torch.float32, torch.float64)
VECTOR = 8  # W in rmsnorm.cl: elements per vector load, and the columns of one weight-gradient work-item


@functools.cache
def lanes_per_row(device_index: int) -> int:
    """One lane per row on CPU devices (a vectorized loop), a work-group of 128 on GPUs."""
    return 1 if torch.ocl.get_device_properties(device_index).device_class == "cpu" else 128


def _lanes(t: torch.Tensor) -> int:
    return lanes_per_row(t.device.index)


def _rows(x: torch.Tensor) -> int:
    return x.numel() // x.shape[-1] if x.dim() else 1


def _forward_outputs(x, weight, eps):
    torch._check(x.dim() >= 1 and weight.dim() == 1 and weight.shape[0] == x.shape[-1],
                 lambda: f"rms_norm: weight of shape {tuple(weight.shape)} does not match the last "
                         f"dimension of input of shape {tuple(x.shape)}")
    return torch.empty_like(x), x.new_empty(x.shape[:-1])


forward = drawbridge.kernel(
    "drawbridge_examples::rms_norm_forward(Tensor x, Tensor weight, float eps) -> (Tensor, Tensor)",
    SOURCE,
    outputs=_forward_outputs,
    args=lambda x, weight, eps, y, rstd: (y, rstd, x, weight, x.shape[-1], eps, _lanes(x) * x.element_size()),
    grid=lambda x, weight, eps: (_rows(x) * _lanes(x),),
    local=lambda x, weight, eps: (_lanes(x),),
    dtypes=DTYPES,
    defines={"W": VECTOR},
)

backward_input = drawbridge.kernel(
    "drawbridge_examples::rms_norm_backward_input(Tensor dy, Tensor x, Tensor weight, Tensor rstd) -> Tensor",
    SOURCE,
    outputs=lambda dy, x, weight, rstd: torch.empty_like(x),
    args=lambda dy, x, weight, rstd, dx: (dx, dy, x, weight, rstd, x.shape[-1], _lanes(x) * x.element_size()),
    grid=lambda dy, x, weight, rstd: (_rows(x) * _lanes(x),),
    local=lambda dy, x, weight, rstd: (_lanes(x),),
    dtypes=DTYPES,
    defines={"W": VECTOR},
)

ROW_BLOCKS = 64  # the weight gradient's partial sums: enough work-items for a GPU, few to add up


def _rows_per_block(x):
    return max(1, -(-_rows(x) // ROW_BLOCKS))


def _blocks(x):
    return -(-_rows(x) // _rows_per_block(x))


backward_weight_partial = drawbridge.kernel(
    "drawbridge_examples::rms_norm_backward_weight(Tensor dy, Tensor x, Tensor rstd) -> Tensor",
    SOURCE,
    outputs=lambda dy, x, rstd: x.new_empty(_blocks(x), x.shape[-1]),
    args=lambda dy, x, rstd, partial: (partial, dy, x, rstd, _rows(x), x.shape[-1], _rows_per_block(x)),
    grid=lambda dy, x, rstd: (-(-x.shape[-1] // VECTOR), _blocks(x)),
    dtypes=DTYPES,
    defines={"W": VECTOR},
)


def _setup_context(ctx, inputs, output):
    x, weight, _ = inputs
    ctx.save_for_backward(x, weight, output[1])


def _backward(ctx, dy, _drstd):
    x, weight, rstd = ctx.saved_tensors
    dy = dy.contiguous()
    dx = backward_input(dy, x, weight, rstd) if ctx.needs_input_grad[0] else None
    dweight = backward_weight_partial(dy, x, rstd).sum(0) if ctx.needs_input_grad[1] else None
    return dx, dweight, None


torch.library.register_autograd("drawbridge_examples::rms_norm_forward", _backward, setup_context=_setup_context)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return forward(x.contiguous(), weight.contiguous(), eps)[0]


if __name__ == "__main__":
    x = torch.randn(64, 768, requires_grad=True)
    w = torch.randn(768, requires_grad=True)
    expected = torch.nn.functional.rms_norm(x, (768,), w, 1e-6)
    expected.square().sum().backward()

    xo = x.detach().to("ocl").requires_grad_()
    wo = w.detach().to("ocl").requires_grad_()
    y = rms_norm(xo, wo)
    y.square().sum().backward()
    print("forward  max |diff|:", (y.detach().cpu() - expected.detach()).abs().max().item())
    print("dx       max |diff|:", (xo.grad.cpu() - x.grad).abs().max().item())
    print("dweight  max |diff|:", (wo.grad.cpu() - w.grad).abs().max().item())
