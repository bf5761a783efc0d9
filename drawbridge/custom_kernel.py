"""Custom OpenCL kernels as PyTorch operators.

``drawbridge.kernel`` turns a user's OpenCL C kernel into an operator registered with
``torch.library``: it runs in eager mode on the current ocl stream, takes a backward through
``torch.library.register_autograd``, and is traced by ``torch.compile`` without a graph break (its
fake implementation is the user's output allocator, run on fake tensors). docs/kernels.md shows
how to write one.

The parameters the driver reports for the kernel (``-cl-kernel-arg-info``) decide how each value
is passed and what it is checked against: a tensor's dtype against the pointee type, an integer
against its parameter's width, the launch geometry against the device's limits.
"""

from __future__ import annotations

import os
import re
from typing import Callable, Iterable, Optional, Sequence, Union

import torch

from . import _C

# The OpenCL C type that T is defined to for each dtype. bfloat16 travels as its 16 bits.
_C_TYPE = {
    torch.float32: "float",
    torch.float64: "double",
    torch.float16: "half",
    torch.bfloat16: "ushort",
    torch.int8: "char",
    torch.uint8: "uchar",
    torch.bool: "uchar",
    torch.int16: "short",
    torch.int32: "int",
    torch.int64: "long",
}

# The dtypes a pointer parameter may point at, by its pointee type (vector types by their element).
_POINTEE_DTYPES = {
    "float": (torch.float32,),
    "double": (torch.float64,),
    "half": (torch.float16,),
    "ushort": (torch.bfloat16, torch.int16, torch.uint16),
    "short": (torch.int16, torch.bfloat16),
    "char": (torch.int8, torch.uint8, torch.bool),
    "uchar": (torch.uint8, torch.int8, torch.bool),
    "int": (torch.int32,),
    "uint": (torch.int32, torch.uint32),
    "long": (torch.int64,),
    "ulong": (torch.int64, torch.uint64),
    "void": None,  # any dtype
}


