"""Forward-mode AD over every differentiable op of the table: the tangents of each entry's outputs, with random
tangents on its floating inputs, must equal PyTorch's (``torch.autograd.forward_ad``) in float64. Where PyTorch has
no forward formula ("Trying to use forward AD with ... that does not support it") ember still gives one (through
its backward formula, Note [Forward derivative by double backward]); those are checked against finite
differences instead."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as efw
from tests.op_db import op_db
from tests.test_ops import call, samples_of

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
import torch.autograd.forward_ad as tfw  # noqa: E402

CASES = [op for op in op_db if "float64" in op.dtypes and op.supports_autograd]

# random ops: the same draw is not reproducible across the two libraries
RANDOM = {"bernoulli", "multinomial", "normal", "poisson", "rrelu", "dropout", "randn_like", "rand_like",
          "binomial", "_standard_gamma", "nn.functional.dropout", "nn.functional.rrelu", "feature_alpha_dropout",
          "alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "nn.functional.alpha_dropout",
          "nn.functional.feature_alpha_dropout", "nn.functional.dropout1d", "nn.functional.dropout2d",
          "nn.functional.dropout3d", "exponential_", "uniform_", "normal_", "cauchy_", "log_normal_",
          "geometric_", "random_", "bernoulli_", "randint_like", "native_dropout"}
# inputs of a structure (symmetric positive definite): their tangents are symmetric too (a random tangent leaves the
# domain, where PyTorch's forward formula and a finite difference read different parts of it)
SYMMETRIC = {"cholesky", "linalg.cholesky", "linalg.cholesky_ex", "cholesky_solve", "linalg.eigh", "linalg.eigvalsh"}
# PyTorch's forward formula disagrees with its own reverse mode (``torch.autograd.functional.jvp``, the double
# backward, and a finite difference in the input's triangle); ember's agrees with them
FORWARD_FORMULA_DIFFERS = {"cholesky_inverse"}


def _float_arrays(args):
    """(position, index in a list or None) of each floating array argument."""
    where = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            where.append((i, None))
        elif isinstance(a, list) and a and all(isinstance(x, np.ndarray) for x in a):
            where += [(i, j) for j, x in enumerate(a) if x.dtype.kind == "f"]
    return where


def _make(lib, fw, args, where, tangents):
    conv = (lambda x: lib.tensor(x.copy())) if lib is ember else (lambda x: torch.from_numpy(x.copy()))
    out = [conv(a) if isinstance(a, np.ndarray) else
           ([conv(x) for x in a] if isinstance(a, list) and a and all(isinstance(x, np.ndarray) for x in a) else a)
           for a in args]
    for (i, j), t in zip(where, tangents):
        if j is None:
            out[i] = fw.make_dual(out[i], conv(t))
        else:
            out[i][j] = fw.make_dual(out[i][j], conv(t))
    return out


def _numpy(t):
    if t is None:
        return None
    if getattr(t, "_is_zerotensor", lambda: False)():
        return np.zeros(tuple(t.shape))
    return np.array(t.detach().resolve_conj().numpy())


def _tangents_out(fw, out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [_numpy(fw.unpack_dual(o).tangent) for o in outs
            if hasattr(o, "dtype") and (o.dtype.is_floating_point or o.dtype.is_complex)]


def _primals_out(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if hasattr(o, "dtype") and (o.dtype.is_floating_point or o.dtype.is_complex)]


def _run(lib, fw, op, s, where, tangents):
    with fw.dual_level():
        args = _make(lib, fw, s.args, where, tangents)
        out = call(op, lib, s, args=args)
        return _tangents_out(fw, out), [np.array(o.detach().numpy()) for o in _primals_out(out)]


def _finite_difference(op, s, where, tangents, eps=1e-6):
    def at(sign):
        args = [a.copy() if isinstance(a, np.ndarray) else (list(a) if isinstance(a, list) else a) for a in s.args]
        for (i, j), t in zip(where, tangents):
            if j is None:
                args[i] = args[i] + sign * eps * t
            else:
                args[i][j] = args[i][j] + sign * eps * t
        out = call(op, ember, s, args=[ember.tensor(a) if isinstance(a, np.ndarray) else
                                       ([ember.tensor(x) for x in a] if isinstance(a, list) and a and
                                        isinstance(a[0], np.ndarray) else a) for a in args])
        return [o.detach().numpy() for o in _primals_out(out)]
    return [(p - m) / (2 * eps) for p, m in zip(at(1), at(-1))]


def _close_to_finite_difference(op, s, where, tangents, got, only=None):
    fd = _finite_difference(op, s, where, tangents)
    for k, (g, f) in enumerate(zip(got, fd)):
        if g is not None and (only is None or k == only) and np.isfinite(f).all():
            np.testing.assert_allclose(g, f, rtol=1e-4, atol=1e-5)


def _torch_double_backward_jvp(op, s, where, tangents):
    """PyTorch's Jacobian-vector product through its reverse mode."""
    base = [torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a for a in s.args]

    def f(*xs):
        args = list(base)
        for (i, j), x in zip(where, xs):
            args[i] = x
        return tuple(o for o in _primals_out(call(op, torch, s, args=args)))
    xs = tuple(torch.from_numpy((s.args[i]).copy()) for i, j in where)
    ts = tuple(torch.from_numpy(t) for t in tangents)
    _, out = torch.autograd.functional.jvp(f, xs, ts)
    return [np.array(o.numpy()) for o in out]


