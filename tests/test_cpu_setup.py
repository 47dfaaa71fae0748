"""What ``import ember`` sets up for the CPU (ember/_startup.py): OpenBLAS's kernels for this CPU, the CPU
capability PyTorch reports, malloc tuning; and the float32 erf and convolution workspace that the
performance work added (checked against float64 references and PyTorch)."""
import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.aten.kernels import conv_algos
from ember.aten.kernels.special_math import _calerf, _erf_float32

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PROBE = """
import json, os, sys
if sys.argv[1] == "numpy-first":
    import numpy
import ember
info = {"note": ember._cpu_capability.blas_note, "env": os.environ.get("OPENBLAS_CORETYPE"),
        "cap": ember.backends.cpu.get_cpu_capability(), "alloc": ember.c10.cpu_allocator.configured,
        "timeout": os.environ.get("OPENBLAS_THREAD_TIMEOUT"), "timeout_set": ember._cpu_capability._timeout_set}
import ctypes
import numpy as np
from ember.aten import parallel
libs = parallel._openblas or []
info["quieted"] = [lib.quieted for lib in libs]
info["lib_timeout"] = [ctypes.CDLL(lib.path).openblas_thread_timeout() for lib in libs]
a = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)   # a product OpenBLAS threads
info["gemm_ok"] = bool(np.allclose(a @ a, (a.astype(np.float64) @ a).astype(np.float32), rtol=1e-4, atol=1e-3))
try:
    from threadpoolctl import threadpool_info
    info["arch"] = [i.get("architecture") for i in threadpool_info() if i.get("internal_api") == "openblas"]
except ImportError:
    info["arch"] = None
print(json.dumps(info))
"""


def _probe(mode="ember-first", **env):
    e = {k: v for k, v in os.environ.items()
         if k not in ("ATEN_CPU_CAPABILITY", "EMBER_CPU_ALLOCATOR", "OPENBLAS_THREAD_TIMEOUT")}
    e.update(env, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", _PROBE, mode], env=e, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_cpu_capability_matches_pytorch():
    torch = pytest.importorskip("torch")
    assert ember.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()


x86_only = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                              reason="OpenBLAS core names are x86's")


@x86_only
def test_pinned_older_openblas_core_is_raised_on_avx512_only_for_this_process():
    info = _probe(OPENBLAS_CORETYPE="Haswell")
    assert info["env"] == "Haswell"                         # the environment is given back unchanged
    if info["cap"] == "AVX512":
        assert "raised to SkylakeX" in info["note"]
        if info["arch"] is not None:
            assert info["arch"] == ["SkylakeX"]
    else:
        assert info["note"] == "unchanged"


@x86_only
def test_aten_cpu_capability_and_import_order_keep_the_pinned_core():
    info = _probe(OPENBLAS_CORETYPE="Haswell", ATEN_CPU_CAPABILITY="avx2")
    assert info["note"] == "unchanged" and info["cap"] in ("AVX2", "DEFAULT")
    if info["arch"] is not None:
        assert info["arch"] == ["Haswell"]
    info = _probe("numpy-first", OPENBLAS_CORETYPE="Haswell")
    assert info["note"].startswith("NumPy was imported before ember")


