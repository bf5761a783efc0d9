"""``torch.ocl``: the device module of the ocl backend, shaped like ``torch.cuda``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional, Union

import torch

from . import _C

_device_t = Union[torch.device, str, int, None]


def _index(device: _device_t = None, optional: bool = True) -> int:
    """The ocl device index that `device` names; None means the current device."""
    if device is None:
        return _C._current_device()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "ocl":
            raise ValueError(f"expected an ocl device, got {device}")
        return _C._current_device() if device.index is None else device.index
    if isinstance(device, int):
        return device
    raise TypeError(f"cannot interpret {device!r} as an ocl device")


# ---- devices -------------------------------------------------------------------------------

def is_available() -> bool:
    return _C._device_count() > 0


def device_count() -> int:
    return _C._device_count()


def is_initialized() -> bool:
    return _C._is_initialized()


def init() -> None:
    _C._device_count()


def current_device() -> int:
    return _C._current_device()


def set_device(device: _device_t) -> None:
    _C._set_device(_index(device))


class device:
    """Context manager that makes `device` the current ocl device."""

    def __init__(self, device: _device_t):
        self.idx = -1 if device is None else _index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev_idx = _C._current_device()
            if self.idx != self.prev_idx:
                _C._set_device(self.idx)

    def __exit__(self, *exc):
        if self.idx >= 0 and self.idx != self.prev_idx:
            _C._set_device(self.prev_idx)
        return False


class device_of(device):
    """Makes the device of tensor `obj` current (no-op for CPU tensors)."""

    def __init__(self, obj: torch.Tensor):
        super().__init__(obj.get_device() if obj.device.type == "ocl" else None)


def synchronize(device: _device_t = None) -> None:
    _C._synchronize(_index(device))


@dataclass(frozen=True)
class _DeviceProperties:
    name: str
    vendor: str
    driver_version: str
    platform_name: str
    opencl_version: str
    type: str
    device_class: str  # "cpu" or "gpu": the kernel paths taken (DRAWBRIDGE_DEVICE_CLASS)
    total_memory: int
    max_alloc_size: int
    local_memory: int
    multi_processor_count: int
    max_work_group_size: int
    base_address_align: int  # bytes; where a sub-buffer may start (CL_DEVICE_MEM_BASE_ADDR_ALIGN)
    supports_fp16: bool
    supports_fp64: bool


def get_device_properties(device: _device_t = None) -> _DeviceProperties:
    return _DeviceProperties(**_C._device_properties(_index(device)))


def get_device_name(device: _device_t = None) -> str:
    return get_device_properties(device).name


def get_device_capability(device: _device_t = None) -> tuple[int, int]:
    # OpenCL has no compute capability; report the OpenCL version ("OpenCL 3.0 ..." -> (3, 0)).
    version = get_device_properties(device).opencl_version.split()
    major, minor = (version[1].split(".") + ["0"])[:2] if len(version) > 1 else ("0", "0")
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


# ---- streams and events ------------------------------------------------------------------

class Stream(torch.Stream):
    """An in-order OpenCL command queue on an ocl device."""

    def __new__(cls, device: _device_t = None, priority: int = 0, **kwargs: Any):
        if kwargs:  # rebuilding from (stream_id, device_index, device_type)
            return super().__new__(cls, **kwargs)
        return super().__new__(cls, device=torch.device("ocl", _index(device)), priority=priority)

    def wait_stream(self, stream: torch.Stream) -> None:
        self.wait_event(stream.record_event())


class Event(torch.Event):
    """A marker in an ocl stream; every event can time (OpenCL profiling is always on)."""

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        return super().__new__(
            cls, device="ocl", enable_timing=enable_timing, blocking=blocking, interprocess=interprocess
        )

    def elapsed_time(self, end_event: torch.Event) -> float:
        # torch.Event.elapsed_time rejects subclass instances as its argument, so time the two
        # markers directly; event_id is the recorded cl_event.
        if not (self.event_id and end_event.event_id):
            raise ValueError("both events must be recorded before calling elapsed_time()")
        return _C._elapsed_ms(self.event_id, end_event.event_id)


def _wrap(stream: torch.Stream) -> Stream:
    return Stream(stream_id=stream.stream_id, device_index=stream.device_index, device_type=stream.device_type)


def current_stream(device: _device_t = None) -> Stream:
    return _wrap(torch.accelerator.current_stream(_index(device)))


def default_stream(device: _device_t = None) -> Stream:
    return Stream(stream_id=0, device_index=_index(device), device_type=current_stream(device).device_type)


def set_stream(stream: torch.Stream) -> None:
    if stream is not None:
        torch.accelerator.set_stream(stream)


class StreamContext:
    """Makes `stream` current on its device (and its device current) inside the block."""

    def __init__(self, stream: Optional[torch.Stream]):
        self.stream = stream
        self._saved: list = []

    def __enter__(self):
        if self.stream is None:
            return None
        prev_device = _C._current_device()
        idx = self.stream.device_index
        self._saved = [prev_device, current_stream(idx)]
        if idx != prev_device:
            self._saved.append(current_stream(prev_device))
            _C._set_device(idx)
        torch.accelerator.set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is None:
            return False
        prev_device, prev_stream, *rest = self._saved
        torch.accelerator.set_stream(prev_stream)
        if rest:
            torch.accelerator.set_stream(rest[0])
        _C._set_device(prev_device)
        return False


def stream(stream: Optional[torch.Stream]) -> StreamContext:
    return StreamContext(stream)


# ---- memory --------------------------------------------------------------------------------

def memory_stats(device: _device_t = None) -> dict[str, Any]:
    return torch.accelerator.memory_stats(_index(device))


def memory_summary(device: _device_t = None, abbreviated: bool = False) -> str:
    """The caching allocator's statistics as a table, as ``torch.cuda.memory_summary`` prints them."""
    from .memory_summary import format_summary

    index = _index(device)
    return format_summary(memory_stats(index), index, abbreviated)


