"""A clean interpreter exit after a backward pass on ocl.

Autograd runs an ocl backward on a device worker thread. Since torch 2.x every backward stashes
a Python object (the contextvars Context) in the graph task's thread-local state, and the worker
drops its last reference to the finished graph task after the caller has already returned. If
the interpreter is finalizing by then, the worker's attempt to take the GIL for that decref ends
the thread with pthread_exit inside a noexcept frame, and the process aborts ("terminate called
without an active exception"). CUDA has the same race; it shows here because PoCL keeps the
worker busy longer.

At exit, before finalization, we run one tiny backward on ocl straight through the engine,
without stashing anything. The worker handles graph tasks in order, so once it returns the
earlier task has been released; this one holds no Python object, so releasing it needs no GIL.
"""

import atexit

import torch

from . import _C


def _drain_autograd_worker() -> None:
    if not _C._is_initialized():
        return
    try:
        x = torch.zeros((), device="ocl", requires_grad=True)
        y = x * 1
        torch.autograd.Variable._execution_engine.run_backward(
            (y,), (torch.ones((), device="ocl"),), False, False, (x,), True, False
        )
    except Exception:  # a broken device at exit must not turn into a second error
        pass


def install() -> None:
    atexit.register(_drain_autograd_worker)
