"""Streams and events: torch.ocl.Stream / Event are torch.Stream / torch.Event."""
import time

import pytest
import torch

import drawbridge


@pytest.fixture
def native_only():
    # A CPU fallback synchronizes: it would hide a missing wait between streams.
    drawbridge.set_fallback_mode("error")
    yield
    drawbridge.set_fallback_mode("silent")


def test_classes():
    s = torch.ocl.Stream()
    e = torch.ocl.Event()
    assert isinstance(s, torch.Stream) and isinstance(e, torch.Event)
    assert s.device.type == "ocl"
    assert isinstance(torch.ocl.current_stream(), torch.ocl.Stream)
    assert torch.ocl.current_stream().stream_id == torch.ocl.default_stream().stream_id == 0


def test_stream_context_sets_current_stream():
    s = torch.ocl.Stream()
    before = torch.ocl.current_stream()
    with torch.ocl.stream(s):
        assert torch.ocl.current_stream() == s
        x = torch.full((1000,), 3.0, device="ocl")
    assert torch.ocl.current_stream() == before
    s.synchronize()
    assert s.query()
    assert torch.equal(x.cpu(), torch.full((1000,), 3.0))


def test_event_orders_two_streams(native_only):
    producer, consumer = torch.ocl.Stream(), torch.ocl.Stream()
    n = 1 << 20  # partial sums below 2**24: exact in float32 in any order
    a = torch.randn(1024, 1024, device="ocl")
    torch.ocl.synchronize()
    with torch.ocl.stream(producer):
        for _ in range(3):  # the producer is busy when the consumer's work is enqueued
            a = torch.tanh(a @ a)
        x = torch.empty(n, device="ocl")
        x.fill_(7.0)
        x += a.sum() * 0  # x depends on the whole chain
        ready = producer.record_event()
    with torch.ocl.stream(consumer):
        consumer.wait_event(ready)
        y = (x * 2).cumsum(0)
    consumer.synchronize()
    assert torch.equal(y.cpu(), torch.arange(1, n + 1, dtype=torch.float32) * 14)
    assert ready.query()


def test_event_record_wait_query_synchronize_elapsed():
    start = torch.ocl.Event(enable_timing=True)
    end = torch.ocl.Event(enable_timing=True)
    a = torch.randn(1024, 1024, device="ocl")
    torch.ocl.synchronize()
    began = time.perf_counter()
    start.record()
    for _ in range(3):
        a = torch.tanh(a @ a)
    end.record()
    end.synchronize()
    wall_ms = (time.perf_counter() - began) * 1e3
    assert end.query()
    ms = start.elapsed_time(end)
    # The device time between the markers is most of the host's wall time, never more.
    assert 0.2 * wall_ms <= ms <= wall_ms + 1.0, (ms, wall_ms)
    torch.ocl.current_stream().wait_event(end)
    torch.ocl.current_stream().wait_stream(torch.ocl.Stream())
    torch.ocl.synchronize()


def test_generic_torch_stream_api():
    s = torch.Stream(device="ocl")
    torch.accelerator.set_stream(s)
    assert torch.accelerator.current_stream() == s
    torch.accelerator.set_stream(torch.ocl.default_stream())
    torch.accelerator.synchronize()
