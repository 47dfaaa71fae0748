"""nn layer steps, ember against PyTorch, each in a process of its own.

    python -m bench.nn_layers [--quick] [--self-check] [--rounds 3]

Workloads (float32, 2 threads each; a process per workload and framework, alternating, medians): Conv2d
forward + backward (ResNet-style 3x3, 64 -> 64 channels, padding 1, batch 32, 32x32), and a small CNN training
step (Conv-BN-ReLU-Pool x2, Linear, cross entropy) on 64x1x28x28, an LSTM language-model step and a
TransformerEncoderLayer step.
Prints ms per step, the ratio PyTorch/ember (> 1: ember is faster) and peak RSS; ``bench/_timing.py`` explains
the harness.
"""
from __future__ import annotations

import numpy as np

from bench._timing import Bench, Workload, run


def conv(lib, quick):
    lib.manual_seed(0)
    n, hw = (4, 16) if quick else (32, 32)
    m = lib.nn.Conv2d(64, 64, 3, padding=1)
    x = lib.tensor(np.random.default_rng(0).standard_normal((n, 64, hw, hw)).astype(np.float32), requires_grad=True)

    def step():
        m(x).sum().backward()
        m.zero_grad()
        x.grad = None
    return step


def cnn(lib, quick):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((64, 1, 28, 28)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, 64))

    def step():
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        model.zero_grad()
    return step


def lstm(lib, quick):
    """LSTM language-model step: embedding 1000 x 128, LSTM 128 -> 256, seq 35, batch 20, decoder, loss."""
    lib.manual_seed(0)
    nn = lib.nn
    T, B = (5, 4) if quick else (35, 20)
    emb, rnn, dec = nn.Embedding(1000, 128), nn.LSTM(128, 256), nn.Linear(256, 1000)
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.integers(0, 1000, (T, B)))
    y = lib.tensor(rng.integers(0, 1000, (T * B,)))

    def step():
        out, _ = rnn(emb(x))
        loss = nn.functional.cross_entropy(dec(out).reshape(T * B, 1000), y)
        loss.backward()
        for m in (emb, rnn, dec):
            m.zero_grad()
    return step


def encoder_layer(lib, quick):
    """TransformerEncoderLayer step: d_model 128, 4 heads, ff 512, batch 16, sequence 64, batch_first."""
    lib.manual_seed(0)
    nn = lib.nn
    B, S = (2, 8) if quick else (16, 64)
    layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True)
    x = lib.tensor(np.random.default_rng(0).standard_normal((B, S, 128)).astype(np.float32))

    def step():
        layer(x).pow(2).mean().backward()
        layer.zero_grad()
    return step


BENCH = Bench(__name__, __doc__, {
    "Conv2d 3x3 64ch b32 32x32 fwd+bwd": Workload(conv, 3, warm=1),
    "CNN step 64x1x28x28": Workload(cnn, 3, warm=1),
    "LSTM LM step 35x20, 128->256": Workload(lstm, 3, warm=1),
    "TransformerEncoderLayer step": Workload(encoder_layer, 3, warm=1),
})


def main(argv=None):
    run(BENCH, argv)


if __name__ == "__main__":
    main()
