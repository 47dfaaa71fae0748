"""ember.func (vmap, grad, grad_and_value, vjp, jacrev, hessian, functional_call, stack_module_state) against
torch.func, and against loops of single-example calls."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def T(lib, a, dtype=None):
    return lib.tensor(np.asarray(a), dtype=dtype or lib.float64)


def close(e, t, tol=1e-10):
    if isinstance(t, (tuple, list)):
        assert type(e) in (tuple, list) and len(e) == len(t)
        for a, b in zip(e, t):
            close(a, b, tol)
        return
    if isinstance(t, dict):
        assert set(e) == set(t)
        for k in t:
            close(e[k], t[k], tol)
        return
    assert not type(e).__name__.startswith("Batched"), "a batched tensor escaped its vmap"
    assert tuple(e.shape) == tuple(t.shape), (tuple(e.shape), tuple(t.shape))
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def both(fn):
    return fn(ember), fn(torch)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 3, 4))
Y = RNG.standard_normal((5, 4))
W = RNG.standard_normal((4, 6))


# ------------------------------------------------------------------------------------------------------------ vmap
VMAP_CASES = {
    "pointwise broadcast": (lambda L: (lambda x, y: x * y + y.sin()), lambda L: (T(L, X), T(L, Y)), 0),
    "scalar per example": (lambda L: (lambda x, y: x.sum() * y), lambda L: (T(L, X), T(L, Y)), 0),
    "in_dims=(None, 0)": (lambda L: (lambda w, y: y @ w), lambda L: (T(L, W), T(L, Y)), (None, 0)),
    "in_dims=1": (lambda L: (lambda x: x.softmax(-1).sum(0)), lambda L: (T(L, X),), 1),
    "negative in_dim": (lambda L: (lambda x: x.mean(-1)), lambda L: (T(L, X),), -1),
    "reductions": (lambda L: (lambda x: (x.amax(0), x.sum(), x.var(1), x.logsumexp(-1), x.argmax())),
                   lambda L: (T(L, X),), 0),
    "views": (lambda L: (lambda x: (x.t().reshape(-1)[:5], x.unsqueeze(1).expand(3, 2, 4).permute(2, 0, 1),
                                    x.transpose(0, 1).contiguous().view(2, 6), x[1:, ::2], x.unbind(1)[2])),
              lambda L: (T(L, X),), 0),
    "matmul family": (lambda L: (lambda x, y: (x @ y, L.mv(x, y), y.dot(y), L.mm(x, x.t()), L.addmm(y[:3], x, x.t()))),
                      lambda L: (T(L, X), T(L, Y)), 0),
    "cat and stack": (lambda L: (lambda x, y: (L.cat([x, y[None]], 0), L.stack([y, y * 2], 1))),
                      lambda L: (T(L, X), T(L, Y)), 0),
    "nn functions": (lambda L: (lambda x: (L.nn.functional.log_softmax(x, 1), L.nn.functional.layer_norm(x, (4,)),
                                           L.nn.functional.gelu(x), L.nn.functional.relu(x).cumsum(0))),
                     lambda L: (T(L, X),), 0),
    "type promotion of a scalar example": (lambda L: (lambda s, y: s * y),
                                           lambda L: (T(L, Y[:, 0]), T(L, W[0], L.float32)), (0, None)),
}


@pytest.mark.parametrize("case", list(VMAP_CASES))
def test_vmap_matches_pytorch(case):
    make_f, make_args, in_dims = VMAP_CASES[case]
    e = ember.func.vmap(make_f(ember), in_dims=in_dims)(*make_args(ember))
    t = torch.func.vmap(make_f(torch), in_dims=in_dims)(*make_args(torch))
    close(e, t)


def test_vmap_out_dims_nested_and_chunks():
    f = lambda L: (lambda x, y: (x * y, y.sum()))  # noqa: E731
    for kw in ({"out_dims": (1, 0)}, {"out_dims": (2, 0), "chunk_size": 2}, {"chunk_size": 1}):
        e = ember.func.vmap(f(ember), **kw)(T(ember, X), T(ember, Y))
        t = torch.func.vmap(f(torch), **kw)(T(torch, X), T(torch, Y))
        close(e, t)
    nested = lambda L: L.func.vmap(L.func.vmap(L.dot, in_dims=(0, None)), in_dims=(None, 0))  # noqa: E731
    close(nested(ember)(T(ember, X[0]), T(ember, Y)), nested(torch)(T(torch, X[0]), T(torch, Y)))
    assert ember.vmap is ember.func.vmap


def test_vmap_of_an_unbatched_output_expands_it():
    e = ember.func.vmap(lambda x: ember.ones(2), in_dims=0)(T(ember, Y))
    assert tuple(e.shape) == (5, 2) and e.stride() == (0, 1)


def test_vmap_errors_are_pytorchs():
    x = T(ember, X)
    cases = [
        (lambda: ember.vmap(lambda a, b: a + b)(x, T(ember, Y[:3])), ValueError,
         "Expected all tensors to have the same size in the mapped dimension, got sizes [5, 3]"),
        (lambda: ember.vmap(lambda a, b: a, in_dims=(0, 0))(x, 3), ValueError,
         "Got in_dim=0 for an input but the input is of type <class 'int'>"),
        (lambda: ember.vmap(lambda a: a, in_dims=3)(x), ValueError, "expected in_dim to satisfy -3 <= in_dim < 3"),
        (lambda: ember.vmap(lambda a: a, in_dims=(0, 0))(x), ValueError,
         "in_dims is not compatible with the structure"),
        (lambda: ember.vmap(lambda a: a, in_dims=(None,))(x), ValueError, "Expected at least one Tensor to vmap over"),
        (lambda: ember.vmap(lambda a: a.sum().item())(x), RuntimeError, "calling .item() on a Tensor"),
        (lambda: ember.vmap(lambda a: a if a.sum() > 0 else -a)(x), RuntimeError, "data-dependent control flow"),
        (lambda: ember.vmap(lambda a: ember.nn.functional.dropout(a, 0.5))(x), RuntimeError, "randomness error mode"),
        (lambda: ember.vmap(lambda a: ember.zeros(4).add_(a[0]))(x), RuntimeError, "inplace arithmetic"),
        (lambda: ember.vmap(lambda a: 3)(x), ValueError, "must only return Tensors"),
        (lambda: ember.vmap(lambda a: a, randomness="sometimes")(x), RuntimeError,
         "Only allowed values for randomness are 'error', 'different', or 'same'"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=None) as info:
            fn()
        assert msg in str(info.value), str(info.value)
    with pytest.raises(ValueError) as info_t:
        torch.vmap(lambda a, b: a + b)(T(torch, X), T(torch, Y[:3]))
    assert "same size in the mapped dimension, got sizes [5, 3]" in str(info_t.value)


def test_vmap_randomness_different_and_same():
    x = ember.ones(6, 1000, dtype=ember.float64)
    ember.manual_seed(0)
    d = ember.vmap(lambda a: ember.nn.functional.dropout(a, 0.5), randomness="different")(x)
    s = ember.vmap(lambda a: ember.nn.functional.dropout(a, 0.5), randomness="same")(x)
    assert tuple(d.shape) == tuple(s.shape) == (6, 1000)
    assert set(np.unique(d.numpy())) <= {0.0, 2.0} and set(np.unique(s.numpy())) <= {0.0, 2.0}
    assert not (d[0] == d[1]).all() and (s == s[0]).all()
    r = ember.vmap(lambda a: ember.rand_like(a), randomness="same")(x)
    assert (r == r[0]).all() and not (r[0] == r[0, 0]).all()


def test_vmap_randomness_of_factories_no_batched_tensor_reaches():
    """``randn(3)`` inside the function follows ``randomness`` too, as under PyTorch's vmap."""
    x = ember.ones(4, 3)
    for lib, xs in ((ember, x), (torch, torch.ones(4, 3))):
        with pytest.raises(RuntimeError, match="randomness error mode"):
            lib.vmap(lambda t: t + lib.randn(3))(xs)
        d = lib.vmap(lambda t: t * 0 + lib.randn(3), randomness="different")(xs)
        s = lib.vmap(lambda t: t * 0 + lib.randn(3), randomness="same")(xs)
        p = lib.vmap(lambda t: lib.randperm(5) + t.sum() * 0, randomness="different")(xs)
        assert tuple(d.shape) == tuple(s.shape) == (4, 3) and tuple(p.shape) == (4, 5)
        assert not (d[0] == d[1]).all() and (s == s[0]).all()
        assert all(sorted(row.tolist()) == [0, 1, 2, 3, 4] for row in p)
    with pytest.raises(RuntimeError, match="Cannot ask for different inplace randomness on an unbatched tensor"):
        ember.vmap(lambda t: ember.zeros(3).normal_() + t, randomness="different")(x)


