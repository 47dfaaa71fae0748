"""Per-call overhead of small ops, ember against PyTorch in the same process.

    python -m bench.op_overhead [--quick]

Each workload runs on 16x16 float32 tensors with one thread, ember and PyTorch interleaved in blocks;
the table gives the median microseconds per call and the ratio PyTorch/ember (> 1: ember is faster).
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import ember  # noqa: E402
from bench._timing import import_torch, interleaved, parse_args  # noqa: E402


def workloads(lib):
    a = lib.tensor(np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32))
    b = lib.tensor(np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32))
    idx = lib.tensor([0, 3, 5])

    def mul_chain():
        x = a
        for _ in range(10):
            x = x * b
        return x

    return {
        "add 16x16": lambda: a + b,
        "mul chain of 10": mul_chain,
        "matmul 16x16": lambda: a @ b,
        "sum": lambda: a.sum(),
        "sum(dim=1)": lambda: a.sum(1),
        "index a[2:5, 1]": lambda: a[2:5, 1],
        "index a[idx]": lambda: a[idx],
        "view(-1)": lambda: a.view(-1),
        "relu": lambda: a.relu(),
        "add_ in place": lambda: a.add_(0.0),
    }


def main(argv=None):
    args = parse_args(__doc__, argv, 7)
    torch = import_torch(1)
    blocks, number = (2, 50) if args.quick else (args.blocks, 2000)
    ew = workloads(ember)
    tw = workloads(torch) if torch else {}
    print(f"{'workload':<20} {'ember us':>10} {'torch us':>10} {'torch/ember':>12}")
    ratios = []
    for name in ew:
        e, t = interleaved(ew[name], tw.get(name), blocks, number)
        e, t = e * 1e6, (t * 1e6 if t is not None else None)
        if t is not None:
            ratios.append(t / e)
            print(f"{name:<20} {e:>10.2f} {t:>10.2f} {t / e:>12.2f}")
        else:
            print(f"{name:<20} {e:>10.2f}")
    if ratios:
        gm = float(np.exp(np.mean(np.log(ratios))))
        print(f"{'geometric mean':<20} {'':>10} {'':>10} {gm:>12.2f}")


if __name__ == "__main__":
    main()
