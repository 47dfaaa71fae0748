"""The standard workloads, ember against PyTorch, each framework in a process of its own.

    python -m bench.suite [--quick] [--self-check] [--rounds 3] [--blocks 5] [--only TEXT] [--markdown]

Every workload is the same model code for both frameworks (``lib`` is ``ember`` or ``torch``); each round starts a
process per workload and framework, alternating which goes first, and the table gives ms per step (median over
rounds of each process's median block), the ratio PyTorch/ember (> 1 means ember is faster) and each process's
peak RSS (``bench/_timing.py`` explains the harness):

- per-op overhead: a 16x16 ``add``; a tiny ``(a * b).sum().backward()``;
- GEMM 512x512x512 float32;
- MLP 784-512-512-10, batch 128, SGD with momentum (forward, backward, step);
- LeNet-5 on 64x1x28x28 (training step, Adam);
- a ResNet-style stack: 3->64 conv, two residual blocks with BatchNorm, on 32x3x32x32 (training step, SGD);
- a GPT: 4 layers, d=128, 4 heads, context 64, batch 16, AdamW (training step);
- an LSTM LM: embedding 1000x128, LSTM 128->256, sequence 35, batch 20 (training step, SGD);
- a Transformer-encoder classifier: embedding 1000x128, 2 ``nn.TransformerEncoderLayer`` (4 heads, ff 512,
  dropout 0.1), mean pooling, 10 classes, batch 16, sequence 64 (training step, AdamW);
- a convolutional autoencoder: Conv2d 1->16->32 (stride 2), ConvTranspose2d 32->16->1, on 64x1x28x28, MSE
  (training step, Adam).

``--quick`` shrinks every workload and runs one block: a smoke run for CI (nothing is asserted on times).
``--self-check`` runs PyTorch on both sides: its ratios show how far from 1.0 the harness's noise goes.
"""
from __future__ import annotations

import numpy as np

from bench._timing import Bench, Workload, run


def _compiled(lib, step):
    """The step as the workload runs it: ``lib.compile(step)`` -- the whole training step, optimizer included --
    when the side asks for it (``bench.compiled`` sets ``lib._bench_compile``), else the step itself."""
    return lib.compile(step) if getattr(lib, "_bench_compile", False) is True else step


def _model(lib, model):
    """The model as the workload calls it: ``lib.compile(model)`` when the side compiles only the model -- loss,
    ``backward()`` and ``optimizer.step()`` run eagerly around it, as most programs compile (``bench.compiled``
    sets ``lib._bench_compile = "model"``) -- else the model itself."""
    return lib.compile(model) if getattr(lib, "_bench_compile", False) == "model" else model


def add_16(lib, quick):
    a, b = lib.ones(16, 16), lib.ones(16, 16)
    return lambda: a + b


def tiny_backward(lib, quick):
    a = lib.ones(4, requires_grad=True)
    b = lib.ones(4, requires_grad=True)

    product = _model(lib, lambda: (a * b).sum())

    def step():
        product().backward()
    return _compiled(lib, step)


def gemm(lib, quick):
    return square_gemm(lib, 64 if quick else 512)


def square_gemm(lib, n):
    """``a @ b`` of two n x n float32 matrices."""
    rng = np.random.default_rng(0)
    a = lib.tensor(rng.standard_normal((n, n)).astype(np.float32))
    b = lib.tensor(rng.standard_normal((n, n)).astype(np.float32))
    return lambda: a @ b


def _train_step(lib, model, opt, x, y):
    F = lib.nn.functional
    model = _model(lib, model)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return _compiled(lib, step)


def _data(lib, shape, classes, seed=0):
    rng = np.random.default_rng(seed)
    return (lib.tensor(rng.standard_normal(shape).astype(np.float32)),
            lib.tensor(rng.integers(0, classes, shape[0])))


