"""``python -m ember.demo``: train a small CNN on real handwritten digits with ember.

The data are scikit-learn's bundled 8x8 digits (1,797 images, no download). The stack is what a PyTorch
user would write: a ``Dataset`` and a ``DataLoader`` with worker processes, an ``nn.Module``, ``AdamW`` with
``OneCycleLR``, the best checkpoint saved with ``ember.save`` (PyTorch's format: ``torch.load`` reads it).
It prints a progress bar (tqdm) with the loss and samples/s, per-epoch train/test loss and accuracy, the
wall time, writes a training-curve PNG when matplotlib is installed, and ends with
``final test accuracy: NN.N%``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _non_negative_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {value}")
    return value


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m ember.demo",
                                description="Train a small CNN on scikit-learn's handwritten digits with ember.")
    p.add_argument("--epochs", type=_positive_int, default=12, help="training epochs (default 12)")
    p.add_argument("--batch-size", type=_positive_int, default=32, help="batch size (default 32)")
    p.add_argument("--lr", type=float, default=0.01, help="peak learning rate of OneCycleLR (default 0.01)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--workers", type=_non_negative_int, default=2,
                   help="DataLoader worker processes (default 2; 0 loads in the main process)")
    p.add_argument("--out", default="ember-demo-out",
                   help="output folder for best.pt and training_curves.png (default ./ember-demo-out)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (per-epoch lines only; also when stderr is not a terminal)")
    p.add_argument("--tensorboard", metavar="DIR", default=None,
                   help="log losses, accuracies, the learning rate, weight histograms, sample images, the model's "
                        "graph and the hyperparameters to TensorBoard event files in DIR (needs the tensorboard "
                        "package)")
    args = p.parse_args(argv)
    if not args.lr > 0:
        p.error(f"argument --lr: expected a positive learning rate, got {args.lr}")
    return args


def load_digits_arrays():
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit("python -m ember.demo needs scikit-learn's bundled digits: pip install -e \".[demo]\" "
                 "(or pip install scikit-learn)")
    digits = load_digits()
    return (digits.images / 16.0).astype("float32"), digits.target.astype("int64")


def build(ember, args):
    nn = ember.nn
    images, labels = load_digits_arrays()

    class Digits(ember.utils.data.Dataset):
        """Images as 1x8x8 float tensors normalised to mean 0 / std 1, labels as ints."""

        def __init__(self, images, labels):
            self.images = (images - 0.3) / 0.35
            self.labels = labels

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, i):
            return ember.tensor(self.images[i][None]), int(self.labels[i])

    dataset = Digits(images, labels)
    split = ember.Generator().manual_seed(args.seed)
    train_set, test_set = ember.utils.data.random_split(dataset, [0.8, 0.2], generator=split)

    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.2), nn.Linear(64 * 2 * 2, 10))
    return train_set, test_set, model


def open_tensorboard(ember, args, model, train_loader):
    """A SummaryWriter on ``--tensorboard DIR`` (None without the option) with the model's graph and a grid of
    training images logged."""
    if args.tensorboard is None:
        return None
    try:
        from ember.utils.tensorboard import SummaryWriter
    except ImportError:
        sys.exit("--tensorboard needs the tensorboard package: pip install tensorboard")
    tb = SummaryWriter(args.tensorboard)
    x, _ = next(iter(train_loader))
    tb.add_graph(model, x)
    tb.add_images("train/samples", (x[:32] * 0.35 + 0.3).clamp(0, 1), 0)
    return tb


def log_epoch(tb, model, history, lr, epoch):
    """One epoch's curves (train and test on one chart each), learning rate and weight histograms."""
    tb.add_scalars("loss", {"train": history["train_loss"][-1], "test": history["test_loss"][-1]}, epoch)
    tb.add_scalars("accuracy", {"train": history["train_acc"][-1], "test": history["test_acc"][-1]}, epoch)
    tb.add_scalar("test/accuracy", history["test_acc"][-1], epoch)
    tb.add_scalar("lr", lr, epoch)
    for name, p in model.named_parameters():
        tb.add_histogram(f"weights/{name}", p.detach(), epoch)


