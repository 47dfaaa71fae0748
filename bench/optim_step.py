"""Optimizer step time, ember against PyTorch, each in a process of its own.

    python -m bench.optim_step [--quick] [--self-check] [--rounds 3]

The model: 100 float32 parameter tensors of mixed sizes (50 weight matrices from 16x16 to 512x512 and
their biases, about 1.3 M elements), gradients set once.  Each row times ``optimizer.step()`` only.
ember runs its default multi-tensor path (flat buffers); PyTorch runs with ``foreach=True`` (its
multi-tensor path) and, as a third side, with its default (which is the single-tensor loop on CPU).
2 threads each; a process per side, rounds in rotating order, medians; ratios are PyTorch/ember (> 1: ember is
faster); ``bench/_timing.py`` explains the harness.
"""
from __future__ import annotations

import numpy as np

from bench._timing import Bench, Side, Workload, run

SIZES = [16, 32, 64, 96, 128, 192, 256, 384, 512, 48]


def shapes(quick):
    dims = SIZES[:4] if quick else SIZES
    out = []
    for i in range(50):
        a, b = dims[i % len(dims)], dims[(i * 7 + 3) % len(dims)]
        out += [(a, b), (a,)]
    return out


FOREACH = {}  # PyTorch's side with foreach=True sets it (in its own process)


def _use_foreach(lib):
    FOREACH["foreach"] = True


def make(lib, name, kwargs, quick):
    rng = np.random.default_rng(0)
    params = []
    for s in shapes(quick):
        p = lib.nn.Parameter(lib.tensor(rng.standard_normal(s).astype(np.float32) * 0.1))
        p.grad = lib.tensor(rng.standard_normal(s).astype(np.float32))
        params.append(p)
    opt = getattr(lib.optim, name)(params, **kwargs, **(FOREACH if lib.__name__ == "torch" else {}))
    opt.step()  # state made outside the timing
    return opt.step


OPTIMIZERS = {"SGD momentum=0.9": ("SGD", dict(lr=1e-3, momentum=0.9)),
              "Adam": ("Adam", dict(lr=1e-3)),
              "AdamW weight_decay=0.01": ("AdamW", dict(lr=1e-3, weight_decay=0.01)),
              "RMSprop": ("RMSprop", dict(lr=1e-3)),
              "Adagrad": ("Adagrad", dict(lr=1e-3))}


def _workload(name, kwargs):
    return Workload(lambda lib, quick: make(lib, name, kwargs, quick), 10, warm=1)


BENCH = Bench(__name__, __doc__, {label: _workload(name, kw) for label, (name, kw) in OPTIMIZERS.items()},
              sides=(Side("ember", "ember"), Side("torch foreach", "torch", _use_foreach),
                     Side("torch default", "torch")), per_workload=False,
              notes=[f"full run: {len(shapes(False))} tensors, {sum(int(np.prod(s)) for s in shapes(False)) / 1e6:.2f}"
                     " M elements, float32"])


def main(argv=None):
    run(BENCH, argv)


if __name__ == "__main__":
    main()
