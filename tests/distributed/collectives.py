"""Every collective through occl on ocl tensors equals gloo on the same CPU tensors.

Run by tests/test_distributed.py under torchrun (any world size). The default group is
"cpu:gloo,ocl:occl", so one call with CPU tensors is the reference for the same call on ocl.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

from common import check, init, rank_data

R = dist.ReduceOp
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64]


def reference_reduce(op, size):
    """Gloo on the CPU has no AVG or PREMUL_SUM: the reference is SUM, then the same step."""
    if op == "avg":
        return R.SUM, lambda t: t / size if t.is_floating_point() else torch.div(t, size, rounding_mode="trunc")
    if op == "premul":
        return R.SUM, None
    return op, None


def device_op(op):
    if op == "avg":
        return R.AVG
    if op == "premul":
        return dist._make_nccl_premul_sum(0.5)
    return op


def ops_for(dtype):
    ops = [R.SUM, R.PRODUCT, R.MIN, R.MAX, "avg"]
    if dtype.is_floating_point:
        ops.append("premul")
    else:
        ops += [R.BAND, R.BOR, R.BXOR]
    return ops


def check_all_reduce_and_reduce(x, op, size, what, root):
    """all_reduce and reduce (to `root`: only its tensor changes) of x on ocl against gloo."""
    ref_op, after = reference_reduce(op, size)
    want = x * 0.5 if op == "premul" else x.clone()
    dist.all_reduce(want, op=ref_op)
    if after:
        want = after(want)
    got = x.to("ocl")
    dist.all_reduce(got, op=device_op(op))
    check(got, want, f"all_reduce {what} {op}")
    got = x.to("ocl")
    dist.reduce(got, dst=root, op=device_op(op))
    check(got, want if dist.get_rank() == root else x, f"reduce {what} {op}")


def all_reduce_family(rank, size):
    for dtype in DTYPES:
        for op in ops_for(dtype):
            check_all_reduce_and_reduce(rank_data((5, 7), dtype, rank), op, size, dtype, root=size - 1)

        # coalesced, and a non-contiguous input (a transposed view is reduced in place)
        xs = [rank_data((3, 4), dtype, rank, salt=i) for i in range(3)]
        want = [t.clone() for t in xs]
        dist.all_reduce_coalesced(want) if hasattr(dist, "all_reduce_coalesced") else [dist.all_reduce(t) for t in want]
        got = [t.to("ocl") for t in xs]
        dist.all_reduce_coalesced(got) if hasattr(dist, "all_reduce_coalesced") else [dist.all_reduce(t) for t in got]
        for g, w in zip(got, want):
            check(g, w, f"all_reduce_coalesced {dtype}")
        base = rank_data((6, 4), dtype, rank).to("ocl")
        view = base.t()[:, ::2]
        want = view.cpu().contiguous()  # gloo reduces memory in order: the same layout as occl stages
        dist.all_reduce(want)
        dist.all_reduce(view)
        check(view, want, f"all_reduce of a strided view {dtype}")
        check(base.t()[:, 1::2], rank_data((6, 4), dtype, rank).t()[:, 1::2], "elements beside the view untouched")


def gathers(rank, size):
    for dtype in DTYPES:
        x = rank_data((4, 3), dtype, rank)
        want = [torch.empty_like(x) for _ in range(size)]
        dist.all_gather(want, x)
        got = [torch.empty_like(x, device="ocl") for _ in range(size)]
        dist.all_gather(got, x.to("ocl").t().contiguous().t())  # a non-contiguous input
        for g, w in zip(got, want):
            check(g, w, f"all_gather {dtype}")

        want = torch.empty((size * 4, 3), dtype=dtype)
        dist.all_gather_into_tensor(want, x)
        got = torch.empty((size * 4, 3), dtype=dtype, device="ocl")
        dist.all_gather_into_tensor(got, x.to("ocl"))
        check(got, want, f"all_gather_into_tensor {dtype}")

        root = 0
        want = [torch.empty_like(x) for _ in range(size)] if rank == root else None
        dist.gather(x, want, dst=root)
        got = [torch.empty_like(x, device="ocl") for _ in range(size)] if rank == root else None
        dist.gather(x.to("ocl"), got, dst=root)
        if rank == root:
            for g, w in zip(got, want):
                check(g, w, f"gather {dtype}")

        src = size - 1
        chunks = [rank_data((2, 5), dtype, rank, salt=i) for i in range(size)]
        want = torch.empty((2, 5), dtype=dtype)
        dist.scatter(want, chunks if rank == src else None, src=src)
        got = torch.empty((2, 5), dtype=dtype, device="ocl")
        dist.scatter(got, [c.to("ocl") for c in chunks] if rank == src else None, src=src)
        check(got, want, f"scatter {dtype}")

        y = rank_data((3, 2), dtype, rank) if rank == 0 else torch.zeros((3, 2), dtype=dtype)
        want = y.clone()
        dist.broadcast(want, src=0)
        got = y.to("ocl")
        dist.broadcast(got, src=0)
        check(got, want, f"broadcast {dtype}")


def reduce_scatters(rank, size):
    for dtype in DTYPES:
        for op in [R.SUM, R.MAX, "avg"] + (["premul"] if dtype.is_floating_point else []):
            ref_op, after = reference_reduce(op, size)
            x = rank_data((size * 3, 4), dtype, rank)
            src = x * 0.5 if op == "premul" else x
            want = torch.empty((3, 4), dtype=dtype)
            dist.reduce_scatter_tensor(want, src, op=ref_op)
            if after:
                want = after(want)
            got = torch.empty((3, 4), dtype=dtype, device="ocl")
            dist.reduce_scatter_tensor(got, x.to("ocl"), op=device_op(op))
            check(got, want, f"reduce_scatter_tensor {dtype} {op}")

            pieces = list(src.chunk(size))
            want_list = torch.empty((3, 4), dtype=dtype)
            dist.reduce_scatter(want_list, pieces, op=ref_op)
            if after:
                want_list = after(want_list)
            got = torch.empty((3, 4), dtype=dtype, device="ocl")
            dist.reduce_scatter(got, [p.to("ocl") for p in x.chunk(size)], op=device_op(op))
            check(got, want_list, f"reduce_scatter {dtype} {op}")


def all_to_all(rank, size):
    for dtype in DTYPES:
        # uneven splits: rank r sends r + j + 1 rows to rank j
        in_splits = [rank + j + 1 for j in range(size)]
        out_splits = [j + rank + 1 for j in range(size)]
        x = rank_data((sum(in_splits), 3), dtype, rank)
        want = torch.empty((sum(out_splits), 3), dtype=dtype)
        dist.all_to_all_single(want, x, out_splits, in_splits)
        got = torch.empty((sum(out_splits), 3), dtype=dtype, device="ocl")
        dist.all_to_all_single(got, x.to("ocl"), out_splits, in_splits)
        check(got, want, f"all_to_all_single uneven {dtype}")

        ins = [rank_data((2, 3), dtype, rank, salt=j) for j in range(size)]  # gloo: one shape
        want = [torch.empty((2, 3), dtype=dtype) for _ in range(size)]
        dist.all_to_all(want, ins)
        got = [torch.empty((2, 3), dtype=dtype, device="ocl") for _ in range(size)]
        dist.all_to_all(got, [t.to("ocl") for t in ins])
        for g, w in zip(got, want):
            check(g, w, f"all_to_all {dtype}")


def point_to_point(rank, size):
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    for dtype in DTYPES:
        x = rank_data((4,), dtype, rank)
        # a ring where every rank posts its recv first: occl must not hold the sends back
        got = torch.empty((4,), dtype=dtype, device="ocl")
        ops = [dist.P2POp(dist.irecv, got, prv), dist.P2POp(dist.isend, x.to("ocl"), nxt)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        check(got, rank_data((4,), dtype, prv), f"batch_isend_irecv {dtype}")
        if size >= 2 and rank < 2:
            if rank == 0:
                dist.send(x.to("ocl"), dst=1)
            else:
                got = torch.empty((4,), dtype=dtype, device="ocl")
                dist.recv(got, src=0)
                check(got, rank_data((4,), dtype, 0), f"send/recv {dtype}")
    dist.barrier()


def functional(rank, size):
    x = rank_data((4, 4), torch.float32, rank)
    want = x.clone()
    dist.all_reduce(want)
    got = funcol.all_reduce(x.to("ocl"), "sum", dist.group.WORLD)
    check(funcol.wait_tensor(got) if isinstance(got, torch.Tensor) else got, want, "functional all_reduce")
    want = torch.empty((size * 4, 4))
    dist.all_gather_into_tensor(want, x)
    check(funcol.all_gather_tensor(x.to("ocl"), 0, dist.group.WORLD), want, "functional all_gather_tensor")
    want = torch.empty((4 // size if 4 % size == 0 else 0, 4))
    if 4 % size == 0:
        dist.reduce_scatter_tensor(want, x)
        check(funcol.reduce_scatter_tensor(x.to("ocl"), "sum", 0, dist.group.WORLD), want,
              "functional reduce_scatter_tensor")


def in_pieces(rank, size):
    """Tensors larger than two of occl's pieces (DRAWBRIDGE_OCCL_CHUNK_BYTES; the suite runs this
    file once with small pieces) go in chunks: the last one shorter, results as one piece."""
    for op in [R.SUM, "avg", "premul", R.MAX]:
        # whole numbers: sums are exact in any order (pieces change gloo's order on 3+ ranks)
        check_all_reduce_and_reduce(rank_data((50, 37), torch.int64, rank).float(), op, size, "in pieces", root=0)
    y = rank_data((1001,), torch.int64, rank)
    want = y.clone()
    dist.broadcast(want, src=1 % size)
    got = y.to("ocl")
    dist.broadcast(got, src=1 % size)
    check(got, want, "broadcast in pieces")


def asynchronous(rank, size):
    """async_op works overlap: several in flight, a second collective on the same tensor ordered
    after the first, futures complete with the output tensors."""
    x = rank_data((1000,), torch.int64, rank).float().to("ocl")  # whole numbers, as in_pieces
    want = rank_data((1000,), torch.int64, rank).float()
    dist.all_reduce(want)
    dist.all_reduce(want)
    w1 = dist.all_reduce(x, async_op=True)
    w2 = dist.all_reduce(x, async_op=True)  # must read the first's result
    w2.wait()
    w1.wait()
    check(x, want, "two async all_reduces of one tensor")
    y = torch.ones(8, device="ocl")
    fut = dist.all_reduce(y, async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2).wait()
    check(doubled, torch.full((8,), 2.0 * size), "future value and then()")


if __name__ == "__main__":
    rank, size = init("cpu:gloo,ocl:occl")
    for case in (all_reduce_family, gathers, reduce_scatters, all_to_all, point_to_point, functional, in_pieces,
                 asynchronous):
        case(rank, size)
    dist.destroy_process_group()
    print(f"rank {rank}: collectives ok")
