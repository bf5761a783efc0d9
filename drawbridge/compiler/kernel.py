"""The OpenCL C kernel of one fused group of Inductor nodes.

Pointwise kernels run one work-item per element (``xindex``). Reduction kernels run one
work-group row per output element: its RBLOCK lanes stride through the reduction with private
accumulators, then combine them in local memory. The launcher (``launcher.py``) picks RBLOCK at
run time from the device class — many lanes on GPUs, one per row on CPU devices, where a single
work-item walking a row is fastest — so the same source serves every device and every size.
Sizes are kernel arguments: one program serves all shapes of a dynamic graph.

A reduction whose inputs are contiguous along the outputs and not along the reduction (a sum over
the rows of a matrix: bias and norm-weight gradients) is a *column* reduction instead: each
work-item owns DB_XRUN adjacent outputs with an accumulator each, and walks the reduction with
the run of outputs as its inner loop — contiguous loads on CPU devices, which vectorize, and
coalesced ones on GPUs, where DB_XRUN is 1.

In the row form, a kernel with a max, min, argmax or argmin has each lane walk its part of the
reduction in runs of DB_RRUN adjacent elements (16 on CPU devices, 1 on GPUs) with an accumulator
per element of the run: the run is an inner loop of independent accumulations, which vectorizes
where a single running max would not (LLVM vectorizes no such reduction without no-NaN flags).
Sums, and Welford's blocks, keep one accumulator per lane: they vectorize as they are."""

from __future__ import annotations

import itertools

import sympy
import torch
from torch._inductor.codegen.common import (
    CSE,
    CSEVariable,
    DeferredLine,
    IndentedBuffer,
    PythonPrinter,
    SizeArg,
    TensorArg,
)
from torch._inductor.codegen.simd import IterationRangesEntry, SIMDKernel
from torch._inductor.codegen.simd_kernel_features import DisableReduction, EnableReduction
from torch._inductor.utils import Placeholder
from torch._inductor.virtualized import OpsValue, V
from torch.utils._ordered_set import OrderedSet
from torch.utils._sympy.value_ranges import ValueRanges

from .overrides import OpenCLOverrides
from .prelude import MAX_GROUP
from .printer import opencl_expr
from .types import compute_dtype, compute_type, literal, storage_type

# Elements per lane in each block of a reduction loop with a Welford mean/variance (see _welford).
WELFORD_BLOCK = 256


class OpenCLCSE(CSE):
    """Declares every temporary with its C type (OpenCL C has no ``auto``)."""

    def generate(self, buffer, expr, *, bounds=ValueRanges.unknown(), write=True, assignment=True, dtype=None,
                 shape=None):
        if isinstance(expr, OpsValue):
            expr = expr.value
        plain = isinstance(expr, (str, DeferredLine))
        key = expr.line if isinstance(expr, DeferredLine) else expr
        if not (write and assignment and plain) or self.try_get(key) is not None:
            return super().generate(buffer, expr, bounds=bounds, write=write, assignment=assignment, dtype=dtype,
                                    shape=shape)
        if dtype is None:
            raise NotImplementedError(f"torch.compile on ocl: no dtype known for `{key}`")
        var = super().generate(buffer, expr, bounds=bounds, write=False, dtype=compute_dtype(dtype), shape=shape)
        declaration = f"{compute_type(dtype)} {var} = {key};"
        buffer.writeline(expr._new_line(declaration) if isinstance(expr, DeferredLine) else declaration)
        return var


def _identity(reduction_type: str, dtype: torch.dtype) -> str:
    if reduction_type in ("sum", "xor_sum", "any"):
        return literal(0, dtype)
    if reduction_type == "prod":
        return literal(1, dtype)
    if reduction_type in ("max", "min"):
        if dtype == torch.bool:
            return literal(reduction_type == "min", dtype)
        if dtype.is_floating_point:
            return literal(float("-inf") if reduction_type == "max" else float("inf"), dtype)
        info = torch.iinfo(dtype)
        return literal(info.min if reduction_type == "max" else info.max, dtype)
    raise NotImplementedError(f"torch.compile on ocl: reduction {reduction_type}")


