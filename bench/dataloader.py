"""DataLoader throughput, ember against PyTorch in the same run.

    python -m bench.dataloader [--quick]

The dataset does some NumPy work per item (a 3x32x32 float32 "image" built from a seeded random field,
smoothed and normalised: about 0.2 ms), batch size 32, shuffled; one epoch of 48 batches with 0 and 2
worker processes.  Each row is batches per second over whole epochs (workers started inside the timing,
as a training loop pays for them every epoch without persistent_workers), medians of interleaved runs;
the ratio is ember/PyTorch throughput (> 1: ember is faster).
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")

import importlib  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from bench._timing import import_torch, parse_args  # noqa: E402


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


def epoch(lib, ud, workers, batches, batch_size):
    g = lib.Generator().manual_seed(0)
    dl = ud.DataLoader(Images(batches * batch_size), batch_size=batch_size, shuffle=True, num_workers=workers,
                       generator=g)
    t0 = time.perf_counter()
    n = 0
    for x, y in dl:
        n += 1
    return n / (time.perf_counter() - t0)


def main(argv=None):
    args = parse_args(__doc__, argv, 5, repeat_name="repeats")
    import ember
    import ember.utils.data as eud
    torch = import_torch(2)
    tud = None if torch is None else importlib.import_module("torch.utils.data")
    batches, repeats = (4, 1) if args.quick else (48, args.repeats)
    print(f"{'workers':<10} {'ember batches/s':>16} {'torch batches/s':>16} {'ember/torch':>12}")
    for workers in (0, 2):
        es, ts = [], []
        for _ in range(repeats):
            es.append(epoch(ember, eud, workers, batches, 32))
            if torch is not None:
                ts.append(epoch(torch, tud, workers, batches, 32))
        e = statistics.median(es)
        if ts:
            t = statistics.median(ts)
            print(f"{workers:<10} {e:>16.1f} {t:>16.1f} {e / t:>12.2f}")
        else:
            print(f"{workers:<10} {e:>16.1f}")


if __name__ == "__main__":
    main()
