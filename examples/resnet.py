"""A small ResNet (BasicBlocks with BatchNorm and identity / projection shortcuts) trained on images.

    python examples/resnet.py [--epochs 3] [--synthetic] ...

Uses scikit-learn's bundled 8x8 digits upsampled to 16x16 when scikit-learn is installed (or synthetic
class-dependent images with --synthetic / without it), SGD with Nesterov momentum and cosine annealing,
and ember.backends.cudnn.benchmark = True so each convolution shape picks its fastest algorithm once.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.utils.data import DataLoader, TensorDataset


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, in_ch=1, classes=10, width=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_ch, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.layer1 = nn.Sequential(BasicBlock(width, width), BasicBlock(width, width))
        self.layer2 = nn.Sequential(BasicBlock(width, 2 * width, 2), BasicBlock(2 * width, 2 * width))
        self.head = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def load_images(synthetic, seed):
    if not synthetic:
        try:
            from sklearn.datasets import load_digits
            d = load_digits()
            x = np.kron(d.images / 16.0, np.ones((2, 2))).astype(np.float32)[:, None]   # 16x16
            return (x - 0.3) / 0.35, d.target.astype(np.int64), "scikit-learn digits (16x16)"
        except ImportError:
            pass
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, 2000)
    x = rng.standard_normal((2000, 1, 16, 16)).astype(np.float32) * 0.5
    for c in range(10):
        r, q = divmod(c, 4)
        x[y == c, :, r * 5:r * 5 + 5, q * 4:q * 4 + 4] += 1.0
    return x, y, "synthetic images (16x16)"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--synthetic", action="store_true", help="synthetic images instead of the digits")
    p.add_argument("--max-batches", type=int, default=0, help="stop each epoch after this many (0: all)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    ember.backends.cudnn.benchmark = True
    ember.manual_seed(args.seed)
    x, y, what = load_images(args.synthetic, args.seed)
    n_train = int(len(y) * 0.8)
    train = TensorDataset(ember.tensor(x[:n_train]), ember.tensor(y[:n_train]))
    test = TensorDataset(ember.tensor(x[n_train:]), ember.tensor(y[n_train:]))
    model = ResNet(width=args.width)
    opt = ember.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    loader = DataLoader(train, batch_size=args.batch_size, shuffle=True,
                        generator=ember.Generator().manual_seed(args.seed))
    steps = args.epochs * (min(len(loader), args.max_batches) if args.max_batches else len(loader))
    sched = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    print(f"{what}: {len(train)} train / {len(test)} test, {sum(q.numel() for q in model.parameters()):,} "
          "parameters, cudnn.benchmark on")
    for epoch in range(1, args.epochs + 1):
        model.train()
        t0, seen, total = time.perf_counter(), 0, 0.0
        for b, (xb, yb) in enumerate(loader):
            if args.max_batches and b >= args.max_batches:
                break
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            seen += yb.shape[0]
            total += loss.item() * yb.shape[0]
            if (b + 1) % 10 == 0:
                print(f"  epoch {epoch} batch {b + 1}  loss {total / seen:.4f}  "
                      f"{seen / (time.perf_counter() - t0):.0f} samples/s", flush=True)
        model.eval()
        with ember.no_grad():
            correct = sum((model(xb).argmax(1) == yb).sum().item() for xb, yb in DataLoader(test, batch_size=256))
        print(f"epoch {epoch}  train loss {total / max(seen, 1):.4f}  test accuracy {100 * correct / len(test):.1f}%  "
              f"{time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
