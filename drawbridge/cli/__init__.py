"""The command-line tools: ``python -m drawbridge doctor`` (is the device seen and healthy),
``ops`` (which ATen operators run natively on ocl), ``check SCRIPT`` (what a script did on the
device: the migration report) and ``warmup`` (build the OpenCL programs ahead of their first use).
Each takes ``--help``."""

from __future__ import annotations

import argparse


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def main(argv: list[str] | None = None) -> int:
    from . import check, doctor, ops, warmup

    parser = argparse.ArgumentParser(prog="python -m drawbridge", description="Drawbridge's command-line tools.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (doctor, ops, check, warmup):
        sub = commands.add_parser(module.NAME, help=module.HELP, description=module.__doc__)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    args = parser.parse_args(argv)
    return args.run(args)
