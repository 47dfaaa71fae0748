"""The benchmarks stay runnable (smoke runs; no timing is asserted anywhere in the tests), and their harness
keeps each framework in a process of its own."""
import subprocess
import sys

import pytest

from tests.test_codegen import ROOT


@pytest.mark.parametrize("module", ["bench.op_overhead", "bench.autograd_overhead", "bench.nn_layers",
                                    "bench.optim_step", "bench.dataloader", "bench.suite", "bench.fft",
                                    "bench.op_layers", "bench.memory", "bench.nn_ops", "bench.distributed",
                                    "bench.quantization", "bench.profiler", "bench.decomposed_ops",
                                    "bench.import_time", "bench.accuracy", "bench.elementwise", "bench.func"])
def test_benchmark_smoke_run(module):
    r = subprocess.run([sys.executable, "-m", module, "--quick"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "ember" in r.stdout


def test_model_compiled_rows_compile_only_the_model():
    """bench.compiled's "model compiled" rows: the model compiled on the compiling sides, eager on PyTorch's eager
    side (a smoke run of the tiny row: PyTorch's side builds one Inductor kernel)."""
    pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
    r = subprocess.run([sys.executable, "-m", "bench.compiled", "--quick", "--only", "model compiled: tiny"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "model compiled: tiny" in r.stdout and "ember compiled" in r.stdout
    import ember
    from bench import suite
    for mode, compiled in ((False, False), ("model", True), (True, False)):
        ember._bench_compile = mode
        try:
            model = suite._model(ember, ember.nn.Linear(2, 2))
        finally:
            del ember._bench_compile
        assert isinstance(model, ember._dynamo.OptimizedModule) == compiled


@pytest.mark.slow
def test_vision_benchmark_smoke_run():
    pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
    import importlib.util
    if importlib.util.find_spec("torchvision") is None or importlib.util.find_spec("ultralytics") is None:
        pytest.skip("torchvision and ultralytics are not installed (they are in the test extra)")
    r = subprocess.run([sys.executable, "-m", "bench.vision", "--quick"], cwd=ROOT, capture_output=True, text=True,
                       timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "resnet18 training step" in r.stdout and "YOLOv8n inference" in r.stdout


def test_harness_runs_each_framework_in_a_process_of_its_own():
    """--self-check puts PyTorch on both sides; every child reports what it ran on, and the parent never imports
    either framework (the children do)."""
    pytest.importorskip("torch")
    r = subprocess.run([sys.executable, "-m", "bench.suite", "--quick", "--self-check", "--only", "add 16x16"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "torch A: torch 2.13.0" in r.stdout and "torch B: torch 2.13.0" in r.stdout, r.stdout
    assert "torch B/torch A" in r.stdout and "machine: " in r.stdout
    code = ("import sys, bench.suite, bench._timing as t; t.run(bench.suite.BENCH, ['--quick', '--only', 'tiny']); "
            "assert 'torch' not in sys.modules and 'ember' not in sys.modules, 'the parent imported a framework'")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "ember: ember " in r.stdout and "peak MB" not in r.stdout  # a quick run: one process per side


def test_cuda_benchmark_steps_run_on_the_device_and_blocks_end_synchronized():
    """bench.cuda's workloads (the suite's, built with the default device ``cuda``) step on the device -- a GPU, or
    the CuPy stand-in, whose arrays refuse to mix with the host's -- and each timed block ends with the sync hook."""
    import contextlib
    import ember
    from bench import _timing, cuda
    from tests import fake_cupy
    with contextlib.nullcontext() if ember.cuda.is_available() else fake_cupy.install():
        ember.set_default_device("cuda")
        try:
            for name, w in cuda.BENCH.workloads.items():
                fn = w.make(ember, True)
                fn()
            synced = []
            assert _timing.time_block(fn, 3, lambda: synced.append(cuda.BENCH.sync(ember))) > 0 and len(synced) == 1
            assert ember.get_default_device() == ember.device("cuda", 0)
        finally:
            ember.set_default_device("cpu")
