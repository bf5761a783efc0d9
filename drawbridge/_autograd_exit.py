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
earlier task has been released. The tensors of this last task are kept alive for good (three
0-d tensors): were their Python objects freed first, the worker's release of the task would
have to take the GIL to free them, which is the same race again. The device is then synchronized,
so that no kernel is compiled or run while the process tears down.
"""

import atexit
import ctypes

import torch

from . import _C


def _drain_autograd_worker() -> None:
    if not _C._is_initialized():
        return
    try:
        x = torch.zeros((), device="ocl", requires_grad=True)
        y = x * 1
        seed = torch.ones((), device="ocl")
        for t in (x, y, seed):
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(t))
        # Accumulating into x.grad returns nothing: a returned gradient would be one more Python
        # object whose release the worker's copy outlives.
        torch.autograd.Variable._execution_engine.run_backward((y,), (seed,), False, False, (), True, True)
        # Its kernels done before finalization: PoCL compiles a kernel on its own thread at first
        # launch, and LLVM crashed there while the process tore down around it.
        torch.ocl.synchronize()
    except Exception:  # a broken device at exit must not turn into a second error
        pass


def install() -> None:
    atexit.register(_drain_autograd_worker)
