"""A PyTorch DDP training script as people write it (gloo, torchrun's environment, DistributedSampler, DDP,
a checkpoint saved by rank 0 after a barrier). tests/distributed/test_ddp.py runs it under PyTorch's
``torch.distributed.run`` and under ``python -m ember.distributed.run`` and compares what it prints."""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


@record
def main():
    dist.init_process_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.manual_seed(0)
    x = torch.randn(64, 12)
    y = (x[:, :3].sum(1) > 0).long() + (x[:, 3] > 1).long()
    data = TensorDataset(x, y)
    sampler = DistributedSampler(data, shuffle=True, seed=1)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for step, (xb, yb) in enumerate(loader):
            opt.zero_grad()
            loss = F.cross_entropy(ddp(xb), yb)
            loss.backward()
            opt.step()
            avg = loss.detach().clone()
            dist.all_reduce(avg)
            if rank == 0:
                print(f"epoch {epoch} step {step} loss {avg.item() / world:.6f}", flush=True)
    dist.barrier()
    path = sys.argv[1]
    if rank == 0:
        torch.save(ddp.module.state_dict(), path)
    dist.barrier()
    state = torch.load(path, weights_only=True)
    assert all(torch.equal(state[k], v) for k, v in ddp.module.state_dict().items())
    total = sum(p.detach().double().sum().item() for p in ddp.module.parameters())
    print(f"rank {rank} local_rank {local_rank} of {world}: parameter sum {total:.6f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
