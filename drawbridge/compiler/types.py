"""How each torch dtype is stored in a generated kernel's buffers and computed on in its registers.

OpenCL C has no ``bool`` buffers and, without ``cl_khr_fp16``, no ``half`` arithmetic: bool
travels as ``uchar``; float16 and bfloat16 are stored as 16-bit values and computed in float, as
PyTorch's eager kernels do."""

from __future__ import annotations

import math

import torch

STORAGE_TYPE = {
    torch.float32: "float",
    torch.float64: "double",
    torch.float16: "half",
    torch.bfloat16: "ushort",
    torch.int8: "char",
    torch.int16: "short",
    torch.int32: "int",
    torch.int64: "long",
    torch.uint8: "uchar",
    torch.uint16: "ushort",
    torch.uint32: "uint",
    torch.uint64: "ulong",
    torch.bool: "uchar",
}

COMPUTE_DTYPE = {torch.float16: torch.float32, torch.bfloat16: torch.float32}


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return COMPUTE_DTYPE.get(dtype, dtype)


def storage_type(dtype: torch.dtype) -> str:
    try:
        return STORAGE_TYPE[dtype]
    except KeyError:
        raise NotImplementedError(f"torch.compile on ocl: no OpenCL type for {dtype}") from None


def compute_type(dtype: torch.dtype) -> str:
    dtype = compute_dtype(dtype)
    return "bool" if dtype == torch.bool else storage_type(dtype)


def literal(value, dtype: torch.dtype) -> str:
    """A C literal of `value` with the type of `dtype`'s compute type."""
    if dtype == torch.bool:
        return "true" if value else "false"
    if dtype.is_floating_point:
        suffix = "" if compute_dtype(dtype) == torch.float64 else "f"
        value = float(value)
        if math.isnan(value):
            return "NAN" if suffix else "((double)NAN)"
        if math.isinf(value):
            inf = "INFINITY" if suffix else "((double)INFINITY)"
            return inf if value > 0 else f"(-{inf})"
        return f"{value!r}{suffix}"
    value = int(value)
    if dtype == torch.int64:
        return "(-9223372036854775807L - 1L)" if value == -(1 << 63) else f"{value}L"
    return f"(({compute_type(dtype)}){value})"
