"""Elementwise ops, reductions and conversions on one float32 tensor, one op at a time, ember against PyTorch: the
ops NumPy runs one element at a time (selects, log1p / expm1 / erf, float16 casts, sums), which ember runs as
compiled loops (``docs/performance.md`` section 12).

    python -m bench.elementwise [--quick] [--self-check] [--rounds 3] [--only TEXT] [--markdown]

Each op on 1024 x 512 float32 values (2^19; group_norm and adaptive average pooling on 32 x 16 x 32 x 32), forward
only, 2 threads each, a process per framework and round holding every op (``bench/_timing.py`` explains the
harness), alternating, medians; microseconds per call.
"""
from __future__ import annotations

import numpy as np

from bench._timing import Bench, Workload, run


def _x(lib, quick, seed=0, positive=False):
    shape = (64, 512) if quick else (1024, 512)
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return lib.tensor(np.abs(a) + 0.1 if positive else a)


def _img(lib, quick):
    return lib.tensor(np.random.default_rng(3).standard_normal((2 if quick else 32, 16, 32, 32)).astype(np.float32))


def _op(f, make=_x):
    """A workload calling ``f(lib, x)`` on the tensor ``make`` builds."""
    def build(lib, quick):
        x = make(lib, quick)
        return lambda: f(lib, x)
    return build


def _where(lib, quick):
    x = _x(lib, quick)
    m = x > 0
    return lambda: lib.where(m, x, 0.0)


def _lerp(lib, quick):
    x, y = _x(lib, quick), _x(lib, quick, seed=1)
    return lambda: lib.lerp(x, y, 0.3)


def _bce(lib, quick):
    x, t = _x(lib, quick), _x(lib, quick, seed=1, positive=True).clamp(0, 1)
    return lambda: lib.nn.functional.binary_cross_entropy_with_logits(x, t)


_F = {
    "relu": lambda lib, x: lib.nn.functional.relu(x),
    "clamp(-1, 1)": lambda lib, x: x.clamp(-1, 1),
    "hardtanh": lambda lib, x: lib.nn.functional.hardtanh(x),
    "leaky_relu": lambda lib, x: lib.nn.functional.leaky_relu(x),
    "hardswish": lambda lib, x: lib.nn.functional.hardswish(x),
    "elu": lambda lib, x: lib.nn.functional.elu(x),
    "softplus": lambda lib, x: lib.nn.functional.softplus(x),
    "log-sigmoid": lambda lib, x: lib.nn.functional.logsigmoid(x),
    "mish": lambda lib, x: lib.nn.functional.mish(x),
    "tanh": lambda lib, x: x.tanh(),
    "erf": lambda lib, x: x.erf(),
    ".half()": lambda lib, x: x.half(),
    ".bfloat16()": lambda lib, x: x.bfloat16(),
    "sum (all)": lambda lib, x: x.sum(),
    "sum(dim=1)": lambda lib, x: x.sum(1),
    "2-norm(dim=1)": lambda lib, x: lib.linalg.vector_norm(x, dim=1),
    "cumsum(dim=1)": lambda lib, x: x.cumsum(1),
    "topk(5, dim=1)": lambda lib, x: x.topk(5, 1),
}
_WORKLOADS = {name: Workload(_op(f), 20, warm=3) for name, f in _F.items()}
_WORKLOADS.update({
    "pow(0.5)": Workload(_op(lambda lib, x: x.pow(0.5), lambda lib, q: _x(lib, q, positive=True)), 20, warm=3),
    "where(mask, x, 0)": Workload(_where, 20, warm=3),
    "lerp(x, y, 0.3)": Workload(_lerp, 20, warm=3),
    "BCE with logits": Workload(_bce, 20, warm=3),
    "group_norm(4 groups)": Workload(_op(lambda lib, x: lib.nn.functional.group_norm(x, 4), _img), 20, warm=3),
    "adaptive_avg_pool2d(1)": Workload(_op(lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, 1), _img), 20,
                                       warm=3),
    "pad(1, 1, 1, 1)": Workload(_op(lambda lib, x: lib.nn.functional.pad(x, (1, 1, 1, 1)), _img), 20, warm=3),
})

BENCH = Bench(__name__, __doc__, _WORKLOADS, unit="us", per_workload=False)


def main(argv=None):
    run(BENCH, argv)


if __name__ == "__main__":
    main()
