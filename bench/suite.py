"""The standard workloads, ember against PyTorch in one run.

    python -m bench.suite [--quick] [--blocks 5]

Each workload runs on ember and on PyTorch side by side (2 threads each, interleaved blocks, the median
of the blocks) and prints ms per step and the ratio PyTorch/ember (> 1 means ember is faster):

- per-op overhead: a 16x16 ``add``; a tiny ``(a * b).sum().backward()``;
- GEMM 512x512x512 float32 (and its GFLOP/s against NumPy's BLAS, printed below the table);
- MLP 784-512-512-10, batch 128, SGD with momentum (forward, backward, step);
- LeNet-5 on 64x1x28x28 (training step, Adam);
- a ResNet-style stack: 3->64 conv, two residual blocks with BatchNorm, on 32x3x32x32 (training step, SGD);
- a GPT: 4 layers, d=128, 4 heads, context 64, batch 16, AdamW (training step);
- an LSTM LM: embedding 1000x128, LSTM 128->256, sequence 35, batch 20 (training step, SGD).

``--quick`` shrinks every workload and runs one block: a smoke run for CI (nothing is asserted on times).
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")

import ember  # noqa: E402 - before NumPy, as a PyTorch script imports torch first (ember/_startup.py)
import numpy as np  # noqa: E402

from bench._timing import import_torch, interleaved, parse_args  # noqa: E402


def add_16(lib, quick):
    a, b = lib.ones(16, 16), lib.ones(16, 16)
    return lambda: a + b


def tiny_backward(lib, quick):
    a = lib.ones(4, requires_grad=True)
    b = lib.ones(4, requires_grad=True)

    def step():
        (a * b).sum().backward()
    return step


def gemm(lib, quick):
    n = 64 if quick else 512
    rng = np.random.default_rng(0)
    a = lib.tensor(rng.standard_normal((n, n)).astype(np.float32))
    b = lib.tensor(rng.standard_normal((n, n)).astype(np.float32))
    return lambda: a @ b


def _train_step(lib, model, opt, x, y):
    F = lib.nn.functional

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return step


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
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.integers(0, vocab, (batch, ctx)))
    y = lib.tensor(rng.integers(0, vocab, (batch, ctx)))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1)).backward()
        opt.step()
    return step


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
    return step


WORKLOADS = [
    ("add 16x16 (per-op overhead)", add_16, 2000, 1),
    ("tiny (a*b).sum().backward()", tiny_backward, 500, 1),
    ("GEMM 512x512x512 fp32", gemm, 20, 2),
    ("MLP 784-512-512-10 b128 SGD-mom", mlp, 10, 2),
    ("LeNet-5 64x1x28x28 Adam", lenet, 5, 2),
    ("ResNet stack 32x3x32x32 SGD", resnet_stack, 2, 2),
    ("GPT 4L d128 h4 ctx64 b16 AdamW", gpt, 2, 2),
    ("LSTM LM 35x20 128->256 v1000 SGD", lstm_lm, 2, 2),
]


def main(argv=None):
    args = parse_args(__doc__, argv, 5)
    ember.set_num_threads(2)
    torch = import_torch(2)
    print(f"ember {ember.__version__}" + (f" vs PyTorch {torch.__version__}" if torch else "") +
          ", 2 threads each, median of interleaved blocks")
    print(f"CPU capability {ember.backends.cpu.get_cpu_capability()}; OpenBLAS: {ember._cpu_capability.blas_note}")
    print(f"{'workload':<36} {'ember ms':>10} {'torch ms':>10} {'torch/ember':>12}")
    rows = []
    for name, make, number, warm in WORKLOADS:
        number = 1 if args.quick else number
        blocks = 1 if args.quick else args.blocks
        e_fn = make(ember, args.quick)
        t_fn = make(torch, args.quick) if torch else None
        for _ in range(warm):
            e_fn()
            if t_fn:
                t_fn()
        e, t = interleaved(e_fn, t_fn, blocks, number)
        rows.append((name, e, t))
        if t is None:
            print(f"{name:<36} {e * 1e3:>10.3f}")
        else:
            print(f"{name:<36} {e * 1e3:>10.3f} {t * 1e3:>10.3f} {t / e:>12.2f}", flush=True)
    n = 64 if args.quick else 512
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    ea = ember.tensor(a)
    reps = 2 if args.quick else 20
    blocks = 1 if args.quick else args.blocks
    # ember's matmul and NumPy's, timed the same way (interleaved blocks, medians)
    e_time, np_time = interleaved(lambda: ea @ ea, lambda: a @ a, blocks, reps)
    flop = 2 * n ** 3
    print(f"GEMM {n}^3 fp32: ember {flop / e_time / 1e9:.1f} GFLOP/s, NumPy's BLAS {flop / np_time / 1e9:.1f} "
          f"GFLOP/s (ember/NumPy {np_time / e_time:.2f})")


if __name__ == "__main__":
    main()
