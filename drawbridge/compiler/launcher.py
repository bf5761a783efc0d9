"""What a compiled graph's module calls at run time: builds its OpenCL program (through the
runtime's disk cache) and launches its kernels on the current ocl stream.

Launch geometry is chosen here, at run time, from the sizes and the device class, so that the
generated source is the same for every device and every size of a dynamic graph."""

from __future__ import annotations

import hashlib
import os
import tempfile

import torch

from .. import _C
from .prelude import CPU_CHUNK, MAX_GROUP, prelude

# Work-items per work-group of pointwise kernels: on GPUs, and on CPU devices (where each walks
# CPU_CHUNK elements).
POINTWISE_GROUP = 256
CPU_GROUP = 8


def _next_pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


_cpu_class: dict[int, bool] = {}


def _is_cpu_class(device: int) -> bool:
    cls = _cpu_class.get(device)
    if cls is None:
        cls = _cpu_class[device] = _C._device_properties(device)["device_class"] == "cpu"
    return cls


def source_dir() -> str:
    """Where the generated OpenCL C of each compiled graph is written for users to read
    (DRAWBRIDGE_COMPILE_SOURCE_DIR; docs/env.md)."""
    return os.environ.get("DRAWBRIDGE_COMPILE_SOURCE_DIR", "")


class OpenCLProgram:
    """The kernels of one compiled graph, built together as one OpenCL program."""

    def __init__(self):
        self._sources: list[str] = []
        self._kernels: list[OpenCLKernel] = []
        self.path = None

    def add(self, name: str, signature: str, kind: str, source: str) -> "OpenCLKernel":
        self._sources.append(source)
        kernel = OpenCLKernel(name, signature, kind)
        self._kernels.append(kernel)
        return kernel

    def build(self) -> None:
        if not self._kernels:
            return
        body = "\n".join(self._sources)
        self.source = prelude(body) + body
        digest = hashlib.sha256(self.source.encode()).hexdigest()[:16]
        where = source_dir()
        if where:
            os.makedirs(where, exist_ok=True)
            self.path = os.path.join(where, f"graph_{digest}.cl")
            with open(self.path, "w") as f:
                f.write(self.source)
        program = _C._GeneratedProgram(self.source, f"compiled graph {digest}")
        try:
            program.build(self._kernels[0].name)
        except RuntimeError as e:
            raise RuntimeError(f"{e}\n{self._describe()}") from None
        for kernel in self._kernels:
            kernel.bind(program)

    def _describe(self) -> str:
        if self.path is None:
            fd, self.path = tempfile.mkstemp(prefix="drawbridge_graph_", suffix=".cl")
            with os.fdopen(fd, "w") as f:
                f.write(self.source)
        return f"The generated OpenCL source of this graph is in {self.path}"


class OpenCLKernel:
    __slots__ = ("name", "signature", "_kernel", "_buffers", "_kind")

    def __init__(self, name: str, signature: str, kind: str):
        self.name = name
        self.signature = signature
        self._kernel = None
        values = signature.replace("e", "")  # the error flag takes no value
        self._buffers = tuple(i for i, c in enumerate(values) if c == "b")
        self._kind = kind

    def bind(self, program) -> None:
        self._kernel = _C._GeneratedKernel(program, self.name, self.signature)

    def __call__(self, *args) -> None:
        args = list(args)
        for i in self._buffers:
            args[i] = args[i].data_ptr()
        if self._kind == "reduction":
            xnumel, rnumel = int(args[-2]), int(args[-1])
            if xnumel <= 0:
                return
            if _is_cpu_class(torch.ocl.current_device()):
                lanes, rows = 1, min(64, _next_pow2(xnumel))
            else:
                lanes = min(MAX_GROUP, _next_pow2(rnumel))
                rows = max(1, min(MAX_GROUP // lanes, _next_pow2(xnumel)))
            global_size = [lanes, (xnumel + rows - 1) // rows * rows]
            local_size = [lanes, rows]
        else:
            # Pointwise kernels, and column reductions (xnumel before rnumel): on CPU devices each
            # work-item walks CPU_CHUNK elements (DB_CHUNK, DB_XRUN).
            xnumel = int(args[-1] if self._kind == "pointwise" else args[-2])
            if xnumel <= 0:
                return
            if _is_cpu_class(torch.ocl.current_device()):
                items, group = (xnumel + CPU_CHUNK - 1) // CPU_CHUNK, CPU_GROUP
            else:
                items, group = xnumel, POINTWISE_GROUP
            group = min(group, _next_pow2(items))
            global_size = [(items + group - 1) // group * group]
            local_size = [group]
        self._kernel.launch(tuple(args), global_size, local_size)
