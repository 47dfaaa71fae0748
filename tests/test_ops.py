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
from ember.aten.dispatcher import OperatorHandle
from tests.op_db import op_db
from tests.opinfo import Sample

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


def call(op, lib, sample, variant=None, out=None, args=None, path=None):
    """Run one sample through ``op`` in ``lib`` (ember or torch). ``variant`` is "function", "method" or
    "inplace" (default: the entry's own, ``op.variant``); ``path`` calls an alias instead of the op."""
    args = [to_lib(lib, a) for a in sample.args] if args is None else args
    kwargs = kw_to_lib(lib, sample.kwargs)
    if out is not None:
        kwargs["out"] = out
    variant = variant or op.variant
    custom = op.ember_fn if lib is ember else op.torch_fn
    if custom is not None and variant == op.variant and path is None:
        return custom(lib, *args, **kwargs)
    path = path or path_of(op)
    if variant == "function":
        return resolve(lib, path)(*args, **kwargs)
    name = path.split(".")[-1]
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


CASES = [(op, d) for op in op_db for d in op.dtypes]
IDS = [f"{op.name}-{d}-{i}" for i, (op, d) in enumerate(CASES)]


def samples_of(op, dtype):
    # a stable seed per (op, dtype): str hashes change from run to run (PYTHONHASHSEED)
    rng = np.random.default_rng(zlib.crc32(f"{op.name}/{dtype}".encode()))
    return op.samples(dtype, rng)


def _describe(op, s):
    return f"{op.name}{s.args if len(str(s.args)) < 200 else ''} {s.kwargs}"


def _compare_forward(op, dtype, variant=None, path=None):
    """Each sample through ember and PyTorch; PyTorch's refusals must be ember's. Returns how many samples
    were compared by value."""
    compared = 0
    for s in samples_of(op, dtype):
        try:
            t = call(op, torch, s, variant, path=path)
        except Exception as exc:  # PyTorch refuses the sample: ember must refuse it the same way
            with pytest.raises(type(exc)):
                call(op, ember, s, variant, path=path)
            continue
        e = call(op, ember, s, variant, path=path)
        assert_same(e, t, op, dtype, _describe(op, s))
        compared += 1
    return compared


@pytest.mark.parametrize("op,dtype", CASES, ids=IDS)
def test_forward_matches_pytorch(op, dtype):
    assert _compare_forward(op, dtype), f"{op.name}: PyTorch refused every sample, nothing was compared"


# Note [aliases are called]: an alias ("special.erf" for "erf", "clip" for "clamp") is a public name of its
# own and gets the entry's samples, as a function and, where PyTorch's Tensor has it, as a method.
ALIAS_CASES = [(op, a, v) for op in op_db for a in op.aliases for v in ("function", "method")
               if v == "function" or "." not in a and hasattr(torch.Tensor, a)]


@pytest.mark.parametrize("op,alias,variant", ALIAS_CASES, ids=[f"{a}-{v}-{i}" for i, (_, a, v) in
                                                                enumerate(ALIAS_CASES)])
def test_alias_matches_pytorch(op, alias, variant):
    for dtype in op.dtypes:
        assert _compare_forward(op, dtype, variant, path=alias), f"{alias}: nothing was compared"


@pytest.mark.parametrize("op,dtype", [c for c in CASES if c[0].method and c[0].function and
                                      not c[0].ember_fn], ids=lambda x: getattr(x, "name", str(x)))
def test_method_matches_function(op, dtype):
    compared = 0
    for s in samples_of(op, dtype):
        if not isinstance(s.args[0], np.ndarray):
            continue
        try:
            f = call(op, ember, s, "function")
        except Exception as exc:  # the method must refuse the sample too
            with pytest.raises(type(exc)):
                call(op, ember, s, "method")
            continue
        m = call(op, ember, s, "method")
        assert_same(m, _as_torch(f), op, dtype, "method vs function")
        compared += 1
    assert compared, f"{op.name}: no sample has a tensor first argument that the function accepts"


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
    compared = 0
    for s in samples_of(op, dtype):
        if not isinstance(s.args[0], np.ndarray):
            continue
        targs = [to_lib(torch, a) for a in s.args]
        try:
            call(op, torch, s, "inplace", args=targs)
        except Exception as exc:  # e.g. an integer tensor cannot hold exp's float result: ember refuses too
            with pytest.raises(type(exc)):
                call(op, ember, s, "inplace")
            compared += not isinstance(exc, AttributeError)  # a missing method compares nothing
            continue
        eargs = [to_lib(ember, a) for a in s.args]
        x = eargs[0]
        ptr, v0 = x.data_ptr(), x._version
        r = call(op, ember, s, "inplace", args=eargs)
        assert r is x, "in-place variant must return self"
        assert x.data_ptr() == ptr, "in-place variant must keep the storage"
        assert x._version == v0 + 1, f"version {x._version}, expected {v0 + 1}"
        assert_same(x, targs[0], op, dtype, "in-place")
        compared += 1
    assert compared, f"{op.name}_: no sample was compared"


