"""What Dynamo and Inductor ask of a device: the DeviceInterface and the wrapper's device ops."""

from __future__ import annotations

from typing import Any

import torch
from torch._dynamo.device_interface import DeviceInterface
from torch._inductor.codegen.common import DeviceOpOverrides


def _index(device) -> int:
    if device is None:
        return torch.ocl.current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    return torch.ocl.current_device() if device.index is None else device.index


class OclInterface(DeviceInterface):
    device = torch.ocl.device  # type: ignore[assignment]
    Event = torch.ocl.Event  # type: ignore[assignment]
    Stream = torch.ocl.Stream  # type: ignore[assignment]

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            torch.ocl.set_device(device)

        @staticmethod
        def current_device() -> int:
            return torch.ocl.current_device()

        @staticmethod
        def get_device_properties(device=None) -> Any:
            return torch.ocl.get_device_properties(_index(device))

    current_device = staticmethod(torch.ocl.current_device)
    set_device = staticmethod(torch.ocl.set_device)
    device_count = staticmethod(torch.ocl.device_count)
    is_available = staticmethod(torch.ocl.is_available)
    stream = staticmethod(torch.ocl.stream)
    current_stream = staticmethod(torch.ocl.current_stream)
    set_stream = staticmethod(torch.ocl.set_stream)
    synchronize = staticmethod(torch.ocl.synchronize)

    @staticmethod
    def exchange_device(device: int) -> int:
        previous = torch.ocl.current_device()
        if device != previous:
            torch.ocl.set_device(device)
        return previous

    maybe_exchange_device = exchange_device

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return torch.ocl.current_stream(device_idx).stream_id

    @classmethod
    def get_device_properties(cls, device=None) -> Any:
        return torch.ocl.get_device_properties(_index(device))

    @staticmethod
    def get_compute_capability(device=None) -> str:
        return ""

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @classmethod
    def is_dtype_supported(cls, dtype: torch.dtype, including_emulation: bool = False) -> bool:
        if dtype in (torch.float64, torch.complex128):
            return bool(torch.ocl.get_device_properties().supports_fp64)
        return True

    @staticmethod
    def memory_allocated(device=None) -> int:
        return torch.ocl.memory_allocated(device)

    @staticmethod
    def is_triton_capable(device=None) -> bool:
        return False


class OclDeviceOpOverrides(DeviceOpOverrides):
    def device_guard(self, device_idx: int) -> str:
        return f"torch.ocl.device({device_idx})"

    def set_device(self, device_idx: int) -> str:
        return f"torch.ocl.set_device({device_idx})"

    def synchronize(self) -> str:
        return "torch.ocl.synchronize()"

    def import_get_raw_stream_as(self, name: str) -> str:
        return f"from drawbridge.compiler.device import get_raw_stream as {name}"


def get_raw_stream(device_idx: int) -> int:
    return OclInterface.get_raw_stream(device_idx)