def test_blas_threads_spin_briefly_only_for_the_import(monkeypatch):
    """ember sets OPENBLAS_THREAD_TIMEOUT while NumPy loads OpenBLAS, then takes it out of the environment; a
    user's own value is left alone, and so is OpenBLAS when NumPy came first."""
    calls = []
    monkeypatch.setattr(ember._cpu_capability, "sys", type("S", (), {"modules": {}})())
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    ember._cpu_capability.quiet_blas_threads()
    calls.append(os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
    ember._cpu_capability.restore_environment()
    calls.append(os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
    assert calls == [ember._cpu_capability.BLAS_THREAD_TIMEOUT, None]
    info = _probe()
    assert info["timeout"] is None and info["timeout_set"] is False
    assert _probe(OPENBLAS_THREAD_TIMEOUT="28")["timeout"] == "28"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ember finds OpenBLAS in /proc/self/maps")
def test_openblas_loaded_before_ember_gets_the_short_spin_too():
    """NumPy imported first: its OpenBLAS read no thread timeout; ember makes it read its own and restarts its
    workers (Note [OpenBLAS loaded before ember]), without leaving the variable in the environment; products stay
    right and threaded. A user's own timeout, or a library that read ember's at its load, is left alone."""
    first = _probe("numpy-first")
    if not first["quieted"]:
        pytest.skip("NumPy's BLAS is not an OpenBLAS ember can call")
    want = int(ember._cpu_capability.BLAS_THREAD_TIMEOUT)
    assert first["quieted"][0] is True and first["lib_timeout"][0] == want
    assert first["timeout"] is None and first["gemm_ok"]
    ember_first = _probe()
    assert ember_first["quieted"][0] is False and ember_first["lib_timeout"][0] == want and ember_first["gemm_ok"]
    users = _probe("numpy-first", OPENBLAS_THREAD_TIMEOUT="28")
    assert users["quieted"][0] is False and users["lib_timeout"][0] == 28 and users["timeout"] == "28"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc tuning is for glibc")
def test_allocator_tuning_and_its_switch():
    assert _probe()["alloc"] in ("glibc", "system")          # "system" on a non-glibc C library
    assert _probe(EMBER_CPU_ALLOCATOR="system")["alloc"] == "system"


def _ulps(approx32, exact64):
    spacing = np.spacing(np.abs(exact64.astype(np.float32))).astype(np.float64)
    return np.abs(approx32.astype(np.float64) - exact64) / spacing


def test_float32_erf_within_two_ulp_of_float64():
    x = np.concatenate([np.linspace(-5, 5, 200001), np.geomspace(1e-38, 4, 2001), -np.geomspace(1e-30, 6, 2001)])
    x32 = x.astype(np.float32)
    exact = _calerf(x32.astype(np.float64), False)            # Cody's float64 erf, ~1e-16 relative
    assert _ulps(_erf_float32(np, x32), exact).max() <= 2.0
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 4.0, -10.0], np.float32)
    r = _erf_float32(np, special)
    np.testing.assert_array_equal(r[:4], [0.0, -0.0, 1.0, -1.0])
    assert np.signbit(r[1]) and np.isnan(r[4]) and r[5] == 1.0 and r[6] == -1.0
    # through the op, every float dtype, against PyTorch
    torch = pytest.importorskip("torch")
    v = np.random.default_rng(0).standard_normal(1000).astype(np.float32) * 3
    for dt in ("float32", "float16", "bfloat16", "float64"):
        e = ember.tensor(v).to(getattr(ember, dt)).erf()
        t = torch.tensor(v).to(getattr(torch, dt)).erf()
        assert str(e.dtype)[6:] == str(t.dtype)[6:]
        tol = {"float32": 1e-6, "float64": 1e-15, "float16": 1e-3, "bfloat16": 1e-2}[dt]
        np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), rtol=tol, atol=tol)


def test_convolution_workspace_is_reused_and_never_aliased(monkeypatch):
    monkeypatch.setattr(conv_algos, "force", "gemm")                # the algorithm that builds columns
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((2, 3, 8, 8)).astype(np.float32))
    w = ember.tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    conv_algos.release_workspace()
    a = ember.nn.functional.conv2d(x, w, padding=1)
    kept = a.numpy().copy()
    buf = conv_algos._workspace.bufs["columns"]
    b = ember.nn.functional.conv2d(x * 2, w, padding=1)
    assert conv_algos._workspace.bufs["columns"] is buf          # same buffer, no new allocation
    np.testing.assert_array_equal(a.numpy(), kept)               # the first result does not live in it
    np.testing.assert_allclose(b.numpy(), 2 * kept, rtol=1e-5, atol=1e-5)
    big = conv_algos.WORKSPACE_MAX_BYTES
    try:
        conv_algos.WORKSPACE_MAX_BYTES = 0                       # above the cap: a fresh array each call
        c = ember.nn.functional.conv2d(x, w, padding=1)
        assert conv_algos._workspace.bufs["columns"] is buf
        np.testing.assert_array_equal(c.numpy(), kept)
    finally:
        conv_algos.WORKSPACE_MAX_BYTES = big


