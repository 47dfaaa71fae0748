"""ember.distributed's cost: all_reduce bandwidth against raw mpi4py, and a DDP training step against
PyTorch's DDP on gloo, 2 ranks each.

    python -m bench.distributed [--quick] [--rounds 3]

all_reduce: one job of 2 ranks (``python -m ember.distributed.run``) times ``dist.all_reduce`` and mpi4py's
``Allreduce`` on the same float32 buffer of 1 MB and 100 MB, alternating, medians; the ratio is mpi4py time /
ember time (1.0: no overhead). DDP: the same script (bench/_dist_ranks.py, written against ``torch``) runs
under PyTorch's ``torch.distributed.run`` and under ember's launcher, jobs alternating for ``--rounds``
rounds; each job reports the median step time of rank 0; the ratio is PyTorch / ember (> 1: ember faster).
Every rank runs with 1 thread (the launchers' default for several ranks per machine).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from bench._timing import machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _job(launcher: list[str], args: list[str]) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONUNBUFFERED", None)
    cmd = [sys.executable, "-m", *launcher, "--nproc-per-node", "2", os.path.join(ROOT, "bench", "_dist_ranks.py"),
           *args]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a short smoke run (CI)")
    ap.add_argument("--rounds", type=int, default=3, help="DDP jobs per framework, alternating")
    args = ap.parse_args(argv)
    quick = ["--quick"] if args.quick else []
    print(f"machine: {machine()}; 2 ranks, 1 thread each")
    sizes = ["1", "8"] if args.quick else ["1", "100"]
    res = _job(["ember.distributed.run"], ["allreduce", *sizes, *quick])
    print("\n| all_reduce, float32 | ember ms | mpi4py ms | ember GB/s | mpi4py/ember |")
    print("|---|---|---|---|---|")
    for mb in sizes:
        r = res[str(float(mb))]
        print(f"| {mb} MB | {r['ember_s'] * 1e3:.3f} | {r['mpi4py_s'] * 1e3:.3f} | "
              f"{float(mb) * 2**20 / r['ember_s'] / 1e9:.2f} | {r['mpi4py_s'] / r['ember_s']:.2f} |")
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        print("\n(PyTorch not installed: no DDP comparison)")
        return
    ours, theirs = [], []
    for i in range(1 if args.quick else args.rounds):
        order = [("ember", ["ember.distributed.run"]), ("torch", ["torch.distributed.run"])]
        for name, launcher in (order if i % 2 == 0 else order[::-1]):
            (ours if name == "ember" else theirs).append(_job(launcher, ["ddp", *quick])["step_s"])
    e, t = statistics.median(ours), statistics.median(theirs)
    print("\n| DDP step, MLP 784-512-512-10, 64 rows/rank, SGD | PyTorch (gloo) ms | ember (MPI) ms | PyTorch/ember |")
    print("|---|---|---|---|")
    print(f"| 2 ranks | {t * 1e3:.2f} | {e * 1e3:.2f} | {t / e:.2f} |")


if __name__ == "__main__":
    main()
