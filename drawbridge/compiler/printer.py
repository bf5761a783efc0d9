"""Prints Inductor's index and size expressions (sympy) as OpenCL C.

Index arithmetic is done in 64-bit ``long``: every integer literal carries an ``L`` suffix, so
products of sizes never overflow an ``int``. Floor division and Python-style modulo take the
plain C operator where both operands are known non-negative (the common case for indices) and
the helpers of ``prelude.py`` otherwise."""

from __future__ import annotations

import sympy
from sympy.printing.precedence import PRECEDENCE
from torch.utils._sympy.printers import ExprPrinter


def _nonnegative(*exprs: sympy.Expr) -> bool:
    return all(bool(e.is_nonnegative) for e in exprs)


class OpenCLPrinter(ExprPrinter):
    def _print_Integer(self, expr: sympy.Expr) -> str:
        value = int(expr)
        if value == -(1 << 63):
            return "(-9223372036854775807L - 1L)"
        return f"{value}L"

    def _print_Float(self, expr: sympy.Expr) -> str:
        if expr.is_integer:  # sympy treats 2.0 as an integer; C must see a double
            return f"{int(expr)}.0"
        return super()._print_Float(expr)

    def _print_Infinity(self, expr: sympy.Expr) -> str:
        return "INFINITY"

    def _print_NegativeInfinity(self, expr: sympy.Expr) -> str:
        return "(-INFINITY)"

    def _print_NaN(self, expr: sympy.Expr) -> str:
        return "NAN"

    def _print_BooleanTrue(self, expr: sympy.Expr) -> str:
        return "true"

    def _print_BooleanFalse(self, expr: sympy.Expr) -> str:
        return "false"

    def _print_Not(self, expr: sympy.Expr) -> str:
        return f"!({self._print(expr.args[0])})"

    def _print_And(self, expr: sympy.Expr) -> str:
        return self.stringify(expr.args, " && ", PRECEDENCE["And"])

    def _print_Or(self, expr: sympy.Expr) -> str:
        return self.stringify(expr.args, " || ", PRECEDENCE["Or"])

    def _print_Where(self, expr: sympy.Expr) -> str:
        c, p, q = (self.parenthesize(a, PRECEDENCE["Atom"] - 0.5) for a in expr.args)
        return f"({c} ? {p} : {q})"

    def _print_Piecewise(self, expr: sympy.Expr) -> str:
        result = None
        for value, cond in reversed(expr.args):
            v = self.parenthesize(value, PRECEDENCE["Atom"] - 0.5)
            if cond == True or result is None:  # noqa: E712
                result = v
            else:
                result = f"({self.parenthesize(cond, PRECEDENCE['Atom'] - 0.5)} ? {v} : {result})"
        return result or "0L"

    def _floordiv(self, x: sympy.Expr, div: sympy.Expr) -> str:
        xs, ds = self._print(x), self._print(div)
        if _nonnegative(x) and bool(div.is_positive):
            return f"(({xs}) / ({ds}))"
        return f"db_floordiv_l({xs}, {ds})"

    def _print_FloorDiv(self, expr: sympy.Expr) -> str:
        x, div = expr.args
        if not expr.is_integer:
            return f"floor((double)({self._print(x)}) / (double)({self._print(div)}))"
        return self._floordiv(x, div)

    _print_CleanDiv = _print_FloorDiv

    def _print_ModularIndexing(self, expr: sympy.Expr) -> str:
        x, div, mod = expr.args
        quotient = self._print(x) if div == 1 else self._floordiv(x, div)
        if _nonnegative(x) and bool(div.is_positive) and bool(mod.is_positive):
            return f"(({quotient}) % ({self._print(mod)}))"
        return f"db_mod_l({quotient}, {self._print(mod)})"

    def _print_PythonMod(self, expr: sympy.Expr) -> str:
        x, mod = expr.args
        if _nonnegative(x) and bool(mod.is_positive):
            return f"(({self._print(x)}) % ({self._print(mod)}))"
        return f"db_mod_l({self._print(x)}, {self._print(mod)})"

    def _print_Mod(self, expr: sympy.Expr) -> str:
        return self._print_PythonMod(expr)

    def _print_Min(self, expr: sympy.Expr) -> str:
        return self._fold(expr, "min")

    def _print_Max(self, expr: sympy.Expr) -> str:
        return self._fold(expr, "max")

    def _fold(self, expr: sympy.Expr, fn: str) -> str:
        # Index expressions are integers (long); float Min/Max come from ops, not from here.
        cast = "(long)" if expr.is_integer else "(double)"
        args = [f"{cast}({self._print(a)})" for a in expr.args]
        result = args[0]
        for a in args[1:]:
            result = f"{fn}({result}, {a})"
        return result

    def _print_Abs(self, expr: sympy.Expr) -> str:
        (x,) = expr.args
        if expr.is_integer:
            return f"((long)abs((long)({self._print(x)})))"  # OpenCL's abs of an integer is unsigned
        return f"fabs((double)({self._print(x)}))"

    def _print_PowByNatural(self, expr: sympy.Expr) -> str:
        base, exp = expr.args
        if exp.is_Integer and 0 <= int(exp) <= 8:
            return "(" + ("*".join([self.parenthesize(base, PRECEDENCE["Mul"])] * int(exp)) or "1L") + ")"
        return f"db_pow_l({self._print(base)}, {self._print(exp)})"

    def _print_Pow(self, expr: sympy.Expr) -> str:
        base, exp = expr.args
        if exp.is_Integer and int(exp) >= 0:
            return self._print_PowByNatural(expr)
        return f"pow((double)({self._print(base)}), (double)({self._print(exp)}))"

    def _print_FloatPow(self, expr: sympy.Expr) -> str:
        base, exp = expr.args
        return f"pow((double)({self._print(base)}), (double)({self._print(exp)}))"

    def _print_Rational(self, expr: sympy.Expr) -> str:
        return f"((double){expr.p} / (double){expr.q})"

    def _print_IntTrueDiv(self, expr: sympy.Expr) -> str:
        a, b = expr.args
        return f"((double)({self._print(a)}) / (double)({self._print(b)}))"

    def _print_FloatTrueDiv(self, expr: sympy.Expr) -> str:
        a, b = expr.args
        return f"((double)({self._print(a)}) / (double)({self._print(b)}))"

    def _print_ToFloat(self, expr: sympy.Expr) -> str:
        return f"((double)({self._print(expr.args[0])}))"

    def _print_TruncToFloat(self, expr: sympy.Expr) -> str:
        return f"trunc((double)({self._print(expr.args[0])}))"

    def _print_TruncToInt(self, expr: sympy.Expr) -> str:
        return f"((long)trunc((double)({self._print(expr.args[0])})))"

    def _print_FloorToInt(self, expr: sympy.Expr) -> str:
        return f"((long)floor((double)({self._print(expr.args[0])})))"

    def _print_CeilToInt(self, expr: sympy.Expr) -> str:
        return f"((long)ceil((double)({self._print(expr.args[0])})))"

    def _print_floor(self, expr: sympy.Expr) -> str:
        return f"floor((double)({self._print(expr.args[0])}))"

    def _print_ceiling(self, expr: sympy.Expr) -> str:
        return f"ceil((double)({self._print(expr.args[0])}))"

    def _print_RoundToInt(self, expr: sympy.Expr) -> str:
        return f"((long)rint((double)({self._print(expr.args[0])})))"

    def _print_OpaqueUnaryFn_sqrt(self, expr: sympy.Expr) -> str:
        return f"sqrt((double)({self._print(expr.args[0])}))"

    def _print_OpaqueUnaryFn_log2(self, expr: sympy.Expr) -> str:
        return f"log2((double)({self._print(expr.args[0])}))"


def opencl_expr(expr: sympy.Expr) -> str:
    return OpenCLPrinter().doprint(expr)
