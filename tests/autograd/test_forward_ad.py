"""Forward-mode AD against PyTorch: ``autograd.forward_ad`` (dual tensors, levels, views and in-place ops, errors),
custom ``Function.jvp``, ``torch.func``'s ``jvp`` / ``jacfwd`` / ``linearize`` and their compositions with the
reverse-mode transforms, ``autograd.functional``'s forward-mode Jacobian and Hessian, and ``gradcheck``'s
``check_forward_ad``. The op-by-op formulas are checked in test_forward_ad_ops.py."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as efw

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
import torch.autograd.forward_ad as tfw  # noqa: E402
import torch.func as tfunc  # noqa: E402

import ember.func as efunc  # noqa: E402


def _np(t):
    return None if t is None else t.detach().numpy()


def _both(fn):
    """``fn(lib, fw)`` in both libraries, each inside its dual level; returns the two results."""
    out = []
    for lib, fw in ((ember, efw), (torch, tfw)):
        with fw.dual_level():
            out.append(fn(lib, fw))
    return out


X = np.random.default_rng(0).standard_normal((3, 4))
T = np.random.default_rng(1).standard_normal((3, 4))


def test_make_and_unpack_dual_as_pytorch():
    def fn(lib, fw):
        x, t = lib.tensor(X), lib.tensor(T)
        d = fw.make_dual(x, t)
        p, tg = fw.unpack_dual(d)
        return (d._base is x, tg is t, p._base is x, p is x, d.requires_grad, type(fw.unpack_dual(d)).__name__,
                fw.unpack_dual(p).tangent is None)
    e, t = _both(fn)
    assert e == t


def test_tangent_with_another_layout_is_copied_into_the_primals():
    def fn(lib, fw):
        x = lib.tensor(X)
        tt = lib.tensor(T.T.copy()).t()          # same values, transposed strides
        d = fw.make_dual(x, tt)
        tg = fw.unpack_dual(d).tangent
        return tg is tt, tuple(tg.stride()), _np(tg)
    e, t = _both(fn)
    assert e[:2] == t[:2]
    np.testing.assert_array_equal(e[2], t[2])


def test_make_dual_errors_as_pytorch():
    for lib, fw in ((ember, efw), (torch, tfw)):
        with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
            fw.make_dual(lib.ones(2), lib.ones(2))
        with fw.dual_level():
            with pytest.raises(RuntimeError, match=r"Tensor is of size \[3\] while the given forward gradient is of "
                                                   r"size \[2\]"):
                fw.make_dual(lib.ones(3), lib.ones(2))
            with pytest.raises(ValueError, match="Expected tangent to be floating point or complex, but got: "):
                fw.make_dual(lib.ones(3), lib.ones(3, dtype=lib.int64))
            with pytest.raises(ValueError, match="Expected primal to be floating point or complex"):
                fw.make_dual(lib.ones(3, dtype=lib.int64), lib.ones(3))
            with pytest.raises(RuntimeError, match="already has a forward gradient at the same level 0"):
                fw.make_dual(fw.make_dual(lib.ones(3), lib.ones(3)), lib.ones(3))
            with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported at the moment"):
                with fw.dual_level():
                    pass


def test_levels_number_and_exit_deletes_the_tangents():
    for lib, fw in ((ember, efw), (torch, tfw)):
        with fw.dual_level() as level:
            assert level == 0 and fw._current_level == 0
            d = fw.make_dual(lib.ones(2), lib.ones(2))
            y = d * 2
            assert fw.unpack_dual(y).tangent is not None
        assert fw._current_level == -1
        assert fw.unpack_dual(y).tangent is None and fw.unpack_dual(d).tangent is None
        with fw.dual_level() as level:   # the number is used again; the old tangents stay gone
            assert level == 0 and fw.unpack_dual(y, level=0).tangent is None


def test_repr_shows_the_tangent():
    def fn(lib, fw):
        d = fw.make_dual(lib.tensor([1.5, -2.0]), lib.tensor([0.25, 1.0]))
        s = fw.make_dual(lib.tensor(2.0), lib.tensor(1.0)) * 3
        return repr(d * 2).replace("torch.", "").replace("ember.", ""), repr(s)
    e, t = _both(fn)
    assert e == t


def test_no_grad_does_not_stop_forward_mode_and_fwd_grad_enabled_does():
    def fn(lib, fw):
        d = fw.make_dual(lib.tensor(X), lib.tensor(T))
        with lib.no_grad():
            a = fw.unpack_dual(d.sin()).tangent
        with fw._set_fwd_grad_enabled(False):
            b = fw.unpack_dual(d.sin()).tangent
        return _np(a), b
    e, t = _both(fn)
    np.testing.assert_allclose(e[0], t[0])
    assert e[1] is None and t[1] is None


def test_views_share_their_bases_tangent_and_in_place_ops_update_it():
    def fn(lib, fw):
        d = fw.make_dual(lib.tensor(X), lib.tensor(T))
        y = d * 1.0
        v = y[:, 1:3]
        v.mul_(3.0)                      # in place on a view: the base's tangent follows
        z = lib.zeros(3, 4)
        before = z[1:]                   # a view made before its base gets a tangent
        z.add_(d)
        w = lib.zeros(5)
        w[1:4].copy_(d[:, 0])            # a view's first tangent gives its base one
        return [_np(fw.unpack_dual(a).tangent) for a in (y, v, z, before, w)]
    e, t = _both(fn)
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b)


def test_unpacked_primal_and_its_views_carry_no_tangent():
    def fn(lib, fw):
        y = fw.make_dual(lib.tensor(X), lib.tensor(T)) * 2
        p = fw.unpack_dual(y).primal
        return p._base is y, fw.unpack_dual(p).tangent, fw.unpack_dual(p[0]).tangent, \
            fw.unpack_dual(y.detach()).tangent
    e, t = _both(fn)
    assert e == t == (True, None, None, None)


def test_tangents_of_results_do_not_alias_the_inputs_tangents():
    """A formula that passes a tangent on (``clone``, an add of a plain tensor) gives the result a tangent of its
    own: an in-place op on the result must not change the input's."""
    def fn(lib, fw):
        d = fw.make_dual(lib.tensor(X), lib.tensor(T))
        y = d + 1.0
        y.mul_(2.0)
        return _np(fw.unpack_dual(d).tangent), _np(fw.unpack_dual(y).tangent)
    e, t = _both(fn)
    np.testing.assert_allclose(e[0], T)
    np.testing.assert_allclose(e[1], t[1])


