"""Op-table driven tests (PyTorch's ``test_ops.py`` in small): every entry of ``tests/op_db.py`` is checked
against PyTorch on the same inputs for each claimed dtype, and for agreement of its function / method /
in-place / ``out=`` variants, non-contiguous inputs, the in-place version bump, Meta shapes and error
inputs."""
from __future__ import annotations

import os
import zlib

import numpy as np
import pytest

import ember
from tests.op_db import op_db

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

# PyTorch's assert_close defaults (reference/testing.md), by dtype
TOL = {"float64": (1e-7, 1e-7), "float32": (1.3e-6, 1e-5)}


def resolve(lib, path):
    obj = lib
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def path_of(op):
    return op.torch_name or op.name


def to_lib(lib, x):
    if isinstance(x, np.ndarray):
        return lib.tensor(x.copy()) if lib is ember else torch.from_numpy(x.copy())
    if isinstance(x, list):
        return [to_lib(lib, y) for y in x]
    return x


def kw_to_lib(lib, kwargs):
    out = {}
    for k, v in kwargs.items():
        if k == "dtype" and isinstance(v, str):
            v = getattr(lib, v)
        out[k] = to_lib(lib, v)
    return out


def call(op, lib, sample, variant="function", out=None, args=None):
    args = [to_lib(lib, a) for a in sample.args] if args is None else args
    kwargs = kw_to_lib(lib, sample.kwargs)
    if out is not None:
        kwargs["out"] = out
    custom = op.ember_fn if lib is ember else op.torch_fn
    if custom is not None and variant == "function":
        return custom(lib, *args, **kwargs)
    if variant == "function":
        return resolve(lib, path_of(op))(*args, **kwargs)
    name = path_of(op).split(".")[-1]
    if variant == "method":
        return getattr(args[0], name)(*args[1:], **kwargs)
    if variant == "inplace":
        return getattr(args[0], name + "_")(*args[1:], **kwargs)
    raise ValueError(variant)


def dtype_name(t):
    return str(t.dtype).split(".")[-1]


def assert_same(e, t, op, dtype, what=""):
    if isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)), f"{what}: expected a sequence, got {type(e)}"
        assert len(e) == len(t), f"{what}: {len(e)} outputs, PyTorch gives {len(t)}"
        for a, b in zip(e, t):
            assert_same(a, b, op, dtype, what)
        return
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), f"{what}: expected a Tensor, got {type(e)}"
        assert tuple(e.shape) == tuple(t.shape), f"{what}: shape {tuple(e.shape)} != {tuple(t.shape)}"
        if op.exact_dtype:
            assert dtype_name(e) == dtype_name(t), f"{what}: dtype {e.dtype} != {t.dtype}"
        rtol, atol = TOL.get(dtype_name(t), (0, 0))
        if op.rtol is not None:
            rtol, atol = max(rtol, op.rtol), max(atol, op.atol)
        a = e.numpy().astype(np.float64) if e.dtype is not ember.bool else e.numpy()
        b = t.numpy().astype(np.float64) if t.dtype is not torch.bool else t.numpy()
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
        return
    assert e == t or (isinstance(t, float) and np.isclose(e, t)), f"{what}: {e!r} != {t!r}"


def op_id(op):
    return op.name


CASES = [(op, d) for op in op_db for d in op.dtypes]
IDS = [f"{op.name}-{d}-{i}" for i, (op, d) in enumerate(CASES)]


def samples_of(op, dtype):
    # a stable seed per (op, dtype): str hashes change from run to run (PYTHONHASHSEED)
    rng = np.random.default_rng(zlib.crc32(f"{op.name}/{dtype}".encode()))
    return op.samples(dtype, rng)


@pytest.mark.parametrize("op,dtype", CASES, ids=IDS)
def test_forward_matches_pytorch(op, dtype):
    for s in samples_of(op, dtype):
        try:
            t = call(op, torch, s)
        except Exception as exc:  # PyTorch refuses the sample: ember must refuse it the same way
            with pytest.raises(type(exc)):
                call(op, ember, s)
            continue
        e = call(op, ember, s)
        assert_same(e, t, op, dtype, f"{op.name}{s.args if len(str(s.args)) < 200 else ''} {s.kwargs}")


