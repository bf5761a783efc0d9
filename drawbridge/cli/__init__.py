"""The command-line tools: ``python -m drawbridge doctor`` (is the device seen and healthy) and
``python -m drawbridge ops`` (which ATen operators run natively on ocl). Each takes ``--help``."""

from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> int:
    from . import doctor, ops

    parser = argparse.ArgumentParser(prog="python -m drawbridge", description="Drawbridge's command-line tools.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (doctor, ops):
        sub = commands.add_parser(module.NAME, help=module.HELP, description=module.__doc__)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    args = parser.parse_args(argv)
    return args.run(args)