def test_vmap_fallback_warns_and_is_right():
    f = lambda L: (lambda x: L.linalg.cross(x[:, :3], x[:, 1:].flip(0)))  # noqa: E731
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        e = ember.vmap(f(ember))(T(ember, X))
    assert any("performance drop because we have not yet implemented the batching rule" in str(m.message) for m in w)
    close(e, torch.vmap(f(torch))(T(torch, X)))


def test_vmap_inplace_on_batched_tensor():
    def f(L):
        def g(x, y):
            z = x.clone()
            z.mul_(2).add_(y)
            return z
        return g
    close(ember.vmap(f(ember))(T(ember, X), T(ember, Y)), torch.vmap(f(torch))(T(torch, X), T(torch, Y)))


# ------------------------------------------------------------------------------------------------- grad / vjp / jac
def test_grad_argnums_aux_and_nesting():
    f = lambda L: (lambda x, y: ((x.sin() * y).sum(), x.cos()))  # noqa: E731
    for kw in ({}, {"argnums": 1}, {"argnums": (0, 1)}):
        e = ember.func.grad(f(ember), has_aux=True, **kw)(T(ember, Y[0]), T(ember, Y[1]))
        t = torch.func.grad(f(torch), has_aux=True, **kw)(T(torch, Y[0]), T(torch, Y[1]))
        close(e, t)
    g2 = lambda L: L.func.grad(lambda x: L.func.grad(lambda z: (z ** 3).sin().sum())(x).sum())  # noqa: E731
    close(g2(ember)(T(ember, Y[0])), g2(torch)(T(torch, Y[0])))
    e = ember.func.grad_and_value(lambda x: (x * x).sum())(T(ember, Y[0]))
    t = torch.func.grad_and_value(lambda x: (x * x).sum())(T(torch, Y[0]))
    close(e, t)
    assert not e[0].requires_grad and not e[1].requires_grad
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, got tensor with 1 dims"):
        ember.func.grad(lambda x: x * 2)(T(ember, Y[0]))
    with pytest.raises(RuntimeError, match="Got argnum=2, but only 1 positional inputs"):
        ember.func.grad(lambda x: x.sum(), argnums=2)(T(ember, Y[0]))