@pytest.mark.parametrize("op", CASES, ids=[f"{o.name}-{i}" for i, o in enumerate(CASES)])
def test_forward_ad_matches_pytorch(op):
    if op.name in RANDOM:
        pytest.skip("random: the two libraries draw differently")
    compared = 0
    for si, s in enumerate(samples_of(op, "float64")[:4]):
        where = _float_arrays(s.args)
        if not where:
            continue
        rng = np.random.default_rng(si)
        tangents = []
        for i, j in where:
            a = s.args[i] if j is None else s.args[i][j]
            t = rng.standard_normal(a.shape).astype(a.dtype)
            if op.name in SYMMETRIC and t.ndim >= 2 and t.shape[-1] == t.shape[-2]:
                t = (t + np.swapaxes(t, -1, -2)) / 2
            tangents.append(t)
        try:
            want, tprimal = _run(torch, tfw, op, s, where, tangents)
            if op.name in FORWARD_FORMULA_DIFFERS:
                want = _torch_double_backward_jvp(op, s, where, tangents)
        except Exception as exc:   # noqa: BLE001
            if "forward AD" not in str(exc):
                continue   # PyTorch refuses the sample itself (the forward tests compare refusals)
            # PyTorch has no forward formula: ember refuses in its words, or gives the finite difference
            try:
                got, eprimal = _run(ember, efw, op, s, where, tangents)
            except (RuntimeError, NotImplementedError) as eexc:
                assert "Trying to use forward AD with" in str(eexc), str(eexc)
                compared += 1
                continue
            _close_to_finite_difference(op, s, where, tangents, got)
            compared += 1
            continue
        got, eprimal = _run(ember, efw, op, s, where, tangents)
        assert len(got) == len(want), (len(got), len(want))
        for k, (g, w) in enumerate(zip(got, want)):
            if w is None:   # (PyTorch leaves some outputs without a tangent: scatter_reduce's prod)
                if g is not None:
                    _close_to_finite_difference(op, s, where, tangents, got, only=k)
                continue
            if not np.any(w):
                assert g is None or not np.any(np.nan_to_num(g)) or np.allclose(g, 0, atol=1e-12), \
                    "ember has a tangent where PyTorch's is zero"
                continue
            assert g is not None, "no tangent"
            assert g.shape == w.shape
            nan = ~np.isfinite(tprimal[k]) if k < len(tprimal) and tprimal[k].shape == w.shape else False
            np.testing.assert_allclose(np.where(nan, 0, g), np.where(nan, 0, w), rtol=1e-6, atol=1e-7,
                                       equal_nan=True)
        compared += 1
    if not compared:
        pytest.skip("no sample with a floating input")

