"""FFT and STFT throughput, ember against PyTorch, each framework in a process of its own.

    python -m bench.fft [--quick] [--rounds N]

Each round starts one process per side (ember with SciPy's pocketfft, ember with NumPy's, PyTorch), in an order
that rotates from round to round; every process times each workload (median of blocks) and reports it. The table
gives the median over rounds, in milliseconds per call, and the ratio PyTorch/ember (> 1: ember is faster), with
the machine and the threads each side used.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys

from bench._timing import parse_args, time_block

SIDES = ("ember", "ember-numpy", "torch")


def workloads(lib):
    import numpy as np
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((64, 4096)).astype(np.float32))
    z = lib.complex(x, lib.tensor(rng.standard_normal((64, 4096)).astype(np.float32)))
    img = lib.complex(lib.tensor(rng.standard_normal((256, 256)).astype(np.float32)),
                      lib.tensor(rng.standard_normal((256, 256)).astype(np.float32)))
    spec = lib.fft.rfft(x)
    sig = lib.tensor(rng.standard_normal((4, 16000)).astype(np.float32))
    win = lib.hann_window(512)
    xg = x.clone().requires_grad_(True)

    def rfft_backward():
        lib.fft.rfft(xg).abs().sum().backward()

    return {
        "rfft 64x4096 float32": lambda: lib.fft.rfft(x),
        "irfft 64x2049 complex64": lambda: lib.fft.irfft(spec),
        "fft 64x4096 complex64": lambda: lib.fft.fft(z),
        "fft2 256x256 complex64": lambda: lib.fft.fft2(img),
        "stft 4x16000 n_fft=512 hop=128": lambda: lib.stft(sig, 512, 128, window=win, return_complex=True),
        "rfft + abs + backward 64x4096": rfft_backward,
    }


def worker(side: str, quick: bool) -> None:
    if side == "torch":
        import torch as lib
    else:
        import ember as lib
        if side == "ember-numpy":
            from ember.aten.kernels import spectral
            spectral._scipy_fft = False  # as if SciPy were not installed
    blocks, number = (1, 2) if quick else (5, 20)
    out = {}
    for name, fn in workloads(lib).items():
        fn()  # warm-up
        out[name] = statistics.median(time_block(fn, number) for _ in range(blocks))
    print(json.dumps({"threads": lib.get_num_threads(), "times": out}))


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
        cpu = next(ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model name"))
        cpu += ", AVX-512" if "avx512f" in info else ", no AVX-512"
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs"


def main(argv=None):
    if argv is None and len(sys.argv) > 2 and sys.argv[1] == "--worker":
        return worker(sys.argv[2], "--quick" in sys.argv)
    args = parse_args(__doc__, argv, 5, "rounds")
    rounds = 1 if args.quick else args.rounds
    try:
        import torch  # noqa: F401
        sides = list(SIDES)
    except ImportError:
        print("PyTorch is not installed: printing ember's numbers only")
        sides = [s for s in SIDES if s != "torch"]
    results: dict[str, list] = {s: [] for s in sides}
    threads = {}
    for r in range(rounds):
        for side in sides[r % len(sides):] + sides[:r % len(sides)]:  # rotate the order from round to round
            cmd = [sys.executable, "-m", "bench.fft", "--worker", side] + (["--quick"] if args.quick else [])
            p = subprocess.run(cmd, capture_output=True, text=True, check=True)
            rep = json.loads(p.stdout.strip().splitlines()[-1])
            threads[side] = rep["threads"]
            results[side].append(rep["times"])
    print(f"machine: {machine()}; threads: " + ", ".join(f"{s} {t}" for s, t in threads.items()))
    print(f"{'workload':<34} {'ember ms':>9} {'ember-numpy':>12} {'torch ms':>9} {'torch/ember':>12}")
    for name in results["ember"][0]:
        med = {s: statistics.median(rd[name] for rd in results[s]) * 1e3 for s in sides}
        t = med.get("torch")
        tail = f"{t:>9.3f} {t / med['ember']:>12.2f}" if t is not None else ""
        print(f"{name:<34} {med['ember']:>9.3f} {med['ember-numpy']:>12.3f} {tail}")


if __name__ == "__main__":
    main()
