"""A fused softmax + cross-entropy loss from OpenCL C (softmax_cross_entropy.cl), with backward.

    python examples/kernels/softmax_cross_entropy.py

`cross_entropy(logits, target)` matches `torch.nn.functional.cross_entropy` with class-index
targets, reduction "mean" and ignore_index.
"""

import functools
import pathlib

import torch

import drawbridge

SOURCE = pathlib.Path(__file__).with_name("softmax_cross_entropy.cl")
DTYPES = (torch.float32, torch.float64)


@functools.cache
def lanes_per_row(device_index: int) -> int:
    return 1 if torch.ocl.get_device_properties(device_index).device_class == "cpu" else 128


def _lanes(t: torch.Tensor) -> int:
    return lanes_per_row(t.device.index)


def _forward_outputs(logits, target, ignore_index):
    torch._check(logits.dim() == 2 and target.shape == logits.shape[:1] and target.dtype == torch.int64,
                 lambda: "cross_entropy: expected logits [N, C] and int64 targets [N]")
    rows = logits.shape[0]
    return logits.new_empty(rows), logits.new_empty(rows)


forward = drawbridge.kernel(
    "drawbridge_examples::softmax_cross_entropy_forward(Tensor logits, Tensor target, int ignore_index)"
    " -> (Tensor, Tensor)",
    SOURCE,
    outputs=_forward_outputs,
    args=lambda logits, target, ignore, loss, lse: (
        loss, lse, logits, target, logits.shape[1], ignore, _lanes(logits) * logits.element_size(),
        _lanes(logits) * logits.element_size()),
    grid=lambda logits, target, ignore: (logits.shape[0] * _lanes(logits),),
    local=lambda logits, target, ignore: (_lanes(logits),),
    dtypes=DTYPES,
)

backward = drawbridge.kernel(
    "drawbridge_examples::softmax_cross_entropy_backward(Tensor dloss, Tensor logits, Tensor lse, Tensor target,"
    " int ignore_index) -> Tensor",
    SOURCE,
    outputs=lambda dloss, logits, lse, target, ignore: torch.empty_like(logits),
    args=lambda dloss, logits, lse, target, ignore, dlogits: (
        dlogits, dloss, logits, lse, target, logits.shape[1], ignore, logits.numel()),
    grid=lambda dloss, logits, lse, target, ignore: ((logits.numel() + 255) // 256 * 256,),
    local=(256,),
    type_from="logits",
    dtypes=DTYPES,
)


def _setup_context(ctx, inputs, output):
    logits, target, ignore_index = inputs
    ctx.save_for_backward(logits, output[1], target)
    ctx.ignore_index = ignore_index


def _backward(ctx, dloss, _dlse):
    logits, lse, target = ctx.saved_tensors
    return backward(dloss.contiguous(), logits, lse, target, ctx.ignore_index), None, None


torch.library.register_autograd("drawbridge_examples::softmax_cross_entropy_forward", _backward,
                                setup_context=_setup_context)


def cross_entropy(logits: torch.Tensor, target: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    losses = forward(logits.contiguous(), target.contiguous(), ignore_index)[0]
    return losses.sum() / (target != ignore_index).sum()


if __name__ == "__main__":
    logits = torch.randn(256, 1000, requires_grad=True)
    target = torch.randint(0, 1000, (256,))
    target[::7] = -100
    expected = torch.nn.functional.cross_entropy(logits, target)
    expected.backward()
    lo = logits.detach().to("ocl").requires_grad_()
    loss = cross_entropy(lo, target.to("ocl"))
    loss.backward()
    print("loss      |diff|:", abs(loss.item() - expected.item()))
    print("dlogits max |diff|:", (lo.grad.cpu() - logits.grad).abs().max().item())