def test_num_threads_api_matches_pytorch():
    torch = pytest.importorskip("torch")
    from ember.aten import parallel
    if not any(os.environ.get(v) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")):
        assert parallel._default_threads() == torch.get_num_threads()   # PyTorch's default: physical cores
    before = ember.get_num_threads()
    try:
        for bad in (0, -1, 1.5, "2", True):
            with pytest.raises(Exception) as te:
                torch.set_num_threads(bad)
            if not isinstance(te.value, RuntimeError):
                continue                                # PyTorch's argument parser refuses a str with TypeError
            with pytest.raises(RuntimeError) as ee:
                ember.set_num_threads(bad)
            assert str(ee.value) == str(te.value)
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
    finally:
        ember.set_num_threads(before)
    assert ember.get_num_threads() == before


def test_parallel_for_covers_the_range_and_reraises():
    from ember.aten import parallel
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(3)
        seen = []
        parallel.parallel_for(5, 200005, 1000, lambda b, e: seen.append((b, e)))
        seen.sort()
        assert len(seen) == 3 and seen[0][0] == 5 and seen[-1][1] == 200005
        assert all(a[1] == b[0] for a, b in zip(seen, seen[1:]))
        nested = []
        parallel.parallel_for(0, 100000, 10, lambda b, e: parallel.parallel_for(b, e, 10, lambda c, d: nested.append(
            parallel.in_parallel_region())))
        assert nested and all(nested)                   # nested loops run serially inside their range

        def boom(b, e):
            if b > 0:
                raise ValueError("range failed")
        with pytest.raises(ValueError, match="range failed"):
            parallel.parallel_for(0, 100000, 10, boom)
        small = []
        parallel.parallel_for(0, 10, 1000, lambda b, e: small.append((b, e)))
        assert small == [(0, 10)]
    finally:
        ember.set_num_threads(before)


def test_threaded_unary_kernels_equal_serial():
    x = ember.tensor(np.random.default_rng(0).standard_normal(300_000).astype(np.float32) * 4)
    before = ember.get_num_threads()
    try:
        outs = []
        for n in (1, 2, 3):
            ember.set_num_threads(n)
            outs.append([x.erf(), x.exp(), x.tanh(), ember.nn.functional.gelu(x), x.reshape(3, -1).sigmoid()])
        for other in outs[1:]:
            for a, b in zip(outs[0], other):
                np.testing.assert_array_equal(a.numpy(), b.numpy())
    finally:
        ember.set_num_threads(before)


def test_threads_follow_the_cores_other_processes_leave(monkeypatch):
    """Note [Threads under load]: with other processes' runnable threads filling the cores, parallel regions and
    OpenBLAS use one thread (get_num_threads() keeps the user's number); back to it once a sample shows the cores
    free; a process that runs for an instant (one sample of three) changes nothing; EMBER_DYNAMIC_THREADS=0 off."""
    from ember.aten import parallel
    before = ember.get_num_threads()
    blas = parallel.numpy_openblas()
    others = []
    monkeypatch.setattr(parallel, "_dynamic", True)
    monkeypatch.setattr(parallel, "_SAMPLE_PERIOD", 0.0)
    monkeypatch.setattr(parallel, "_cores", lambda: 2)
    monkeypatch.setattr(parallel, "_runnable_others", lambda: others[0])
    try:
        ember.set_num_threads(2)
        counted = blas._get() if blas is not None else None
        others[:] = [0]
        assert parallel.threads() == 2
        others[:] = [2]
        assert parallel.threads() == 2            # one busy sample of three: still free
        parallel.threads()
        assert parallel.threads() == 1 and parallel.ranges(10 ** 9, 1) == 1
        assert ember.get_num_threads() == 2
        if blas is not None:
            assert blas._get() == 1
        seen = []
        parallel.parallel_for(0, 10 ** 6, 1, lambda b, e: seen.append((b, e)))
        assert seen == [(0, 10 ** 6)]
        x = ember.tensor(np.random.default_rng(0).standard_normal((2000, 64)).astype(np.float32))
        loaded = ember.softmax(x, -1).numpy()          # the same bits as with the cores free
        others[:] = [0]
        parallel.threads()
        np.testing.assert_array_equal(ember.softmax(x, -1).numpy(), loaded)
        others[:] = [2]
        for _ in range(3):
            parallel.threads()
        others[:] = [0]
        assert parallel.threads() == 2 and parallel.ranges(10 ** 9, 1) == 2
        if blas is not None:
            assert blas._get() == counted
        others[:] = [5]
        for _ in range(3):
            parallel.threads()
        monkeypatch.setattr(parallel, "_dynamic", False)
        assert parallel.threads() == 2
    finally:
        ember.set_num_threads(before)


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="Linux counts runnable threads in /proc")
def test_other_processes_runnable_threads_are_counted():
    from ember.aten import parallel
    busy = [subprocess.Popen([sys.executable, "-c", "while True:\n    pass"]) for _ in range(2)]
    try:
        import time
        time.sleep(0.3)
        assert max(parallel._runnable_others() for _ in range(5)) >= 2
    finally:
        for p in busy:
            p.kill()
            p.wait()
