"""``torch.ocl.memory_summary()``: the caching allocator's statistics as the table
``torch.cuda.memory_summary()`` prints (the statistics have the same names as CUDA's)."""

from __future__ import annotations

# (statistic, row title, whether it counts bytes)
ROWS = [
    ("allocated_bytes", "Allocated memory", True),
    ("active_bytes", "Active memory", True),
    ("requested_bytes", "Requested memory", True),
    ("reserved_bytes", "Reserved memory", True),
    ("inactive_split_bytes", "Non-releasable memory", True),
    ("allocation", "Allocations", False),
    ("active", "Active allocs", False),
    ("segment", "Reserved segments", False),
    ("inactive_split", "Non-releasable allocs", False),
]
COLUMNS = [("current", "Cur Usage"), ("peak", "Peak Usage"), ("allocated", "Tot Alloc"), ("freed", "Tot Freed")]
WIDTH = 75


def _bytes(n: int) -> str:
    for unit in ("B  ", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 * 8 or unit == "TiB":
            return f"{n:6d} {unit}"
        n //= 1024
    return str(n)


def format_summary(stats: dict, device: int, abbreviated: bool = False) -> str:
    line, thick = "|" + "-" * WIDTH + "|", "|" + "=" * WIDTH + "|"
    out = [thick, f"|{f'PyTorch ocl memory summary, device ID {device}':^{WIDTH}}|", line,
           f"|  OOMs: {stats.get('num_ooms', 0):<13d}| allocation retries: {stats.get('num_alloc_retries', 0):<32d}|",
           thick, "|        Metric         | " + " | ".join(f"{title:^10}" for _, title in COLUMNS) + " |"]
    pools = [("all", "")] if abbreviated else [("all", ""), ("large_pool", "      from large pool"),
                                                 ("small_pool", "      from small pool")]
    for name, title, is_bytes in ROWS:
        out.append(line)
        for pool, label in pools:
            cells = []
            for column, _ in COLUMNS:
                value = int(stats.get(f"{name}.{pool}.{column}", 0))
                cells.append(_bytes(value) if is_bytes else f"{value:10d}")
            out.append(f"| {(label or title):<22}| " + " | ".join(f"{c:>10}" for c in cells) + " |")
    out.append(line)
    for name, title in (("oversize_allocations", "Oversize allocations"), ("oversize_segments", "Oversize segments")):
        cells = [f"{int(stats.get(f'{name}.{column}', 0)):10d}" for column, _ in COLUMNS]
        out.append(f"| {title:<22}| " + " | ".join(cells) + " |")
    out.append(thick)
    return "\n".join(out) + "\n"
