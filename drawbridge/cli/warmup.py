"""Builds the eager OpenCL programs ahead of their first use, so that a container image or a CI
cache can be prepared once and later runs load them instead of compiling.

The programs come from a list of lines "device class<TAB>program file<TAB>options". The list
shipped with drawbridge (drawbridge/warmup_programs.txt) holds every program the test suite
builds, which runs every operator of PyTorch's OpInfo database in every dtype we support on both
device classes; `make warmup-list` regenerates it. DRAWBRIDGE_RECORD_PROGRAMS=FILE records the
programs of your own workload into such a list (--list FILE replays it).

Where Drawbridge keeps program binaries (DRAWBRIDGE_CACHE_DIR), the builds land there; on PoCL
they land in PoCL's own kernel cache, which also compiles each kernel's work-group function on its
first launch (that part is not built ahead)."""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import sys
import time

NAME = "warmup"
HELP = "build the eager OpenCL programs ahead of their first use (for images and CI caches)"

SHIPPED_LIST = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "warmup_programs.txt")


def add_arguments(parser) -> None:
    parser.add_argument("--device", type=int, default=0, help="the ocl device to build for (default 0)")
    parser.add_argument("--jobs", type=int, default=1, help="build in this many processes (default 1)")
    parser.add_argument("--list", default=SHIPPED_LIST, help="the programs to build (default: the shipped list)")
    parser.add_argument("--limit", type=int, default=None, help="build at most this many (the first of the list)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def read_list(path: str, device_class: str) -> list[tuple[str, str]]:
    """The (file, options) pairs of `path` for devices of `device_class`, without repeats."""
    programs = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 3:
                raise ValueError(f"{path}:{number}: expected 'class<TAB>file<TAB>options', got {line!r}")
            if fields[0] == device_class:
                programs.append((fields[1], fields[2]))
    return list(dict.fromkeys(programs))


def _build_share(device: int, programs: list[tuple[str, str]], done) -> None:
    """A worker process: builds its programs, reporting None or the error for each."""
    import torch  # noqa: F401  (loads drawbridge)
    from drawbridge import _C

    for file, options in programs:
        try:
            _C._build_library_program(device, file, options)
            done.put(None)
        except Exception as e:  # a program this device cannot build: reported, the rest go on
            done.put(f"{file} {options}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
    # Every result is reported: end without the interpreter's teardown. Its exit hooks would run
    # a backward on the device (drawbridge/_autograd_exit.py), starting autograd's device thread
    # and building a program in a process that used neither.
    done.close()
    done.join_thread()
    os._exit(0)


class _Progress:
    """One line on stderr, rewritten in place, when stderr is a terminal."""

    def __init__(self, total: int):
        self.total, self.shown = total, sys.stderr.isatty()

    def update(self, count: int, failed: int) -> None:
        if not self.shown:
            return
        width = 30
        filled = width * count // max(self.total, 1)
        note = f", {failed} failed" if failed else ""
        sys.stderr.write(f"\r[drawbridge] warmup [{'#' * filled}{'.' * (width - filled)}] {count}/{self.total}{note}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def run(args) -> int:
    import torch

    from drawbridge import _C

    if args.device >= torch.ocl.device_count():
        print(f"warmup: there is no ocl:{args.device} ({torch.ocl.device_count()} ocl devices)", file=sys.stderr)
        return 2
    props = torch.ocl.get_device_properties(args.device)
    programs = read_list(args.list, props.device_class)
    if args.limit is not None:
        programs = programs[: args.limit]
    jobs = max(1, min(args.jobs, len(programs)))
    start = time.time()
    # Workers are spawned, not forked: this process has an OpenCL context already.
    context = multiprocessing.get_context("spawn")
    done = context.Queue()
    workers = [context.Process(target=_build_share, args=(args.device, programs[j::jobs], done)) for j in range(jobs)]
    for w in workers:
        w.start()
    progress, failures, count, built = _Progress(len(programs)), [], 0, 0
    while count < len(programs):
        try:
            result = done.get(timeout=1)
        except queue.Empty:
            if all(not w.is_alive() for w in workers) and done.empty():
                break  # a worker died: its programs are counted below as not built
            continue
        count += 1
        if result is None:
            built += 1
        else:
            failures.append(result)
        progress.update(count, len(failures))
    progress.close()
    if count < len(programs):
        failures.append(f"{len(programs) - count} programs not built: a build process ended early")
    for w in workers:
        w.join()
    failures += [f"build process {j} ended with exit status {w.exitcode}" for j, w in enumerate(workers) if w.exitcode]
    summary = {
        "device": f"ocl:{args.device}",
        "device_name": props.name,
        "device_class": props.device_class,
        "list": args.list,
        "programs": len(programs),
        "built": built,
        "failed": failures,
        "jobs": jobs,
        "seconds": round(time.time() - start, 3),
        "cache_dir": _C._program_cache_dir() or None,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"built {built} of {len(programs)} programs for ocl:{args.device} "
              f"({props.name}, {props.device_class} class) in {summary['seconds']:.1f} s with {jobs} process(es)")
        for f in failures:
            print(f"  failed: {f}")
    return 1 if failures else 0
