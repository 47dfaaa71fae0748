"""Sparse x dense products against the dense product, ember against PyTorch, each in a process of its own.

    python -m bench.sparse [--quick] [--self-check] [--rounds 3]

A 4096 x 4096 float32 matrix with 1% or 10% of its elements non-zero (uniformly placed, a fixed seed; 1024 x 1024
in a quick run) times a dense 4096 x 64 matrix. ``sparse`` rows: ``torch.sparse.mm`` of the coalesced COO matrix;
``dense`` rows: ``torch.mm`` of the same matrix stored densely; ``backward`` row: forward and backward of
``torch.sparse.mm`` at 1% (the masked gradient of the sparse values and the dense gradient). ms per call; 2
threads each; ratios are PyTorch/ember (> 1: ember is faster); ``bench/_timing.py`` explains the harness.
"""
from __future__ import annotations

import numpy as np

from bench._timing import Bench, Workload, run


def _matrices(lib, quick, density):
    n = 1024 if quick else 4096
    rng = np.random.default_rng(0)
    nnz = int(n * n * density)
    flat = rng.choice(n * n, size=nnz, replace=False)
    idx = np.stack([flat // n, flat % n]).astype(np.int64)
    vals = rng.standard_normal(nnz).astype(np.float32)
    s = lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(vals), (n, n)).coalesce()
    d = lib.tensor(rng.standard_normal((n, 64)).astype(np.float32))
    return s, d


def _sparse(density):
    def make(lib, quick):
        s, d = _matrices(lib, quick, density)
        return lambda: lib.sparse.mm(s, d)
    return make


def _dense(density):
    def make(lib, quick):
        s, d = _matrices(lib, quick, density)
        full = s.to_dense()
        return lambda: lib.mm(full, d)
    return make


def sparse_backward(lib, quick):
    s, d = _matrices(lib, quick, 0.01)
    s.requires_grad_(True)
    d.requires_grad_(True)

    def step():
        s.grad = d.grad = None
        lib.sparse.mm(s, d).sum().backward()
    return step


BENCH = Bench(__name__, __doc__, {
    "4096x4096 @ 4096x64, 1%: sparse.mm": Workload(_sparse(0.01), 10, warm=2),
    "4096x4096 @ 4096x64, 1%: dense mm": Workload(_dense(0.01), 3, warm=1),
    "4096x4096 @ 4096x64, 10%: sparse.mm": Workload(_sparse(0.10), 2, warm=1),
    "4096x4096 @ 4096x64, 10%: dense mm": Workload(_dense(0.10), 3, warm=1),
    "4096x4096 @ 4096x64, 1%: sparse.mm fwd+bwd": Workload(sparse_backward, 3, warm=1),
})


def main(argv=None):
    run(BENCH, argv)


if __name__ == "__main__":
    main()
