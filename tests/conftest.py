import os
import subprocess
import sys
import tempfile
import textwrap

import pytest
import torch

import drawbridge  # noqa: F401  (autoloaded by `import torch`; imported here to fail loudly if not)


def run_python(code: str, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter (outside the source tree, so the installed package loads)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=tempfile.gettempdir(),
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def run_py():
    return run_python


@pytest.fixture(autouse=True)
def _quiet_fallback():
    # Tests that check the fallback's warnings run in their own processes.
    previous = drawbridge.get_fallback_mode()
    drawbridge.set_fallback_mode("silent")
    yield
    drawbridge.set_fallback_mode(previous)


@pytest.fixture
def native_only():
    """The fallback raises: what the test runs must be the device's own kernels."""
    previous = drawbridge.get_fallback_mode()
    drawbridge.set_fallback_mode("error")
    yield
    drawbridge.set_fallback_mode(previous)


def gemm_kernel_name() -> str:
    """The device-time entry of one GEMM: the packed kernels' product on CPU-class devices, CLBlast's
    call (however many kernels it launches) on GPU-class ones."""
    return "packed_gemm" if torch.ocl.get_device_properties().device_class == "cpu" else "CLBlast GEMM"


def supports_fp64() -> bool:
    return torch.ocl.get_device_properties().supports_fp64


ALL_DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
]


def device_dtypes():
    return [d for d in ALL_DTYPES if d is not torch.float64 or supports_fp64()]
