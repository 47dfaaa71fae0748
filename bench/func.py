"""Per-example gradients with ``func.vmap(func.grad(...))`` against a Python loop of single-example backward
passes, and forward mode (``func.jvp``, ``func.jacfwd``), ember against PyTorch, each in a process of its own.

    python -m bench.func [--quick] [--self-check] [--rounds 3]

The model: a small CNN (Conv2d 1->8 3x3, ReLU, MaxPool 2, Conv2d 8->16 3x3, ReLU, MaxPool 2, Linear 400->10,
log-softmax) and NLL loss on a batch of 64 28x28 images (16 in a quick run). ``vmap`` rows: one call of
``vmap(grad(loss), in_dims=(None, 0, 0))`` over ``functional_call`` of the model; ``loop`` rows: for each example,
``zero_grad``, forward, ``backward()``, the gradients copied out. ``jvp`` row: the model's output and its
derivative along a random direction of the input batch, in one forward-mode pass. ``jacfwd`` row: the Jacobian of
an MLP (64 -> 128 -> tanh -> 32) at one input, a vmap of jvp over 64 directions. ms per call; 2 threads each; ratios are
PyTorch/ember (> 1: ember is faster); ``bench/_timing.py`` explains the harness.
"""
from __future__ import annotations

import numpy as np

from bench._timing import Bench, Workload, run


def _setup(lib, quick):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 10), nn.LogSoftmax(-1))
    n = 16 if quick else 64
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((n, 1, 28, 28)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, n))
    return model, x, y


def per_sample_vmap(lib, quick):
    model, x, y = _setup(lib, quick)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xb, yb):
        out = lib.func.functional_call(model, p, (xb.unsqueeze(0),))
        return lib.nn.functional.nll_loss(out, yb.unsqueeze(0))
    f = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))
    return lambda: f(params, x, y)


def per_sample_loop(lib, quick):
    model, x, y = _setup(lib, quick)
    params = list(model.parameters())

    def step():
        out = []
        for i in range(x.shape[0]):
            model.zero_grad()
            lib.nn.functional.nll_loss(model(x[i:i + 1]), y[i:i + 1]).backward()
            out.append([p.grad.clone() for p in params])
        return out
    return step


def forward_jvp(lib, quick):
    model, x, _ = _setup(lib, quick)
    v = lib.tensor(np.random.default_rng(1).standard_normal(tuple(x.shape)).astype(np.float32))
    return lambda: lib.func.jvp(model, (x,), (v,))


def forward_jacfwd(lib, quick):
    nn = lib.nn
    lib.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 32))
    x = lib.tensor(np.random.default_rng(2).standard_normal(64).astype(np.float32))
    f = lib.func.jacfwd(mlp)
    return lambda: f(x)


BENCH = Bench(__name__, __doc__, {
    "per-example grads, CNN b64: vmap(grad)": Workload(per_sample_vmap, 2, warm=2),
    "per-example grads, CNN b64: Python loop": Workload(per_sample_loop, 1, warm=1),
    "forward mode, CNN b64: jvp": Workload(forward_jvp, 3, warm=2),
    "forward mode, MLP Jacobian: jacfwd": Workload(forward_jacfwd, 5, warm=2),
})


def main(argv=None):
    run(BENCH, argv)


if __name__ == "__main__":
    main()