def get_include() -> str:
    """The folder holding ``drawbridge/extension.h``, for ``torch.utils.cpp_extension``'s
    ``extra_include_paths``."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")


def _pointee(type_name: str) -> Optional[str]:
    """'const float4*' -> 'float'; None for a type we cannot judge (a typedef, a struct)."""
    base = type_name.replace("const", "").replace("volatile", "").replace("*", "").strip()
    element = base.rstrip("0123456789")
    if element in _POINTEE_DTYPES and (element == base or base[len(element):] in ("2", "3", "4", "8", "16")):
        return element
    return None


class _Param:
    __slots__ = ("name", "type", "space", "writable", "dtypes")

    def __init__(self, name: str, type_name: str, space: str, is_const: bool):
        self.name, self.type, self.space = name, type_name, space
        self.writable = space == "global" and not is_const
        pointee = _pointee(type_name) if space in ("global", "constant") else None
        self.dtypes = _POINTEE_DTYPES.get(pointee) if pointee else None

    @property
    def is_buffer(self) -> bool:
        return self.space in ("global", "constant")


class _Build:
    """The kernel built for one dtype, and its parameters (read once)."""

    def __init__(self, op: "CustomKernel", dtype: torch.dtype):
        options = [f"-DT={_C_TYPE[dtype]}"] + [f"-D{k}={v}" for k, v in op.defines.items()]
        self.kernel = _C._UserKernel(op.source, op.label, " ".join(options), op.kernel_name)
        try:
            params = self.kernel.params()
        except RuntimeError as e:
            raise RuntimeError(_name_source(str(e), op.label)) from None
        self.params = [_Param(*p) for p in params]


class CustomKernel:
    """What ``kernel()`` registers: the eager implementation behind the operator."""

    def __init__(self, qualname, schema, source, label, kernel_name, args, grid, local, outputs, dtypes,
                 type_from, defines, contiguous):
        self.qualname = qualname
        self.schema = schema
        self.source, self.label, self.kernel_name = source, label, kernel_name
        self.args, self.grid, self.local, self.outputs = args, grid, local, outputs
        self.dtypes = tuple(dtypes)
        for d in self.dtypes:
            if d not in _C_TYPE:
                raise ValueError(f"{qualname}: dtype {d} has no OpenCL C type for T")
        self.defines = dict(defines or {})
        self.arg_names = [a.name for a in schema.arguments]
        tensor_args = [i for i, a in enumerate(schema.arguments) if _is_tensor_type(a.type)]
        if not tensor_args:
            raise ValueError(f"{qualname}: the schema takes no tensor, so there is no device to run on")
        self.type_from = self.arg_names.index(type_from) if type_from else tensor_args[0]
        if contiguous is True:
            self.contiguous = tuple(tensor_args)
        else:
            self.contiguous = tuple(self.arg_names.index(n) for n in (contiguous or ()))
        self._builds: dict[torch.dtype, _Build] = {}
        self.returns = len(schema.returns)

    def _build(self, dtype: torch.dtype) -> _Build:
        build = self._builds.get(dtype)
        if build is None:
            build = self._builds[dtype] = _Build(self, dtype)
        return build

    def _check_inputs(self, values: Sequence) -> torch.device:
        device = None
        for v in _tensors(values):
            if device is None:
                device = v.device
            elif v.device != device:
                raise RuntimeError(
                    f"{self.qualname}: Expected all tensors to be on the same device, but found at least two "
                    f"devices, {device} and {v.device}!")
        if device.type != "ocl":
            raise RuntimeError(f"{self.qualname}: runs on ocl tensors, got tensors on {device}")
        dtype = values[self.type_from].dtype
        if dtype not in self.dtypes:
            raise RuntimeError(f'"{self.qualname}" not implemented for \'{_dtype_name(dtype)}\'')
        for i in self.contiguous:
            v = values[i]
            if isinstance(v, torch.Tensor) and not v.is_contiguous():
                raise RuntimeError(
                    f"{self.qualname}: argument '{self.arg_names[i]}' must be contiguous (call .contiguous())")
        return device

    def __call__(self, *values):
        device = self._check_inputs(values)
        build = self._build(values[self.type_from].dtype)
        with torch.ocl.device(device.index):
            outs = self.outputs(*values) if self.outputs is not None else None
            out_list = [] if outs is None else [outs] if isinstance(outs, torch.Tensor) else list(outs)
            kernel_values = self.args(*values, *out_list)
            global_size = _sizes(self.grid(*values), "grid")
            local = self.local(*values) if callable(self.local) else self.local
            local_size = [] if local is None else _sizes(local, "local")
            self._launch(build, kernel_values, global_size, local_size, device)
        return outs

    def _launch(self, build: _Build, kernel_values, global_size, local_size, device) -> None:
        params = build.params
        if len(kernel_values) != len(params):
            raise TypeError(f"{self.qualname}: kernel {self.kernel_name} takes {len(params)} arguments "
                            f"({', '.join(p.name for p in params)}), args() gave {len(kernel_values)}")
        launch = []
        write_back = []
        align = _base_align(device.index)
        for p, v in zip(params, kernel_values):
            if p.is_buffer:
                if not isinstance(v, torch.Tensor):
                    raise TypeError(f"{self.qualname}: kernel parameter '{p.name}' ({p.type}) needs a tensor, "
                                    f"got {type(v).__name__}")
                if v.device != device:
                    raise RuntimeError(f"{self.qualname}: kernel parameter '{p.name}' got a tensor on {v.device}, "
                                       f"expected {device}")
                if p.dtypes is not None and v.dtype not in p.dtypes:
                    raise RuntimeError(f"{self.qualname}: kernel parameter '{p.name}' is {p.type}, "
                                       f"got a tensor of dtype {v.dtype}")
                if v.data_ptr() % align:
                    # A view that starts inside its buffer off the device's sub-buffer alignment: the
                    # kernel runs on an aligned copy, written back if the kernel may write it.
                    staged = v.clone(memory_format=torch.preserve_format) if v.is_contiguous() else v.contiguous()
                    if p.writable:
                        write_back.append((v, staged))
                    v = staged
                launch.append(v.data_ptr())
            elif isinstance(v, torch.Tensor):
                raise TypeError(f"{self.qualname}: kernel parameter '{p.name}' ({p.type}) is a value, got a tensor")
            elif isinstance(v, bool):
                launch.append(int(v))
            elif isinstance(v, (int, float)):
                launch.append(v)
            else:
                raise TypeError(f"{self.qualname}: kernel parameter '{p.name}' ({p.type}) got "
                                f"{type(v).__name__}")
        build.kernel.launch(tuple(launch), global_size, local_size)
        for original, staged in write_back:
            original.copy_(staged)


# How drivers name the source in build logs: PoCL a temporary file, others "<source>" or "<kernel>".
_LOG_SOURCE = re.compile(r"(?:\S*tempfile\w*\.cl|<source>|<kernel>)(?=:\d+:)")


def _name_source(message: str, label: str) -> str:
    """Build-log locations point at the user's source (the line numbers are already theirs:
    nothing is prepended to it)."""
    return _LOG_SOURCE.sub(lambda _: label, message)


def _is_tensor_type(t) -> bool:
    return isinstance(t, torch.TensorType) or (
        isinstance(t, torch.OptionalType) and isinstance(t.getElementType(), torch.TensorType))


def _tensors(values: Iterable):
    for v in values:
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (t for t in v if isinstance(t, torch.Tensor))


def _dtype_name(dtype: torch.dtype) -> str:
    names = {torch.float16: "Half", torch.bfloat16: "BFloat16", torch.float32: "Float", torch.float64: "Double",
             torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char",
             torch.uint8: "Byte", torch.bool: "Bool"}
    return names.get(dtype, str(dtype))


def _sizes(value, what: str) -> list:
    sizes = [value] if isinstance(value, int) else list(value)
    if not 1 <= len(sizes) <= 3 or any(not isinstance(s, int) or s < 0 for s in sizes):
        raise ValueError(f"the {what} size must be 1 to 3 non-negative ints, got {value!r}")
    return sizes


_align: dict[int, int] = {}


def _base_align(device: int) -> int:
    a = _align.get(device)
    if a is None:
        a = _align[device] = _C._device_properties(device)["base_address_align"]
    return a


def _read_source(source: Union[str, os.PathLike], qualname: str) -> tuple[str, str]:
    if isinstance(source, os.PathLike) or (isinstance(source, str) and source.endswith(".cl")
                                           and "\n" not in source):
        path = os.fspath(source)
        with open(path) as f:
            return f.read(), path
    return source, f"<{qualname} source>"


def kernel(schema: str, source: Union[str, os.PathLike], *, args: Callable, grid: Callable,
           local: Union[None, Sequence[int], Callable] = None, outputs: Optional[Callable] = None,
           name: Optional[str] = None, dtypes: Sequence[torch.dtype] = (torch.float32,),
           type_from: Optional[str] = None, defines: Optional[dict] = None,
           contiguous: Union[bool, Sequence[str]] = True):
    """Registers an OpenCL C kernel as the operator ``schema`` and returns ``torch.ops.ns.name``.

    schema:   ``"myns::rmsnorm(Tensor x, Tensor w, float eps) -> Tensor"``; in-place operators mark
              their tensors ``Tensor(a!)`` and return ``()``.
    source:   OpenCL C, or the path of a ``.cl`` file. ``T`` is defined to the C type of the dtype
              of the first tensor argument (or of ``type_from``); each dtype builds once per process,
              through the disk cache.
    args:     ``args(*op_args, *outputs)`` -> the kernel's arguments in order: tensors for pointer
              parameters, ints and floats for value parameters, byte counts for ``__local`` ones.
    grid:     ``grid(*op_args)`` -> the global size (1 to 3 ints).
    local:    the local size (or a function of the op's arguments); None lets the driver choose.
    outputs:  ``outputs(*op_args)`` -> the tensor or tuple of tensors the operator returns, newly
              allocated (also run on fake tensors when ``torch.compile`` traces the operator).
    name:     the kernel's function name (default: the operator's name).
    dtypes:   the dtypes the operator accepts for ``T``.
    defines:  more ``-D`` definitions, the same for every dtype.
    contiguous: True (every tensor argument must be contiguous), or the names that must be.
    """
    qualname, _, rest = schema.partition("(")
    if "::" not in qualname:
        raise ValueError(f"schema must start with 'namespace::name(', got {schema!r}")
    namespace, op_name = qualname.split("::")
    parsed = torch._C.parse_schema(f"{op_name}({rest}")
    text, label = _read_source(source, qualname)
    impl = CustomKernel(qualname, parsed, text, label, name or op_name, args, grid, local, outputs, dtypes,
                        type_from, defines, contiguous)
    if impl.returns and outputs is None:
        raise ValueError(f"{qualname} returns tensors: give outputs= to allocate them")

    torch.library.define(qualname, f"({rest}")
    torch.library.impl(qualname, "PrivateUse1")(impl)

    def fake(*values):
        return outputs(*values) if outputs is not None else None

    torch.library.register_fake(qualname)(fake)
    return getattr(getattr(torch.ops, namespace), op_name)
