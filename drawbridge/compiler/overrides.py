"""Inductor's pointwise ops written as OpenCL C expressions.

Every operand is a typed CSE variable (``kernel.py`` declares each with its compute type), so the
C here casts where OpenCL's overloads would otherwise be ambiguous or C's conversions would
differ from PyTorch's type promotion."""

from __future__ import annotations

import itertools

import torch
from torch._inductor.codegen.common import CSEVariable, IndentedBuffer, OpOverrides
from torch._inductor.utils import get_bounds_index_expr
from torch._inductor.virtualized import V, ops

from .types import compute_dtype, compute_type, literal


def _dtype(x) -> torch.dtype:
    dtype = getattr(x, "dtype", None)
    if dtype is None:  # a Python number
        if isinstance(x, bool):
            return torch.bool
        return torch.int64 if isinstance(x, int) else torch.float32
    return compute_dtype(dtype)


def _promoted(*xs) -> torch.dtype:
    dtype = _dtype(xs[0])
    for x in xs[1:]:
        dtype = torch.promote_types(dtype, _dtype(x))
    return dtype


def _cast(x, dtype: torch.dtype) -> str:
    return f"(({compute_type(dtype)})({x}))" if _dtype(x) != dtype else str(x)


def _float_type(*xs) -> torch.dtype:
    dtype = _promoted(*xs)
    return dtype if dtype.is_floating_point else torch.float32


def _unary_math(fn: str):
    def op(x):
        t = _float_type(x)
        return f"{fn}({_cast(x, t)})"

    return staticmethod(op)


def _binary_math(fn: str):
    def op(a, b):
        t = _float_type(a, b)
        return f"{fn}({_cast(a, t)}, {_cast(b, t)})"

    return staticmethod(op)


