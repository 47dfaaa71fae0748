"""Memory over a long training run: resident set size after warm-up, at the end, and its growth, ember against
PyTorch, each framework in a process of its own, on the suite's training workloads (the same model code).

    python -m bench.memory [--quick] [--steps 1000] [--only TEXT]

A process imports its framework, builds the workload, runs a tenth of the steps (at least 20) as warm-up, then
the rest, reading its RSS (VmRSS) before the first measured step, every tenth of the way and at the end. A leak
shows as growth that keeps rising with the steps; allocator noise as a few MB that come and go. ``peak MB`` is
the process's high-water mark (VmHWM), import included. The ResNet stack is left out by default (1,000 of its
steps take minutes); ``--only ResNet`` runs it.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys

WORKLOADS = ["MLP 784-512-512-10 b128 SGD-mom", "LeNet-5 64x1x28x28 Adam", "GPT 4L d128 h4 ctx64 b16 AdamW",
             "LSTM LM 35x20 128->256 v1000 SGD", "Transformer encoder 2L d128 b16x64",
             "Conv autoencoder 64x1x28x28 Adam"]


def _child(framework: str, name: str, steps: int, quick: bool, threads: int) -> None:
    lib = importlib.import_module(framework)  # first, as in a script
    lib.set_num_threads(threads)
    from bench._timing import peak_rss_mb, rss_mb
    from bench.suite import BENCH
    step = BENCH.workloads[name].make(lib, quick)
    warm = max(20, steps // 10)
    for _ in range(warm):
        step()
    samples = [rss_mb()]
    rest = max(steps - warm, 1)
    every = max(rest // 10, 1)
    for i in range(1, rest + 1):
        step()
        if i % every == 0 or i == rest:
            samples.append(rss_mb())
    print(json.dumps({"samples": samples, "peak": peak_rss_mb(), "steps": warm + rest}))


def main(argv=None):
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--child":
        return _child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1", int(sys.argv[6]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a short smoke run (CI)")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="")
    args = ap.parse_args(argv)
    from bench._timing import _have_torch, machine
    from bench.suite import BENCH
    names = [n for n in (BENCH.workloads if args.only else WORKLOADS) if args.only in n]
    if args.quick and not args.only:
        names = [n for n in names if n.startswith(("MLP", "GPT"))]  # the smoke run: one with compiled kernels
    steps = 25 if args.quick else args.steps
    frameworks = ["ember"] + (["torch"] if _have_torch() else [])
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads),
               MKL_NUM_THREADS=str(args.threads))
    print(f"machine: {machine()}; {args.threads} threads each, a process per workload and framework")
    print(f"{'workload':<36} {'side':<6} {'steps':>6} {'RSS after warm-up MB':>21} {'RSS at end MB':>14} "
          f"{'growth MB':>10} {'max growth MB':>14} {'peak MB':>8}")
    for name in names:
        for fw in frameworks:
            cmd = [sys.executable, "-m", "bench.memory", "--child", fw, name, str(steps), "1" if args.quick else "0",
                   str(args.threads)]
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if p.returncode != 0:
                raise RuntimeError(f"memory child {fw} / {name} failed:\n{p.stderr}")
            rep = json.loads(p.stdout.strip().splitlines()[-1])
            s = rep["samples"]
            print(f"{name:<36} {fw:<6} {rep['steps']:>6} {s[0]:>21.1f} {s[-1]:>14.1f} {s[-1] - s[0]:>10.1f} "
                  f"{max(s) - s[0]:>14.1f} {rep['peak']:>8.0f}", flush=True)


if __name__ == "__main__":
    main()