def test_grad_composes_with_regular_autograd():
    x = T(ember, Y[0]).requires_grad_()
    g = ember.func.grad(lambda z: (z ** 3).sum())(x)
    assert g.requires_grad
    g.sum().backward()
    close(x.grad, T(torch, 6 * Y[0]))


def test_vjp_and_jacrev_and_hessian():
    f = lambda L: (lambda x, y: (x.sin() @ y, (x * x).sum()))  # noqa: E731
    xe, ye, xt, yt = T(ember, X[0]), T(ember, Y[0]), T(torch, X[0]), T(torch, Y[0])
    oe, fe = ember.func.vjp(f(ember), xe, ye)
    ot, ft = torch.func.vjp(f(torch), xt, yt)
    close(oe, ot)
    close(fe((T(ember, [1.0, 2.0, 3.0]), T(ember, 0.5))), ft((T(torch, [1.0, 2.0, 3.0]), T(torch, 0.5))))
    for kw in ({}, {"argnums": (0, 1)}, {"chunk_size": 2}):
        close(ember.func.jacrev(f(ember), **kw)(xe, ye), torch.func.jacrev(f(torch), **kw)(xt, yt))
    h = lambda L: (lambda x: (x.sin() * x.sum()).sum())  # noqa: E731
    close(ember.func.hessian(h(ember))(ye), torch.func.hessian(h(torch))(yt))


