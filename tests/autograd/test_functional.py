"""ember.autograd.functional against torch.autograd.functional, and the graph printer."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def f_single(lib):
    return lambda x: (x ** 3).sum() + (x[0] * x[1]).exp()


def f_vec(lib):
    return lambda x, y: (x * y.sin(), (x ** 2).sum() * y)


A = np.array([0.3, -0.7, 1.1])
B = np.array([0.5, 0.2, -0.4])


def t(lib, a):
    return lib.tensor(a, dtype=lib.float64)


def same(e, tt):
    if isinstance(tt, (tuple, list)):
        assert len(e) == len(tt)
        for a, b in zip(e, tt):
            same(a, b)
        return
    np.testing.assert_allclose(e.detach().numpy(), tt.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["jacobian", "hessian"])
def test_jacobian_and_hessian(name):
    e = getattr(ember.autograd.functional, name)(f_single(ember), t(ember, A))
    tt = getattr(torch.autograd.functional, name)(f_single(torch), t(torch, A))
    same(e, tt)


def test_jacobian_of_tuple_function():
    e = ember.autograd.functional.jacobian(f_vec(ember), (t(ember, A), t(ember, B)))
    tt = torch.autograd.functional.jacobian(f_vec(torch), (t(torch, A), t(torch, B)))
    same(e, tt)


@pytest.mark.parametrize("name", ["vjp", "jvp"])
def test_vjp_jvp(name):
    fe, ft = f_vec(ember), f_vec(torch)
    if name == "vjp":
        e = ember.autograd.functional.vjp(fe, (t(ember, A), t(ember, B)), (t(ember, B), t(ember, A)))
        tt = torch.autograd.functional.vjp(ft, (t(torch, A), t(torch, B)), (t(torch, B), t(torch, A)))
    else:
        e = ember.autograd.functional.jvp(fe, (t(ember, A), t(ember, B)), (t(ember, B), t(ember, A)))
        tt = torch.autograd.functional.jvp(ft, (t(torch, A), t(torch, B)), (t(torch, B), t(torch, A)))
    same(e, tt)


@pytest.mark.parametrize("name", ["hvp", "vhp"])
def test_hvp_vhp(name):
    e = getattr(ember.autograd.functional, name)(f_single(ember), t(ember, A), t(ember, B))
    tt = getattr(torch.autograd.functional, name)(f_single(torch), t(torch, A), t(torch, B))
    same(e, tt)


def test_graph_text_and_dot():
    w = ember.ones(3, 2, requires_grad=True)
    x = ember.ones(4, 3)
    loss = (x @ w).relu().sum()
    text = ember.autograd.graph_text(loss)
    assert "SumBackward0" in text and "ReluBackward0" in text and "MmBackward0" in text
    assert "saved result: [4, 2] ember.float32 saved at version 0, now 0" in text
    assert "AccumulateGrad ([3, 2] ember.float32)" in text and "(not differentiable)" in text
    dot = ember.autograd.graph_dot(loss)
    assert dot.startswith("digraph autograd {") and dot.count("->") == 3
    loss.backward()
    assert "<freed>" in ember.autograd.graph_text(loss)
