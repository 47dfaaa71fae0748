"""Per-call overhead of small ops, ember against PyTorch, each in a process of its own.

    python -m bench.op_overhead [--quick] [--self-check] [--rounds 3]

Each workload runs on 16x16 float32 tensors with one thread; every round starts one process per framework
(alternating which goes first), each times every workload (median of blocks of 2000 calls). The table gives the
median microseconds per call over rounds and the ratio PyTorch/ember (> 1: ember is faster), and below it the
geometric mean of the ratios.
"""
from __future__ import annotations

import numpy as np

from bench._timing import Bench, Workload, print_geomean, run


def _tensors(lib):
    a = lib.tensor(np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32))
    b = lib.tensor(np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32))
    idx = lib.tensor([0, 3, 5])
    return a, b, idx


def _make(expr):
    """A workload calling ``expr(a, b, idx)`` on the two 16x16 tensors and a small index tensor."""
    def make(lib, quick):
        a, b, idx = _tensors(lib)
        return lambda: expr(a, b, idx)
    return make


def _mul_chain(a, b, idx):
    x = a
    for _ in range(10):
        x = x * b
    return x


OPS = {
    "add 16x16": lambda a, b, idx: a + b,
    "mul chain of 10": _mul_chain,
    "matmul 16x16": lambda a, b, idx: a @ b,
    "sum": lambda a, b, idx: a.sum(),
    "sum(dim=1)": lambda a, b, idx: a.sum(1),
    "index a[2:5, 1]": lambda a, b, idx: a[2:5, 1],
    "index a[idx]": lambda a, b, idx: a[idx],
    "view(-1)": lambda a, b, idx: a.view(-1),
    "relu": lambda a, b, idx: a.relu(),
    "add_ in place": lambda a, b, idx: a.add_(0.0),
}
BENCH = Bench(__name__, __doc__,
              {name: Workload(_make(op), 2000, warm=100, quick_number=50) for name, op in OPS.items()},
              threads=1, blocks=7, unit="us", per_workload=False)


def main(argv=None):
    print_geomean(run(BENCH, argv))


if __name__ == "__main__":
    main()