def memory_allocated(device: _device_t = None) -> int:
    return torch.accelerator.memory_allocated(_index(device))


def max_memory_allocated(device: _device_t = None) -> int:
    return torch.accelerator.max_memory_allocated(_index(device))


def memory_reserved(device: _device_t = None) -> int:
    return torch.accelerator.memory_reserved(_index(device))


def max_memory_reserved(device: _device_t = None) -> int:
    return torch.accelerator.max_memory_reserved(_index(device))


def reset_peak_memory_stats(device: _device_t = None) -> None:
    torch.accelerator.reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device: _device_t = None) -> None:
    torch.accelerator.reset_accumulated_memory_stats(_index(device))


def mem_get_info(device: _device_t = None) -> tuple[int, int]:
    return torch.accelerator.get_memory_info(_index(device))


def empty_cache() -> None:
    """Returns cached device blocks and unused pinned host blocks to the driver."""
    if is_available():
        torch.accelerator.empty_cache()
        _C._empty_host_cache()


# ---- random numbers ------------------------------------------------------------------------

_in_bad_fork = False


def _after_fork_in_child() -> None:
    global _in_bad_fork
    # OpenCL objects do not survive fork(); a child of an initialized parent cannot use ocl.
    _in_bad_fork = _C._is_initialized()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _is_in_bad_fork() -> bool:
    return _in_bad_fork


# The generator's state lives in C++: torch.compile runs these functions rather than tracing
# them, as it does torch.cuda's.
_not_traced = torch._disable_dynamo


@_not_traced
def manual_seed(seed: int) -> None:
    if is_available():
        _C._manual_seed(current_device(), int(seed) & 0xFFFF_FFFF_FFFF_FFFF)


@_not_traced
def manual_seed_all(seed: int) -> None:
    for i in range(device_count()):
        _C._manual_seed(i, int(seed) & 0xFFFF_FFFF_FFFF_FFFF)


@_not_traced
def seed() -> None:
    if is_available():
        _C._seed(current_device())


@_not_traced
def seed_all() -> None:
    if is_available():
        s = _C._seed(0)
        for i in range(1, device_count()):
            _C._manual_seed(i, s)


@_not_traced
def initial_seed() -> int:
    return _C._initial_seed(current_device())


@_not_traced
def get_rng_state(device: _device_t = "ocl") -> torch.Tensor:
    return torch.frombuffer(bytearray(_C._get_rng_state(_index(device))), dtype=torch.uint8)


@_not_traced
def set_rng_state(new_state: torch.Tensor, device: _device_t = "ocl") -> None:
    data = new_state.detach().to("cpu", torch.uint8).contiguous().numpy().tobytes()
    _C._set_rng_state(_index(device), data)


@_not_traced
def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(device_count())]


@_not_traced
def set_rng_state_all(new_states) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def __getattr__(name: str):
    # Inductor looks up its code generators for the privateuse1 device here, on first compile.
    if name in ("Scheduling", "PythonWrapperCodegen"):
        from .compiler import inductor_class

        return inductor_class(name)
    raise AttributeError(f"module 'torch.ocl' has no attribute '{name}'")
