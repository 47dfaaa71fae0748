"""DDP's buffer broadcast and the gloo collectives' shape checks as a PyTorch program sees them: a CNN with
BatchNorm trained under DDP (broadcast_buffers=True) with an evaluation pass under no_grad and a no_sync step in
between, each rank printing its running statistics; then all_gather_into_tensor / reduce_scatter_tensor with
the output shapes gloo accepts and refuses. tests/distributed/test_ddp.py compares every rank's lines with
PyTorch's."""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def stats(tag, model, rank):
    bn = model.module[1]
    print(f"rank {rank} {tag} mean {bn.running_mean.sum().item():.6f} var {bn.running_var.sum().item():.6f} "
          f"batches {bn.num_batches_tracked.item()}", flush=True)


def main():
    dist.init_process_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                          nn.Linear(4 * 6 * 6, 3))
    ddp = DDP(model, broadcast_buffers=True)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    torch.manual_seed(100 + rank)          # every rank sees other data
    for step in range(5):
        x, y = torch.randn(8, 1, 6, 6) * (1 + rank), torch.randint(0, 3, (8,))
        opt.zero_grad()
        if step == 2:
            with ddp.no_sync():
                F.cross_entropy(ddp(x), y).backward()
        else:
            F.cross_entropy(ddp(x), y).backward()
        opt.step()
        stats(f"step {step}", ddp, rank)
        if step == 3:
            ddp.eval()
            with torch.no_grad():
                ddp(x)
                stats("eval 1", ddp, rank)
                ddp(x)
                stats("eval 2", ddp, rank)
            ddp.train()

    # the collectives gloo accepts first, then the output shapes it refuses (checked before anything is sent)
    shape = (2, 3)
    inp = torch.full(shape, float(rank + 1))
    out = torch.zeros(world * 2, 3)
    dist.all_gather_into_tensor(out, inp)
    print(f"rank {rank} all_gather_into_tensor concatenated {out.sum().item():.1f}", flush=True)
    out = torch.zeros(world, 2, 3)
    dist.all_gather_into_tensor(out, inp.unsqueeze(0))
    print(f"rank {rank} all_gather_into_tensor stacked from (1, 2, 3) {out.sum().item():.1f}", flush=True)
    out = torch.zeros(2, 3)
    dist.reduce_scatter_tensor(out, torch.ones(world * 2, 3))
    print(f"rank {rank} reduce_scatter_tensor concatenated {out.sum().item():.1f}", flush=True)
    dist.barrier()
    for name, out in [("stacked", torch.zeros(world, *shape)), ("too small", torch.zeros(world, 2, 2)),
                      ("too few rows", torch.zeros(world - 1, 3))]:
        try:
            dist.all_gather_into_tensor(out, inp)
            print(f"rank {rank} all_gather_into_tensor {name} accepted", flush=True)
        except Exception as e:
            print(f"rank {rank} all_gather_into_tensor {name} {type(e).__name__}: {str(e).splitlines()[0]}",
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
