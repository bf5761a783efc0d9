"""The caching device allocator, pinned host memory and device addresses."""
import gc

import pytest
import torch


def test_stats_are_exact_to_the_byte():
    gc.collect()  # tensors in earlier tests' reference cycles (exception tracebacks) must not free meanwhile
    torch.ocl.synchronize()
    base = torch.ocl.memory_allocated()
    t = torch.empty(1000, dtype=torch.float32, device="ocl")
    assert torch.ocl.memory_allocated() == base + 4000
    u = torch.empty(3, dtype=torch.int8, device="ocl")
    assert torch.ocl.memory_allocated() == base + 4003
    del t, u
    assert torch.ocl.memory_allocated() == base


def test_peak_and_reset():
    torch.ocl.reset_peak_memory_stats()
    base = torch.ocl.memory_allocated()
    t = torch.empty(1 << 20, device="ocl")
    del t
    assert torch.ocl.max_memory_allocated() >= base + (4 << 20)
    torch.ocl.reset_peak_memory_stats()
    assert torch.ocl.max_memory_allocated() == torch.ocl.memory_allocated()
    stats = torch.ocl.memory_stats()
    for key in ("allocated_bytes.all.current", "reserved_bytes.all.current", "segment.all.current", "num_ooms"):
        assert key in stats


def test_blocks_are_reused_and_empty_cache_frees():
    a = torch.empty(3 << 20, dtype=torch.uint8, device="ocl")
    ptr = a.data_ptr()
    reserved = torch.ocl.memory_reserved()
    del a
    b = torch.empty(3 << 20, dtype=torch.uint8, device="ocl")
    assert b.data_ptr() == ptr  # the cached block came back
    assert torch.ocl.memory_reserved() == reserved
    del b
    torch.ocl.empty_cache()
    assert torch.ocl.memory_reserved() <= reserved - (3 << 20)
    free, total = torch.ocl.mem_get_info()
    assert 0 < free <= total


def test_out_of_memory_raises_and_process_stays_usable():
    total = torch.ocl.get_device_properties().total_memory
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(2 * total, dtype=torch.uint8, device="ocl")
    with pytest.raises(torch.OutOfMemoryError, match="single allocation|largest"):
        torch.empty(torch.ocl.get_device_properties().max_alloc_size + 1, dtype=torch.uint8, device="ocl")
    assert torch.ocl.memory_stats()["num_ooms"] >= 2
    assert torch.ones(4, device="ocl").sum().item() == 4


def test_pointer_arithmetic_on_device_addresses():
    t = torch.arange(100, dtype=torch.float32, device="ocl")
    v = t[10:]
    assert v.data_ptr() == t.data_ptr() + 40
    assert v.untyped_storage().data_ptr() == t.data_ptr()
    assert v[:3].cpu().tolist() == [10, 11, 12]
    w = torch.empty(0, device="ocl").set_(t.untyped_storage(), 25, (5,), (2,))
    assert w.data_ptr() == t.data_ptr() + 100
    assert w.cpu().tolist() == [25, 27, 29, 31, 33]


def test_device_addresses_fault_on_the_host(run_py):
    r = run_py(
        """
        import ctypes, torch
        t = torch.ones(4, device="ocl")
        ctypes.string_at(t.data_ptr(), 4)
        print("read device memory from the host")
        """
    )
    assert r.returncode != 0 and "read device memory" not in r.stdout


def test_record_stream_defers_reuse_until_the_stream_passes():
    n = 1 << 18  # 1 MiB: the small pool, where nothing else of this test allocates on this stream

    def free_while_side_stream_busy(record):
        s = torch.ocl.Stream()
        x = torch.ones(n, device="ocl")
        s.wait_stream(torch.ocl.current_stream())
        with torch.ocl.stream(s):
            a = torch.randn(1536, 1536, device="ocl")
            for _ in range(4):  # keeps s busy for a good part of a second on PoCL
                a = a @ a
            y = x * 2
        if record:
            x.record_stream(s)
        ptr = x.data_ptr()
        del x
        z = torch.empty(n, device="ocl")  # on the default stream, while s still runs
        reused = z.data_ptr() == ptr
        s.synchronize()
        assert torch.equal(y.cpu(), torch.full((n,), 2.0))
        return reused

    torch.ocl.synchronize()
    torch.ocl.empty_cache()
    # Without record_stream the block is free for the default stream at once (the control that
    # shows the test can tell); with it, reuse waits until s has passed the free.
    assert free_while_side_stream_busy(record=False)
    torch.ocl.empty_cache()
    assert not free_while_side_stream_busy(record=True)


def test_resize_on_another_stream_keeps_the_old_block_until_its_copy_has_run():
    n = 1 << 18
    torch.ocl.synchronize()
    torch.ocl.empty_cache()
    s = torch.ocl.Stream()
    x = torch.ones(n, device="ocl")  # its block belongs to the default stream
    old = x.data_ptr()
    s.wait_stream(torch.ocl.current_stream())
    with torch.ocl.stream(s):
        a = torch.randn(1536, 1536, device="ocl")
        for _ in range(4):  # keeps s busy, so the copy of the old contents waits behind this work
            a = a @ a
        x.resize_(2 * n)  # the copy out of the old block is queued on s
    z = torch.zeros(n, device="ocl")  # the default stream, idle: a reused block is zeroed at once
    s.synchronize()
    assert torch.equal(x[:n].cpu(), torch.ones(n)), "the old block was reused before its copy had run"
    assert z.data_ptr() != old


def test_pinned_memory():
    p = torch.randn(1000).pin_memory()
    assert p.is_pinned() and not torch.randn(3).is_pinned()
    q = torch.empty(10, pin_memory=True)
    assert q.is_pinned()
    d = p.to("ocl", non_blocking=True)
    torch.ocl.synchronize()
    assert torch.equal(d.cpu(), p)
    del p, q
    torch.ocl.empty_cache()


def test_memory_summary_prints_the_allocator_statistics():
    torch.ocl.synchronize()
    x = torch.empty(3 * 2**20 // 4, device="ocl")  # 3 MiB
    stats = torch.ocl.memory_stats()
    summary = torch.ocl.memory_summary()
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:6]]
            for line in summary.splitlines() if line.count("|") == 6}
    mib = stats["allocated_bytes.all.current"] // 2**20
    assert rows["Allocated memory"][0] in (f"{mib} MiB", f"{stats['allocated_bytes.all.current'] // 1024} KiB")
    assert rows["Allocations"] == [str(stats[f"allocation.all.{c}"]) for c in ("current", "peak", "allocated", "freed")]
    assert "from large pool" in summary and "from large pool" not in torch.ocl.memory_summary(abbreviated=True)
    del x
