"""Ops PyTorch writes in other operators, and ember now too (so that a dispatch mode sees PyTorch's calls),
ember against PyTorch, each in a process of its own.

    python -m bench.decomposed_ops [--quick] [--self-check] [--rounds 3]

Each workload is one forward call on float32 tensors with one thread; every round starts one process per
framework (alternating which goes first), each times every workload (median of blocks of calls). The table gives
the median microseconds per call over rounds and the ratio PyTorch/ember (> 1: ember is faster), then the
geometric mean of the ratios. ember pays its per-op dispatch once per operator of the decomposition, PyTorch a
C++ call: these ratios follow ``bench.op_overhead``'s.
"""
from __future__ import annotations

import numpy as np

from bench._timing import Bench, Workload, print_geomean, run


def _make(expr, shape):
    """A workload calling ``expr(lib, x, y)`` on two float32 tensors of ``shape``."""
    def make(lib, quick):
        rng = np.random.default_rng(0)
        s = tuple(min(d, 8) for d in shape) if quick else shape
        x = lib.tensor(rng.standard_normal(s).astype(np.float32))
        y = lib.tensor(rng.standard_normal(s).astype(np.float32))
        return lambda: expr(lib, x, y)
    return make


OPS = {
    "repeat_interleave 256x256 x2": (lambda L, x, y: L.repeat_interleave(x, 2, dim=1), (256, 256)),
    "nanmean 256x256 dim=1": (lambda L, x, y: L.nanmean(x, 1), (256, 256)),
    "tensordot 64x64 . 64x64": (lambda L, x, y: L.tensordot(x, y, 1), (64, 64)),
    "kron 16x16 (x) 16x16": (lambda L, x, y: L.kron(x, y), (16, 16)),
    "float_power 256x256 ^2": (lambda L, x, y: L.float_power(x, 2), (256, 256)),
    "cdist 64x8, 64x8": (lambda L, x, y: L.cdist(x, y), (64, 8)),
    "quantile 256x256 q=0.3 dim=1": (lambda L, x, y: L.quantile(x, 0.3, dim=1), (256, 256)),
    "cov 64x64": (lambda L, x, y: L.cov(x), (64, 64)),
    "matmul vector 64 @ 64x64": (lambda L, x, y: L.matmul(x[0], y), (64, 64)),
    "einsum ij,jk->ik 64x64 (grad)": (lambda L, x, y: L.einsum("ij,jk->ik", x.requires_grad_(), y), (64, 64)),
    "linalg.det 3x3": (lambda L, x, y: L.linalg.det(x[:3, :3]), (64, 64)),
    "linalg.det 1000 x 3x3": (lambda L, x, y: L.linalg.det(x[:x.shape[0] // 3 * 3].reshape(-1, 3, 3)), (3000, 3)),
    "linalg.solve 64x64, 64x8": (lambda L, x, y: L.linalg.solve(x, y[:, :8]), (64, 64)),
    "linalg.svdvals 64x64": (lambda L, x, y: L.linalg.svdvals(x), (64, 64)),
}
BENCH = Bench(__name__, __doc__,
              {name: Workload(_make(op, shape), 200, warm=20, quick_number=5) for name, (op, shape) in OPS.items()},
              threads=1, blocks=7, unit="us", per_workload=False)


def main(argv=None):
    print_geomean(run(BENCH, argv))


if __name__ == "__main__":
    main()