class OpenCLOverrides(OpOverrides):
    @staticmethod
    def constant(value, dtype: torch.dtype) -> str:
        return literal(value, dtype)

    @staticmethod
    def to_dtype(x, dtype: torch.dtype, src_dtype=None, use_compute_types=True) -> str:
        src = _dtype(x) if src_dtype is None else compute_dtype(src_dtype)
        if dtype == torch.bool:
            return f"(({x}) != 0)"
        if dtype == torch.float16:
            return f"db_round_half((float)({x}))"
        if dtype == torch.bfloat16:
            return f"db_round_bf16((float)({x}))"
        target = compute_type(dtype)
        if src.is_floating_point and not dtype.is_floating_point and dtype != torch.int64:
            # Through long, as PyTorch's CPU kernels convert (C leaves out-of-range casts undefined).
            return f"(({target})(long)({x}))"
        return f"(({target})({x}))"

    @staticmethod
    def to_dtype_bitcast(x, dtype: torch.dtype, src_dtype: torch.dtype) -> str:
        if dtype.itemsize != src_dtype.itemsize or dtype in (torch.float16, torch.bfloat16, torch.bool):
            raise NotImplementedError(f"torch.compile on ocl: bitcast {src_dtype} -> {dtype}")
        return f"as_{compute_type(dtype)}(({compute_type(src_dtype)})({x}))"

    @staticmethod
    def index_expr(expr, dtype: torch.dtype) -> str:
        index = V.kernel.index_to_str(V.kernel.prepare_indexing(expr))
        var = V.kernel.cse.generate(V.kernel.compute, index, bounds=get_bounds_index_expr(expr), dtype=torch.int64)
        return ops.to_dtype(var, dtype)

    @staticmethod
    def value_expr(expr, dtype: torch.dtype) -> str:
        return OpenCLOverrides.index_expr(expr, dtype)

    @staticmethod
    def masked(mask, body, other) -> str:
        scoped = IndentedBuffer()
        with V.kernel.swap_buffers(scoped), scoped.indent():
            V.kernel.cse.iter_buffer_ids = itertools.count()
            V.kernel.cse.name_prefix += "_m"
            result = body()
        dtype = _dtype(result)
        key = f"{mask}:{scoped.getvalue()}:{other}"
        var = V.kernel.cse.try_get(key)
        if var is None:
            var = V.kernel.cse.newvar(dtype=dtype)
            V.kernel.cse.put(key, var)
            ctype = compute_type(dtype)
            V.kernel.compute.writeline(f"{ctype} {var};")
            V.kernel.compute.writeline(f"if ({mask}) {{")
            with V.kernel.compute.indent():
                V.kernel.compute.splice(scoped)
                V.kernel.compute.writeline(f"{var} = {result};")
            V.kernel.compute.writeline(f"}} else {var} = {literal(other, dtype)};")
        return var

    @staticmethod
    def where(cond, a, b) -> str:
        t = _promoted(a, b)
        return f"(({cond}) ? {_cast(a, t)} : {_cast(b, t)})"

    # Arithmetic: C's usual conversions match torch's promotion except where cast here.
    @staticmethod
    def truediv(a, b) -> str:
        t = _float_type(a, b)
        return f"({_cast(a, t)} / {_cast(b, t)})"

    @staticmethod
    def div_rn(a, b) -> str:
        return OpenCLOverrides.truediv(a, b)

    @staticmethod
    def floordiv(a, b) -> str:
        t = _promoted(a, b)
        if t.is_floating_point:
            if t == torch.float64:
                return f"floor({a} / {b})"
            return f"db_floordiv_f({_cast(a, t)}, {_cast(b, t)})"
        return f"(({compute_type(t)})db_floordiv_l((long)({a}), (long)({b})))"

    @staticmethod
    def truncdiv(a, b) -> str:
        t = _promoted(a, b)
        if t.is_floating_point:
            return f"trunc({_cast(a, t)} / {_cast(b, t)})"
        return f"({_cast(a, t)} / {_cast(b, t)})"

    @staticmethod
    def mod(a, b) -> str:
        t = _promoted(a, b)
        if t.is_floating_point:
            return f"fmod({_cast(a, t)}, {_cast(b, t)})"
        return f"({_cast(a, t)} % {_cast(b, t)})"

    @staticmethod
    def remainder(a, b) -> str:
        t = _promoted(a, b)
        if t == torch.float32:
            return f"db_remainder_f({_cast(a, t)}, {_cast(b, t)})"
        if t.is_floating_point:
            a, b = _cast(a, t), _cast(b, t)
            return f"({a} - floor({a} / {b}) * {b})"
        return f"(({compute_type(t)})db_mod_l((long)({a}), (long)({b})))"

    @staticmethod
    def pow(a, b) -> str:
        t = _promoted(a, b)
        if t.is_floating_point:
            return f"pow({_cast(a, t)}, {_cast(b, t)})"
        return f"(({compute_type(t)})db_pow_l((long)({a}), (long)({b})))"

    @staticmethod
    def neg(x) -> str:
        return f"(-{x})"

    @staticmethod
    def maximum(a, b) -> str:
        t = _promoted(a, b)
        if t.is_floating_point:
            return f"DB_MAX_FP({_cast(a, t)}, {_cast(b, t)})"
        if t == torch.bool:
            return f"({a} || {b})"
        return f"max({_cast(a, t)}, {_cast(b, t)})"

    @staticmethod
    def minimum(a, b) -> str:
        t = _promoted(a, b)
        if t.is_floating_point:
            return f"DB_MIN_FP({_cast(a, t)}, {_cast(b, t)})"
        if t == torch.bool:
            return f"({a} && {b})"
        return f"min({_cast(a, t)}, {_cast(b, t)})"

    @staticmethod
    def abs(x) -> str:
        t = _dtype(x)
        if t.is_floating_point:
            return f"fabs({x})"
        if t == torch.bool:
            return str(x)
        return f"(({compute_type(t)})abs({x}))"  # OpenCL's integer abs returns the unsigned type

    @staticmethod
    def sign(x) -> str:
        t = _dtype(x)
        if t.is_floating_point:
            return f"sign({x})"
        return f"(({compute_type(t)})(({x} > 0) - ({x} < 0)))"

    @staticmethod
    def signbit(x) -> str:
        if _dtype(x).is_floating_point:
            return f"(signbit({x}) != 0)"
        return f"({x} < 0)"

    @staticmethod
    def isnan(x) -> str:
        return f"(isnan({x}) != 0)" if _dtype(x).is_floating_point else "false"

    @staticmethod
    def isinf(x) -> str:
        return f"(isinf({x}) != 0)" if _dtype(x).is_floating_point else "false"

    @staticmethod
    def logical_not(x) -> str:
        return f"(!({x}))"

    @staticmethod
    def logical_and(a, b) -> str:
        return f"({a} && {b})"

    @staticmethod
    def logical_or(a, b) -> str:
        return f"({a} || {b})"

    @staticmethod
    def logical_xor(a, b) -> str:
        return f"((bool)({a}) != (bool)({b}))"

    @staticmethod
    def bitwise_not(x) -> str:
        return f"(!({x}))" if _dtype(x) == torch.bool else f"(~({x}))"

    @staticmethod
    def bitwise_and(a, b) -> str:
        return f"({a} & {b})"

    @staticmethod
    def bitwise_or(a, b) -> str:
        return f"({a} | {b})"

    @staticmethod
    def bitwise_xor(a, b) -> str:
        return f"({a} ^ {b})"

    @staticmethod
    def bitwise_left_shift(a, b) -> str:
        return f"({a} << {b})"

    @staticmethod
    def bitwise_right_shift(a, b) -> str:
        return f"({a} >> {b})"

    @staticmethod
    def round(x) -> str:
        return f"rint({x})"  # half to even, as torch.round

    @staticmethod
    def trunc(x) -> str:
        return f"trunc({x})" if _dtype(x).is_floating_point else str(x)

    @staticmethod
    def floor(x) -> str:
        return f"floor({x})" if _dtype(x).is_floating_point else str(x)

    @staticmethod
    def ceil(x) -> str:
        return f"ceil({x})" if _dtype(x).is_floating_point else str(x)

    @staticmethod
    def fma(x, y, z) -> str:
        t = _float_type(x, y, z)
        return f"fma({_cast(x, t)}, {_cast(y, t)}, {_cast(z, t)})"

    @staticmethod
    def rand(seed, offset) -> str:
        return f"db_rand({seed}, {offset})"

    @staticmethod
    def randn(seed, offset) -> str:
        return f"db_randn({seed}, {offset})"

    @staticmethod
    def randint64(seed, offset, low, high) -> str:
        return f"db_randint64({seed}, {offset}, {low}, {high})"

    # float32 exp and erf in common.clh's arithmetic (within 2 ulp and 1.2e-7): CPU devices vectorize
    # them, where the library's functions are a call per element.
    @staticmethod
    def exp(x) -> str:
        t = _float_type(x)
        return f"exp_arith({_cast(x, t)})" if t == torch.float32 else f"exp({_cast(x, t)})"

    @staticmethod
    def erf(x) -> str:
        t = _float_type(x)
        return f"erf_arith({_cast(x, t)})" if t == torch.float32 else f"erf({_cast(x, t)})"

    @staticmethod
    def erfc(x) -> str:
        t = _float_type(x)
        return f"erfc_arith({_cast(x, t)})" if t == torch.float32 else f"erfc({_cast(x, t)})"

    exp2 = _unary_math("exp2")
    expm1 = _unary_math("expm1")
    log = _unary_math("log")
    log2 = _unary_math("log2")
    log10 = _unary_math("log10")
    log1p = _unary_math("log1p")
    sqrt = _unary_math("sqrt")
    rsqrt = _unary_math("rsqrt")
    sin = _unary_math("sin")
    cos = _unary_math("cos")
    tan = _unary_math("tan")
    asin = _unary_math("asin")
    acos = _unary_math("acos")
    atan = _unary_math("atan")
    sinh = _unary_math("sinh")
    cosh = _unary_math("cosh")
    tanh = _unary_math("tanh")
    asinh = _unary_math("asinh")
    acosh = _unary_math("acosh")
    atanh = _unary_math("atanh")
    lgamma = _unary_math("lgamma")
    atan2 = _binary_math("atan2")
    hypot = _binary_math("hypot")
    copysign = _binary_math("copysign")
    nextafter = _binary_math("nextafter")
    fmod = _binary_math("fmod")
