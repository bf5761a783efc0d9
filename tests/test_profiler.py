"""torch.profiler with ProfilerActivity.PrivateUse1: ocl device time per op and the kernels on a
device timeline in the Chrome trace (csrc/core/kineto_profiler.cpp)."""
import json

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from drawbridge import _C
from conftest import gemm_kernel_name

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def _device_events(trace_path):
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    ops = {e["args"]["External id"]: e for e in events if e.get("cat") == "cpu_op"}
    device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy")]
    return ops, device


def _train_step(model, x):
    loss = model(x).square().mean()
    loss.backward()
    return loss.item()


@pytest.fixture
def mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.ReLU(), torch.nn.Linear(96, 8)).to("ocl")
    x = torch.randn(32, 64, device="ocl")
    _train_step(model, x)  # programs built before the trace
    return model, x


def test_ops_have_device_time(mlp):
    model, x = mlp
    with profile(activities=ACTIVITIES) as prof:
        _train_step(model, x)
    averages = {e.key: e for e in prof.key_averages()}
    # The GEMMs of forward (addmm) and backward (mm), the ReLU and its backward all ran on the device.
    for op in ("aten::addmm", "aten::mm", "aten::relu", "aten::threshold_backward"):
        assert averages[op].self_device_time_total > 0, op
    assert averages[gemm_kernel_name()].count == 2 + 3  # two forward GEMMs, three backward (no dx for layer 1)
    table = prof.key_averages().table(sort_by="self_privateuse1_time_total", row_limit=10)
    assert "Self OCL" in table and gemm_kernel_name() in table
    # An op's self device time is the time of the kernels it launched itself: together they are the
    # whole device time of the trace.
    kernels = sum(e.self_device_time_total for e in prof.key_averages() if not e.key.startswith("aten::"))
    ops = sum(e.self_device_time_total for e in prof.key_averages() if e.key.startswith("aten::"))
    assert ops == pytest.approx(kernels, rel=1e-6)


def test_chrome_trace_puts_kernels_on_device_streams(mlp, tmp_path):
    model, x = mlp
    side = torch.ocl.Stream()
    with profile(activities=ACTIVITIES) as prof:
        _train_step(model, x)
        with torch.ocl.stream(side):
            y = x * 2
        side.synchronize()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    ops, device = _device_events(path)
    assert device
    assert {e["pid"] for e in device} == {0}  # the device's row, not the host process
    assert {e["tid"] for e in device} == {0, side.stream_id}
    by_name = {}
    for e in device:
        op = ops[e["args"]["External id"]]  # every command hangs under the op that enqueued it
        by_name.setdefault(e["name"], set()).add(op["name"])
        # A command starts after its op began (the host clock is mapped onto the device's).
        assert e["ts"] >= op["ts"] - 5, (e["name"], e["ts"] - op["ts"])
    assert by_name[gemm_kernel_name()] == {"aten::addmm", "aten::mm"}
    assert by_name["Memcpy DtoH"] == {"aten::_local_scalar_dense"}  # loss.item()
    assert "aten::mul" in by_name["b_mul"]
    # Commands of one in-order queue do not overlap on the timeline.
    for stream in (0, side.stream_id):
        spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in device if e["tid"] == stream)
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert start >= end - 1e-3
    del y


def test_backward_kernels_link_to_the_autograd_thread(mlp, tmp_path):
    model, x = mlp
    with profile(activities=ACTIVITIES) as prof:
        _train_step(model, x)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    ops, device = _device_events(path)
    threads = {ops[e["args"]["External id"]]["tid"] for e in device}
    assert len(threads) == 2  # the Python thread (forward) and the autograd engine's device thread


def test_tracing_stops_with_the_profiler(mlp):
    model, x = mlp
    for _ in range(2):  # a second session starts fresh
        with profile(activities=ACTIVITIES) as prof:
            _train_step(model, x)
        assert sum(e.self_device_time_total for e in prof.key_averages()) > 0
    assert not _C._kernel_timing()  # launches ask for no event once the trace is over
    # A CPU-only profile records no device activity.
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _train_step(model, x)
    assert not _C._kernel_timing()
    assert sum(e.self_device_time_total for e in prof.key_averages()) == 0


def test_profile_memory_shows_device_allocations(tmp_path):
    x = torch.randn(256, 256, device="ocl")
    with profile(activities=ACTIVITIES, profile_memory=True) as prof:
        y = x @ x  # 256 KiB
        z = y.relu()
        del y
    averages = {e.key: e for e in prof.key_averages()}
    assert averages["aten::empty"].device_memory_usage >= 256 * 256 * 4  # the products' buffers
    # Every byte allocated inside the profile and freed there nets to zero; z is still held.
    total = sum(e.self_device_memory_usage for e in prof.key_averages())
    assert total == z.untyped_storage().nbytes()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    with open(path) as f:
        memory = [e["args"] for e in json.load(f)["traceEvents"] if e.get("name") == "[memory]"]
    ocl = [m for m in memory if m["Device Type"] == int(torch._C._autograd.DeviceType.PrivateUse1)]
    assert ocl and ocl[0]["Bytes"] == 256 * 256 * 4 and ocl[0]["Total Allocated"] >= 2 * 256 * 256 * 4