def _combine(reduction_type: str, dtype: torch.dtype, a: str, b: str) -> str:
    if reduction_type == "sum":
        return f"{a} + {b}"
    if reduction_type == "prod":
        return f"{a} * {b}"
    if reduction_type == "xor_sum":
        return f"{a} ^ {b}"
    if reduction_type == "any" or (dtype == torch.bool and reduction_type == "max"):
        return f"{a} || {b}"
    if dtype == torch.bool and reduction_type == "min":
        return f"{a} && {b}"
    if reduction_type in ("max", "min"):
        if dtype.is_floating_point:
            return f"DB_{reduction_type.upper()}_FP({a}, {b})"
        return f"{reduction_type}({a}, {b})"
    raise NotImplementedError(f"torch.compile on ocl: reduction {reduction_type}")


def _arg_better(reduction_type: str, dtype: torch.dtype, v: str, i: str, best: str, best_i: str) -> str:
    """Whether (v, i) replaces (best, best_i): the extreme value, NaN above all, lowest index on ties."""
    cmp = ">" if reduction_type == "argmax" else "<"
    tie = f"({v} == {best} && {i} < {best_i})"
    if not dtype.is_floating_point:
        return f"({v} {cmp} {best} || {tie})"
    return (f"((isnan({v}) && !isnan({best})) || (isnan({v}) && isnan({best}) && {i} < {best_i}) || "
            f"({v} {cmp} {best} || {tie}))")


