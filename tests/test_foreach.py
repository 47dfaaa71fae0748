"""The ``_foreach_*`` ops against PyTorch's: every overload of native_functions.yaml is called (arguments built
from its schema), its results or in-place updates compared, the gradients of the out-of-place forms too, and
the list checks raise PyTorch's errors."""
from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from tools.codegen.model import load_native_functions

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

_YAML = os.path.join(os.path.dirname(ember.__file__), "aten", "native_functions.yaml")
FOREACH = [nf for nf in load_native_functions(_YAML) if nf.schema.name.startswith("_foreach_")]
SHAPES = [(2, 3), (4,), ()]
MM_SHAPES = ([(2, 3), (3, 3)], [(3, 2), (3, 1)])


def _list(rng, shapes, low=0.2, high=0.9):
    return [rng.uniform(low, high, s) for s in shapes]


def _arguments(nf, rng):
    """(positional numpy/python values, keyword values) for one overload, from its schema."""
    name = nf.schema.name
    n = len(SHAPES)
    args, kwargs = [], {}
    for i, a in enumerate(nf.schema.arguments):
        t = a.type
        if t.is_tensor_list:
            shapes = MM_SHAPES[i] if name == "_foreach_mm" else SHAPES
            v = _list(rng, shapes)
        elif t.is_tensor:                       # one 0-dim tensor, or a packed 1-D tensor of scalars
            v = np.array(1.3) if a.name == "other" else rng.uniform(0.5, 2.0, n)
        elif t.base == "Scalar" and t.is_list:
            v = [0.5, 1.5, 2.0]
        elif t.base == "Scalar":
            v = 2.0 if a.name == "self" else (0.5 if a.name == "alpha" else 0.7)
        elif a.name == "ord":
            v = 3
        else:                                   # dtype / memory_format / non_blocking: their defaults
            continue
        if a.kwarg_only:
            kwargs[a.name] = v
        else:
            args.append(v)
    return args, kwargs


def _to(lib, v, requires_grad=False):
    if isinstance(v, np.ndarray):
        t = lib.tensor(v.copy())
        return t.requires_grad_(True) if requires_grad and t.dim() else t
    if isinstance(v, list) and v and isinstance(v[0], np.ndarray):
        return [_to(lib, x, requires_grad) for x in v]
    return v


def _call(lib, nf, args, kwargs, requires_grad=False):
    fn = getattr(lib, nf.schema.name)
    largs = [_to(lib, a, requires_grad and i == 0) for i, a in enumerate(args)]
    out = fn(*largs, **{k: _to(lib, v) for k, v in kwargs.items()})
    return largs, out


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


@pytest.mark.parametrize("nf", FOREACH, ids=[str(nf.schema.name) + "." + (nf.schema.overload_name or "default")
                                             for nf in FOREACH])
def test_foreach_matches_pytorch(nf):
    rng = np.random.default_rng(0)
    args, kwargs = _arguments(nf, rng)
    inplace = nf.schema.name.endswith("_")
    (e_args, e_out), (t_args, t_out) = (_call(lib, nf, args, kwargs) for lib in (ember, torch))
    if inplace:                                 # the binding returns the list it updated, as PyTorch's does
        assert e_out is e_args[0] and t_out is t_args[0]
        e_res, t_res = e_args[0], t_args[0]
    else:
        e_res, t_res = e_out, t_out
    assert len(e_res) == len(t_res)
    for e, t in zip(e_res, t_res):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1] and tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(_np(e), _np(t), rtol=1e-7, atol=1e-7, err_msg=str(nf.schema))
    if inplace or not isinstance(args[0], list):
        return
    (e_args, e_out), (t_args, t_out) = (_call(lib, nf, args, kwargs, requires_grad=True) for lib in (ember, torch))
    w = [rng.standard_normal(tuple(o.shape)) for o in t_out]
    t_leaves = [t for t in t_args[0] if t.requires_grad]
    if not t_leaves:
        return
    try:
        sum((o * torch.tensor(x)).sum() for o, x in zip(t_out, w)).backward()
    except RuntimeError as exc:  # PyTorch has no derivative for addcmul / addcdiv's .Tensor overloads; ember,
        assert "not implemented" in str(exc)  # whose foreach ops are the per-tensor ops, differentiates them
        return
    sum((o * ember.tensor(x)).sum() for o, x in zip(e_out, w)).backward()
    for e, t in zip([e for e in e_args[0] if e.requires_grad], t_leaves):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-7, err_msg=str(nf.schema))


def test_in_place_foreach_bumps_each_version_and_refuses_leaves():
    xs = [ember.ones(2), ember.ones(3)]
    ember._foreach_mul_(xs, 2.0)
    assert [x._version for x in xs] == [1, 1]
    leaf = [ember.ones(2, requires_grad=True)]
    for lib, ts in ((torch, [torch.ones(2, requires_grad=True)]), (ember, leaf)):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            lib._foreach_add_(ts, 1.0)


@pytest.mark.parametrize("call,match", [
    (lambda L: L._foreach_add([], 1), "Tensor list must have at least one tensor."),
    (lambda L: L._foreach_add_([], 1), "Tensor list must have at least one tensor."),
    (lambda L: L._foreach_add([L.ones(2)] * 2, [L.ones(2)] * 3),
     "Tensor lists must have the same number of tensors, got 2 and 3"),
    (lambda L: L._foreach_mul([L.ones(2)] * 2, [1.0, 2.0, 3.0]),
     "Tensor list must have same number of elements as scalar list."),
    (lambda L: L._foreach_div([L.ones(2)] * 2, L.ones(2)),
     "scalar tensor expected to be 0 dim but it has 1 dimensions and 2 elements."),
    (lambda L: L._foreach_addcmul([L.ones(2)] * 2, [L.ones(2)] * 2, [L.ones(2)] * 2, L.ones(3)),
     "Expected length of scalars to match input of length 2 but got 3 instead."),
    (lambda L: L._foreach_addcdiv([L.ones(2)] * 2, [L.ones(2)] * 2, [L.ones(2)] * 2, L.ones(2, 1)),
     "Expected packed scalar Tensor to be of dimension 1. Got 2 instead."),
    (lambda L: L._foreach_add([L.ones(2)], [L.ones(3)]),
     "The size of tensor a \\(2\\) must match the size of tensor b \\(3\\) at non-singleton dimension 0"),
])
def test_foreach_errors_match_pytorch(call, match):
    with pytest.raises(RuntimeError, match=match):
        call(torch)
    with pytest.raises(RuntimeError, match=match):
        call(ember)


def test_every_foreach_name_of_pytorch_exists():
    missing = sorted(n for n in dir(torch) if n.startswith("_foreach_") and n != "_foreach_powsum"
                     and not hasattr(ember, n))
    assert not missing, missing
