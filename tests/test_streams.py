"""Streams and events: torch.ocl.Stream / Event are torch.Stream / torch.Event."""
import torch


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


def test_event_orders_two_streams():
    producer, consumer = torch.ocl.Stream(), torch.ocl.Stream()
    n = 1 << 22
    with torch.ocl.stream(producer):
        x = torch.empty(n, device="ocl")
        x.fill_(7.0)
        ready = producer.record_event()
    with torch.ocl.stream(consumer):
        consumer.wait_event(ready)
        y = x.clone()
    consumer.synchronize()
    assert torch.equal(y.cpu(), torch.full((n,), 7.0))
    assert ready.query()


def test_event_record_wait_query_synchronize_elapsed():
    start = torch.ocl.Event(enable_timing=True)
    end = torch.ocl.Event(enable_timing=True)
    start.record()
    x = torch.ones(1 << 22, device="ocl")
    x.fill_(2)
    end.record()
    end.synchronize()
    assert end.query()
    ms = start.elapsed_time(end)
    assert ms >= 0.0
    torch.ocl.current_stream().wait_event(end)
    torch.ocl.current_stream().wait_stream(torch.ocl.Stream())
    torch.ocl.synchronize()


def test_generic_torch_stream_api():
    s = torch.Stream(device="ocl")
    torch.accelerator.set_stream(s)
    assert torch.accelerator.current_stream() == s
    torch.accelerator.set_stream(torch.ocl.default_stream())
    torch.accelerator.synchronize()
