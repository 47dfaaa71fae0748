"""FFT and STFT throughput, ember against PyTorch, each framework in a process of its own.

    python -m bench.fft [--quick] [--self-check] [--rounds 5]

Each round starts one process per side (ember with SciPy's pocketfft, ember with NumPy's, PyTorch), in an order
that rotates from round to round; every process times each workload (median of blocks) and reports it. The table
gives the median over rounds, in milliseconds per call, and the ratio PyTorch/ember (> 1: ember is faster), with
the machine and the threads each side used; ``bench/_timing.py`` explains the harness.
"""
from __future__ import annotations

from bench._timing import Bench, Side, Workload, run


def _numpy_fft(lib):
    from ember.aten.kernels import spectral
    spectral._scipy_fft = False  # as if SciPy were not installed


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


def _workload(name):
    return Workload(lambda lib, quick: workloads(lib)[name], 20, warm=1, quick_number=2)


BENCH = Bench(__name__, __doc__, {name: _workload(name) for name in (
    "rfft 64x4096 float32", "irfft 64x2049 complex64", "fft 64x4096 complex64", "fft2 256x256 complex64",
    "stft 4x16000 n_fft=512 hop=128", "rfft + abs + backward 64x4096")},
    sides=(Side("ember", "ember"), Side("ember-numpy", "ember", _numpy_fft), Side("torch", "torch")),
    rounds=5, per_workload=False)


def main(argv=None):
    run(BENCH, argv)


if __name__ == "__main__":
    main()
