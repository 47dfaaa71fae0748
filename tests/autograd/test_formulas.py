"""Formulas with special cases the OpInfo sweep does not reach: zeros in scatter_reduce prod, ties and
excluded values in amax, QR's non-differentiable modes, the limits of the Bessel derivatives at 0, and
gradcheck's fast mode."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.autograd.gradcheck import GradcheckError

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def _pair(a):
    return ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_with_zeros_matches_pytorch(include_self):
    a = np.array([[0.0, 2.0, 3.0, 0.0], [1.5, -1.0, 0.5, 2.0]])
    b = np.array([[0.0, 4.0, 0.0], [0.0, 3.0, 2.0]])
    idx = np.array([[0, 0, 3], [1, 1, 2]])
    w = np.arange(8.0).reshape(2, 4) - 3
    ea, ta = _pair(a)
    eb, tb = _pair(b)
    (ea.scatter_reduce(1, ember.tensor(idx), eb, "prod", include_self=include_self) * ember.tensor(w)).sum().backward()
    (ta.scatter_reduce(1, torch.tensor(idx), tb, "prod", include_self=include_self) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy())
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy())
    assert gradcheck(lambda x, y: x.scatter_reduce(1, ember.tensor(idx), y, "prod", include_self=include_self),
                     (ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)))


def test_scatter_reduce_amax_ties_split_evenly():
    s = ember.tensor([1.0, 0.0], dtype=ember.float64, requires_grad=True)
    src = ember.tensor([1.0, 1.0, -2.0], dtype=ember.float64, requires_grad=True)
    s.scatter_reduce(0, ember.tensor([0, 0, 1]), src, "amax").sum().backward()
    assert s.grad.tolist() == [1 / 3, 1.0] and src.grad.tolist() == [1 / 3, 1 / 3, 0.0]


def test_scatter_reduce_amax_excluded_self_takes_no_share():
    # PyTorch 2.13 gives src.grad == [0.5, 0]: it counts the excluded self value among the maximisers.
    # out[0] = max(src[0], src[1]) has the unique maximiser src[0]; the central difference says 1.
    s = ember.tensor([3.0, 5.0], dtype=ember.float64, requires_grad=True)
    src = ember.tensor([3.0, 1.0], dtype=ember.float64, requires_grad=True)
    out = s.scatter_reduce(0, ember.tensor([0, 0]), src, "amax", include_self=False)
    out.backward(ember.ones(2, dtype=ember.float64))
    assert src.grad.tolist() == [1.0, 0.0] and s.grad.tolist() == [0.0, 1.0]
    assert gradcheck(lambda x: s.detach().scatter_reduce(0, ember.tensor([0, 0]), x, "amax", include_self=False),
                     (src.detach().requires_grad_(),))


@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (3, 5), (2, 4, 3)])
def test_qr_gradient_matches_pytorch(shape):
    a = np.random.default_rng(0).standard_normal(shape)
    ea, ta = _pair(a)
    eq, er = ember.linalg.qr(ea)
    tq, tr = torch.linalg.qr(ta)
    ((eq * eq).sum() + er.sum()).backward()
    ((tq * tq).sum() + tr.sum()).backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_qr_modes_that_are_not_differentiable():
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed when mode='r'"):
        ember.linalg.qr(x, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows > ncols"):
        ember.linalg.qr(x, mode="complete").Q.sum().backward()


def test_bessel_derivatives_at_zero_and_in_both_ranges():
    x = ember.tensor([0.0, -1e-20, 0.7, -12.0, 35.0, -60.0], dtype=ember.float64, requires_grad=True)
    t = torch.tensor(x.detach().numpy(), requires_grad=True)
    for ef, tf in [(ember.i0, torch.i0), (ember.special.i0e, torch.special.i0e), (ember.special.i1, torch.special.i1),
                   (ember.special.i1e, torch.special.i1e)]:
        ge, = ember.autograd.grad(ef(x).sum(), x)
        gt, = torch.autograd.grad(tf(t).sum(), t)
        np.testing.assert_allclose(ge.numpy(), gt.numpy(), rtol=1e-12)
    assert ember.special.i0(x).grad_fn.name() == "I0Backward0"  # the alias records the base op, as in PyTorch


@pytest.mark.parametrize("fn", ["quantile", "nanquantile"])
def test_quantile_gradient_matches_pytorch(fn):
    a = np.random.default_rng(1).standard_normal((4, 6))
    a[2, 3] = np.nan
    q = np.array([0.1, 0.5, 0.95])
    ea, ta = _pair(a)
    eo = getattr(ember, fn)(ea, ember.tensor(q), dim=1, keepdim=True)
    to = getattr(torch, fn)(ta, torch.tensor(q), dim=1, keepdim=True)
    w = np.random.default_rng(2).standard_normal(tuple(to.shape))
    (eo.nan_to_num() * ember.tensor(w)).sum().backward()
    (to.nan_to_num() * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-12)


def test_gradcheck_fast_mode():
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    y = ember.randn(3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda a, b: (a * b).tanh().sum(0), (x, y), fast_mode=True)
    assert gradgradcheck(lambda a, b: (a * b).sin(), (x, y), fast_mode=True)

    class Wrong(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    with pytest.raises(GradcheckError, match="(?s)Jacobian mismatch for output 0 with respect to input 0.*fast mode"):
        gradcheck(Wrong.apply, (x,), fast_mode=True)
    assert gradcheck(Wrong.apply, (x,), fast_mode=True, raise_exception=False) is False


@pytest.mark.parametrize("name", ["xlogy", "special.xlog1py"])
def test_xlogy_gradients_where_self_is_zero_match_pytorch(name):
    """d/dself of ``self * log(other)`` is ``log(other)`` even where self is 0 (Dirichlet's log_prob at a
    concentration of 1 needs it); it is 0 only where other is outside the log's domain."""
    s = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 2.0])
    o = np.array([0.5, 0.0, -1.0, 0.5, 2.0, -3.0])
    grads = []
    for lib in (ember, torch):
        fn = lib.xlogy if name == "xlogy" else lib.special.xlog1py
        a, b = lib.tensor(s, requires_grad=True), lib.tensor(o, requires_grad=True)
        fn(a, b).sum().backward()
        grads.append((a.grad.numpy(), b.grad.numpy()))
    for e, t in zip(*grads):
        np.testing.assert_allclose(e, t, equal_nan=True)


def test_zeta_is_differentiable_in_q_only_as_in_pytorch():
    x, q = np.array([2.0, 3.5, 1.7]), np.array([0.5, 2.0, 4.0])
    grads = []
    for lib in (ember, torch):
        b = lib.tensor(q, requires_grad=True)
        lib.special.zeta(lib.tensor(x), b).sum().backward()
        grads.append(b.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10)
    assert gradcheck(lambda b: ember.special.zeta(ember.tensor(x), b), (ember.tensor(q, requires_grad=True),))
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
        ember.special.zeta(ember.tensor(x, requires_grad=True), ember.tensor(q)).sum().backward()
