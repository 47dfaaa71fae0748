"""The benchmarks stay runnable (smoke runs; no timing is asserted anywhere in the tests)."""
import subprocess
import sys

import pytest

from tests.test_codegen import ROOT


@pytest.mark.parametrize("module", ["bench.op_overhead", "bench.autograd_overhead", "bench.nn_layers",
                                    "bench.optim_step", "bench.dataloader", "bench.suite", "bench.fft"])
def test_benchmark_smoke_run(module):
    r = subprocess.run([sys.executable, "-m", module, "--quick"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "ember" in r.stdout
