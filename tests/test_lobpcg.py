"""torch.lobpcg against PyTorch: the same seed gives the same starting block, so the same iterates (the number of
steps and the converged count after each one, seen through the tracker), the same eigenvalues, the same
eigenvectors up to sign (LAPACK's choice in the small eigendecompositions), the same gradients; and the same
refusals."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def spd(L, m, seed, dtype="float64", spread=1.0):
    """Q diag(1 + spread * (0..m-1)) Q^T from a fixed NumPy draw (the same matrix for both frameworks)."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((m, m)))
    a = (q * (1 + spread * np.arange(m))) @ q.T
    return L.tensor((a + a.T) / 2, dtype=getattr(L, dtype))


def run(L, A, seed, **kw):
    steps = []
    L.manual_seed(seed)
    E, X = L.lobpcg(A, tracker=lambda w: steps.append((w.ivars["istep"], w.ivars["converged_count"])), **kw)
    return E, X, steps


def assert_same_eigvecs(e, t, rtol):
    e, t = e.detach().numpy(), t.detach().numpy()
    signs = np.sign(np.sum(e * t, axis=-2, keepdims=True))
    np.testing.assert_allclose(e * signs, t, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("method", ["ortho", "basic"])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k,n", [(1, None), (3, None), (2, 4)])
def test_lobpcg_iterates_as_pytorch(method, largest, k, n):
    ea, ta = spd(ember, 36, 0), spd(torch, 36, 0)
    (ee, ex, es), (te, tx, ts) = (run(L, a, 7, k=k, n=n, largest=largest, method=method)
                                  for L, a in ((ember, ea), (torch, ta)))
    if method == "ortho":
        assert es == ts  # same steps, same convergence history
    else:  # the basic method's Cholesky-reduced projections amplify round-off: a pair may lock a step apart
        assert abs(len(es) - len(ts)) <= max(2, len(ts) // 10)
    assert tuple(ee.shape) == tuple(te.shape) == (k,) and tuple(ex.shape) == tuple(tx.shape) == (36, k)
    np.testing.assert_allclose(ee.numpy(), te.numpy(), rtol=1e-10)
    exact = np.linalg.eigvalsh(ea.numpy())
    np.testing.assert_allclose(ee.numpy(), exact[::-1][:k] if largest else exact[:k], rtol=1e-10)
    assert_same_eigvecs(ex, tx, 1e-6)


def test_lobpcg_with_b_x_preconditioner_and_float32():
    m = 30
    rng = np.random.default_rng(3)
    b = np.diag(1 + rng.random(m))
    x0 = rng.standard_normal((m, 3))
    for kw in (dict(k=2), dict(k=2, method="basic", iK=np.diag(1 / (1 + np.arange(m))))):
        res = []
        for L in (ember, torch):
            args = {key: (L.tensor(v) if isinstance(v, np.ndarray) else v) for key, v in kw.items()}
            X = L.tensor(x0)
            res.append(run(L, spd(L, m, 1), 0, B=L.tensor(b), X=X, **args))
            if L is ember:  # PyTorch's basic method overwrites the caller's X with its first Ritz vectors
                np.testing.assert_array_equal(X.numpy(), x0)
        (ee, ex, es), (te, tx, ts) = res
        assert es == ts
        np.testing.assert_allclose(ee.numpy(), te.numpy(), rtol=1e-10)
        assert_same_eigvecs(ex, tx, 1e-6)
        # the generalized problem's eigenvalues: those of B^-1/2 A B^-1/2 (B diagonal)
        s = 1 / np.sqrt(np.diag(b))
        exact = np.linalg.eigvalsh(spd(ember, m, 1).numpy() * s * s[:, None])[::-1][:2]
        np.testing.assert_allclose(ee.numpy(), exact, rtol=1e-10)
    (ee, ex, es), (te, tx, ts) = (run(L, spd(L, 40, 2, "float32"), 4, k=2) for L in (ember, torch))
    assert ee.dtype == ember.float32 and ex.dtype == ember.float32
    np.testing.assert_allclose(ee.numpy(), te.numpy(), rtol=1e-5)
    assert abs(len(es) - len(ts)) <= 2  # float32 round-off differs between BLAS libraries


def test_lobpcg_batched_draws_each_start_in_turn():
    a = np.stack([spd(ember, 24, s).numpy() for s in (0, 1, 2, 3)]).reshape(2, 2, 24, 24)
    (ee, ex, _), (te, tx, _) = (run(L, L.tensor(a), 9, k=2) for L in (ember, torch))
    assert tuple(ee.shape) == (2, 2, 2) and tuple(ex.shape) == (2, 2, 24, 2)
    np.testing.assert_allclose(ee.numpy(), te.numpy(), rtol=1e-10)
    assert_same_eigvecs(ex, tx, 1e-6)
    assert ember.randn(1).item() == torch.randn(1).item()  # both drew the same numbers


def test_lobpcg_tracker_state_and_force_stop():
    seen = {}

    def tracker(w):
        seen.update(w.iparams, **w.fparams, **w.bparams)
        seen["rerr"] = tuple(w.tvars["rerr"].shape)
        seen["S"] = tuple(w.S.shape)
        if w.ivars["istep"] == 3:
            w.bvars["force_stop"] = True
        seen["steps"] = w.ivars["istep"]

    ember.manual_seed(0)
    ember.lobpcg(spd(ember, 30, 0), k=2, tracker=tracker, ortho_iparams=dict(ortho_i_max=4))
    assert seen["steps"] == 3 and seen["ortho_i_max"] == 4 and seen["ortho_j_max"] == 3 and seen["largest"] is True
    assert seen["m"] == 30 and seen["n"] == 2 and seen["niter"] == 1000 and seen["tol"] == pytest.approx(1.49e-8, 1e-2)
    assert seen["rerr"] == (2,) and seen["S"] == (30, 6) and seen["ortho_use_drop"] is False
    steps = []
    ember.lobpcg(spd(ember, 30, 0), k=2, niter=4, tracker=lambda w: steps.append(1))
    assert len(steps) == 4
    assert "LOBPCG:\n  iparams={'m': 30" in str(ember._lobpcg.LOBPCG(None, None, ember.zeros(30, 1), None,
                                                                     {"m": 30, "n": 1}, {}, {}, "ortho", None))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 3])
