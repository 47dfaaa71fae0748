"""DataLoader throughput, ember against PyTorch, each in a process of its own.

    python -m bench.dataloader [--quick] [--self-check] [--rounds 3]

The dataset does some NumPy work per item (a 3x32x32 float32 "image" built from a seeded random field,
smoothed and normalised: about 0.2 ms), batch size 32, shuffled; one epoch of 48 batches with 0 and 2
worker processes.  Each row is milliseconds per whole epoch (workers started inside the timing, as a training
loop pays for them every epoch without persistent_workers); a process per workload and framework, rounds in
alternating order, medians; the ratio is PyTorch/ember time (> 1: ember is faster); ``bench/_timing.py``
explains the harness.
"""
from __future__ import annotations

import importlib

import numpy as np

from bench._timing import Bench, Workload, run


class Images:
    """A map-style dataset with some per-item work (works with either library's DataLoader)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        x = rng.standard_normal((3, 34, 34)).astype(np.float32)
        x = (x[:, :-2, :-2] + x[:, 1:-1, 1:-1] + x[:, 2:, 2:]) / 3      # a little smoothing
        x = (x - x.mean()) / (x.std() + 1e-5)
        return x, i % 10


def epoch(workers):
    def make(lib, quick):
        ud = importlib.import_module(f"{lib.__name__}.utils.data")
        batches = 4 if quick else 48
        g = lib.Generator().manual_seed(0)
        dataset = Images(batches * 32)

        def one_epoch():
            for _ in ud.DataLoader(dataset, batch_size=32, shuffle=True, num_workers=workers, generator=g):
                pass
        return one_epoch
    return make


BENCH = Bench(__name__, __doc__, {"epoch of 48 batches, 0 workers": Workload(epoch(0), 1, warm=1),
                                  "epoch of 48 batches, 2 workers": Workload(epoch(2), 1, warm=1)})


def main(argv=None):
    run(BENCH, argv)


if __name__ == "__main__":
    main()
