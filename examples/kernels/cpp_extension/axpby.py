"""Builds the C++ extension in axpby.cpp with torch.utils.cpp_extension and runs its operator.

    python examples/kernels/cpp_extension/axpby.py

The extension finds drawbridge/extension.h through drawbridge.get_include() and links only
OpenCL: Drawbridge's functions are looked up at run time.
"""

import pathlib

import torch
import torch.utils.cpp_extension

import drawbridge

HERE = pathlib.Path(__file__).parent


def build(verbose: bool = False) -> None:
    """Compiles the extension (once; torch caches the build) and loads it: registers
    torch.ops.drawbridge_cpp_example.axpby."""
    torch.utils.cpp_extension.load(
        name="drawbridge_axpby_example",
        sources=[str(HERE / "axpby.cpp")],
        extra_include_paths=[drawbridge.get_include()],
        extra_cflags=["-O2"],
        extra_ldflags=["-lOpenCL"],
        is_python_module=False,
        verbose=verbose,
    )


if __name__ == "__main__":
    build(verbose=True)
    x, y = torch.randn(1000), torch.randn(1000)
    out = torch.ops.drawbridge_cpp_example.axpby(x.to("ocl"), y.to("ocl"), 2.0, -0.5)
    print("axpby max |diff|:", (out.cpu() - (2.0 * x - 0.5 * y)).abs().max().item())
