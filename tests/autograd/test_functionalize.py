"""``ember.func.functionalize`` against ``torch.func.functionalize``: the same values and the same input
mutations, for functions that mutate views, views of views, inputs, through ``out=`` and in-place view ops; under
``make_fx`` a graph without mutations (but the final ``copy_`` of a mutated input) and, with
``remove='mutations_and_views'``, without aliasing operators; gradients through it."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.func as efunc

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
import torch.func as tfunc  # noqa: E402


def views_of_a_temporary(lib, a):
    b = a + 1
    c = b.view(-1)
    c.add_(1)
    d = b[0]
    d.zero_()
    e = b.t()
    e.mul_(3)
    return b, c


def mutates_its_input(lib, a):
    a.mul_(2)
    a[1:, :2].add_(a[:1, 1:])
    return a.sum(0)


def views_of_views_and_splits(lib, a):
    b = a.clone()
    s0, s1 = b.split(1, 1)[:2]
    s1.mul_(s0)
    row = b.select(0, 1)
    row[::2].fill_(7.0)
    diag = b[:2, :2].diagonal()
    diag.sub_(1)
    return b, s1


def out_and_inplace_views(lib, a):
    b = a * 1
    out = lib.empty(a.shape)
    lib.sin(b, out=out)
    b.unsqueeze_(0)
    b.transpose_(1, 2)
    b.add_(out.t().unsqueeze(0))
    return b, out


FUNCTIONS = [views_of_a_temporary, mutates_its_input, views_of_views_and_splits, out_and_inplace_views]
A = np.random.default_rng(0).standard_normal((3, 3))


def _arrays(x):
    return [t.detach().numpy() for t in (x if isinstance(x, tuple) else (x,))]


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
@pytest.mark.parametrize("fn", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_same_values_and_input_mutations_as_pytorch(fn, remove):
    res = []
    for lib, func in ((ember, efunc), (torch, tfunc)):
        a = lib.tensor(A.copy())
        out = func.functionalize(lambda x: fn(lib, x), remove=remove)(a)
        plain = lib.tensor(A.copy())
        want = fn(lib, plain)
        for g, w in zip(_arrays(out), _arrays(want)):
            np.testing.assert_allclose(g, w)
        np.testing.assert_allclose(a.numpy(), plain.numpy())      # the input mutated as the function does
        res.append(_arrays(out) + [a.numpy()])
    for g, w in zip(*res):
        np.testing.assert_allclose(g, w)


MUTATING = {"add_", "mul_", "sub_", "zero_", "fill_", "unsqueeze_", "transpose_", "copy_"}


@pytest.mark.parametrize("fn", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_traced_graph_has_no_mutations(fn):
    from ember.fx.experimental.proxy_tensor import make_fx
    for remove in ("mutations", "mutations_and_views"):
        gm = make_fx(efunc.functionalize(lambda x: fn(ember, x), remove=remove))(ember.tensor(A.copy()))
        targets = [str(n.target) for n in gm.graph.nodes
                   if n.op == "call_function" and str(n.target).startswith("aten.")]
        copies = [t for t in targets if "copy_" in t]
        # the one mutation left: the input gets its final value, at the end
        if fn is mutates_its_input:
            assert len(copies) == 1 and targets[-1].endswith("copy_.default")
        else:
            assert not copies
        mutating = [t for t in targets if t.split(".")[-2] in MUTATING - {"copy_", "zero_", "fill_"}]
        assert not mutating, mutating
        if remove == "mutations_and_views":
            views = [t for t in targets if t.split(".")[-2] in ("view", "t", "select", "slice", "transpose",
                                                                 "unsqueeze", "split", "diagonal")]
            assert not views, views
        np.testing.assert_allclose(_arrays(gm(ember.tensor(A.copy())))[0], _arrays(fn(ember, ember.tensor(A)))[0])


def test_invalid_remove_is_refused_in_pytorchs_words():
    for func in (efunc, tfunc):
        with pytest.raises(RuntimeError, match="received invalid argument for remove=views"):
            func.functionalize(lambda x: x, remove="views")


def test_gradients_through_functionalize():
    def f(lib, a):
        b = a * 2
        b[1:].mul_(a[:2])
        return (b * b.view(-1)).sum()
    x = ember.tensor(A[0].copy(), requires_grad=True)
    efunc.functionalize(lambda a: f(ember, a))(x).backward()
    y = torch.tensor(A[0].copy(), requires_grad=True)
    f(torch, y).backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy())
    g = efunc.grad(efunc.functionalize(lambda a: f(ember, a)))(ember.tensor(A[0].copy()))
    np.testing.assert_allclose(g.numpy(), y.grad.numpy())
