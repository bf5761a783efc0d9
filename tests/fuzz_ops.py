"""A seeded fuzzer: ops called with random shapes, strides, dtypes, scalars, empty tensors,
out-of-range dims and indices, and mixed devices, on ocl and on the CPU.

Each case must give the CPU's exception type, or the CPU's values (NaN where the CPU has NaN).
A case that crashes the process ends the run; tests/test_fuzz.py runs this file in a child
process so that a crash is a failure, not a lost test session.

    python tests/fuzz_ops.py --seed 0 --seconds 120 [--max-cases N] [--out report.json] [--trace]
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time

import torch

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]
DTYPES = FLOATS + INTS + [torch.bool]

UNARY = ["abs", "neg", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "floor", "ceil",
         "round", "trunc", "sign", "reciprocal", "rsqrt", "erf", "erfc", "expm1", "log1p", "log2", "log10", "exp2",
         "frac", "sgn", "bitwise_not", "logical_not", "isnan", "isinf", "isfinite", "square", "atan", "asin", "acos",
         "sinh", "cosh", "asinh", "acosh", "atanh", "lgamma", "digamma", "deg2rad", "rad2deg", "nan_to_num",
         "signbit", "positive", "erfinv", "i0", "sinc", "logit", "clone", "isneginf", "isposinf", "fix"]
BINARY = ["add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "atan2", "maximum", "minimum",
          "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
          "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "hypot",
          "copysign", "xlogy", "heaviside", "nextafter", "logaddexp", "true_divide", "rsub"]
REDUCE_DIM = ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "std", "var", "logsumexp", "any", "all",
              "nansum", "count_nonzero", "cumsum", "cumprod", "cummax", "cummin", "softmax", "log_softmax",
              "argsort", "max", "min", "median", "mode", "norm", "nanmean", "logcumsumexp", "sort", "msort"]
SHAPE = ["transpose", "flip", "roll", "narrow", "select", "squeeze", "unsqueeze", "flatten", "tril", "triu",
         "diagonal", "movedim", "chunk", "repeat", "expand_dim", "cat", "stack", "reshape", "t", "unbind"]
INDEX = ["index_select", "gather", "scatter", "scatter_add", "take", "index_add", "index_fill", "index_copy",
         "masked_fill", "where", "nonzero", "take_along_dim", "topk", "kthvalue", "one_hot", "embedding",
         "bincount", "searchsorted", "unique", "put"]


# Cases where the CPU's answer is a CPU-only limit or an accident of its implementation, not an
# error of the input, and ocl answers as CUDA does: (pattern of the case, why).
KNOWN_DIVERGENCES = [
    (r"^topk\(torch\.bool", "the CPU refuses bool (\"topk does not support bool dtypes on CPU\"); ocl sorts "
                              "them, as CUDA does"),
    (r"^index_fill\(\([^)]*\b0\b", "on an empty dimension the CPU fails while building a view (setStorage, a "
                                   "RuntimeError); ocl raises IndexError for the index, as for any other size"),
    (r"^index_add\(.*ocl IndexError, cpu RuntimeError$", "the CPU's exception for an index out of range depends "
                                                       "on its internal path (IndexError for 1-d tensors and some "
                                                       "strides, RuntimeError for others); ocl raises IndexError"),
]


def known_divergence(desc: str, problem: str):
    return next((why for pattern, why in KNOWN_DIVERGENCES if re.search(pattern, f"{desc}: {problem}")), None)


class Case:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def shape(self, max_dims=3):
        return [self.rng.choice([0, 1, 1, 2, 3, 4, 5]) for _ in range(self.rng.randint(0, max_dims))]

    def dtype(self, pool=DTYPES):
        return self.rng.choice(pool)

    def tensor(self, shape=None, dtype=None, low=None, high=None):
        """A CPU tensor, sometimes a non-contiguous view of a larger one."""
        shape = self.shape() if shape is None else list(shape)
        dtype = self.dtype() if dtype is None else dtype
        gen = torch.Generator().manual_seed(self.rng.randrange(1 << 30))
        big = [s * 2 if s and self.rng.random() < 0.3 else s for s in shape]
        if dtype == torch.bool:
            t = torch.rand(big, generator=gen) < 0.5
        elif dtype.is_floating_point:
            t = (torch.randn(big, generator=gen, dtype=torch.float64) * self.rng.choice([1, 3, 100])).to(dtype)
            if t.numel() and self.rng.random() < 0.2:
                t.view(-1)[0] = self.rng.choice([float("nan"), float("inf"), -float("inf"), 0.0, -0.0])
        else:
            lo = low if low is not None else (0 if dtype == torch.uint8 else -9)
            t = torch.randint(lo, high if high is not None else 10, big, generator=gen).to(dtype)
        if big != shape:
            t = t[tuple(slice(0, s * 2, 2) if b != s else slice(None) for s, b in zip(shape, big))]
        if t.dim() >= 2 and self.rng.random() < 0.2:
            t = t.transpose(0, -1).contiguous().transpose(0, -1)  # same values, column-major
        return t

    def dim(self, ndim):
        # Mostly valid (negative too), sometimes just out of range.
        return self.rng.randint(-max(ndim, 1) - (1 if self.rng.random() < 0.1 else 0),
                                max(ndim, 1) - (0 if self.rng.random() < 0.1 else 1))

    def scalar(self, dtype):
        if dtype.is_floating_point:
            return self.rng.choice([0.0, 1.0, -2.5, 0.5, 3.0, float("nan"), 1e30])
        if dtype == torch.bool:
            return self.rng.choice([True, False])
        return self.rng.choice([0, 1, -1, 2, 7, -3])

    def index(self, size, shape=None, allow_bad=True):
        hi = max(size, 1)
        lo = -hi if self.rng.random() < 0.3 else 0
        if allow_bad and self.rng.random() < 0.1:
            hi += 2
        shape = [self.rng.randint(0, 4)] if shape is None else shape
        return self.tensor(shape, torch.int64, low=lo, high=hi)


def make_call(case: Case, family: str, name: str):
    """(description, fn(args on a device) -> result, args as CPU tensors/values)."""
    rng = case.rng
    if family == "unary":
        x = case.tensor()
        return f"{name}({x.dtype} {tuple(x.shape)})", lambda a: getattr(torch, name)(a[0]), [x]
    if family == "binary":
        x = case.tensor()
        kind = rng.random()
        if kind < 0.5:
            y = case.tensor(shape=x.shape[rng.randint(0, x.dim()):] if x.dim() else [], dtype=case.dtype())
        elif kind < 0.8:
            y = case.scalar(x.dtype)
        else:
            y = case.tensor()  # usually not broadcastable
        inplace = rng.random() < 0.2 and name not in ("rsub", "eq", "ne", "lt", "le", "gt", "ge")
        desc = f"{name}{'_' if inplace else ''}({x.dtype} {tuple(x.shape)}, " \
               f"{y.dtype if isinstance(y, torch.Tensor) else type(y).__name__} " \
               f"{tuple(y.shape) if isinstance(y, torch.Tensor) else y})"
        if inplace:
            return desc, lambda a: getattr(a[0].clone(), name + "_")(a[1]), [x, y]
        return desc, lambda a: getattr(torch, name)(a[0], a[1]), [x, y]
    if family == "reduce":
        x = case.tensor()
        d = case.dim(x.dim())
        keep = rng.random() < 0.5
        if name in ("cumsum", "cumprod", "softmax", "log_softmax", "logcumsumexp"):
            return f"{name}({x.dtype} {tuple(x.shape)}, dim={d})", lambda a: getattr(torch, name)(a[0], d), [x]
        if name in ("cummax", "cummin", "argsort", "sort"):
            return f"{name}({x.dtype} {tuple(x.shape)}, dim={d})", lambda a: getattr(torch, name)(a[0], dim=d), [x]
        if name == "msort":
            return f"msort({x.dtype} {tuple(x.shape)})", lambda a: torch.msort(a[0]), [x]
        if name == "count_nonzero":
            return f"count_nonzero({x.dtype} {tuple(x.shape)}, {d})", lambda a: torch.count_nonzero(a[0], d), [x]
        if rng.random() < 0.25 and name not in ("median", "mode"):
            return f"{name}({x.dtype} {tuple(x.shape)})", lambda a: getattr(torch, name)(a[0]), [x]
        return (f"{name}({x.dtype} {tuple(x.shape)}, dim={d}, keepdim={keep})",
                lambda a: getattr(torch, name)(a[0], d, keepdim=keep), [x])
    if family == "shape":
        x = case.tensor()
        n = x.dim()
        d, e = case.dim(n), case.dim(n)
        calls = {
            "transpose": lambda a: a[0].transpose(d, e),
            "flip": lambda a: a[0].flip(d),
            "roll": lambda a: a[0].roll(rng_shift, d),
            "narrow": lambda a: a[0].narrow(d, start, length),
            "select": lambda a: a[0].select(d, start),
            "squeeze": lambda a: a[0].squeeze(d),
            "unsqueeze": lambda a: a[0].unsqueeze(d),
            "flatten": lambda a: a[0].flatten(min(d, e), max(d, e)),
            "tril": lambda a: a[0].tril(start - 1),
            "triu": lambda a: a[0].triu(start - 1),
            "diagonal": lambda a: a[0].diagonal(start - 1, d, e),
            "movedim": lambda a: a[0].movedim(d, e),
            "chunk": lambda a: a[0].chunk(max(length, 1), d),
            "repeat": lambda a: a[0].repeat(*([2] * max(n, 1))),
            "expand_dim": lambda a: a[0].unsqueeze(0).expand(3, *a[0].shape).contiguous(),
            "cat": lambda a: torch.cat([a[0], a[0].flip(d) if n else a[0]], d),
            "stack": lambda a: torch.stack([a[0], a[0]], d),
            "reshape": lambda a: a[0].reshape(-1, max(length, 1)),
            "t": lambda a: a[0].t(),
            "unbind": lambda a: a[0].unbind(d),
        }
        rng_shift, start, length = rng.randint(-3, 3), rng.randint(0, 3), rng.randint(0, 3)
        return f"{name}({x.dtype} {tuple(x.shape)}, d={d}, e={e}, {start}, {length})", calls[name], [x]
    # Indexing.
    x = case.tensor(shape=case.shape(max_dims=3) or [4])
    n = x.dim()
    d = case.dim(n)
    size = x.shape[d] if -max(n, 1) <= d < max(n, 1) and n else 1
    if name in ("index_select", "index_add", "index_fill", "index_copy"):
        idx = case.index(size)
        if name == "index_select":
            return f"index_select({tuple(x.shape)}, {d}, {idx.tolist()})", lambda a: a[0].index_select(d, a[1]), [x, idx]
        if name == "index_fill":
            return f"index_fill({tuple(x.shape)}, {d}, {idx.tolist()})", lambda a: a[0].clone().index_fill_(d, a[1], 1), [x, idx]
        src_shape = list(x.shape)
        if n:
            src_shape[d] = idx.numel()
        src = case.tensor(src_shape, x.dtype)
        op = name + "_"
        return (f"{name}({tuple(x.shape)}, {d}, {idx.tolist()})",
                lambda a: getattr(a[0].clone(), op)(d, a[1], a[2]), [x, idx, src])
    if name in ("gather", "scatter", "scatter_add", "take_along_dim"):
        idx_shape = [rng.randint(0, s) if s else 0 for s in x.shape]
        idx = case.index(size, idx_shape)
        if name == "gather":
            return f"gather({tuple(x.shape)}, {d}, {tuple(idx.shape)})", lambda a: torch.gather(a[0], d, a[1]), [x, idx]
        if name == "take_along_dim":
            return (f"take_along_dim({tuple(x.shape)}, {tuple(idx.shape)}, {d})",
                    lambda a: torch.take_along_dim(a[0], a[1], d), [x, idx])
        src = case.tensor(idx.shape, x.dtype)
        if name == "scatter":
            # Duplicate indices make scatter's result unspecified: unique positions only.
            return (f"scatter({tuple(x.shape)}, {d}, {tuple(idx.shape)})",
                    lambda a: a[0].clone().scatter_(d, a[1], 1 if a[0].dtype != torch.bool else True), [x, idx])
        return (f"scatter_add({tuple(x.shape)}, {d}, {tuple(idx.shape)})",
                lambda a: a[0].clone().scatter_add_(d, a[1], a[2]), [x, idx, src])
    if name in ("take", "put"):
        idx = case.index(x.numel())
        if name == "take":
            return f"take({tuple(x.shape)}, {idx.tolist()})", lambda a: torch.take(a[0], a[1]), [x, idx]
        src = case.tensor([idx.numel()], x.dtype)
        return f"put({tuple(x.shape)}, {idx.tolist()})", lambda a: a[0].clone().put_(a[1], a[2], accumulate=True), [x, idx, src]
    if name == "masked_fill":
        mask = case.tensor(x.shape, torch.bool)
        return f"masked_fill({tuple(x.shape)})", lambda a: a[0].masked_fill(a[1], 0), [x, mask]
    if name == "where":
        mask = case.tensor(x.shape, torch.bool)
        y = case.tensor(x.shape, case.dtype())
        return f"where({tuple(x.shape)}, {y.dtype})", lambda a: torch.where(a[1], a[0], a[2]), [x, mask, y]
    if name == "nonzero":
        return f"nonzero({x.dtype} {tuple(x.shape)})", lambda a: torch.nonzero(a[0]), [x]
    if name in ("topk", "kthvalue"):
        k = rng.randint(0, size + 1)
        if name == "topk":
            return f"topk({x.dtype} {tuple(x.shape)}, {k}, {d})", lambda a: torch.topk(a[0], k, d).values, [x]
        return f"kthvalue({x.dtype} {tuple(x.shape)}, {k}, {d})", lambda a: torch.kthvalue(a[0], k, d).values, [x]
    if name == "one_hot":
        idx = case.index(4, allow_bad=True)
        classes = rng.choice([-1, 3, 4, 6])
        return f"one_hot({idx.tolist()}, {classes})", lambda a: torch.nn.functional.one_hot(a[0], classes), [idx]
    if name == "embedding":
        weight = case.tensor([5, 3], case.dtype(FLOATS))
        idx = case.index(5, [rng.randint(0, 4), 2])
        return f"embedding({idx.tolist()})", lambda a: torch.nn.functional.embedding(a[0], a[1]), [idx, weight]
    if name == "bincount":
        idx = case.tensor([rng.randint(0, 6)], torch.int64, low=-1 if rng.random() < 0.1 else 0, high=7)
        return f"bincount({idx.tolist()})", lambda a: torch.bincount(a[0]), [idx]
    if name == "searchsorted":
        seq = torch.sort(case.tensor([rng.randint(0, 6)], case.dtype(FLOATS[:2] + INTS[:2]))).values
        v = case.tensor([rng.randint(0, 4)], seq.dtype)
        return f"searchsorted({seq.tolist()}, {v.tolist()})", lambda a: torch.searchsorted(a[0], a[1]), [seq, v]
    if name == "unique":
        return f"unique({x.dtype} {tuple(x.shape)})", lambda a: torch.unique(a[0], return_counts=True), [x]
    raise AssertionError(name)


FAMILIES = [("unary", UNARY), ("binary", BINARY), ("reduce", REDUCE_DIM), ("shape", SHAPE), ("index", INDEX)]


def to_device(args, device):
    return [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]


def run(fn, args):
    """('ok', results as CPU tensors) or ('error', exception type name)."""
    try:
        result = fn(args)
        flat = list(result) if isinstance(result, (tuple, list)) else [result]
        return "ok", [r.cpu() if isinstance(r, torch.Tensor) else r for r in flat]
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return "error", type(e).__name__


def same_values(expected, got):
    if len(expected) != len(got):
        return f"{len(got)} results, the CPU {len(expected)}"
    for e, g in zip(expected, got):
        if not isinstance(e, torch.Tensor):
            if e != g:
                return f"{g!r} != {e!r}"
            continue
        if not isinstance(g, torch.Tensor) or g.dtype != e.dtype or g.shape != e.shape:
            return f"{getattr(g, 'dtype', type(g))} {tuple(getattr(g, 'shape', ()))} != {e.dtype} {tuple(e.shape)}"
        if e.dtype.is_floating_point:
            tol = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-4}.get(e.dtype, 1e-9)
            try:
                torch.testing.assert_close(g, e, rtol=tol, atol=tol, equal_nan=True)
            except AssertionError as err:
                return str(err).splitlines()[-1][:200] if str(err) else "values differ"
        elif not torch.equal(g, e):
            return "values differ"
    return None


def fuzz(seed: int, seconds: float, max_cases: int, trace: bool = False) -> dict:
    rng = random.Random(seed)
    deadline = time.time() + seconds
    report = {"seed": seed, "cases": 0, "ops": set(), "value_checks": 0, "error_checks": 0, "mismatches": [],
              "known_divergences": []}
    import drawbridge

    drawbridge.set_fallback_mode("silent")
    while time.time() < deadline and report["cases"] < max_cases:
        family, names = rng.choice(FAMILIES)
        name = rng.choice(names)
        case = Case(random.Random(rng.randrange(1 << 30)))
        try:
            desc, fn, args = make_call(case, family, name)
        except Exception as e:  # noqa: BLE001 - a case that cannot be built on the CPU is skipped
            continue
        if trace:  # names the case before it runs, so that a crash can be traced to it
            print(f"case {report['cases']}: {desc}", file=sys.stderr, flush=True)
        # An empty operand on the wrong device is left alone: PyTorch's own checks skip some of them.
        mixed = (rng.random() < 0.05 and len(args) > 1 and isinstance(args[-1], torch.Tensor)
                 and args[-1].numel() > 1)
        expected = run(fn, args)
        ocl_args = to_device(args, "ocl")
        if mixed:  # one non-scalar operand left on the CPU: CUDA and ocl refuse it
            ocl_args[-1] = args[-1]
            expected = ("error", "RuntimeError") if isinstance(args[-1], torch.Tensor) and args[-1].dim() else expected
            desc += " [one operand on the cpu]"
        got = run(fn, ocl_args)
        report["cases"] += 1
        report["ops"].add(name)
        if expected[0] == "error" or got[0] == "error":
            report["error_checks"] += 1
            problem = None if expected == got else f"ocl {got[1] if got[0] == 'error' else 'ok'}, cpu {expected[1] if expected[0] == 'error' else 'ok'}"
        else:
            report["value_checks"] += 1
            problem = same_values(expected[1], got[1])
        try:
            torch.ocl.synchronize()  # a device-side assert of this case must surface in this case
        except Exception as e:  # noqa: BLE001
            problem = problem or f"late {type(e).__name__} at the next synchronization"
        if problem:
            why = known_divergence(desc, problem)
            entry = {"op": name, "case": desc, "problem": problem}
            report["known_divergences" if why else "mismatches"].append(dict(entry, why=why) if why else entry)
    report["ops"] = sorted(report["ops"])
    return report


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--max-cases", type=int, default=1_000_000)
    parser.add_argument("--out")
    parser.add_argument("--trace", action="store_true", help="print each case to stderr before running it")
    args = parser.parse_args()
    report = fuzz(args.seed, args.seconds, args.max_cases, args.trace)
    text = json.dumps(report, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(f"{report['cases']} cases over {len(report['ops'])} ops: {report['value_checks']} value checks, "
          f"{report['error_checks']} exception checks, {len(report['mismatches'])} mismatches, "
          f"{len(report['known_divergences'])} known divergences")
    for m in report["mismatches"][:50]:
        print(f"  {m['case']}: {m['problem']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