def test_reverse_mode_through_forward_mode():
    """The tangent is differentiable: backward through it gives second derivatives (reverse-over-forward)."""
    res = []
    for lib, fw in ((ember, efw), (torch, tfw)):
        x = lib.tensor(X, requires_grad=True)
        with fw.dual_level():
            d = fw.make_dual(x, lib.tensor(T))
            out = (d.sin() * d).sum()
            tg = fw.unpack_dual(out).tangent
            assert tg.grad_fn is not None
            tg.backward()
        res.append(_np(x.grad))
    np.testing.assert_allclose(res[0], res[1])


def test_op_without_a_forward_derivative_refuses_in_pytorchs_words():
    grid = np.random.default_rng(0).uniform(-1, 1, (1, 2, 2, 2))
    img = np.random.default_rng(1).standard_normal((1, 1, 3, 3))
    for lib, fw in ((ember, efw), (torch, tfw)):
        with fw.dual_level():
            d = fw.make_dual(lib.tensor(img), lib.tensor(img))
            with pytest.raises((RuntimeError, NotImplementedError),
                               match="Trying to use forward AD with grid_sampler_2d that does not support it"):
                lib.nn.functional.grid_sample(d, lib.tensor(grid), align_corners=False)


# -- custom Function ---------------------------------------------------------------------------------------------


def _custom(lib):
    class MulExp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            out = x * y.exp()
            ctx.save_for_forward(x, y)
            ctx.save_for_backward(x, y)
            return out

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y.exp(), g * x * y.exp()

        @staticmethod
        def jvp(ctx, x_t, y_t):
            x, y = ctx.saved_tensors
            return x_t * y.exp() + x * y.exp() * y_t

    class NoJvp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    return MulExp, NoJvp


def test_custom_function_jvp_and_its_refusal():
    def fn(lib, fw):
        MulExp, NoJvp = _custom(lib)
        x = fw.make_dual(lib.tensor(X), lib.tensor(T))
        y = fw.make_dual(lib.tensor(T), lib.tensor(X))
        out = fw.unpack_dual(MulExp.apply(x, y)).tangent
        with pytest.raises(NotImplementedError, match="You must implement the jvp function for custom "
                                                      "autograd.Function to use it with forward mode AD."):
            NoJvp.apply(x)
        return _np(out)
    e, t = _both(fn)
    np.testing.assert_allclose(e, t)


