"""Drawbridge: a native PyTorch backend for any OpenCL device.

``import torch`` loads this package through the ``torch.backends`` entry point; after that,
``torch.ones(3, device="ocl")`` works and ``torch.ocl`` has what ``torch.cuda`` users reach for.
"""


def _autoload() -> None:
    """Entry point for torch's backend autoloading; importing this package does the work.

    Defined before ``import torch``: when a program imports this package first, torch's own
    import autoloads it while it is still half-initialized and looks this up."""


import torch  # noqa: E402

torch.utils.rename_privateuse1_backend("ocl")

try:
    from . import _C  # noqa: E402  (registers allocator, guard, hooks, kernels and fallback)
except ImportError as e:
    import os as _os

    raise ImportError(
        f"drawbridge: the compiled extension (_C) is not in {_os.path.dirname(__file__)}; in a source checkout, "
        "run `make install` there (it links the built _C into the folder), or start Python elsewhere "
        "(TORCH_DEVICE_BACKEND_AUTOLOAD=0 stops `import torch` from loading drawbridge)") from e
from . import ocl as _ocl  # noqa: E402
from . import _module_ties  # noqa: E402
from . import _autograd_exit  # noqa: E402
from .custom_kernel import get_include, kernel  # noqa: E402,F401
from .compare import compare  # noqa: E402,F401
from . import distributed as _distributed  # noqa: E402

torch._register_device_module("ocl", _ocl)
torch.utils.generate_methods_for_privateuse1_backend(
    for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
)

_module_ties.install()
_autograd_exit.install()
_distributed.register()

__version__ = "0.1.0"


def fallback_report() -> dict:
    """How often each operator ran on the CPU because ocl has no native kernel for it yet."""
    return dict(sorted(_C._fallback_counts().items()))


def reset_fallback_report() -> None:
    _C._reset_fallback_counts()


def set_fallback_mode(mode: str) -> None:
    """'warn' (one warning per operator), 'error' (NotImplementedError) or 'silent'."""
    _C._set_fallback_mode(mode)


def get_fallback_mode() -> str:
    return _C._get_fallback_mode()

