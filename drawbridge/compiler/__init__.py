"""torch.compile for ocl: Inductor, with an OpenCL C code generator for the device.

Inductor does decompositions, lowering, fusion, index simplification, symbolic sizes and
AOTAutograd; this package adds what it lacks for ocl — the printer and op overrides
(``printer.py``, ``overrides.py``), the kernel and scheduling classes (``kernel.py``,
``scheduling.py``), the wrapper (``wrapper.py``) and the run-time launcher (``launcher.py``) — and
registers them. Importing Inductor takes seconds, so nothing here is imported by
``import drawbridge``: Inductor asks ``torch.ocl`` for its scheduling when it first compiles for
ocl (``register()`` runs then), and the Dynamo backend ``"ocl"`` registers on first use."""

from __future__ import annotations

import functools
import pathlib


@functools.cache
def register() -> None:
    """Registers the ocl device with Dynamo and Inductor (idempotent)."""
    import torch
    from torch._dynamo.device_interface import register_interface_for_device
    from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides

    from .device import OclDeviceOpOverrides, OclInterface
    from .eager_ops import keep_eager_on_ocl
    from .scheduling import OpenCLScheduling
    from .wrapper import OpenCLWrapperCodegen

    register_interface_for_device("ocl", OclInterface)
    for i in range(torch.ocl.device_count()):
        register_interface_for_device(f"ocl:{i}", OclInterface)
    register_device_op_overrides("ocl", OclDeviceOpOverrides())
    register_backend_for_device("ocl", OpenCLScheduling, OpenCLWrapperCodegen,
                                device_custom_pass=_generator_version_pass())
    keep_eager_on_ocl()


def _generator_version_pass():
    """A graph pass that changes nothing: Inductor puts its uuid into the key of its FX graph cache,
    so graphs compiled by another version of this code generator are not reused."""
    from torch._inductor.custom_graph_pass import CustomGraphModulePass, get_hash_for_files

    class GeneratorVersion(CustomGraphModulePass):
        def __call__(self, gm) -> None:
            pass

        def uuid(self):
            here = pathlib.Path(__file__).parent
            return get_hash_for_files(tuple(sorted(str(p) for p in here.glob("*.py"))))

    return GeneratorVersion()


def inductor_class(name: str):
    """The classes Inductor looks up on ``torch.ocl`` (``Scheduling``, ``PythonWrapperCodegen``)."""
    register()
    if name == "Scheduling":
        from .scheduling import OpenCLScheduling

        return OpenCLScheduling
    if name == "PythonWrapperCodegen":
        from .wrapper import OpenCLWrapperCodegen

        return OpenCLWrapperCodegen
    raise AttributeError(name)


def ocl_backend(gm, example_inputs, **kwargs):
    """The Dynamo backend ``"ocl"``: Inductor with the OpenCL code generator registered."""
    register()
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, example_inputs, **kwargs)
