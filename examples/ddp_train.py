"""Data-parallel training of a small CNN on the digits, one process per rank.

    python -m ember.distributed.run --nproc-per-node 2 examples/ddp_train.py [--epochs 3] [--synthetic] ...

Each rank trains a DistributedDataParallel replica (BatchNorm turned into SyncBatchNorm, so the statistics
are those of the whole global batch) on its DistributedSampler shard of scikit-learn's 8x8 digits upsampled
to 16x16 (synthetic images with --synthetic or without scikit-learn). After each epoch the ranks sum their
test-set counts, and rank 0 saves a checkpoint after a barrier. Started without the launcher it trains in one
process, the same code path with a world of 1.
"""
from __future__ import annotations

import argparse
import os
import time

import ember
import ember.distributed as dist
from resnet import load_images  # the digits (or synthetic images), 16x16: examples/resnet.py
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset


def cnn(classes=10, width=16):
    return nn.Sequential(
        nn.Conv2d(1, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(width, 2 * width, 3, padding=1, bias=False), nn.BatchNorm2d(2 * width), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(2 * width * 4 * 4, 64), nn.ReLU(), nn.Linear(64, classes))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--synthetic", action="store_true", help="synthetic images instead of the digits")
    p.add_argument("--max-batches", type=int, default=0, help="stop each epoch after this many (0: all)")
    p.add_argument("--checkpoint", default="ddp_checkpoint.pt", help="where rank 0 saves the model")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    ember.manual_seed(args.seed)
    x, y, what = load_images(args.synthetic, args.seed)
    n_train = int(len(y) * 0.8)
    train = TensorDataset(ember.tensor(x[:n_train]), ember.tensor(y[:n_train]))
    test = TensorDataset(ember.tensor(x[n_train:]), ember.tensor(y[n_train:]))
    model = cnn()
    if distributed:
        model = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(model))
    opt = ember.optim.SGD(model.parameters(), lr=args.lr * world, momentum=0.9)   # the linear scaling rule
    sampler = DistributedSampler(train, seed=args.seed) if distributed else None
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler, shuffle=sampler is None,
                        generator=ember.Generator().manual_seed(args.seed))
    test_part = DistributedSampler(test, shuffle=False, drop_last=False) if distributed else None
    if rank == 0:
        print(f"{what}: {len(train)} train / {len(test)} test on {world} rank(s), "
              f"{args.batch_size * world} samples per step, "
              f"{sum(q.numel() for q in model.parameters()):,} parameters", flush=True)
    for epoch in range(1, args.epochs + 1):
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        t0 = time.perf_counter()
        stats = ember.zeros(2, dtype=ember.float64)     # loss sum, samples
        for b, (xb, yb) in enumerate(loader):
            if args.max_batches and b >= args.max_batches:
                break
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            stats += ember.tensor([loss.item() * len(yb), len(yb)], dtype=ember.float64)
        model.eval()
        correct = ember.zeros(2, dtype=ember.float64)   # right, seen
        with ember.no_grad():
            for xb, yb in DataLoader(test, batch_size=256, sampler=test_part):
                correct += ember.tensor([(model(xb).argmax(1) == yb).sum().item(), len(yb)], dtype=ember.float64)
        if distributed:
            dist.all_reduce(stats)
            dist.all_reduce(correct)
            dist.barrier()
        if rank == 0:
            state = (model.module if distributed else model).state_dict()
            ember.save({"epoch": epoch, "model": state}, args.checkpoint)
            print(f"epoch {epoch}  train loss {stats[0].item() / max(stats[1].item(), 1):.4f}  "
                  f"test accuracy {100 * correct[0].item() / max(correct[1].item(), 1):.1f}%  "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
    if distributed:
        dist.barrier()
        ck = ember.load(args.checkpoint, weights_only=True)     # complete and loadable on every rank
        assert all(ember.equal(ck["model"][k], v) for k, v in model.module.state_dict().items())
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