def mlp(lib, quick):
    lib.manual_seed(0)
    nn = lib.nn
    width, batch = (64, 16) if quick else (512, 128)
    model = nn.Sequential(nn.Linear(784, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return _train_step(lib, model, opt, *_data(lib, (batch, 784), 10))


def lenet(lib, quick):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    return _train_step(lib, model, opt, *_data(lib, (8 if quick else 64, 1, 28, 28), 10))


def resnet_stack(lib, quick):
    lib.manual_seed(0)
    nn = lib.nn
    F = nn.functional

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

        def forward(self, x):
            return F.relu(x + self.b2(self.c2(F.relu(self.b1(self.c1(x))))))

    c = 16 if quick else 64
    model = nn.Sequential(nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
                          Block(c), Block(c), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10))
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return _train_step(lib, model, opt, *_data(lib, (4 if quick else 32, 3, 32, 32), 10))


def gpt(lib, quick):
    lib.manual_seed(0)
    nn = lib.nn
    F = nn.functional
    d, heads, layers, ctx, batch, vocab = (32, 2, 1, 16, 2, 100) if quick else (128, 4, 4, 64, 16, 1000)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
            self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(lib.arange(idx.shape[1]))
            return self.head(self.ln(self.blocks(x)))

    model = GPT()
    opt = lib.optim.AdamW(model.parameters(), lr=3e-4)
    model = _model(lib, model)
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.integers(0, vocab, (batch, ctx)))
    y = lib.tensor(rng.integers(0, vocab, (batch, ctx)))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1)).backward()
        opt.step()
    return _compiled(lib, step)


def lstm_lm(lib, quick):
    lib.manual_seed(0)
    nn = lib.nn
    T, B, vocab, hid = (5, 4, 100, 32) if quick else (35, 20, 1000, 256)
    emb, rnn, dec = nn.Embedding(vocab, 128), nn.LSTM(128, hid), nn.Linear(hid, vocab)
    params = list(emb.parameters()) + list(rnn.parameters()) + list(dec.parameters())
    opt = lib.optim.SGD(params, lr=1.0)
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.integers(0, vocab, (T, B)))
    y = lib.tensor(rng.integers(0, vocab, (T * B,)))

    def step():
        opt.zero_grad()
        out, _ = rnn(emb(x))
        nn.functional.cross_entropy(dec(out).reshape(T * B, vocab), y).backward()
        opt.step()
    return _compiled(lib, step)


def encoder_classifier(lib, quick):
    lib.manual_seed(0)
    nn = lib.nn
    d, heads, ff, layers, seq, batch, vocab = (32, 2, 64, 1, 8, 2, 100) if quick else (128, 4, 512, 2, 64, 16, 1000)

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(lib.randn(1, seq, d) * 0.02)
            layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(d, 10)

        def forward(self, idx):
            return self.head(self.encoder(self.emb(idx) + self.pos).mean(dim=1))

    model = Classifier()
    opt = lib.optim.AdamW(model.parameters(), lr=3e-4)
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.integers(0, vocab, (batch, seq)))
    y = lib.tensor(rng.integers(0, 10, batch))
    return _train_step(lib, model, opt, x, y)


def conv_autoencoder(lib, quick):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                          nn.ConvTranspose2d(32, 16, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
                          nn.ConvTranspose2d(16, 1, 3, stride=2, padding=1, output_padding=1), nn.Sigmoid())
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    model = _model(lib, model)
    x = lib.tensor(np.random.default_rng(0).random((8 if quick else 64, 1, 28, 28)).astype(np.float32))

    def step():
        opt.zero_grad()
        lib.nn.functional.mse_loss(model(x), x).backward()
        opt.step()
    return _compiled(lib, step)


BENCH = Bench(__name__, __doc__, {
    "add 16x16 (per-op overhead)": Workload(add_16, 2000, warm=100, quick_number=10),
    "tiny (a*b).sum().backward()": Workload(tiny_backward, 500, warm=20, quick_number=5),
    "GEMM 512x512x512 fp32": Workload(gemm, 20, warm=2),
    "MLP 784-512-512-10 b128 SGD-mom": Workload(mlp, 10, warm=2),
    "LeNet-5 64x1x28x28 Adam": Workload(lenet, 5, warm=2),
    "ResNet stack 32x3x32x32 SGD": Workload(resnet_stack, 2, warm=2),
    "GPT 4L d128 h4 ctx64 b16 AdamW": Workload(gpt, 2, warm=2),
    "LSTM LM 35x20 128->256 v1000 SGD": Workload(lstm_lm, 2, warm=2),
    "Transformer encoder 2L d128 b16x64": Workload(encoder_classifier, 2, warm=2),
    "Conv autoencoder 64x1x28x28 Adam": Workload(conv_autoencoder, 3, warm=2),
})


def main(argv=None):
    run(BENCH, argv)


if __name__ == "__main__":
    main()
