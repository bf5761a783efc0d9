"""Inductor's scheduling for ocl: fusion decisions are Inductor's (SIMDScheduling); the kernels
are ``OpenCLKernel``s, and each one's source joins the graph's single OpenCL program."""

from __future__ import annotations

import sympy
from torch._inductor.codegen.simd import SIMDScheduling
from torch._inductor.utils import Placeholder, get_kernel_metadata
from torch._inductor.virtualized import V

from .kernel import OpenCLKernel


class OpenCLScheduling(SIMDScheduling):
    kernel_type = OpenCLKernel  # type: ignore[assignment]

    @classmethod
    def get_tiling_and_scores(cls, node_schedule, numel, reduction_numel=sympy.S.One, coalesce_analysis=None):
        # One pointwise dimension (x) and at most one reduction dimension (r0_): the kernels index
        # with Inductor's simplified expressions, which already walk any strides.
        return cls.create_tiling([numel], [reduction_numel]), None

    def define_kernel(self, src_code: str, node_schedule, kernel: OpenCLKernel) -> str:
        wrapper = V.graph.wrapper_code
        if src_code in wrapper.src_to_kernel:
            return wrapper.src_to_kernel[src_code]
        name = f"ocl_{wrapper.next_kernel_suffix()}"
        wrapper.src_to_kernel[src_code] = name
        origins, _ = get_kernel_metadata(node_schedule, wrapper)
        source = src_code.replace(str(Placeholder.KERNEL_NAME), name)
        # Subgraphs (torch.cond, while_loop) have their own wrappers; their kernels join the
        # program of the module's top-level wrapper.
        owner = wrapper
        while not hasattr(owner, "add_opencl_kernel"):
            owner = owner.parent_wrapper
        owner.add_opencl_kernel(name, source, kernel.signature, kernel.launch_kind, origins)
        return name