@pytest.mark.parametrize("op,dtype", [c for c in CASES if c[0].out], ids=lambda x: getattr(x, "name", str(x)))
def test_out_variant(op, dtype):
    compared = 0
    for s in samples_of(op, dtype):
        try:
            f = call(op, ember, s)
        except Exception:  # refusals are compared with PyTorch's by test_forward_matches_pytorch
            continue
        try:
            call(op, torch, s, out=torch.empty(0, dtype=getattr(torch, f.dtype.name)))
        except Exception as exc:  # no out= overload for this call in PyTorch either
            with pytest.raises(type(exc)):
                call(op, ember, s, out=ember.empty(0, dtype=f.dtype))
            compared += not isinstance(exc, AttributeError)
            continue
        o = ember.empty(0, dtype=f.dtype)
        r = call(op, ember, s, out=o)
        assert r is o
        assert_same(o, _as_torch(f), op, dtype, "out=")
        assert o._version >= 1
        compared += 1
    assert compared, f"{op.name}(out=): no sample was compared"


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
    compared = 0
    for s in samples_of(op, dtype):
        try:
            ref = call(op, ember, s)
        except Exception:
            continue
        args = [_noncontiguous(ember, a) if isinstance(a, np.ndarray) else
                ([_noncontiguous(ember, x) for x in a] if isinstance(a, list) else a) for a in s.args]
        flat = [x for a in args for x in (a if isinstance(a, list) else [a])]
        strided = [a for a in flat if isinstance(a, ember.Tensor) and a.dim() and a.numel() > 1]
        if not any(not a.is_contiguous() for a in strided):
            continue
        got = call(op, ember, s, args=args)
        assert_same(got, _as_torch(ref), op, dtype, "non-contiguous")
        compared += 1
    assert compared, f"{op.name}: no sample had a non-contiguous input (set noncontiguous=False if none can)"


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
    compared = 0
    for s in samples_of(op, dtype):
        ms = Sample(s.args, {k: _to_meta(v) for k, v in s.kwargs.items()})  # tensor keywords (clamp's min) too
        mt = Sample(s.args, {k: _to_meta_torch(v) for k, v in s.kwargs.items()})
        try:
            call(op, torch, mt, args=[_to_meta_torch(a) for a in s.args])
        except Exception as exc:
            if isinstance(exc, NotImplementedError) or "meta" in str(exc).lower():
                with pytest.raises(type(exc)):
                    call(op, ember, ms, args=[_to_meta(a) for a in s.args])
                compared += 1
                continue
        try:
            ref = call(op, ember, s)
        except Exception as exc:
            with pytest.raises(type(exc)):
                call(op, ember, ms, args=[_to_meta(a) for a in s.args])
            continue
        got = call(op, ember, ms, args=[_to_meta(a) for a in s.args])
        assert _shapes(got) == _shapes(ref)
        flat = got if isinstance(got, (tuple, list)) else [got]
        for g in flat:
            if isinstance(g, ember.Tensor):
                assert g.device.type == "meta"
        compared += 1
    assert compared, f"{op.name}: no sample was run on Meta tensors"


def _float_inputs(lib, args, requires_grad):
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            t = lib.tensor(a.copy()) if lib is ember else torch.from_numpy(a.copy())
            if requires_grad and a.dtype.kind == "f":
                t.requires_grad_(True)
            out.append(t)
        elif isinstance(a, list) and a and all(isinstance(x, np.ndarray) for x in a):
            out.append(_float_inputs(lib, a, requires_grad))
        else:
            out.append(a)
    return out


def _leaves(args):
    for a in args:
        if isinstance(a, list):
            yield from _leaves(a)
        elif hasattr(a, "requires_grad") and a.requires_grad:
            yield a


def _float_outputs(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if hasattr(o, "dtype") and o.dtype.is_floating_point]


class _DispatchSpy:
    """Records the name of every operator dispatched (called or redispatched) while it is active."""

    def __init__(self, monkeypatch):
        self.seen = set()
        call_, redispatch_ = OperatorHandle.call, OperatorHandle.redispatch

        def spy_call(h, ks, *args):
            self.seen.add(h.name)
            return call_(h, ks, *args)

        def spy_redispatch(h, ks, *args):
            self.seen.add(h.name)
            return redispatch_(h, ks, *args)
        monkeypatch.setattr(OperatorHandle, "call", spy_call)
        monkeypatch.setattr(OperatorHandle, "redispatch", spy_redispatch)


