"""Optimizer step time, ember against PyTorch in the same process.

    python -m bench.optim_step [--quick]

The model: 100 float32 parameter tensors of mixed sizes (50 weight matrices from 16x16 to 512x512 and
their biases, about 2.9 M elements), gradients set once.  Each row times ``optimizer.step()`` only.
ember runs its default multi-tensor path (flat buffers); PyTorch runs with ``foreach=True`` (its
multi-tensor path) and, in the last column, with its default (which is the single-tensor loop on CPU).
2 threads each, interleaved blocks, medians; ratios are PyTorch/ember (> 1: ember is faster).
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")

import numpy as np  # noqa: E402

from bench._timing import import_torch, interleaved, parse_args  # noqa: E402

SIZES = [16, 32, 64, 96, 128, 192, 256, 384, 512, 48]


def shapes(quick):
    dims = SIZES[:4] if quick else SIZES
    out = []
    for i in range(50):
        a, b = dims[i % len(dims)], dims[(i * 7 + 3) % len(dims)]
        out += [(a, b), (a,)]
    return out


def make(lib, name, kwargs, quick, **extra):
    rng = np.random.default_rng(0)
    params = []
    for s in shapes(quick):
        p = lib.nn.Parameter(lib.tensor(rng.standard_normal(s).astype(np.float32) * 0.1))
        p.grad = lib.tensor(rng.standard_normal(s).astype(np.float32))
        params.append(p)
    opt = getattr(lib.optim, name)(params, **kwargs, **extra)
    opt.step()  # state made outside the timing
    return opt.step


OPTIMIZERS = {"SGD momentum=0.9": ("SGD", dict(lr=1e-3, momentum=0.9)),
              "Adam": ("Adam", dict(lr=1e-3)),
              "AdamW weight_decay=0.01": ("AdamW", dict(lr=1e-3, weight_decay=0.01)),
              "RMSprop": ("RMSprop", dict(lr=1e-3)),
              "Adagrad": ("Adagrad", dict(lr=1e-3))}


def main(argv=None):
    args = parse_args(__doc__, argv, 7)
    import ember
    torch = import_torch(2)
    blocks, number = (1, 1) if args.quick else (args.blocks, 10)
    n = sum(int(np.prod(s)) for s in shapes(args.quick))
    print(f"{len(shapes(args.quick))} tensors, {n / 1e6:.2f} M elements, float32")
    print(f"{'optimizer':<26} {'ember ms':>9} {'torch foreach ms':>17} {'ratio':>6} {'torch default ms':>17} "
          f"{'ratio':>6}")
    for label, (name, kw) in OPTIMIZERS.items():
        e_step = make(ember, name, kw, args.quick)
        if torch is None:
            e, _ = interleaved(e_step, None, blocks, number)
            print(f"{label:<26} {e * 1e3:>9.3f}")
            continue
        e, tf = interleaved(e_step, make(torch, name, kw, args.quick, foreach=True), blocks, number)
        _, td = interleaved(lambda: None, make(torch, name, kw, args.quick), blocks, number)
        print(f"{label:<26} {e * 1e3:>9.3f} {tf * 1e3:>17.3f} {tf / e:>6.2f} {td * 1e3:>17.3f} {td / e:>6.2f}")


if __name__ == "__main__":
    main()
