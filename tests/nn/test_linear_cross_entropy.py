"""``nn.LinearCrossEntropyLoss`` / ``F.linear_cross_entropy`` / ``nn.LinearCrossEntropyOptions`` against PyTorch:
the reference path (linear then cross_entropy, K-dimensional losses, label smoothing, probabilities) and the
chunked path (every reduction, chunk sizes, bias, class weights, ignored targets, a second backward)."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

R = np.random.default_rng(0)
N, D, C = 37, 8, 50
X, W, B = R.standard_normal((N, D)), R.standard_normal((C, D)) * 0.3, R.standard_normal(C)
T = R.integers(0, C, N)
T[3] = -100
CW = R.random(C) + 0.5


def run(L, reduction, options, bias, weight, dtype="float64", x=X, target=T, **kw):
    dt = getattr(L, dtype)
    xx = L.tensor(x, dtype=dt, requires_grad=True)
    ww = L.tensor(W, dtype=dt, requires_grad=True)
    bb = None if bias is None else L.tensor(bias, dtype=dt, requires_grad=True)
    opts = None if options is None else L.nn.LinearCrossEntropyOptions(**options)
    loss = L.nn.functional.linear_cross_entropy(xx, ww, L.tensor(target), linear_bias=bb, reduction=reduction,
                                                weight=None if weight is None else L.tensor(weight, dtype=dt),
                                                options=opts, **kw)
    (loss.sum() if reduction == "none" else loss).backward()
    out = [loss.detach(), xx.grad, ww.grad] + ([] if bb is None else [bb.grad])
    return [o.float().numpy() if dtype == "bfloat16" else o.numpy() for o in out]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("options", [None, {}, dict(batch_chunk_size=5), dict(chunking_method="aspect_ratio:4"),
                                     dict(allow_retain_graph=True)])
@pytest.mark.parametrize("bias,weight", [(None, None), (B, None), (None, CW), (B, CW)])
def test_chunked_and_reference_paths_match_pytorch(reduction, options, bias, weight):
    for a, b in zip(run(ember, reduction, options, bias, weight), run(torch, reduction, options, bias, weight)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("bfloat16", 3e-2)])
def test_chunked_path_in_lower_precision(dtype, tol):
    for a, b in zip(run(ember, "mean", {}, B, None, dtype), run(torch, "mean", {}, B, None, dtype)):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_unbatched_input_k_dimensional_loss_label_smoothing_and_probabilities():
    x1, t1 = X[0], T[0:1].reshape(())
    for a, b in zip(run(ember, "mean", {}, None, None, x=x1, target=t1),
                    run(torch, "mean", {}, None, None, x=x1, target=t1)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for L_opts in (None, {}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # options are ignored (with a warning) where the chunked path cannot go
            e = run(ember, "mean", L_opts, None, None, label_smoothing=0.2)
            t = run(torch, "mean", L_opts, None, None, label_smoothing=0.2)
        for a, b in zip(e, t):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    w3 = R.standard_normal((4, 3, D))
    x3, t3 = R.standard_normal((5, D)), R.integers(0, 4, (5, 3))
    e = ember.nn.functional.linear_cross_entropy(ember.tensor(x3), ember.tensor(w3), ember.tensor(t3))
    t = torch.nn.functional.linear_cross_entropy(torch.tensor(x3), torch.tensor(w3), torch.tensor(t3))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)
    probs = R.random((N, C))
    e = ember.nn.functional.linear_cross_entropy(ember.tensor(X), ember.tensor(W), ember.tensor(probs))
    t = torch.nn.functional.linear_cross_entropy(torch.tensor(X), torch.tensor(W), torch.tensor(probs))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)


def test_module_options_and_refusals():
    for L in (ember, torch):
        L.manual_seed(0)
        m = L.nn.LinearCrossEntropyLoss(D, C, bias=True, options=L.nn.LinearCrossEntropyOptions(batch_chunk_size=8))
        assert tuple(m.linear.weight.shape) == (C, D)
        with L.no_grad():
            m.linear.weight.copy_(L.tensor(W))
            m.linear.bias.copy_(L.tensor(B))
    e = ember.nn.LinearCrossEntropyLoss(D, C, bias=True)
    t = torch.nn.LinearCrossEntropyLoss(D, C, bias=True)
    assert repr(e) == repr(t)
    for L in (ember, torch):
        with pytest.raises(ValueError, match="invalid acc_policy: 'fast'"):
            L.nn.LinearCrossEntropyOptions(acc_policy="fast")
        with pytest.raises(ValueError, match="invalid chunking_method: 'rows'"):
            L.nn.LinearCrossEntropyOptions(chunking_method="rows")
        with pytest.raises(ValueError, match="batch_chunk_size must be positive int or None, got 0"):
            L.nn.LinearCrossEntropyOptions(batch_chunk_size=0)
        with pytest.raises(RuntimeError, match="expected label_smoothing to be in range \\[0, 1\\], got 2"):
            L.nn.LinearCrossEntropyLoss(D, C, label_smoothing=2)
        with pytest.raises(RuntimeError, match="expected input with dimensionality 1 or 2, got 3"):
            L.nn.functional.linear_cross_entropy(L.ones(2, 2, D), L.ones(C, D), L.zeros(2, dtype=L.int64))
        with pytest.raises(RuntimeError, match="expected equal input and linear_weight last dimensions"):
            L.nn.functional.linear_cross_entropy(L.ones(2, 3), L.ones(C, D), L.zeros(2, dtype=L.int64))
        with pytest.raises(RuntimeError, match="ignore_index cannot be specified when target contains probabilities"):
            L.nn.functional.linear_cross_entropy(L.ones(2, D), L.ones(C, D), L.ones(2, C), ignore_index=1)
        xx = L.tensor(X, requires_grad=True)
        loss = L.nn.functional.linear_cross_entropy(xx, L.tensor(W), L.tensor(T),
                                                    options=L.nn.LinearCrossEntropyOptions())
        loss.backward(retain_graph=True)
        with pytest.raises(RuntimeError, match="linear_cross_entropy chunked backward called twice"):
            loss.backward()