COVER_CASES = [op for op in op_db if op.covers]


@pytest.mark.parametrize("op", COVER_CASES, ids=[f"{o.name}-{i}" for i, o in enumerate(COVER_CASES)])
def test_covered_ops_are_dispatched(op, monkeypatch):
    """``covers`` names the ops of the YAML an entry reaches without calling them by name (``_softmax`` under
    ``softmax``, ``native_layer_norm_backward`` under ``layer_norm``'s backward): they must really run."""
    spy = _DispatchSpy(monkeypatch)
    dtype = "float64" if "float64" in op.dtypes else op.dtypes[0]
    for s in samples_of(op, dtype):
        args = _float_inputs(ember, s.args, requires_grad=True)
        outs = [o for o in _float_outputs(call(op, ember, s, args=args)) if o.requires_grad]
        if outs and op.supports_autograd:
            sum(o.sum() for o in outs).backward()
    missing = sorted(set(op.covers) - spy.seen)
    assert not missing, f"{op.name}'s samples never dispatch {missing}: call them in an entry of their own"


ERROR_CASES = [(op, e) for op in op_db if op.errors for e in op.errors()]


@pytest.mark.parametrize("op,err", ERROR_CASES, ids=[f"{o.name}-{i}" for i, (o, _) in enumerate(ERROR_CASES)])
def test_error_inputs(op, err):
    with pytest.raises(err.error_type):
        call(op, torch, err.sample)
    with pytest.raises(err.error_type, match=err.match):
        call(op, ember, err.sample)


