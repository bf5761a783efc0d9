"""The ATen operators and what ocl runs for each, read from PyTorch's dispatcher: a native ocl
kernel, a composite (PyTorch decomposes it into other operators, which then run as they do), or
the CPU fallback (computed on the CPU, tensors copied there and back)."""

from __future__ import annotations

import collections
import json

import torch

NAME = "ops"
HELP = "list the ATen operators with a native ocl kernel and those that fall back to the CPU"

# How the dispatcher's table names the kernel the PrivateUse1 (ocl) key resolves to.
KINDS = {"[kernel]": "native", "[math kernel]": "composite", "[default backend kernel]": "composite",
         "[backend fallback]": "cpu fallback"}


def add_arguments(parser) -> None:
    parser.add_argument("--missing", action="store_true", help="list only the operators that fall back to the CPU")
    parser.add_argument("--json", action="store_true", help="print a JSON object: operator -> kind")


def classify() -> dict[str, str]:
    """Every aten operator overload -> 'native', 'composite' or 'cpu fallback'."""
    kinds = {}
    for name in sorted(torch._C._dispatch_get_all_op_names()):
        if not name.startswith("aten::"):
            continue
        for line in torch._C._dispatch_dump_table(name).splitlines():
            if line.startswith("PrivateUse1:"):
                kinds[name[len("aten::"):]] = next((k for tag, k in KINDS.items() if line.endswith(tag)), "other")
                break
    return kinds


def run(args) -> int:
    kinds = classify()
    if args.missing:
        kinds = {op: kind for op, kind in kinds.items() if kind == "cpu fallback"}
    if args.json:
        print(json.dumps(kinds, indent=2))
        return 0
    for op, kind in kinds.items():
        print(f"{op:60s} {kind}")
    counts = collections.Counter(kinds.values())
    print(", ".join(f"{n} {kind}" for kind, n in counts.most_common()))
    return 0
