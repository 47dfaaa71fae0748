"""What each rank of a ``bench.distributed`` job runs (``python -m bench._dist_ranks allreduce|ddp ...``).

allreduce SIZES_MB...: on the same buffer, ember's ``dist.all_reduce`` and mpi4py's own ``Allreduce``
(blocking, on a duplicate of the world communicator), in alternating rounds; rank 0 prints the medians as JSON.

ddp QUICK: a DDP training step (an MLP 784-512-512-10 on 64 rows per rank, SGD with momentum) written against
``torch``: under ``torch.distributed.run`` it is PyTorch's DDP on gloo, under ``python -m ember.distributed.run``
ember's on MPI. Rank 0 prints the median step time as JSON."""
from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np


def allreduce(sizes_mb: list[float], quick: bool) -> None:
    import ember
    import ember.distributed as dist
    from mpi4py import MPI
    dist.init_process_group("mpi")
    comm = MPI.COMM_WORLD.Dup()
    out = {}
    for mb in sizes_mb:
        n = int(mb * 1024 * 1024) // 4
        t = ember.ones(n)
        raw = t.numpy()
        reps = 3 if quick else (20 if mb <= 8 else 3)
        ours, theirs = [], []
        for _ in range(2 if quick else (15 if mb <= 8 else 7)):
            for side in ("ember", "mpi4py"):
                comm.Barrier()
                t0 = time.perf_counter()
                for _ in range(reps):
                    if side == "ember":
                        dist.all_reduce(t)
                    else:
                        comm.Allreduce(MPI.IN_PLACE, raw)
                (ours if side == "ember" else theirs).append((time.perf_counter() - t0) / reps)
        out[str(mb)] = {"ember_s": statistics.median(ours), "mpi4py_s": statistics.median(theirs)}
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps(out), flush=True)
    comm.Free()
    dist.destroy_process_group()


def ddp(quick: bool) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(dist.get_rank())
    x = torch.tensor(rng.standard_normal((64, 784)).astype(np.float32))
    y = torch.tensor(rng.integers(0, 10, 64))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    for _ in range(3):
        step()
    times = []
    for _ in range(3 if quick else 15):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(5):
            step()
        times.append((time.perf_counter() - t0) / 5)
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps({"step_s": statistics.median(times), "lib": torch.__name__
                                      if "ember" not in repr(torch) else "ember"}), flush=True)
    dist.barrier()  # both ranks done before either tears its process group down (gloo aborts on a closed peer)
    dist.destroy_process_group()


if __name__ == "__main__":
    what, *rest = sys.argv[1:]
    quick = "--quick" in rest
    rest = [a for a in rest if a != "--quick"]
    if what == "allreduce":
        allreduce([float(a) for a in rest], quick)
    else:
        ddp(quick)