# -- torch.func ------------------------------------------------------------------------------------------------


def _mlp(lib, x, w1, w2):
    return (lib.tanh(x @ w1) @ w2).sin()


def _params(seed=0):
    r = np.random.default_rng(seed)
    return r.standard_normal((2, 3)), r.standard_normal((3, 5)), r.standard_normal((5, 4))


def test_func_jvp_matches_pytorch_and_has_aux():
    x, w1, w2 = _params()
    v = np.random.default_rng(3).standard_normal(w1.shape)
    res = []
    for lib, fn in ((ember, efunc), (torch, tfunc)):
        f = lambda w: (_mlp(lib, lib.tensor(x), w, lib.tensor(w2)), {"aux": w.sum()})  # noqa: E731
        out, tangent, aux = fn.jvp(f, (lib.tensor(w1),), (lib.tensor(v),), has_aux=True)
        res.append((_np(out), _np(tangent), float(aux["aux"])))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_func_jvp_errors_as_pytorch():
    for lib, fn in ((ember, efunc), (torch, tfunc)):
        x = lib.ones(2)
        with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
            fn.jvp(lambda a: a, x, (x,))
        with pytest.raises(RuntimeError, match="Expected primals and tangents to have the same python structure"):
            fn.jvp(lambda a: a, (x,), (x, x))
        with pytest.raises(RuntimeError, match="The output of f is independent of the inputs"):
            fn.jvp(lambda a: lib.ones(2), (x,), (x,), strict=True)
        with pytest.raises(RuntimeError, match="expected f\\(\\*primals\\) to return only tensors"):
            fn.jvp(lambda a: 3, (x,), (x,))


@pytest.mark.parametrize("argnums", [0, 1, (0, 2)])
def test_jacfwd_matches_pytorch(argnums):
    params = _params()
    res = []
    for lib, fn in ((ember, efunc), (torch, tfunc)):
        args = [lib.tensor(p) for p in params]
        jac = fn.jacfwd(lambda x, w1, w2: _mlp(lib, x, w1, w2), argnums=argnums)(*args)
        res.append([_np(j) for j in (jac if isinstance(jac, tuple) else (jac,))])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


