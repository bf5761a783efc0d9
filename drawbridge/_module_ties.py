"""Keeps tied parameters tied when a module moves to ocl.

``Module._apply`` (behind ``.to()``, ``.ocl()``, ``.half()``, ...) swaps a parameter's data in
place only when PyTorch considers the two tensor types shallow-copy compatible, which it decides
from a fixed list of backends (CPU, CUDA, XPU, ...) that has no PrivateUse1. For ocl it therefore
creates a new Parameter per module, and a weight shared by two modules (a language model's
embedding and output layer) silently becomes two weights. This wrapper records which modules
share a parameter before the conversion and points them all at the same converted parameter
after it, which is what CUDA's in-place swap gives. Ties that survive already are left alone, and
only parameters that end up on ocl are touched: for every other device the wrapper changes
nothing. (PyTorch offers no hook for this; torch.__future__'s swap_module_params_on_conversion
would keep ties but changes conversions of every module in the process.)
"""
import torch

_original_apply = torch.nn.Module._apply


def _apply_keeping_ties(self, fn, recurse=True):
    owners = {}
    for module in self.modules():
        for name, param in module._parameters.items():
            if param is not None:
                owners.setdefault(id(param), []).append((module, name))
    result = _original_apply(self, fn, recurse)
    for sharers in owners.values():
        if len(sharers) > 1:
            first_module, first_name = sharers[0]
            kept = first_module._parameters[first_name]
            if kept is None or kept.device.type != "ocl":
                continue
            for module, name in sharers[1:]:
                if module._parameters[name] is not kept:
                    module._parameters[name] = kept
    return result


def install() -> None:
    if torch.nn.Module._apply is not _apply_keeping_ties:
        torch.nn.Module._apply = _apply_keeping_ties