# ------------------------------------------------------------------------------ coverage of the YAML
# Ops of native_functions.yaml tested elsewhere, with where:
NOT_IN_TABLE = {
    # sparse tensors (COO and compressed): tests/test_sparse.py (construction, conversions, products, gradients
    # against PyTorch)
    "_coalesce", "_coalesced", "_dimI", "_dimV", "_indices", "_nnz", "_sparse_addmm", "_sparse_coo_tensor_unsafe",
    "_sparse_coo_tensor_with_dims_and_tensors", "_sparse_log_softmax", "_sparse_log_softmax_backward_data",
    "_sparse_mm", "_sparse_softmax", "_sparse_softmax_backward_data", "_sparse_sum", "_sparse_sum_backward",
    "_to_dense", "_to_sparse", "_validate_sparse_coo_tensor_args", "_values", "coalesce", "dense_dim", "indices",
    "is_coalesced", "sparse_coo_tensor", "sparse_dim", "sparse_mask", "to_dense", "to_sparse", "values",
    "_sparse_compressed_tensor_unsafe", "_validate_sparse_compressed_tensor_args", "ccol_indices", "col_indices",
    "crow_indices", "row_indices", "sparse_compressed_tensor", "sparse_sampled_addmm", "to_sparse_bsc",
    "to_sparse_bsr", "to_sparse_csc", "to_sparse_csr",
    # gradient scaling's ops: tests/amp/test_grad_scaler.py
    "_amp_foreach_non_finite_check_and_unscale", "_amp_update_scale",
    # quantized tensors: tests/aten/test_quantized.py (bit for bit against PyTorch over their own samples)
    "quantize_per_tensor", "quantize_per_tensor_dynamic", "quantize_per_channel", "dequantize", "int_repr", "q_scale",
    "q_zero_point", "q_per_channel_scales", "q_per_channel_zero_points", "q_per_channel_axis", "qscheme",
    "_make_per_tensor_quantized_tensor", "_make_per_channel_quantized_tensor", "_empty_affine_quantized",
    "_empty_per_channel_affine_quantized",
    # fake quantization: tests/ao/test_observers.py; ember's quantized layers: tests/ao/test_quantized_modules.py
    "fake_quantize_per_tensor_affine", "fake_quantize_per_tensor_affine_cachemask",
    "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams", "fake_quantize_per_tensor_affine_cachemask_backward",
    "fake_quantize_per_channel_affine", "fake_quantize_per_channel_affine_cachemask",
    "fake_quantize_per_channel_affine_cachemask_backward", "_quantized_linear", "_quantized_linear_dynamic",
    "_quantized_conv", "_quantized_add", "_quantized_rnn_layer_dynamic",
    # oneDNN's LSTM layer, what an observed float32 LSTM runs: tests/test_dispatch_fidelity.py; the lazy
    # conjugate's and negation's views: tests/test_math_bits.py
    "mkldnn_rnn_layer", "mkldnn_rnn_layer_backward", "conj", "_conj", "resolve_conj", "_neg_view", "resolve_neg",
    # the private operators public ones run (embedding_bag for a weight without grad, conj_physical of a complex
    # tensor, cdist, pdist, eigh / eigvalsh): covered by the public ones' entries of the table
    "_embedding_bag_forward_only", "_conj_physical", "_cdist_forward", "_euclidean_dist", "_pdist_forward",
    "_linalg_eigh",
    # the factorizations det / slogdet / solve / svd keep (their LU factors and pivots, U / S / Vh): the public ops'
    # entries, and tests/test_linalg_factors.py for the factors themselves
    "_linalg_det", "_linalg_slogdet", "_linalg_solve_ex", "_linalg_svd",
    # dtype promotion as operators (a dispatch mode sees them): tests/test_linalg_factors.py
    "promote_types", "can_cast",
    # unfold's derivative (and istft's overlap-add): test_unfold_backward_is_pytorchs below
    "unfold_backward",
    # what item() and detach() dispatch to under __torch_dispatch__: tests/test_torch_dispatch.py; the size an
    # exported graph reads: tests/test_export.py
    "_local_scalar_dense", "detach", "sym_size",
    # factories and random ops: tests/test_factories.py and tests/test_random.py
    "empty", "empty_strided", "new_empty_strided", "zeros", "ones", "full", "scalar_tensor", "empty_like",
    "zeros_like", "ones_like", "full_like",
    "arange", "linspace", "logspace", "eye", "tril_indices", "triu_indices", "new_empty", "new_zeros", "new_ones",
    "new_full", "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "uniform", "normal", "random",
    "bernoulli", "multinomial", "exponential", "cauchy", "log_normal", "geometric", "poisson", "binomial",
    "_standard_gamma", "_sample_dirichlet",
    # the deprecated inclusive range, randint_like and empty_permuted: tests/test_everyday_api.py
    "range", "randint_like", "empty_permuted",
    # the state of quasirandom.SobolEngine: tests/test_everyday_api.py
    "_sobol_engine_draw", "_sobol_engine_ff", "_sobol_engine_scramble", "_sobol_engine_initialize_state",
    # copies, conversions and fills: tests/test_tensor.py
    "detach_copy", "view_as_complex_copy", "view_as_real_copy",
    "_to_copy", "_contiguous_copy", "copy", "fill", "zero", "alias", "_reshape_alias",
    # linalg's error check after an *_ex operator: tests/test_fidelity.py (PyTorch's LinAlgError messages)
    "_linalg_check_errors",
    # reached through Tensor indexing: tests/test_indexing.py
    "index", "slice",
    # the optimizers' ops: tests/optim/test_fused_ops.py (against PyTorch's own) and tests/optim/test_optimizers.py;
    # the other _foreach_* ops (every overload): tests/test_foreach.py
    "_fused_sgd", "_fused_adam", "_fused_adamw", "_fused_adagrad", "_fused_rmsprop", "_fused_adadelta",
    "_fused_adamax", "_fused_nadam", "_fused_radam", "_fused_asgd", "_fused_rprop",
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
        covered.update(c.replace(".", "_") for c in op.covers + op.aliases)
    missing = sorted({_public_key(nf) for nf in nfs if not nf.schema.name.startswith("_foreach_")}
                     - covered - NOT_IN_TABLE)
    assert not missing, f"ops without an op_db entry (add one, or list them in NOT_IN_TABLE with the test " \
                        f"that covers them): {missing}"


@pytest.mark.parametrize("shape,dim,size,step", [((2, 10, 3), 1, 3, 2), ((2, 10, 3), 1, 4, 4), ((2, 10, 3), 1, 2, 3),
                                                 ((5,), 0, 1, 1), ((2, 10, 3), -1, 2, 1), ((), 0, 1, 1)])
def test_unfold_backward_is_pytorchs(shape, dim, size, step):
    """``aten.unfold_backward`` (windows added back, overlaps summed) against PyTorch's, and as unfold's
    derivative (a node PyTorch names UnfoldBackward0)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    t = torch.tensor(x, requires_grad=True)
    u = t.unfold(dim, size, step)
    g = rng.standard_normal(tuple(u.shape))
    want = torch.ops.aten.unfold_backward(torch.tensor(g), list(shape), dim, size, step)
    got = ember.ops.aten.unfold_backward(ember.tensor(g), list(shape), dim, size, step)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    e = ember.tensor(x, requires_grad=True)
    e.unfold(dim, size, step).backward(ember.tensor(g))
    u.backward(torch.tensor(g))
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    assert ember.autograd.gradgradcheck(lambda a: a.unfold(dim, size, step), (ember.tensor(x, requires_grad=True),))