def test_jacfwd_equals_jacrev_and_second_derivatives_compose_every_way():
    x0 = np.random.default_rng(5).standard_normal(4)

    def f(lib):
        return lambda x: (x.sin() * x.exp()).sum() + (x[:2] @ x[2:]) ** 2
    want = tfunc.hessian(f(torch))(torch.tensor(x0)).numpy()
    x = ember.tensor(x0)
    # (jacrev of jacrev through slices: Note [View backwards without in-place writes])
    for h in (efunc.jacfwd(efunc.jacfwd(f(ember))), efunc.jacfwd(efunc.jacrev(f(ember))),
              efunc.jacrev(efunc.jacfwd(f(ember))), efunc.jacrev(efunc.jacrev(f(ember))), efunc.hessian(f(ember))):
        np.testing.assert_allclose(_np(h(x)), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(_np(efunc.jacfwd(f(ember).__call__)(x)),
                               tfunc.jacrev(f(torch))(torch.tensor(x0)).numpy(), rtol=1e-6)


def test_nested_jvp_gives_the_second_directional_derivative():
    x0, u, v = (np.random.default_rng(s).standard_normal(3) for s in (1, 2, 3))
    res = []
    for lib, fn in ((ember, efunc), (torch, tfunc)):
        f = lambda x: (x.exp() * x.cos()).sum()  # noqa: E731
        inner = lambda x: fn.jvp(f, (x,), (lib.tensor(v),))[1]  # noqa: E731
        res.append(float(fn.jvp(inner, (lib.tensor(x0),), (lib.tensor(u),))[1]))
    assert res[0] == pytest.approx(res[1], rel=1e-10)


def test_linearize_matches_pytorch_and_checks_its_tangents():
    x0 = np.random.default_rng(0).standard_normal((3, 3))
    ts = [np.random.default_rng(s).standard_normal((3, 3)) for s in (4, 5)]
    res = []
    for lib, fn in ((ember, efunc), (torch, tfunc)):
        out, jvp_fn = fn.linearize(lambda x: x.sin() @ x, lib.tensor(x0))
        res.append([_np(out)] + [_np(jvp_fn(lib.tensor(t))) for t in ts])
        with pytest.raises(RuntimeError, match="tangent:0 with shape .* doesn't match the shape"):
            jvp_fn(lib.ones(2))
        with pytest.raises(RuntimeError, match="tangent:0 with dtype .* doesn't match the dtype"):
            jvp_fn(lib.ones(3, 3, dtype=lib.float32))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_per_example_jvps_with_vmap():
    x, w1, w2 = _params()
    vs = np.random.default_rng(9).standard_normal((6,) + w1.shape)
    res = []
    for lib, fn in ((ember, efunc), (torch, tfunc)):
        def one(v, lib=lib, fn=fn):
            return fn.jvp(lambda w: _mlp(lib, lib.tensor(x), w, lib.tensor(w2)), (lib.tensor(w1),), (v,))[1]
        res.append(_np(fn.vmap(one)(lib.tensor(vs))))
    np.testing.assert_allclose(res[0], res[1], rtol=1e-6)


# -- autograd.functional and gradcheck ------------------------------------------------------------------------


def test_functional_forward_mode_jacobian_and_hessian():
    x0, y0 = np.random.default_rng(0).standard_normal(3), np.random.default_rng(1).standard_normal(3)
    res = []
    for lib in (ember, torch):
        F = lib.autograd.functional
        f = lambda x, y: (x.sin() * y, (x * y).sum())  # noqa: E731
        g = lambda x: (x.sin() * x).sum()  # noqa: E731
        jac = F.jacobian(f, (lib.tensor(x0), lib.tensor(y0)), vectorize=True, strategy="forward-mode")
        hes = F.hessian(g, lib.tensor(x0), vectorize=True, outer_jacobian_strategy="forward-mode")
        res.append([_np(j) for pair in jac for j in pair] + [_np(hes)])
        with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
            F.jacobian(f, (lib.tensor(x0), lib.tensor(y0)), strategy="forward-mode")
        with pytest.raises(NotImplementedError, match="`create_graph=True` and `strategy=\"forward-mode\"`"):
            F.jacobian(f, (lib.tensor(x0), lib.tensor(y0)), create_graph=True, vectorize=True,
                       strategy="forward-mode")
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_gradcheck_checks_forward_mode():
    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    w = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda x, w: (x.sin() @ w).tanh(), (x, w), check_forward_ad=True)
    assert ember.autograd.gradcheck(lambda x, w: (x.sin() @ w).tanh(), (x, w), check_forward_ad=True,
                                    check_backward_ad=False)

    class WrongJvp(_custom(ember)[1]):
        @staticmethod
        def jvp(ctx, t):
            return t * 3   # (the derivative is 2)
    with pytest.raises(RuntimeError, match="Jacobian computed with forward mode mismatch for output 0 with respect to "
                                           "input 0"):
        ember.autograd.gradcheck(WrongJvp.apply, (x,), check_forward_ad=True)
    with pytest.raises(AssertionError, match="Expected at least one of check_forward_ad or check_backward_ad"):
        ember.autograd.gradcheck(WrongJvp.apply, (x,), check_backward_ad=False)


@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_tangent_and_running_statistics_as_pytorch(train):
    """BatchNorm's forward formula (the double backward would run it again and update the running statistics
    twice)."""
    x = np.random.default_rng(0).standard_normal((4, 3, 5, 5))
    v = np.random.default_rng(1).standard_normal((4, 3, 5, 5))
    res = []
    for lib, fw in ((ember, efw), (torch, tfw)):
        bn = lib.nn.BatchNorm2d(3).double()
        with lib.no_grad():
            bn.weight.copy_(lib.tensor([1.5, 0.5, 2.0], dtype=lib.float64))
            bn.running_var.fill_(2.0)
        bn.train(train)
        with fw.dual_level():
            w = fw.make_dual(bn.weight.detach(), lib.ones(3, dtype=lib.float64))
            out = lib.nn.functional.batch_norm(fw.make_dual(lib.tensor(x), lib.tensor(v)), bn.running_mean,
                                               bn.running_var, w, bn.bias.detach(), train, 0.1, 1e-5)
            res.append([_np(fw.unpack_dual(out).tangent), bn.running_mean.numpy().copy(),
                        bn.running_var.numpy().copy()])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