def main(argv=None) -> int:
    args = parse_args(argv)
    t_start = time.perf_counter()
    import ember
    from ember.utils.data import DataLoader

    ember.manual_seed(args.seed)
    train_set, test_set, model = build(ember, args)
    loader_gen = ember.Generator().manual_seed(args.seed + 1)
    loader_kw = dict(num_workers=args.workers, persistent_workers=args.workers > 0)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, generator=loader_gen, **loader_kw)
    test_loader = DataLoader(test_set, batch_size=256, **loader_kw)
    opt = ember.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, epochs=args.epochs,
                                                steps_per_epoch=len(train_loader))
    os.makedirs(args.out, exist_ok=True)
    best_path = os.path.join(args.out, "best.pt")
    tb = open_tensorboard(ember, args, model, train_loader)

    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    write = tqdm.write if tqdm is not None else print
    print(f"ember {ember.__version__}: CNN on {len(train_set)} train / {len(test_set)} test digits (8x8), "
          f"{sum(p.numel() for p in model.parameters()):,} parameters, {args.workers} loader workers")

    history = {"train_loss": [], "train_acc": [], "test_loss": [], "test_acc": []}
    best = -1.0
    for epoch in range(1, args.epochs + 1):
        model.train()
        seen = correct = 0
        total_loss = 0.0
        t0 = time.perf_counter()
        batches = train_loader
        bar = None
        # a bar redraws its line with carriage returns: into a redirected log it would only add noise
        if tqdm is not None and not args.no_progress and sys.stderr.isatty():
            bar = batches = tqdm(train_loader, desc=f"epoch {epoch}/{args.epochs}", unit="batch", leave=False,
                                 file=sys.stderr)
        for x, y in batches:
            logits = model(x)
            loss = ember.nn.functional.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            n = y.shape[0]
            seen += n
            total_loss += loss.item() * n
            correct += (logits.argmax(1) == y).sum().item()
            if tb is not None:
                tb.add_scalar("train/loss", loss.item(), (epoch - 1) * len(train_loader) + seen // args.batch_size)
            if bar is not None:
                bar.set_postfix(loss=f"{loss.item():.3f}", samples_s=f"{seen / (time.perf_counter() - t0):.0f}")
        if bar is not None:
            bar.close()
        test_loss, test_acc = evaluate(ember, model, test_loader)
        history["train_loss"].append(total_loss / seen)
        history["train_acc"].append(correct / seen)
        history["test_loss"].append(test_loss)
        history["test_acc"].append(test_acc)
        if tb is not None:
            log_epoch(tb, model, history, opt.param_groups[0]["lr"], epoch)
        mark = ""
        if test_acc > best:
            best = test_acc
            ember.save({"model": model.state_dict(), "epoch": epoch, "test_acc": test_acc,
                        "args": {k: v for k, v in vars(args).items()}}, best_path)
            mark = "  (best, saved)"
        write(f"epoch {epoch:2d}  train loss {total_loss / seen:.4f} acc {100 * correct / seen:5.1f}%  "
              f"test loss {test_loss:.4f} acc {100 * test_acc:5.1f}%  "
              f"{seen / (time.perf_counter() - t0):,.0f} samples/s{mark}")

    plot = plot_curves(history, os.path.join(args.out, "training_curves.png"))
    checkpoint = ember.load(best_path)
    model.load_state_dict(checkpoint["model"])
    _, final_acc = evaluate(ember, model, test_loader)
    if tb is not None:
        tb.add_hparams({"lr": args.lr, "batch_size": args.batch_size, "epochs": args.epochs, "seed": args.seed},
                       {"hparam/best_test_acc": best, "hparam/final_test_acc": final_acc}, run_name="hparams")
        tb.close()
        print(f"TensorBoard logs: {args.tensorboard} (tensorboard --logdir {args.tensorboard})")
    print(f"best checkpoint: {best_path} (epoch {checkpoint['epoch']}; loadable with torch.load)")
    if plot:
        print(f"training curves: {plot}")
    print(f"wall time: {time.perf_counter() - t_start:.1f} s")
    print(f"final test accuracy: {100 * final_acc:.1f}%")
    return 0


def evaluate(ember, model, loader):
    model.eval()
    total = correct = 0
    loss_sum = 0.0
    with ember.no_grad():
        for x, y in loader:
            logits = model(x)
            loss_sum += ember.nn.functional.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
            total += y.shape[0]
    return loss_sum / total, correct / total


def plot_curves(history, path):
    """A PNG of the loss and accuracy curves, or None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    epochs = range(1, len(history["train_loss"]) + 1)
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    a.plot(epochs, history["train_loss"], label="train")
    a.plot(epochs, history["test_loss"], label="test")
    a.set_xlabel("epoch")
    a.set_ylabel("cross-entropy")
    a.legend()
    b.plot(epochs, [100 * v for v in history["train_acc"]], label="train")
    b.plot(epochs, [100 * v for v in history["test_acc"]], label="test")
    b.set_xlabel("epoch")
    b.set_ylabel("accuracy (%)")
    b.legend()
    fig.suptitle("ember: CNN on scikit-learn digits")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


if __name__ == "__main__":
    sys.exit(main())