def test_lobpcg_gradient_matches_pytorch(largest, k):
    """A loss on the eigenvalues and (sign-invariant) on the eigenvectors; PyTorch's gradient, symmetric, and
    the same as through the full eigendecomposition."""
    grads = []
    for L in (ember, torch):
        A = spd(L, 30, 5).requires_grad_()
        L.manual_seed(1)
        E, X = L.lobpcg(A, k=k, largest=largest)
        w = L.arange(1, k + 1, dtype=L.float64)
        ((E * w).sum() + ((X[:4] ** 2) * w).sum()).backward()
        grads.append(A.grad.numpy())
    # the eigenvectors are exact to the tolerance (residual ~1e-8 relative), and so are their gradients
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grads[0], grads[0].T, atol=1e-12)
    A = spd(torch, 30, 5).requires_grad_()
    E, X = torch.linalg.eigh(A)
    E, X = (E.flip(-1), X.flip(-1)) if largest else (E, X)
    w = torch.arange(1, k + 1, dtype=torch.float64)
    ((E[:k] * w).sum() + ((X[:4, :k] ** 2) * w).sum()).backward()
    np.testing.assert_allclose(grads[0], A.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_lobpcg_batched_gradient_and_unused_output():
    grads = []
    for L in (ember, torch):
        A = L.stack([spd(L, 24, 0), spd(L, 24, 1, spread=2.0)]).requires_grad_()
        L.manual_seed(3)
        L.lobpcg(A, k=2)[0].sum().backward()
        grads.append(A.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6, atol=1e-9)


def test_lobpcg_refusals_as_pytorch():
    for L in (ember, torch):
        with pytest.raises(AssertionError, match="A must be square, got shape"):
            L.lobpcg(L.ones(9, 8))
        with pytest.raises(AssertionError, match="A and B must have same shape"):
            L.lobpcg(L.eye(9), B=L.eye(8))
        with pytest.raises(ValueError, match=r"LOBPCG algorithm is not applicable when the number of A rows \(=8\)"
                                             r" is smaller than 3 x the number of requested eigenpairs \(=3\)"):
            L.lobpcg(L.eye(8), k=3)
        with pytest.raises(ValueError, match=r"the number of A rows \(=9\) is smaller than 3 x the number of "
                                             r"requested eigenpairs \(=4\)"):
            L.lobpcg(L.eye(9), X=L.ones(9, 4), n=1)
        A = spd(L, 30, 0).requires_grad_()
        E, _ = L.lobpcg(A, k=1, B=2 * L.eye(30, dtype=L.float64))
        with pytest.raises(ValueError, match="lobpcg.backward does not support backward with B != I yet."):
            E.sum().backward()
