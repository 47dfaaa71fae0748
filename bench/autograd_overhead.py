"""Forward + backward overhead of small graphs, ember against PyTorch, each in a process of its own.

    python -m bench.autograd_overhead [--quick] [--self-check] [--rounds 3]

Workloads (float32, 1 thread): a chain of 20 elementwise ops on 64x64, and a 3-layer MLP
(784-128-64-10, batch 32, written with matmul/add/relu, no ``nn``), each forward + backward.
Prints median ms per step and the ratio PyTorch/ember (> 1: ember is faster); ``bench/_timing.py`` explains
the harness.
"""
from __future__ import annotations

import numpy as np

from bench._timing import Bench, Workload, run


def chain(lib, quick):
    x = lib.tensor(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32), requires_grad=True)

    def step():
        y = x
        for i in range(5):
            y = (y * 1.01 + 0.5).tanh() * y.sigmoid()
        y.sum().backward()
        x.grad = None
    return step


def mlp(lib, quick):
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


BENCH = Bench(__name__, __doc__, {
    "chain of 20 elementwise ops 64x64": Workload(chain, 100, warm=5, quick_number=5),
    "MLP 784-128-64-10 batch 32": Workload(mlp, 100, warm=5, quick_number=5),
}, threads=1, blocks=7, per_workload=False)


def main(argv=None):
    run(BENCH, argv)


if __name__ == "__main__":
    main()
