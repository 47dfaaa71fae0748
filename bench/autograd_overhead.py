"""Forward + backward overhead of small graphs, ember against PyTorch in the same process.

    python -m bench.autograd_overhead [--quick]

Workloads (float32, 1 thread): a chain of 20 elementwise ops on 64x64, and a 3-layer MLP
(784-128-64-10, batch 32, written with matmul/add/relu since ``nn`` comes later), each forward + backward.
Prints median ms per step and the ratio PyTorch/ember (> 1: ember is faster).
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from bench._timing import import_torch, parse_args, run_table  # noqa: E402


def chain(lib):
    x = lib.tensor(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32), requires_grad=True)

    def step():
        y = x
        for i in range(5):
            y = (y * 1.01 + 0.5).tanh() * y.sigmoid()
        y.sum().backward()
        x.grad = None
    return step


def mlp(lib):
    rng = np.random.default_rng(0)

    def p(*shape):
        return lib.tensor((rng.standard_normal(shape) * 0.05).astype(np.float32), requires_grad=True)
    w1, b1, w2, b2, w3, b3 = p(784, 128), p(128), p(128, 64), p(64), p(64, 10), p(10)
    x = lib.tensor(rng.standard_normal((32, 784)).astype(np.float32))

    def step():
        h = (x @ w1 + b1).relu()
        h = (h @ w2 + b2).relu()
        out = h @ w3 + b3
        loss = (out * out).mean()
        loss.backward()
        for t in (w1, b1, w2, b2, w3, b3):
            t.grad = None
    return step


WORKLOADS = {"chain of 20 elementwise ops 64x64": chain, "MLP 784-128-64-10 batch 32": mlp}


def main(argv=None):
    args = parse_args(__doc__, argv, 7)
    torch = import_torch(1)
    blocks, number = (2, 5) if args.quick else (args.blocks, 100)
    run_table(WORKLOADS, (), blocks, number, digits=3, torch=torch)

if __name__ == "__main__":
    main()
