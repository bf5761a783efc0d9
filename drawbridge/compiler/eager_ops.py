"""Aten ops whose Inductor lowering needs a pointwise function the OpenCL generator does not
write (Bessel-type and other special functions, frexp): on ocl they stay calls of the eager ATen
kernels inside the compiled graph, so nothing fails to compile and nothing leaves the device.
Inductor's lowerings are global, so each is wrapped to decide by the device of its inputs."""

from __future__ import annotations

import torch
from torch._inductor import ir, lowering
from torch._inductor.codegen.common import pointwise_overrides_data
from torch.utils._pytree import tree_leaves

from .overrides import OpenCLOverrides

# Inductor ops with a lowering but outside pointwise_overrides_data, by their aten name.
OTHER_FUNCTIONS = {"erfinv": "erfinv", "frexp": "frexp"}


def _unsupported_aten_ops() -> list:
    names = {data.name for key, data in pointwise_overrides_data.items() if OpenCLOverrides._is_unimplemented(key)}
    names |= {aten for key, aten in OTHER_FUNCTIONS.items() if OpenCLOverrides._is_unimplemented(key)}
    return [getattr(torch.ops.aten, n) for n in sorted(names) if hasattr(torch.ops.aten, n)]


def _on_ocl(args, kwargs) -> bool:
    for a in tree_leaves((args, kwargs)):
        if isinstance(a, ir.IRNode):
            device = a.get_device()
            if device is not None and device.type == "ocl":
                return True
    return False


def _wrap(overload) -> None:
    original = lowering.lowerings[overload]
    eager = lowering.fallback_handler(overload, add_to_fallback_set=False)

    def lower(*args, **kwargs):
        return (eager if _on_ocl(args, kwargs) else original)(*args, **kwargs)

    lowering.lowerings[overload] = lower


def keep_eager_on_ocl() -> None:
    for packet in _unsupported_aten_ops():
        for name in packet.overloads():
            overload = getattr(packet, name)
            if overload in lowering.lowerings:
                _wrap(overload)