def _mlp(L):
    L.manual_seed(0)
    return L.nn.Sequential(L.nn.Linear(4, 8), L.nn.Tanh(), L.nn.Linear(8, 3)).double()


def test_jacrev_of_a_module_through_functional_call():
    me, mt = _mlp(ember), _mlp(torch)
    pe = {k: v.detach() for k, v in me.named_parameters()}
    pt = {k: v.detach() for k, v in mt.named_parameters()}
    je = ember.func.jacrev(lambda p, x: ember.func.functional_call(me, p, (x,)))(pe, T(ember, Y))
    jt = torch.func.jacrev(lambda p, x: torch.func.functional_call(mt, p, (x,)))(pt, T(torch, Y))
    close(je, jt, 1e-9)


# ------------------------------------------------------------------------------------------- per-sample gradients
def _cnn(L):
    L.manual_seed(0)
    nn = L.nn
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 3),
                         nn.ReLU(), nn.Flatten(), nn.Linear(6 * 2 * 2, 5), nn.LogSoftmax(-1)).double()


def _per_sample_grads(L, model, x, y):
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xb, yb):
        out = L.func.functional_call(model, p, (xb.unsqueeze(0),))
        return L.nn.functional.nll_loss(out, yb.unsqueeze(0))
    return L.func.vmap(L.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)


