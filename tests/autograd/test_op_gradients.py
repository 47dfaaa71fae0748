"""Gradients of every differentiable op of the table: parity with PyTorch on the same inputs (float32 and
float64), and gradcheck / gradgradcheck against finite differences in float64."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.op_db import op_db
from tests.test_ops import call, samples_of

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

# Ops whose derivative ember does not have yet (PyTorch has them): backward raises
# "the derivative for ... is not implemented." — listed here so that a missing formula is a visible decision.
# PyTorch declares these not_implemented in derivatives.yaml too; backward raises the same error in both.
NOT_DIFFERENTIABLE = {"histc", "nextafter"}
FLOAT_DTYPES = ("float64", "float32")


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


CASES = [(op, d) for op in op_db for d in op.dtypes if d in FLOAT_DTYPES]


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o.name}-{d}-{i}" for i, (o, d) in enumerate(CASES)])
def test_gradients_match_pytorch(op, dtype):
    rng = np.random.default_rng(7)
    for s in samples_of(op, dtype):
        targs = _float_inputs(torch, s.args, True)
        try:
            tout = call(op, torch, s, args=targs)
        except Exception:
            continue
        touts = [o for o in _float_outputs(tout) if o.requires_grad]
        if not touts or not list(_leaves(targs)):
            continue
        weights = [rng.standard_normal(tuple(o.shape)).astype(dtype) for o in touts]
        tloss = sum((o * torch.from_numpy(w)).sum() for o, w in zip(touts, weights))
        try:
            tloss.backward()
        except Exception:
            continue
        eargs = _float_inputs(ember, s.args, True)
        eout = call(op, ember, s, args=eargs)
        eouts = [o for o in _float_outputs(eout) if o.requires_grad]
        assert len(eouts) == len(touts), f"{op.name}: {len(eouts)} differentiable outputs, PyTorch has {len(touts)}"
        eloss = sum((o * ember.tensor(w)).sum() for o, w in zip(eouts, weights))
        if op.name in NOT_DIFFERENTIABLE:
            with pytest.raises(RuntimeError, match="derivative for .* is not implemented"):
                eloss.backward()
            return
        eloss.backward()
        for el, tl in zip(_leaves(eargs), _leaves(targs)):
            assert el.grad is not None, f"{op.name}: no gradient for an input PyTorch differentiates"
            rtol, atol = (1e-7, 1e-7) if dtype == "float64" else (1e-4, 1e-5)
            np.testing.assert_allclose(el.grad.numpy(), tl.grad.numpy(force=True), rtol=rtol, atol=atol,
                                       err_msg=f"{op.name} {s.kwargs}")


HERMITIAN_INPUT = {"linalg.cholesky", "linalg.eigvalsh", "linalg.eigh"}
# samples with ties, where the function is not differentiable and finite differences see a jump
NO_GRADCHECK = {"mode"}
GC_CASES = [op for op in op_db if "float64" in op.dtypes and op.name not in NOT_DIFFERENTIABLE | NO_GRADCHECK]


@pytest.mark.parametrize("op", GC_CASES, ids=[f"{o.name}-{i}" for i, o in enumerate(GC_CASES)])
def test_gradcheck_and_gradgradcheck(op):
    for s in samples_of(op, "float64")[:2]:
        args = _float_inputs(ember, s.args, True)
        try:
            out = call(op, ember, s, args=args)
        except Exception:
            continue
        if not [o for o in _float_outputs(out) if o.requires_grad] or not list(_leaves(args)):
            continue
        if any(a.numel() > 40 for a in _leaves(args)):
            continue
        if not all(bool(o.isfinite().all()) for o in _float_outputs(out)):
            continue  # finite differences need finite outputs (e.g. xlogy of a negative number)

        def fn(*xs, _s=s):
            if op.name in HERMITIAN_INPUT:  # these read one triangle: check on symmetric inputs, as PyTorch does
                xs = ((xs[0] + xs[0].mT) / 2,) + tuple(xs[1:])
            return call(op, ember, _s, args=list(xs))
        flat = tuple(args)
        if any(isinstance(a, list) for a in flat):
            continue
        assert ember.autograd.gradcheck(fn, flat)
        if op.name not in NO_GRADGRAD:
            assert ember.autograd.gradgradcheck(fn, flat)


# non-smooth or piecewise ops whose second derivative finite differences cannot check
NO_GRADGRAD = {"abs", "relu", "clamp", "clamp_min", "clamp_max", "clip", "maximum", "minimum", "max", "min",
               "amax", "amin", "sort", "topk", "kthvalue", "median", "mode", "cummax", "cummin", "fmax", "fmin",
               "sgn", "sign", "floor", "ceil", "trunc", "round", "frac", "remainder", "fmod", "floor_divide",
               "div", "where", "masked_fill", "relu6", "copysign", "nan_to_num", "logit", "cdist", "linalg.vector_norm",
               "cumprod", "prod",
               "convolution",  # convolution_backward has no formula yet (double backward of conv)
               # _rnn_layer_backward (BPTT in one kernel) has no formula, as PyTorch's cuDNN RNNs have none;
               # the cells (lstm_cell, ...) are composite and do support double backward
               "lstm", "gru", "rnn_tanh", "rnn_relu",
               "polygamma"}  # its sample's first argument is an int (gradgradcheck needs tensor inputs)


def test_eigh_eigenvector_gradients_match_pytorch():
    a = np.random.default_rng(3).standard_normal((4, 4))
    a = a + a.T
    w = np.random.default_rng(4).standard_normal((4, 4))
    grads = []
    for lib in (ember, torch):
        A = lib.tensor(a, requires_grad=True)
        L, V = lib.linalg.eigh(A)
        # a loss invariant to the sign of each eigenvector, so both libraries agree on it
        loss = (L * lib.tensor(w[0])).sum() + ((V * V) * lib.tensor(w)).sum()
        loss.backward()
        grads.append(A.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-8, atol=1e-10)
    X = ember.tensor(a, requires_grad=True)
    assert ember.autograd.gradcheck(lambda m: ember.linalg.eigh((m + m.mT) / 2).eigenvalues, (X,))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_svd_singular_vector_gradients_match_pytorch(shape):
    a = np.random.default_rng(5).standard_normal(shape)
    rng = np.random.default_rng(6)
    k = min(shape)
    w = [rng.standard_normal(k), rng.standard_normal((shape[0], k)), rng.standard_normal((k, shape[1]))]
    grads = []
    for lib in (ember, torch):
        A = lib.tensor(a, requires_grad=True)
        U, S, Vh = lib.linalg.svd(A, full_matrices=False)
        loss = (S * lib.tensor(w[0])).sum() + ((U * U) * lib.tensor(w[1])).sum() + ((Vh * Vh) * lib.tensor(w[2])).sum()
        loss.backward()
        grads.append(A.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-7, atol=1e-9)
