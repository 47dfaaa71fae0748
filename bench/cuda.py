"""The standard workloads on the GPU: ember (CuPy) against PyTorch (CUDA), each framework in a process of its own.

    python -m bench.cuda [--quick] [--self-check] [--rounds 2] [--blocks 5] [--only TEXT] [--markdown]

The workloads are ``bench.suite``'s, unchanged: each side sets its default device to ``cuda`` before building
them (``set_default_device``), so models, data and optimizer state are made on the GPU, and every timed block
ends with ``cuda.synchronize()``, so queued kernels finish inside the clock. Two more measure the device itself: a
4096x4096x4096 float32 GEMM and an elementwise add of 2^26 floats. The shapes are the CPU suite's: most of these
steps are a few hundred small kernels, so they measure the cost of launching each op from Python (ember) or C++
(PyTorch) more than the GPU's arithmetic. Needs a GPU with CuPy (ember) and PyTorch built with CUDA.
"""
from __future__ import annotations

from bench import suite
from bench._timing import Bench, Side, Workload, run


def _on_cuda(lib):
    lib.set_default_device("cuda")


def gemm_4096(lib, quick):
    return suite.square_gemm(lib, 256 if quick else 4096)


def add_big(lib, quick):
    a = lib.ones(1 << (16 if quick else 26))
    b = lib.ones(1 << (16 if quick else 26))
    return lambda: a + b


_GPU = {"GEMM 4096x4096x4096 fp32": Workload(gemm_4096, 10, warm=2),
        "add 2^26 fp32 (memory bound)": Workload(add_big, 20, warm=2)}

BENCH = Bench(__name__, __doc__, {**{k: w for k, w in suite.BENCH.workloads.items() if "GEMM" not in k}, **_GPU},
              sides=(Side("ember", "ember", _on_cuda), Side("torch", "torch", _on_cuda)),
              rounds=2, per_workload=False, sync=lambda lib: lib.cuda.synchronize())


def main(argv=None):
    import ember
    if not ember.cuda.is_available():
        raise SystemExit("bench.cuda needs a GPU: ember.cuda.is_available() is False (no CuPy, driver or device)")
    run(BENCH, argv)


if __name__ == "__main__":
    main()