def test_per_sample_gradients_of_a_cnn():
    """vmap(grad(...)) over a small CNN's loss equals a loop of single-example gradients, and PyTorch's."""
    xs = RNG.standard_normal((6, 1, 8, 8))
    ys = np.array([0, 3, 1, 4, 2, 3])
    me, mt = _cnn(ember), _cnn(torch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")         # every op of this model and its backward has a batching rule
        e = _per_sample_grads(ember, me, T(ember, xs), ember.tensor(ys))
    t = _per_sample_grads(torch, mt, T(torch, xs), torch.tensor(ys))
    close(e, t, 1e-9)
    for i in range(6):
        me.zero_grad()
        ember.nn.functional.nll_loss(me(T(ember, xs[i:i + 1])), ember.tensor(ys[i:i + 1])).backward()
        for k, p in me.named_parameters():
            np.testing.assert_allclose(e[k][i].numpy(), p.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_per_sample_gradients_with_embedding_and_mean_loss():
    def run(L):
        L.manual_seed(0)
        emb, lin = L.nn.Embedding(10, 4, padding_idx=0).double(), L.nn.Linear(4, 3).double()
        model = L.nn.Sequential(emb, lin)
        params = {k: v.detach() for k, v in model.named_parameters()}
        idx = L.tensor([[1, 2, 0], [3, 3, 9], [0, 5, 6]])
        tgt = L.tensor([[0, 1, 2], [2, 2, 0], [1, 0, 1]])

        def loss(p, i, t):
            return L.nn.functional.cross_entropy(L.func.functional_call(model, p, (i,)), t)
        return L.func.vmap(L.func.grad(loss), in_dims=(None, 0, 0))(params, idx, tgt)
    close(run(ember), run(torch), 1e-9)


def test_grad_of_vmap():
    """An outer grad differentiates through vmap's entry and exit."""
    f = lambda L: L.func.grad(lambda w: L.func.vmap(lambda y: (y @ w).tanh().sum())(T(L, Y)).sum())  # noqa: E731
    close(f(ember)(T(ember, W)), f(torch)(T(torch, W)))


# ---------------------------------------------------------------------------------------------------------- ensembles
def test_model_ensembling_with_stack_module_state():
    def run(L):
        models = []
        for s in range(3):
            L.manual_seed(s)
            models.append(L.nn.Sequential(L.nn.Linear(4, 6), L.nn.ReLU(), L.nn.Linear(6, 2)).double())
        params, buffers = L.func.stack_module_state(models)
        base = models[0]
        out = L.func.vmap(lambda p, b, x: L.func.functional_call(base, (p, b), (x,)), in_dims=(0, 0, None))(
            params, buffers, T(L, Y))
        return out, params, [m(T(L, Y)) for m in models]
    e, pe, loop_e = run(ember)
    t, pt, _ = run(torch)
    close(e, t)
    close(pe, {k: v for k, v in pt.items()})
    for i in range(3):
        close(e[i], loop_e[i].detach())
    assert all(v.requires_grad and v.is_leaf for v in pe.values())


def test_ensemble_of_convolutions_uses_groups():
    def run(L):
        L.manual_seed(0)
        w, b = L.randn(3, 4, 2, 3, 3, dtype=L.float64), L.randn(3, 4, dtype=L.float64)
        x = L.randn(5, 2, 7, 7, dtype=L.float64)
        f = L.func.vmap(lambda wi, bi: L.nn.functional.conv2d(x, wi, bi, padding=1).relu().sum())
        return f(w, b), L.func.vmap(L.func.grad(lambda wi, bi: L.nn.functional.conv2d(x, wi, bi).sum(),
                                                argnums=(0, 1)))(w, b)
    close(run(ember), run(torch), 1e-9)


def test_per_sample_gradients_with_layer_norm_and_mse():
    def run(L):
        L.manual_seed(0)
        model = L.nn.Sequential(L.nn.Linear(4, 6), L.nn.LayerNorm(6), L.nn.GELU(), L.nn.Linear(6, 2)).double()
        params = {k: v.detach() for k, v in model.named_parameters()}
        x, y = T(L, X[:, :3, :]), T(L, RNG_FIXED[:, :3, :2])

        def loss(p, xb, yb):
            return L.nn.functional.mse_loss(L.func.functional_call(model, p, (xb,)), yb)
        return L.func.vmap(L.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = run(ember)
    close(e, run(torch), 1e-9)


RNG_FIXED = np.random.default_rng(1).standard_normal((5, 3, 4))


def test_vmap_refuses_a_non_tensor_result_that_differs_between_examples():
    """A fallback op returning a number per example (``allclose``) cannot steer one branch for the whole batch."""
    x = T(ember, np.stack([np.zeros(3), np.ones(3), np.zeros(3)]))
    with pytest.raises(RuntimeError, match="differs between the examples"):
        ember.vmap(lambda a: a if ember.allclose(a, ember.zeros_like(a)) else -a)(x)
    with pytest.raises(RuntimeError, match="allclose"):
        torch.vmap(lambda a: a if torch.allclose(a, torch.zeros_like(a)) else -a)(T(torch, x.numpy()))


def test_vjp_output_checks_and_retain_graph_are_pytorchs():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="expected f\\(\\*primals\\) to return only tensors"):
            lib.func.vjp(lambda a: 3, T(lib, Y[0]))
        with pytest.raises(RuntimeError, match="Expected f to be a function that has non-empty output"):
            lib.func.vjp(lambda a: (), T(lib, Y[0]))
        _, fn = lib.func.vjp(lambda a: (a * a).sum(), T(lib, Y[0]))
        fn(T(lib, 1.0), retain_graph=False)
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            fn(T(lib, 1.0))