@pytest.mark.parametrize("op,dtype", [c for c in CASES if c[0].method and c[0].function and
                                      not c[0].ember_fn], ids=lambda x: getattr(x, "name", str(x)))
def test_method_matches_function(op, dtype):
    for s in samples_of(op, dtype):
        if not isinstance(s.args[0], np.ndarray):
            continue
        try:
            f = call(op, ember, s)
        except Exception:
            continue
        m = call(op, ember, s, "method")
        assert_same(m, _as_torch(f), op, dtype, "method vs function")


def _as_torch(x):
    """ember results as torch tensors, so ``assert_same`` can compare two ember results."""
    if isinstance(x, (tuple, list)):
        return type(x)(_as_torch(y) for y in x) if isinstance(x, list) else tuple(_as_torch(y) for y in x)
    if isinstance(x, ember.Tensor):
        a = x.numpy()
        return torch.from_numpy(a.copy()) if a.dtype.name != "bfloat16" else torch.from_numpy(a.astype(np.float32))
    return x


@pytest.mark.parametrize("op,dtype", [c for c in CASES if c[0].inplace], ids=lambda x: getattr(x, "name", str(x)))
def test_inplace_matches_pytorch_and_bumps_version(op, dtype):
    for s in samples_of(op, dtype):
        if not isinstance(s.args[0], np.ndarray):
            continue
        targs = [to_lib(torch, a) for a in s.args]
        try:
            call(op, torch, s, "inplace", args=targs)
        except Exception as exc:
            with pytest.raises(type(exc)):
                call(op, ember, s, "inplace")
            continue
        eargs = [to_lib(ember, a) for a in s.args]
        x = eargs[0]
        ptr, v0 = x.data_ptr(), x._version
        r = call(op, ember, s, "inplace", args=eargs)
        assert r is x, "in-place variant must return self"
        assert x.data_ptr() == ptr, "in-place variant must keep the storage"
        assert x._version == v0 + 1, f"version {x._version}, expected {v0 + 1}"
        assert_same(x, targs[0], op, dtype, "in-place")


@pytest.mark.parametrize("op,dtype", [c for c in CASES if c[0].out], ids=lambda x: getattr(x, "name", str(x)))
def test_out_variant(op, dtype):
    for s in samples_of(op, dtype):
        try:
            f = call(op, ember, s)
        except Exception:
            continue
        try:
            call(op, torch, s, out=torch.empty(0, dtype=getattr(torch, f.dtype.name)))
        except Exception as exc:  # no out= overload for this call in PyTorch either
            with pytest.raises(type(exc)):
                call(op, ember, s, out=ember.empty(0, dtype=f.dtype))
            continue
        o = ember.empty(0, dtype=f.dtype)
        r = call(op, ember, s, out=o)
        assert r is o
        assert_same(o, _as_torch(f), op, dtype, "out=")
        assert o._version >= 1


def _noncontiguous(lib, a):
    """The same values as ``a`` in a tensor with non-unit strides (a stepped slice of a larger tensor)."""
    if a.ndim == 0 or a.size == 0:
        return to_lib(lib, a)
    big = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,), a.dtype)
    big[..., ::2] = a
    t = to_lib(lib, big)
    return t[..., ::2]


@pytest.mark.parametrize("op,dtype", [c for c in CASES if c[0].noncontiguous],
                         ids=lambda x: getattr(x, "name", str(x)))
def test_noncontiguous_inputs(op, dtype):
    for s in samples_of(op, dtype):
        try:
            ref = call(op, ember, s)
        except Exception:
            continue
        args = [_noncontiguous(ember, a) if isinstance(a, np.ndarray) else
                ([_noncontiguous(ember, x) for x in a] if isinstance(a, list) else a) for a in s.args]
        if any(isinstance(a, ember.Tensor) and a.dim() and a.numel() > 1 for a in args):
            assert any(not a.is_contiguous() for a in args if isinstance(a, ember.Tensor) and a.numel() > 1)
        got = call(op, ember, s, args=args)
        assert_same(got, _as_torch(ref), op, dtype, "non-contiguous")


