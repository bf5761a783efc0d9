"""The Python wrapper of a compiled graph on ocl: Inductor's, with the graph's OpenCL kernels
gathered into one program that is built once when the compiled module loads."""

from __future__ import annotations

from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen


class OpenCLKernelCalls:
    """Writes calls of generated ocl kernels: a plain Python call of the launcher object."""

    def _generate_kernel_call_helper(self, kernel_name: str, call_args, *, device=None, triton=True, **kwargs):
        if device is not None and device.type == "ocl" and not triton:
            self.writeline(self.wrap_kernel_call(kernel_name, call_args))
            return
        super()._generate_kernel_call_helper(kernel_name, call_args, device=device, triton=triton, **kwargs)


class OpenCLSubgraphWrapperCodegen(OpenCLKernelCalls, SubgraphPythonWrapperCodegen):
    """A subgraph's wrapper (torch.cond, while_loop): its kernels join the top-level program."""


class OpenCLWrapperCodegen(OpenCLKernelCalls, PythonWrapperCodegen):
    @staticmethod
    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
        if is_subgraph:
            return OpenCLSubgraphWrapperCodegen(subgraph_name, parent_wrapper, partition_signatures)
        return OpenCLWrapperCodegen()

    def write_header(self) -> None:
        super().write_header()
        self.imports.writeline("from drawbridge.compiler.launcher import OpenCLProgram")
        self.header.writeline("ocl_program = OpenCLProgram()")

    def add_opencl_kernel(self, name: str, source: str, signature: str, kind: str, origins: str) -> None:
        # The nodes a kernel computes are named in the wrapper, not in the OpenCL source: graphs
        # of different ops that generate the same kernels then build the same program, which
        # the runtime's and PoCL's caches serve once.
        for line in origins.splitlines():
            self.header.writeline(line)
        self.header.writeline(f"{name} = ocl_program.add({name!r}, {signature!r}, {kind!r}, r'''")
        self.header.splice(source, strip=False)
        self.header.writeline("''')")

    def write_async_compile_wait(self) -> None:
        # Runs after the header's ocl_program.add(...) lines: every kernel is known by then.
        super().write_async_compile_wait()
        self.prefix.writeline("ocl_program.build()")
