"""Knowledge distillation, then quantization: a small student learns from a bigger teacher CNN, and is then made
4x smaller with int8 weights.

    python examples/distill.py [--epochs 4] [--synthetic] [--quantize static|dynamic]

1. The teacher (a CNN) trains on scikit-learn's 8x8 digits upsampled to 16x16 (synthetic images with
   --synthetic or without scikit-learn).
2. The student (a third of the width) trains on a mix of the hard labels and the teacher's softened predictions:
   ``alpha * T^2 * KL(softmax(teacher / T) || softmax(student / T)) + (1 - alpha) * cross_entropy`` (Hinton et
   al.'s recipe; T is the temperature).
3. The student is quantized: ``static`` (default) fuses Conv+BN+ReLU and Linear+ReLU, observes activations on
   calibration batches and converts every layer to int8 kernels (ember.ao.quantization's eager mode);
   ``dynamic`` quantizes the linear layers' weights only.

It prints each model's test accuracy and the size of its saved state_dict.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
import ember.nn as nn  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.ao.quantization import DeQuantStub, QuantStub  # noqa: E402
from ember.utils.data import DataLoader, TensorDataset  # noqa: E402
from resnet import load_images  # noqa: E402 - the digits (or synthetic images), 16x16: examples/resnet.py


class Net(nn.Module):
    """Conv-BN-ReLU twice, then two linear layers, between the stubs where quantization begins and ends."""

    def __init__(self, width: int, classes: int = 10) -> None:
        super().__init__()
        self.quant = QuantStub()
        self.conv1, self.bn1, self.relu1 = nn.Conv2d(1, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), \
            nn.ReLU()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2, self.bn2, self.relu2 = nn.Conv2d(width, 2 * width, 3, padding=1, bias=False), \
            nn.BatchNorm2d(2 * width), nn.ReLU()
        self.pool2 = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc1, self.relu3 = nn.Linear(2 * width * 16, 4 * width), nn.ReLU()
        self.fc2 = nn.Linear(4 * width, classes)
        self.dequant = DeQuantStub()

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.quant(x)
        x = self.pool1(self.relu1(self.bn1(self.conv1(x))))
        x = self.pool2(self.relu2(self.bn2(self.conv2(x))))
        x = self.relu3(self.fc1(self.flatten(x)))
        return self.dequant(self.fc2(x))


def distillation_loss(student_logits, teacher_logits, labels, temperature: float, alpha: float):
    """Hinton et al.'s loss: the KL divergence of the softened distributions (scaled by T^2 so that its gradients
    keep their size as T grows) mixed with the cross entropy on the labels."""
    soft = F.kl_div(F.log_softmax(student_logits / temperature, dim=1), F.softmax(teacher_logits / temperature, dim=1),
                    reduction="batchmean") * temperature ** 2
    return alpha * soft + (1 - alpha) * F.cross_entropy(student_logits, labels)


def train(model, loader, epochs: int, lr: float, teacher=None, temperature: float = 4.0, alpha: float = 0.7):
    opt = ember.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            out = model(x)
            if teacher is None:
                loss = F.cross_entropy(out, y)
            else:
                with ember.no_grad():
                    t = teacher(x)
                loss = distillation_loss(out, t, y, temperature, alpha)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model


@ember.no_grad()
def accuracy(model, x, y) -> float:
    model.eval()
    return float((model(x).argmax(1) == y).float().mean())


def size_kb(model) -> float:
    buf = io.BytesIO()
    ember.save(model.state_dict(), buf)
    return len(buf.getvalue()) / 1024


def quantize(model, how: str, calibration):
    warnings.filterwarnings("ignore", category=DeprecationWarning)   # PyTorch 2.13 marks the eager API deprecated
    warnings.filterwarnings("ignore", message="Please use quant_min and quant_max")   # reduce_range, as PyTorch
    model = model.eval()
    if how == "dynamic":
        return ember.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=ember.qint8)
    model.qconfig = ember.ao.quantization.get_default_qconfig("x86")
    fused = ember.ao.quantization.fuse_modules(model, [["conv1", "bn1", "relu1"], ["conv2", "bn2", "relu2"],
                                                      ["fc1", "relu3"]])
    prepared = ember.ao.quantization.prepare(fused)
    with ember.no_grad():
        for x in calibration:
            prepared(x)
    return ember.ao.quantization.convert(prepared)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--temperature", type=float, default=4.0)
    p.add_argument("--alpha", type=float, default=0.7, help="weight of the teacher's soft targets")
    p.add_argument("--quantize", choices=("static", "dynamic"), default="static")
    p.add_argument("--synthetic", action="store_true", help="synthetic images instead of the digits")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    ember.manual_seed(args.seed)
    x, y, what = load_images(args.synthetic, args.seed)
    n_train = int(len(y) * 0.8)
    xtr, ytr = ember.tensor(x[:n_train]), ember.tensor(y[:n_train])
    xte, yte = ember.tensor(x[n_train:]), ember.tensor(y[n_train:])
    loader = DataLoader(TensorDataset(xtr, ytr), batch_size=args.batch_size, shuffle=True,
                        generator=ember.Generator().manual_seed(args.seed))
    print(f"data: {what}, {n_train} training and {len(y) - n_train} test images")

    t0 = time.perf_counter()
    teacher = train(Net(width=24), loader, args.epochs, args.lr).eval()
    student = train(Net(width=8), loader, args.epochs, args.lr, teacher, args.temperature, args.alpha).eval()
    calibration = [xtr[i:i + args.batch_size] for i in range(0, min(n_train, 8 * args.batch_size), args.batch_size)]
    quantized = quantize(student, args.quantize, calibration)
    print(f"quantized student ({args.quantize}):")
    print("  " + repr(quantized).replace("\n", "\n  "))
    rows = [("teacher", teacher), ("student", student), (f"student, int8 ({args.quantize})", quantized)]
    for name, model in rows:
        print(f"{name:28s} test accuracy {accuracy(model, xte, yte) * 100:5.1f}%   state_dict {size_kb(model):7.1f} KB")
    print(f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