def _to_meta(x):
    if isinstance(x, np.ndarray):
        return ember.tensor(x).to("meta")
    if isinstance(x, list):
        return [_to_meta(y) for y in x]
    return x


def _shapes(x):
    if isinstance(x, (tuple, list)):
        return [_shapes(y) for y in x]
    if isinstance(x, ember.Tensor):
        return (tuple(x.shape), x.dtype)
    return None


def _to_meta_torch(x):
    if isinstance(x, np.ndarray):
        return torch.from_numpy(x.copy()).to("meta")
    if isinstance(x, list):
        return [_to_meta_torch(y) for y in x]
    return x


@pytest.mark.parametrize("op,dtype", [c for c in CASES if c[0].meta], ids=lambda x: getattr(x, "name", str(x)))
def test_meta_shapes_match_cpu(op, dtype):
    """Meta tensors give CPU's shapes and dtypes; where PyTorch's Meta backend refuses (data-dependent
    shapes), ember refuses with the same exception type."""
    for s in samples_of(op, dtype):
        try:
            call(op, torch, s, args=[_to_meta_torch(a) for a in s.args])
        except Exception as exc:
            if isinstance(exc, NotImplementedError) or "meta" in str(exc).lower():
                with pytest.raises(type(exc)):
                    call(op, ember, s, args=[_to_meta(a) for a in s.args])
                continue
        try:
            ref = call(op, ember, s)
        except Exception as exc:
            with pytest.raises(type(exc)):
                call(op, ember, s, args=[_to_meta(a) for a in s.args])
            continue
        got = call(op, ember, s, args=[_to_meta(a) for a in s.args])
        assert _shapes(got) == _shapes(ref)
        flat = got if isinstance(got, (tuple, list)) else [got]
        for g in flat:
            if isinstance(g, ember.Tensor):
                assert g.device.type == "meta"


ERROR_CASES = [(op, e) for op in op_db if op.errors for e in op.errors()]


@pytest.mark.parametrize("op,err", ERROR_CASES, ids=[f"{o.name}-{i}" for i, (o, _) in enumerate(ERROR_CASES)])
def test_error_inputs(op, err):
    variant = "function" if op.function else "method"
    with pytest.raises(err.error_type):
        call(op, torch, err.sample, variant)
    with pytest.raises(err.error_type, match=err.match):
        call(op, ember, err.sample, variant)


# ------------------------------------------------------------------------------ coverage of the YAML
# Ops of native_functions.yaml tested elsewhere, with where:
NOT_IN_TABLE = {
    # factories and random ops: tests/test_factories.py and tests/test_random.py
    "empty", "zeros", "ones", "full", "scalar_tensor", "empty_like", "zeros_like", "ones_like", "full_like",
    "arange", "linspace", "logspace", "eye", "tril_indices", "triu_indices", "new_empty", "new_zeros", "new_ones",
    "new_full", "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "uniform", "normal", "random",
    "bernoulli", "multinomial",
    # copies, conversions and fills: tests/test_tensor.py
    "_to_copy", "_contiguous_copy", "copy", "fill", "zero", "alias", "_reshape_alias",
    # reached through Tensor indexing: tests/test_indexing.py
    "index", "slice",
    # ember.unique calls these two: covered by the "unique" entry
    "_unique2", "unique_dim",
}


def _public_key(nf):
    name = nf.schema.name
    base = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    return base


def test_every_op_has_a_table_entry():
    from tools.codegen.model import load_native_functions
    nfs = load_native_functions(os.path.join(os.path.dirname(ember.__file__), "aten", "native_functions.yaml"))
    covered = set()
    for op in op_db:
        covered.add(op.name.replace(".", "_"))
        covered.update(c.replace(".", "_") for c in op.covers)
    missing = sorted({_public_key(nf) for nf in nfs} - covered - NOT_IN_TABLE)
    assert not missing, f"ops without an op_db entry (add one, or list them in NOT_IN_TABLE with the test " \
                        f"that covers them): {missing}"