class OpenCLKernel(SIMDKernel):
    overrides = OpenCLOverrides  # type: ignore[assignment]
    suffix = ";"
    newvar_prefix = ""
    kexpr = staticmethod(opencl_expr)  # type: ignore[assignment]
    sexpr = staticmethod(opencl_expr)
    pexpr = staticmethod(PythonPrinter().doprint)

    def __init__(self, tiling, **kwargs):
        super().__init__(tiling, **kwargs)
        self.cse = OpenCLCSE(self.newvar_prefix, self.suffix)
        self.local_buffers = IndentedBuffer()  # __local arrays: OpenCL allows them only at kernel scope
        self.post_loop_combine = IndentedBuffer()
        self.post_loop_store = IndentedBuffer()
        # Welford's per-block sums: reset before each block of the reduction loop, merged after it.
        self.block_start = IndentedBuffer()
        self.block_end = IndentedBuffer()
        self.outside_loop_vars: OrderedSet = OrderedSet()
        self.local_ids = itertools.count()
        self.checks_bounds = False
        self.signature = ""
        self.launch_kind = "pointwise"
        # Reduction kernels: the index variables derived from xindex, declared where each loop
        # over outputs begins; and for the column form, the layouts of the loads seen before the
        # first reduction, the reduction loop's parts and what follows it (see _write_column_kernel).
        self.x_entries = IndentedBuffer()
        self.column = False
        self.run_form = False
        self.load_layouts: list[tuple[bool, bool]] = []
        self.column_loop: dict | None = None
        self.after_loop = IndentedBuffer()

    # Indices are 64-bit everywhere: sizes of large tensors overflow int.
    def get_index_dtype_as_torch_dtype(self) -> torch.dtype:
        return torch.int64

    def dtype_to_str(self, dtype: torch.dtype) -> str:
        return compute_type(dtype)

    def want_no_x_dim(self) -> bool:
        return False

    # ---- loads and stores -----------------------------------------------------------------------
    def load(self, name: str, index: sympy.Expr) -> CSEVariable:
        var = self.args.input(name)
        index = self.prepare_indexing(index)
        if self.is_reduction_kernel() and self.inside_reduction:
            self.load_layouts.append((self._unit_stride(index, reduction=True),
                                      self._unit_stride(index, reduction=False)))
        index_str = self.index_to_str(index)
        dtype = V.graph.get_dtype(name)
        if dtype == torch.float16:
            line = f"vload_half({index_str}, {var})"
        elif dtype == torch.bfloat16:
            line = f"bf16_to_float({var}[{index_str}])"
        elif dtype == torch.bool:
            line = f"({var}[{index_str}] != 0)"
        else:
            line = f"{var}[{index_str}]"
        return self.cse.generate(self.loads, line, dtype=compute_dtype(dtype))

    def _store_line(self, name: str, index: sympy.Expr, value) -> str:
        var = self.args.output(name)
        index_str = self.index_to_str(self.prepare_indexing(index))
        dtype = V.graph.get_dtype(name)
        if dtype == torch.float16:
            return f"vstore_half_rte((float)({value}), {index_str}, {var});"
        if dtype == torch.bfloat16:
            return f"{var}[{index_str}] = float_to_bf16((float)({value}));"
        return f"{var}[{index_str}] = ({storage_type(dtype)})({value});"

    def _atomic_add_line(self, name: str, index: sympy.Expr, value) -> str:
        var = self.args.output(name)
        index_str = self.index_to_str(self.prepare_indexing(index))
        dtype = V.graph.get_dtype(name)
        # Inductor sends int64, bool and bfloat16 scatter-adds to ATen kernels instead.
        helper = {torch.float32: "db_atomic_add_f32", torch.float16: "db_atomic_add_f16",
                  torch.float64: "db_atomic_add_f64", torch.int32: "atomic_add", torch.int64: "atom_add"}.get(dtype)
        if helper is None:
            raise NotImplementedError(f"torch.compile on ocl: atomic add of {dtype}")
        return f"{helper}({var} + {index_str}, ({compute_type(dtype)})({value}));"

    def store(self, name: str, index: sympy.Expr, value, mode=None) -> None:
        if mode == "atomic_add":
            line = self._atomic_add_line(name, index, value)
        elif mode is None:
            line = self._store_line(name, index, value)
        else:
            raise NotImplementedError(f"torch.compile on ocl: store mode {mode}")
        if self.is_reduction_kernel():
            # In the reduction loop each lane has its own elements; after it, one lane stores.
            line = f"if (xvalid) {line}" if self.inside_reduction else f"if (xvalid && rlane == 0) {line}"
        self.stores.writeline(DeferredLine(name, line))
        if not self.inside_reduction:
            self.outside_loop_vars.add(value)

    def store_reduction(self, name: str, index: sympy.Expr, value) -> None:
        line = self._store_line(name, index, value)
        self.post_loop_store.writeline(DeferredLine(name, f"if (xvalid && rlane == 0) {line}"))

    def is_reduction_kernel(self) -> bool:
        return self.features.is_reduction()

    # ---- the reduction forms -------------------------------------------------------------------
    def _unit_stride(self, index: sympy.Expr, reduction: bool) -> bool:
        """Whether `index` steps by one element along the innermost variable of the reduction
        (or of the outputs)."""
        for symbol in index.free_symbols:
            entry = self.range_tree_nodes.get(symbol)
            if entry is not None and entry.root.is_reduction == reduction and entry.divisor == 1:
                return V.graph.sizevars.stride_vars(index, [symbol])[0] == 1
        return False

    def _reduction_loops(self) -> int:
        """How many reduction loops the kernel will have: one per run of nodes between the
        DisableReduction blocks of its schedule."""
        loops, inside, nodes = 0, True, 0
        for node in self.features.node_schedule:
            if node is DisableReduction or node is EnableReduction:
                loops += bool(inside and nodes)
                inside, nodes = node is EnableReduction, 0
            else:
                nodes += 1
        return loops + bool(inside and nodes)

    def _choose_form(self) -> None:
        """Decided at the first reduction, once its loads are known and before any accumulator is
        declared. The column form only for one reduction loop: the outputs of a first loop feeding
        a second would have to live in arrays across the loops over outputs."""
        r_contiguous = any(r for r, _ in self.load_layouts)
        x_contiguous = any(x for _, x in self.load_layouts)
        starts_in_loop = self.features.node_schedule[0] is not DisableReduction
        self.column = x_contiguous and not r_contiguous and starts_in_loop and self._reduction_loops() == 1
        types = {getattr(getattr(node.node, "data", None), "reduction_type", None)
                 for node in self.features.reduction_nodes()}
        # Runs only where a single accumulator would keep the loop scalar: sums vectorize as they
        # are (reassociated), and 30 % faster than in runs.
        self.run_form = (not self.column and not types & {"welford_reduce", "welford_combine"}
                         and bool(types & {"max", "min", "argmax", "argmin"}))

    def _acc(self, var) -> str:
        """How the code names an accumulator: one per output of the run in the column form, one per
        element of the run in the row form's runs."""
        return f"{var}[xi]" if self.column else f"{var}[ri]" if self.run_form else str(var)

    def _declare_acc(self, dtype: torch.dtype, init: str | None) -> CSEVariable:
        if not (self.column or self.run_form):
            return self._declare(self.body, dtype, init)
        index, size = ("xi", "DB_XRUN") if self.column else ("ri", "DB_RRUN")
        var = self.cse.newvar(dtype=compute_dtype(dtype))
        self.body.writeline(f"{compute_type(dtype)} {var}[{size}];")
        if init is not None:
            self.body.writeline(f"for (int {index} = 0; {index} < {size}; ++{index}) {var}[{index}] = {init};")
        return var

    # ---- reductions -----------------------------------------------------------------------------
    def _declare(self, buffer: IndentedBuffer, dtype: torch.dtype, init: str | None) -> CSEVariable:
        var = self.cse.newvar(dtype=compute_dtype(dtype))
        buffer.writeline(f"{compute_type(dtype)} {var}" + (f" = {init};" if init is not None else ";"))
        return var

    def _local_buffer(self, dtype: torch.dtype) -> str:
        name = f"lbuf{next(self.local_ids)}"
        ctype = "uchar" if dtype == torch.bool else compute_type(dtype)
        self.local_buffers.writeline(f"__local {ctype} {name}[{MAX_GROUP}];")
        return name

    def _group_combine(self, accs: list[tuple[CSEVariable, torch.dtype]], combine) -> list[CSEVariable]:
        """Combines the lanes' accumulators `accs` of each row; returns variables with the results.

        `combine(a, b)` gets two lists of expressions and returns C statements that merge b into a.
        With one lane per row (DB_ONE_LANE, CPU devices) the accumulators are the results. Otherwise
        a tree in local memory, unrolled: a loop around barriers makes PoCL run the code after it
        twice for the first work-item, which repeats side effects such as atomic adds."""
        code = self.post_loop_combine
        if self.column:
            results = [self._declare(code, d, self._acc(a)) for a, d in accs]
            self.outside_loop_vars.update(results)
            return results
        lane_values = [str(a) for a, _ in accs]
        if self.run_form:
            # The run's accumulators into the first, in the order of the elements.
            lane_values = [f"{a}[0]" for a, _ in accs]
            code.writeline("for (int ri = 1; ri < DB_RRUN; ++ri) {")
            with code.indent():
                for statement in combine(lane_values, [f"{a}[ri]" for a, _ in accs]):
                    code.writeline(statement)
            code.writeline("}")
        results = [self._declare(code, d, None) for _, d in accs]
        code.writeline("#ifdef DB_ONE_LANE")
        for r, a in zip(results, lane_values):
            code.writeline(f"{r} = {a};")
        code.writeline("#else")
        bufs = [self._local_buffer(d) for _, d in accs]
        for buf, a in zip(bufs, lane_values):
            code.writeline(f"{buf}[slot] = {a};")
        step = MAX_GROUP // 2
        while step:
            code.writeline("barrier(CLK_LOCAL_MEM_FENCE);")
            code.writeline(f"if ({step} < RBLOCK && rlane < {step}) {{")
            with code.indent():
                for statement in combine([f"{b}[slot]" for b in bufs], [f"{b}[slot + {step}]" for b in bufs]):
                    code.writeline(statement)
            code.writeline("}")
            step //= 2
        code.writeline("barrier(CLK_LOCAL_MEM_FENCE);")
        for r, buf in zip(results, bufs):
            code.writeline(f"{r} = {buf}[row0];")
        code.writeline("#endif")
        self.outside_loop_vars.update(results)
        return results

    def reduction(self, dtype, src_dtype, reduction_type, value):
        assert self.inside_reduction
        key = (src_dtype, reduction_type, value)
        if key in self.cse.reduction_cache:
            return self.cse.reduction_cache[key]
        result = self._reduction(dtype, src_dtype, reduction_type, value)
        self.cse.reduction_cache[key] = result
        return result

    def _result(self, dtype: torch.dtype, expr: str) -> CSEVariable:
        var = self._declare(self.post_loop_combine, dtype, expr)
        self.outside_loop_vars.add(var)
        return var

    def _reduction(self, dtype, src_dtype, reduction_type, value):
        if self.launch_kind != "reduction":
            self._choose_form()
        self.launch_kind = "reduction"
        if reduction_type in ("argmax", "argmin"):
            return self._arg_reduction(src_dtype, reduction_type, value)
        if reduction_type == "welford_reduce":
            return self._welford(value, combine=False)
        if reduction_type == "welford_combine":
            return self._welford(value, combine=True)
        acc_dtype = compute_dtype(dtype if reduction_type in ("sum", "prod", "xor_sum") else src_dtype)
        if reduction_type == "any":
            acc_dtype = torch.bool
        acc = self._declare_acc(acc_dtype, _identity(reduction_type, acc_dtype))
        cast = f"(({compute_type(acc_dtype)})({value}))"
        a = self._acc(acc)
        self.compute.writeline(f"{a} = {_combine(reduction_type, acc_dtype, a, cast)};")
        (result,) = self._group_combine(
            [(acc, acc_dtype)], lambda a, b: [f"{a[0]} = {_combine(reduction_type, acc_dtype, a[0], b[0])};"])
        return result

    def _arg_reduction(self, src_dtype, reduction_type, value):
        vdtype = compute_dtype(src_dtype)
        best_var = self._declare_acc(vdtype, _identity("max" if reduction_type == "argmax" else "min", vdtype))
        best_i_var = self._declare_acc(torch.int64, "-1L")
        best, best_i = self._acc(best_var), self._acc(best_i_var)
        (rtree,) = [t for t in self.range_trees if t.is_reduction]
        index = rtree.name
        v = f"(({compute_type(vdtype)})({value}))"
        better = _arg_better(reduction_type, vdtype, v, index, best, best_i)
        self.compute.writeline(f"if ({best_i} < 0 || {better}) {{ {best} = {v}; {best_i} = {index}; }}")

        def merge(a, b):
            cond = _arg_better(reduction_type, vdtype, b[0], b[1], a[0], a[1])
            return [f"if ({b[1]} >= 0 && ({a[1]} < 0 || {cond})) {{ {a[0]} = {b[0]}; {a[1]} = {b[1]}; }}"]

        _, index_result = self._group_combine([(best_var, vdtype), (best_i_var, torch.int64)], merge)
        # An empty reduction keeps -1; PyTorch rejects those before they reach a kernel.
        return self._result(torch.int64, f"max({index_result}, 0L)")

    def _welford(self, value, combine: bool):
        assert not self.run_form, "torch.compile on ocl: a Welford reduction in a kernel laid out in runs"
        f = torch.float32
        accs = [self._declare_acc(f, "0.0f") for _ in range(3)]
        mean, m2, weight = (self._acc(a) for a in accs)
        if combine:
            vm, vm2, vw = value
            self.compute.splice(self._welford_merge(mean, m2, weight, str(vm), str(vm2), str(vw)))
        else:
            # Welford's update divides once per element, a serial chain no compiler vectorizes.
            # Instead each block of the loop sums v - mean and its square, with the mean of the
            # blocks before it as the shift (so the sums do not cancel), and merges the block's
            # statistics into the running ones once. Blocks grow from one element per lane (see
            # codegen_body); that first block, summed unshifted, adds nothing to m2 (it is exactly 0
            # for one element, and s2 - s1 * d would leave the rounding of v * v under a fused
            # multiply-add, about 0.03 per lane for values near 1000).
            s1, s2 = (self._acc(self._declare_acc(f, None)) for _ in range(2))
            self.block_start.writeline(f"{s1} = 0.0f; {s2} = 0.0f;")
            self.compute.writeline(f"{{ float d = (float)({value}) - {mean}; {s1} += d; {s2} += d * d; }}")
            self.block_end.writeline(
                f"if (block_count > 0.0f) {{ float w = {weight} + block_count; float d = {s1} / block_count; "
                f"if ({weight} > 0.0f) {m2} += {s2} - {s1} * d + {s1} * d * {weight} / w; "
                f"{mean} += {s1} / w; {weight} = w; }}")

        def merge(a, b):
            return self._welford_merge(*a, *b).splitlines()

        return tuple(self._group_combine([(a, f) for a in accs], merge))

    @staticmethod
    def _welford_merge(mean, m2, weight, b_mean, b_m2, b_weight) -> str:
        return (f"{{ float w = {weight} + {b_weight}; float d = {b_mean} - {mean}; "
                f"float f = w == 0.0f ? 0.0f : {b_weight} / w; "
                f"{m2} = {m2} + {b_m2} + d * d * {weight} * f; {mean} = {mean} + d * f; {weight} = w; }}")

    def scan(self, *args, **kwargs):
        raise NotImplementedError("torch.compile on ocl: scans run as ATen kernels")

    def sort(self, *args, **kwargs):
        raise NotImplementedError("torch.compile on ocl: sorts run as ATen kernels")

    # ---- bounds checks of indirect indexing -------------------------------------------------------
    def check_bounds(self, expr: sympy.Expr, size: sympy.Expr, lower: bool, upper: bool) -> None:
        if not (lower or upper):
            return
        e, s = self.index_to_str(expr), self.index_to_str(size)
        conds = ([f"{e} < 0"] if lower else []) + ([f"{e} >= {s}"] if upper else [])
        if not self.is_reduction_kernel():
            skip = "return;"
        elif self.inside_reduction:
            skip = "continue;"  # a lane leaves the element out and still reaches every barrier
        elif isinstance(expr, sympy.Symbol):
            skip = f"{e} = 0;"  # after a reduction loop every lane must go on: read a valid element
        else:
            raise NotImplementedError(f"torch.compile on ocl: a checked index {e} after a reduction loop")
        self.checks_bounds = True
        # Raised as IndexError at the next synchronization (core::DeviceAssert::index_error, 1); the
        # element is skipped, so no address out of range is touched.
        self.compute.writeline(f"if ({' || '.join(conds)}) {{ *db_error = 1; {skip} }}")

    # ---- iteration ----------------------------------------------------------------------------
    def codegen_iteration_ranges_entry(self, entry: IterationRangesEntry) -> None:
        line = f"long {entry.name} = {self.sexpr(self.rename_indexing(entry.expr))};"
        if entry.root.is_loop:
            self.indexing_code.writeline(line)
        elif self.is_reduction_kernel():
            self.x_entries.writeline(line)
        else:
            self.body.writeline(line)

    def codegen_body(self) -> None:
        if not (self.indexing_code or self.loads or self.compute or self.stores or self.post_loop_combine
                or self.post_loop_store):
            return
        loop_trees = [t for t in self.range_trees if t.is_loop]
        # In the column form everything after the reduction loop runs in a loop over the outputs.
        after = self.after_loop if self.column else self.body
        if self.inside_reduction and loop_trees:
            (tree,) = loop_trees
            if self.column:
                self._keep_column_loop(tree)
            else:
                self._write_reduction_loop(tree)
            self.cse.invalidate(self.outside_loop_vars)
            tree.cache_clear()
        else:
            after.splice(self.indexing_code)
            after.splice(self.loads)
            after.splice(self.compute)
            after.splice(self.stores)
        after.splice(self.post_loop_combine)
        after.splice(self.post_loop_store)
        for buffer in (self.indexing_code, self.loads, self.compute, self.stores, self.post_loop_combine,
                       self.post_loop_store, self.block_start, self.block_end):
            buffer.clear()

    def _loop_head(self, tree, code: IndentedBuffer) -> None:
        """Opens the loops over the reduction: in runs, or in Welford's blocks where it has them
        (_loop_tail closes them)."""
        if self.run_form:
            run, count, numel = f"{tree.prefix}run", f"{tree.prefix}count", f"{tree.prefix}numel"
            code.writeline(f"for (long {run} = rlane * DB_RRUN; {run} < {numel}; {run} += RBLOCK * DB_RRUN) {{")
            code.do_indent()
            code.writeline(f"const int {count} = (int)min((long)DB_RRUN, {numel} - {run});")
            code.writeline("DB_VECTORIZE")
            code.writeline(f"for (int ri = 0; ri < {count}; ++ri) {{")
            code.do_indent()
            code.writeline(f"const long {tree.name} = {run} + ri;")
            code.do_unindent()
            return
        if not self.block_start:
            code.writeline(f"for (long {tree.name} = rlane; {tree.name} < {tree.prefix}numel; "
                           f"{tree.name} += RBLOCK) {{")
            return
        # Blocks of the loop for Welford's sums: one element per lane, then twice as many each
        # time up to WELFORD_BLOCK per lane, so that each block's shift is the mean of at least as
        # many elements as the block holds (an outlier as a lane's first element would make a
        # long next block cancel).
        start, end, step = f"{tree.prefix}block", f"{tree.prefix}block_end", f"{tree.prefix}block_step"
        numel = f"{tree.prefix}numel"
        code.writeline(f"for (long {start} = 0, {step} = RBLOCK; {start} < {numel}; "
                       f"{start} += {step}, {step} = min(2 * {step}, {WELFORD_BLOCK}L * RBLOCK)) {{")
        code.do_indent()
        code.writeline(f"const long {end} = min({start} + {step}, {numel});")
        code.writeline(f"const float block_count = (float)max(0L, ({end} - {start} - rlane + RBLOCK - 1) / RBLOCK);")
        self._per_output(code, self.block_start)
        code.writeline(f"for (long {tree.name} = {start} + rlane; {tree.name} < {end}; {tree.name} += RBLOCK) {{")

    def _loop_tail(self, code: IndentedBuffer) -> None:
        code.writeline("}")
        if self.run_form:
            code.do_unindent()
            code.writeline("}")
        if self.block_start:
            self._per_output(code, self.block_end)
            code.do_unindent()
            code.writeline("}")

    def _per_output(self, code: IndentedBuffer, lines: IndentedBuffer, with_index: bool = False) -> None:
        """`lines` as they are, or in the column form once for each output of the run."""
        if not self.column:
            code.splice(lines)
            return
        code.writeline("DB_VECTORIZE")
        code.writeline("for (int xi = 0; xi < xcount; ++xi) {")
        with code.indent():
            if with_index:
                code.writeline("const long xindex = xbase + xi;")
                code.splice(self.x_entries)
            code.splice(lines)
        code.writeline("}")

    def _write_reduction_loop(self, tree) -> None:
        loop = self.body
        self._loop_head(tree, loop)
        with loop.indent():
            if not self.run_form:
                # One work-item per row on CPU devices: let the compiler vectorize the row's sums.
                loop.writeline("#ifdef DB_ONE_LANE")
                loop.writeline("#pragma clang fp reassociate(on)")
                loop.writeline("#endif")
            loop.splice(self.indexing_code)
            loop.splice(self.loads)
            loop.splice(self.compute)
            loop.splice(self.stores)
        self._loop_tail(loop)

    def _keep_column_loop(self, tree) -> None:
        """The column form's loop is written by codegen_kernel, once every index variable of the
        outputs is known (code after the loop may add some)."""
        inner = IndentedBuffer()
        for part in (self.indexing_code, self.loads, self.compute, self.stores):
            inner.splice(part)
        block_start, block_end = IndentedBuffer(), IndentedBuffer()
        block_start.splice(self.block_start)
        block_end.splice(self.block_end)
        self.column_loop = {"tree": tree, "inner": inner, "block_start": block_start, "block_end": block_end}

    def _write_column_kernel(self, code: IndentedBuffer) -> None:
        loop = self.column_loop
        code.splice(self.body)  # the accumulators
        if loop is not None:
            self.block_start, self.block_end = loop["block_start"], loop["block_end"]
            self._loop_head(loop["tree"], code)
            with code.indent():
                self._per_output(code, loop["inner"], with_index=True)
            self._loop_tail(code)
        self._per_output(code, self.after_loop, with_index=True)

    # ---- the kernel ---------------------------------------------------------------------------
    def codegen_kernel(self, name=None) -> str:
        self.codegen_body()
        reduction = self.is_reduction_kernel()
        self.launch_kind = ("column" if self.column else "reduction") if reduction else "pointwise"
        _, _, args, _ = self.args.python_argdefs()
        params, casts, signature = [], [], ""
        for arg in args:
            if isinstance(arg, TensorArg):
                ctype = storage_type(arg.dtype)
                params += [f"__global {ctype}* {arg.name}", f"const ulong {arg.name}_offset"]
                casts.append(f"{arg.name} = (__global {ctype}*)((__global char*)({arg.name}) + {arg.name}_offset);")
                signature += "b"
            elif isinstance(arg, SizeArg):
                params.append(f"const long {arg.name}")
                signature += "l"
            else:
                raise NotImplementedError(f"torch.compile on ocl: kernel argument {arg!r}")
        for tree in self.range_trees:
            if tree.is_reduction and not reduction:
                continue
            params.append(f"const long {tree.prefix}numel")
            signature += "l"
        if self.checks_bounds:
            params.append("__global int* db_error")
            signature += "e"
        self.signature = signature

        code = IndentedBuffer()
        code.writeline(f"__kernel void {name or str(Placeholder.KERNEL_NAME)}(")
        with code.indent():
            for i, p in enumerate(params):
                code.writeline(p + ("," if i + 1 < len(params) else ""))
        code.writeline(") {")
        with code.indent():
            for line in casts:
                code.writeline(line)
            if reduction and self.column:
                code.splice(
                    """
                    const long xbase = (long)get_global_id(0) * DB_XRUN;
                    if (xbase >= xnumel) return;
                    const int xcount = (int)min((long)DB_XRUN, xnumel - xbase);
                    const int rlane = 0, RBLOCK = 1;
                    const bool xvalid = true;
                    """,
                    strip=True,
                )
                self._write_column_kernel(code)
            elif reduction:
                code.splice(
                    """
                    #ifdef DB_ONE_LANE
                    const int rlane = 0, RBLOCK = 1;  // constants: the reduction loop is a plain loop
                    #else
                    const int rlane = get_local_id(0);
                    const int RBLOCK = get_local_size(0);
                    #endif
                    const int row0 = get_local_id(1) * RBLOCK;
                    const int slot = row0 + rlane;
                    const bool xvalid = get_global_id(1) < xnumel;
                    const long xindex = xvalid ? (long)get_global_id(1) : xnumel - 1;
                    """,
                    strip=True,
                )
                code.writeline("#ifndef DB_ONE_LANE")
                code.splice(self.local_buffers)
                code.writeline("#endif")
                code.splice(self.x_entries)
                code.splice(self.body)
            else:
                # CPU devices: each work-item walks DB_CHUNK consecutive elements in a loop the
                # compiler vectorizes. GPUs: one work-item per element.
                code.splice(
                    """
                    #ifdef DB_ONE_LANE
                    const long xfirst = (long)get_global_id(0) * DB_CHUNK;
                    const long xlast = min(xfirst + DB_CHUNK, xnumel);
                    DB_VECTORIZE
                    for (long xindex = xfirst; xindex < xlast; ++xindex) {
                    #else
                    const long xindex = get_global_id(0);
                    if (xindex >= xnumel) return;
                    {
                    #endif
                    """,
                    strip=True,
                )
                code.splice(self.body)
                code.writeline("}")
        code.writeline("}")
        return code.getvalue()

    def call_kernel(self, name: str, node=None, deallocate_ws: bool = True) -> None:
        wrapper = V.graph.wrapper_code
        for v in self.args.sizevars:
            wrapper.ensure_size_computed(v)
        _, call_args, _, arg_types = self.args.python_argdefs()
        call_args = [self.pexpr(a) if isinstance(a, sympy.Expr) else str(a) for a in call_args]
        arg_types = list(arg_types)
        reduction = self.is_reduction_kernel()
        for tree in self.range_trees:
            if tree.is_reduction and not reduction:
                continue
            if isinstance(tree.numel, (sympy.Integer, int)):
                call_args.append(str(int(tree.numel)))
            else:
                call_args.append(str(wrapper.generate_numel_expr(name, tree).inner))
            arg_types.append(int)
        wrapper.generate_kernel_call(name, call_args, device=V.graph.get_current_device_or_throw(), triton=False,
                                     arg_types=arg_types)
