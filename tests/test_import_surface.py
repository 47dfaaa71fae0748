"""What libraries built on PyTorch touch at import and on an eager CPU run (issue 15 item 8), each against
PyTorch: the import hook's module attributes, the legacy tensor types, ``torch.compiler`` / ``_dynamo`` / ``jit`` /
``version`` / ``accelerator`` / ``distributed`` answers, storages from files, grad-mode decorators used bare,
NumPy's keyword names, ``*_like(device=)``, ``isin``."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
ROOT = os.path.dirname(os.path.dirname(ember.__file__))


def test_the_import_hook_keeps_module_attributes_on_the_aliases(tmp_path):
    """importlib writes ``__spec__`` / ``__loader__`` / ``torch.nn`` onto the alias, never onto ember's modules."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import importlib.util, sys\nimport torch, torch.nn, torch.utils._pytree\nimport ember\n"
        "assert torch.__spec__ is not None and importlib.util.find_spec('torch') is torch.__spec__\n"
        "assert importlib.util.find_spec('torch.nn') is not None\n"
        "assert ember.__spec__.name == 'ember' and ember.nn.__name__ == 'ember.nn'\n"
        "assert type(ember.nn).__name__ == 'module' and torch.nn.Linear is ember.nn.Linear\n"
        "print('ok', torch.__version__.split('+')[0])\n")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-m", "ember", str(script)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["ok", "2.13.0"]


def test_legacy_tensor_types_as_pytorchs():
    for L in (torch, ember):
        a, b = L.LongTensor([1, 2]), L.FloatTensor(2, 3)
        assert a.dtype is L.int64 and tuple(b.shape) == (2, 3) and tuple(L.DoubleTensor().shape) == (0,)
        assert isinstance(a, L.LongTensor) and not isinstance(a, L.FloatTensor)
        assert not isinstance(b, L.cuda.FloatTensor)
        assert a.type(L.DoubleTensor).dtype is L.float64 and b.type("torch.LongTensor").dtype is L.int64
        assert b.type() == "torch.FloatTensor" and repr(L.LongTensor) == "<class 'torch.LongTensor'>"


def test_compiler_dynamo_jit_version_accelerator_distributed_answer_as_a_cpu_build():
    for L in (torch, ember):
        assert L.compiler.is_compiling() is False and L.compiler.is_exporting() is False
        assert L.compiler.disable(lambda: 3)() == 3 and L._dynamo.is_compiling() is False
        assert L.jit.is_scripting() is False and L.jit.is_tracing() is False
        assert L.jit.ignore(lambda: 4)() == 4 and L.jit.unused(lambda: 5)() == 5
        assert L.version.cuda is None and L.version.hip is None
        assert L.accelerator.is_available() is False and L.accelerator.current_accelerator() is None
        t = L.ones(3)
        L._dynamo.mark_static_address(t)
        L._dynamo.mark_dynamic(t, 0)
        assert issubclass(L._dynamo.exc.Unsupported, Exception)
    import importlib.util
    assert ember.distributed.is_available() is (importlib.util.find_spec("mpi4py") is not None)
    assert not ember.distributed.is_initialized()
    assert ember.cuda.is_current_stream_capturing() is False  # (PyTorch's CPU build refuses to ask)
    with pytest.raises(RuntimeError, match="TorchScript is not available in ember"):
        ember.jit.script(ember.nn.Linear(2, 2))


def test_grad_mode_decorators_work_bare_and_called():
    for L in (torch, ember):
        x = L.ones(2, requires_grad=True)
        f = L.no_grad(lambda t: t * 2)
        g = L.enable_grad(lambda t: t * 2)
        h = L.inference_mode(lambda t: t * 2)
        assert not f(x).requires_grad and g(x).requires_grad and not h(x).requires_grad
        with L.no_grad():
            assert g(x).requires_grad and not (x * 2).requires_grad
        assert not L.no_grad()(lambda t: t * 2)(x).requires_grad


def test_numpy_keyword_names_are_accepted_as_pytorch_does():
    for L in (torch, ember):
        x = L.tensor([[True, False], [True, True]])
        assert x.all(axis=1, keepdims=True).tolist() == [[False], [True]]
        assert L.sum(L.ones(2, 3), axis=0).tolist() == [2.0, 2.0, 2.0]
        assert L.add(x1=L.ones(2), x2=L.ones(2)).tolist() == [2.0, 2.0]
        assert tuple(L.amax(L.ones(2, 3), axis=1, keepdims=True).shape) == (2, 1)


@pytest.mark.parametrize("name", ["empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like"])
def test_like_factories_honour_device_and_dtype(name):
    for L in (torch, ember):
        m = L.ones(2, 3, device="meta", dtype=L.float64)
        args = (m, 2.0) if name == "full_like" else (m,)
        out = getattr(L, name)(*args, device="cpu")
        assert out.device.type == "cpu" and out.dtype is L.float64 and tuple(out.shape) == (2, 3)
        assert getattr(L, name)(*args).device.type == "meta"
        assert getattr(L, name)(*args, dtype=L.float32, device="cpu").dtype is L.float32


def test_storage_from_file_slicing_and_asarray(tmp_path):
    path = tmp_path / "blob.bin"
    np.arange(12, dtype=np.float32).tofile(path)
    for L in (torch, ember):
        s = L.UntypedStorage.from_file(str(path), shared=False, nbytes=48)
        assert s.nbytes() == 48 and len(s[8:16]) == 8
        t = L.asarray(s[8:24], dtype=L.uint8).view(L.float32)
        assert t.tolist() == [2.0, 3.0, 4.0, 5.0]
        t[0] = 9  # copy-on-write: the file keeps its bytes
    assert np.fromfile(path, dtype=np.float32)[2] == 2.0
    assert ember.UntypedStorage(5).nbytes() == 5


def test_isin_matches_pytorch():
    for L in (torch, ember):
        e = L.tensor([[1, 2], [3, 4]])
        assert L.isin(e, L.tensor([4.0, 1.0])).tolist() == [[True, False], [False, True]]
        assert L.isin(e, 2, invert=True).tolist() == [[True, False], [True, True]]
        assert L.isin(3, e).item() is True
        with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin\\(\\): Bool"):
            L.isin(e, L.tensor([True]))
    assert importlib.util.find_spec("ember.utils._pytree") is not None


def test_swap_tensors_weak_dictionaries_and_autograd_switches_match_pytorch():
    import gc
    for L in (torch, ember):
        a, b = L.ones(2), L.nn.Parameter(L.zeros(3))
        L.utils.swap_tensors(a, b)
        assert (a.tolist(), type(a).__name__, a.requires_grad) == ([0.0, 0.0, 0.0], "Parameter", True)
        assert (b.tolist(), type(b).__name__, b.requires_grad) == ([1.0, 1.0], "Tensor", False)
        d = L.utils.weak.WeakIdKeyDictionary()
        t = L.ones(2)
        d[t] = 1
        assert t in d and len(d) == 1 and d[t] == 1
        del t
        gc.collect()
        assert len(d) == 0
        assert L.autograd.is_multithreading_enabled() and not L.autograd.is_view_replay_enabled()
        with L.autograd.set_multithreading_enabled(False):
            assert not L.autograd.is_multithreading_enabled()
        assert L.autograd.is_multithreading_enabled()
        with pytest.raises(RuntimeError, match="torch.autograd.variable\\(...\\) is deprecated"):
            L.autograd.variable(1)
