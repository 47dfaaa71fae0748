"""What each layer of one call costs: ``a + b`` on 16x16 float32 tensors, timed from the NumPy ufunc up to the
public binding, each step adding one layer (ember only; ``docs/op-path.md`` explains the layers).

    python -m bench.op_layers [--quick]

Best of 7 repeats of 20,000 calls per row, one thread.
"""
from __future__ import annotations

import argparse
import os
import timeit

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a short smoke run (CI)")
    args = ap.parse_args(argv)
    import ember  # first, as in a script
    import numpy as np
    from bench._timing import describe, machine
    from ember._generated import aten
    from ember.c10.dispatch_key import DispatchKey
    from ember.aten import kernels as K
    from ember.aten.wrap import new_tensor

    ember.set_num_threads(1)
    a, b = ember.ones(16, 16), ember.ones(16, 16)
    an, bn, ks, op = a._data, b._data, a._ks | b._ks, aten._op_add_Tensor
    wrapper = op.kernels[DispatchKey.CPU]   # the generated backend wrapper of add.Tensor
    layers = [
        ("NumPy ufunc np.add", lambda: np.add(an, bn)),
        ("+ array kernel K.add (type promotion)", lambda: K.add(np, an, bn)),
        ("+ backend wrapper (result tensor)", lambda: wrapper(ks, a, b, 1)),
        ("+ dispatcher (no autograd kernel: no input requires grad)", lambda: op.call(ks, a, b, 1)),
        ("+ internal op API aten.add_Tensor", lambda: aten.add_Tensor(a, b)),
        ("+ Tensor operator a + b", lambda: a + b),
        ("binding ember.add(a, b)", lambda: ember.add(a, b)),
        ("(a result tensor alone: new_tensor)", lambda: new_tensor(an, ks, a._device)),
    ]
    number, repeat = (200, 2) if args.quick else (20000, 7)
    print(f"machine: {machine()}\n  {describe(ember)}")
    print(f"  dispatch: {' -> '.join(op.dispatch_trace(ks))}")
    for name, fn in layers:
        t = min(timeit.repeat(fn, number=number, repeat=repeat)) / number
        print(f"{name:<58} {t * 1e6:6.2f} us")


if __name__ == "__main__":
    main()
