"""Gradients of every differentiable op of the table: parity with PyTorch on the same inputs (float32 and
float64), and gradcheck / gradgradcheck against finite differences in float64."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.op_db import op_db
from tests.test_ops import _float_inputs, _float_outputs, _leaves, call, samples_of

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

FLOAT_DTYPES = ("float64", "float32")
CASES = [(op, d) for op in op_db for d in op.dtypes if d in FLOAT_DTYPES]


def _backward_both(tloss, eloss):
    """Backward in PyTorch and ember. Where PyTorch has no derivative ("derivative for aten::floor_divide is
    not implemented", "the derivative for '_unique2' is not implemented."), ember must refuse the same way;
    returns False then."""
    try:
        tloss.backward()
    except RuntimeError as exc:
        if "not implemented" not in str(exc):
            raise
        with pytest.raises(type(exc), match="derivative for .* is not implemented"):
            eloss.backward()
        return False
    eloss.backward()
    return True


# PyTorch 2.13's own backward is wrong here; gradcheck (below) checks ember's against finite differences
TORCH_BACKWARD_WRONG = {
    # as_strided_scatter_backward gives ``self`` the gradient of the window instead of everything outside it
    "as_strided_scatter",
    # the backward of vander's in-place cumulative product fails: "one of the variables needed for gradient
    # computation has been modified by an inplace operation"
    "vander",
}


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o.name}-{d}-{i}" for i, (o, d) in enumerate(CASES)])
def test_gradients_match_pytorch(op, dtype):
    """The gradient of a weighted sum of the outputs, for every sample PyTorch accepts. An entry with
    ``supports_autograd=False`` must have no differentiable output (or no derivative) in both libraries."""
    if op.name in TORCH_BACKWARD_WRONG:
        pytest.skip("PyTorch's backward is wrong here; gradcheck checks ember's")
    rng = np.random.default_rng(7)
    compared = 0
    for s in samples_of(op, dtype):
        targs = _float_inputs(torch, s.args, True)
        try:
            tout = call(op, torch, s, args=targs)
        except Exception:  # refusals are compared by test_forward_matches_pytorch
            continue
        eargs = _float_inputs(ember, s.args, True)
        eout = call(op, ember, s, args=eargs)
        touts = [o for o in _float_outputs(tout) if o.requires_grad]
        eouts = [o for o in _float_outputs(eout) if o.requires_grad]
        assert len(eouts) == len(touts), f"{op.name}: {len(eouts)} differentiable outputs, PyTorch has {len(touts)}"
        if not touts or not list(_leaves(targs)):
            continue
        weights = [rng.standard_normal(tuple(o.shape)).astype(dtype) for o in touts]
        tloss = sum((o * torch.from_numpy(w)).sum() for o, w in zip(touts, weights))
        eloss = sum((o * ember.tensor(w)).sum() for o, w in zip(eouts, weights))
        if not _backward_both(tloss, eloss):
            continue
        for el, tl in zip(_leaves(eargs), _leaves(targs)):
            if tl.grad is None:
                assert el.grad is None, f"{op.name}: a gradient for an input PyTorch does not differentiate"
                continue
            assert el.grad is not None, f"{op.name}: no gradient for an input PyTorch differentiates"
            rtol, atol = (1e-7, 1e-7) if dtype == "float64" else (1e-4, 1e-5)
            np.testing.assert_allclose(el.grad.numpy(), tl.grad.numpy(force=True), rtol=rtol, atol=atol,
                                       err_msg=f"{op.name} {s.kwargs}")
        compared += 1
    if op.supports_autograd:
        assert compared, f"{op.name}: no sample reached a gradient comparison (supports_autograd=False?)"
    else:
        assert not compared, f"{op.name} has gradients: set supports_autograd=True"


HERMITIAN_INPUT = {"linalg.cholesky", "linalg.cholesky_ex", "cholesky", "linalg.eigvalsh", "linalg.eigh"}
# these read one triangle of a Cholesky factor (the argument at this position; ``upper`` after it) and, as in
# PyTorch, give a gradient for the whole matrix: checked through tril / triu of the input, as PyTorch does
TRIANGULAR_INPUT = {"cholesky_solve": 1, "cholesky_inverse": 0}
# samples with ties, where the function is not differentiable and finite differences see a jump
NO_GRADCHECK = {"mode",
                # differentiable in q only (the derivative in x is not implemented, as in PyTorch): gradcheck of q
                # in tests/autograd/test_formulas.py
                "special_zeta"}
# triangular_solve's forward formula (PyTorch's) reads A's whole tangent while the function reads one triangle
NO_FORWARD_GRADCHECK = {"triangular_solve"}
# gradcheck's cost grows with the number of input elements: larger samples are left to the parity test above
GRADCHECK_MAX_NUMEL = 64
GC_CASES = [op for op in op_db if "float64" in op.dtypes and op.supports_autograd and op.name not in NO_GRADCHECK]


def _with_inputs(args, xs):
    """``args`` with its float leaves (also inside lists, as cat's) replaced by ``xs`` in order."""
    it = iter(xs)

    def sub(a):
        if isinstance(a, list):
            return [sub(x) for x in a]
        return next(it) if hasattr(a, "requires_grad") and a.requires_grad else a
    return [sub(a) for a in args]


@pytest.mark.parametrize("op", GC_CASES, ids=[f"{o.name}-{i}" for i, o in enumerate(GC_CASES)])
def test_gradcheck_and_gradgradcheck(op):
    """gradcheck (and gradgradcheck unless ``supports_gradgrad=False``) on up to two samples whose inputs
    are small enough; at least one must be checked."""
    checked = 0
    for s in samples_of(op, "float64"):
        args = _float_inputs(ember, s.args, True)
        try:
            out = call(op, ember, s, args=args)
        except Exception:  # refusals are compared by test_forward_matches_pytorch
            continue
        leaves = list(_leaves(args))
        if not [o for o in _float_outputs(out) if o.requires_grad] or not leaves:
            continue
        if any(a.numel() > GRADCHECK_MAX_NUMEL for a in leaves):
            continue
        if not all(bool(o.isfinite().all()) for o in _float_outputs(out)):
            continue  # finite differences need finite outputs (e.g. xlogy of a negative number)

        def fn(*xs, _s=s, _args=args):
            if op.name in HERMITIAN_INPUT:  # these read one triangle: check on symmetric inputs, as PyTorch does
                xs = ((xs[0] + xs[0].mT) / 2,) + tuple(xs[1:])
            if op.name in TRIANGULAR_INPUT:
                i = TRIANGULAR_INPUT[op.name]
                upper = len(_s.args) > i + 1 and _s.args[i + 1] is True
                xs = xs[:i] + (xs[i].triu() if upper else xs[i].tril(),) + tuple(xs[i + 1:])
            return call(op, ember, _s, args=_with_inputs(_args, xs))
        inputs = tuple(x.detach().requires_grad_(True) for x in leaves)
        # forward mode too (one jvp per input element): its formulas against finite differences; where PyTorch
        # has none and ember's backward is not differentiable, forward mode refuses in PyTorch's words
        try:
            assert ember.autograd.gradcheck(fn, inputs, check_forward_ad=op.name not in NO_FORWARD_GRADCHECK)
        except (RuntimeError, NotImplementedError) as exc:
            if "Trying to use forward AD with" not in str(exc):
                raise
            assert ember.autograd.gradcheck(fn, inputs)
        if op.supports_gradgrad:
            assert ember.autograd.gradgradcheck(fn, inputs)
        checked += 1
        if checked == 2:
            break
    assert checked, f"{op.name}: no sample small enough (<= {GRADCHECK_MAX_NUMEL} elements per input) for gradcheck"


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
