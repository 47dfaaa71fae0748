"""Run an ecosystem script on PyTorch and under ``python -m ember``, each in its own process, and compare what each
recorded (``scripts/_harness.py``)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import ember

ROOT = os.path.dirname(os.path.dirname(ember.__file__))
SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")


def _run(argv: list[str], cwd: str, timeout: int) -> str:
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "HF_HUB_OFFLINE": "1", "YOLO_OFFLINE": "1", "YOLO_VERBOSE": "False", "TQDM_DISABLE": "1",
           "YOLO_CONFIG_DIR": os.path.join(cwd, "ultralytics-config"), "TORCH_HOME": os.path.join(cwd, "torch-home"),
           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    assert r.returncode == 0, f"{' '.join(argv[-3:])} failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    return r.stdout


def run_both(script: str, tmp_path, *args: str, timeout: int = 900) -> tuple[dict, dict, str, str]:
    """(PyTorch's values, ember's values, PyTorch's stdout, ember's stdout) of ``scripts/<script>``."""
    path = os.path.join(SCRIPTS, script)
    out = str(tmp_path)
    ref_out = _run([sys.executable, path, out, *args], out, timeout)
    got_out = _run([sys.executable, "-m", "ember", path, out, *args], out, timeout)
    ref = dict(np.load(os.path.join(out, "torch.npz")))
    got = dict(np.load(os.path.join(out, "ember.npz")))
    return ref, got, ref_out, got_out


def assert_same(ref: dict, got: dict, rtol: float = 1e-4, atol: float = 1e-5, tolerances: dict | None = None) -> None:
    """Every value PyTorch recorded, recorded by ember too: same shape and dtype kind, equal within ``rtol`` and an
    absolute tolerance of ``atol`` times the largest magnitude among the values of its family (the recorded names
    sharing its first component: all of a model's gradients are compared at the scale of the largest one, so a
    gradient that is zero up to rounding is not held to a relative tolerance). ``tolerances`` maps a name prefix to
    its own ``(rtol, atol)``."""
    assert sorted(got) == sorted(ref), (sorted(set(ref) ^ set(got)))
    assert ref, "nothing was recorded"
    scale: dict = {}
    for key, r in ref.items():
        if r.dtype.kind in "fc" and r.size:
            fam = key.split(".")[0]
            scale[fam] = max(scale.get(fam, 0.0), float(np.nanmax(np.abs(np.where(np.isfinite(r), r, 0)))))
    for key, r in ref.items():
        g = got[key]
        assert g.shape == r.shape, (key, g.shape, r.shape)
        assert g.dtype.kind == r.dtype.kind, (key, g.dtype, r.dtype)
        rt, at = rtol, atol
        for prefix, (prt, pat) in (tolerances or {}).items():
            if key.startswith(prefix):
                rt, at = prt, pat
        if r.dtype.kind in "fc":
            np.testing.assert_allclose(g, r, rtol=rt, atol=at * max(scale.get(key.split(".")[0], 0.0), 1e-30),
                                       err_msg=key)
        else:
            np.testing.assert_array_equal(g, r, err_msg=key)


def needs(*modules: str) -> None:
    """Skip the calling test module unless PyTorch and ``modules`` are installed (looked up, not imported: the
    libraries are imported by the scripts, in their own processes)."""
    import importlib.util
    pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
    for m in modules:
        if importlib.util.find_spec(m) is None:
            pytest.skip(f"{m} is not installed (it is in the test extra)", allow_module_level=True)
