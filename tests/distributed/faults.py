"""What a rank sees when another misbehaves: it raises within the group's timeout and stays usable.

Usage: faults.py CASE (env:// rendezvous: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE). Rank 0
reports one line, `raised <type> after <seconds> s`, or `completed`, then checks that ocl
still computes. Cases: dies (rank 1 exits before the collective), stalls (rank 1 never calls it),
shapes / dtypes (rank 1 passes a tensor of another size / dtype), mixed (a CPU tensor where occl
expects ocl ones, on one rank), late (rank 1 calls 2 s late: rank 0 reports how long its call
and its read of the result took, `completed: call <s> s, read <s> s, values <list>`).
wait() does not block the host unless DRAWBRIDGE_OCCL_BLOCKING_WAIT=1, so an error may come
out of the read of the result rather than the call: both are inside the try.
"""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

TIMEOUT = float(os.environ.get("FAULT_TIMEOUT", "4"))
LATE = 2.0


def main(case):
    dist.init_process_group("occl", timeout=datetime.timedelta(seconds=TIMEOUT))
    rank = dist.get_rank()
    x = torch.ones(4, device="ocl")
    dist.all_reduce(x)  # the group works before the fault
    if rank == 1:
        if case == "dies":
            # Once rank 0 waits in the next collective: a rank whose collective returned may
            # still be sending its last bytes, and dying then failed rank 0's first one instead.
            time.sleep(1.0)
            os._exit(3)
        if case == "stalls":
            time.sleep(TIMEOUT * 3)
            os._exit(0)
        if case == "shapes":
            x = torch.ones(1024, device="ocl")
        if case == "dtypes":
            x = torch.ones(4, device="ocl", dtype=torch.int64)
        if case == "late":
            time.sleep(LATE)
    start = time.monotonic()
    try:
        if case == "mixed":
            out = [torch.empty(4) for _ in range(dist.get_world_size())]  # CPU outputs, ocl input
            dist.all_gather(out, x)
        else:
            dist.all_reduce(x)
        called = time.monotonic()
        values = x.cpu().tolist()
        read = time.monotonic()
        outcome = f"completed: call {called - start:.2f} s, read {read - called:.2f} s, values {values}"
    except Exception as e:  # noqa: BLE001 - the type is what the test checks
        outcome = f"raised {type(e).__name__} after {time.monotonic() - start:.1f} s: {str(e).splitlines()[0][:200]}"
    y = torch.arange(4.0, device="ocl") * 2  # the process is still usable
    assert y.cpu().tolist() == [0.0, 2.0, 4.0, 6.0]
    print(f"rank {rank}: {outcome}", flush=True)
    os._exit(0)  # no destroy_process_group: the group is broken on purpose


if __name__ == "__main__":
    main(sys.argv[1])
