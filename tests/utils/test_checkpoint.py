"""Activation checkpointing (``ember.utils.checkpoint``) against PyTorch's, both ways (reentrant and not), and the
saved-tensor hooks it is built on (``ember.autograd.graph.saved_tensors_hooks``)."""
from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest

import ember
from ember.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def _net(L):
    net = L.nn.Sequential(L.nn.Linear(8, 16), L.nn.ReLU(), L.nn.Dropout(0.5), L.nn.Linear(16, 16), L.nn.Tanh(),
                          L.nn.Linear(16, 4))
    sd = {k: L.tensor(np.random.default_rng(i).standard_normal(tuple(v.shape)).astype(np.float32))
          for i, (k, v) in enumerate(net.state_dict().items())}
    net.load_state_dict(sd)
    return net.double()


@pytest.mark.parametrize("reentrant", [True, False])
def test_outputs_and_gradients_match_pytorch_with_dropout(reentrant):
    """The recomputation draws the dropout mask of the forward (the RNG state is restored), as PyTorch's does."""
    res = []
    for L in (torch, ember):
        net = _net(L)
        x = L.tensor(np.random.default_rng(9).standard_normal((5, 8)), requires_grad=True)
        L.manual_seed(3)
        y = L.utils.checkpoint.checkpoint(net, x, use_reentrant=reentrant)
        y2 = L.utils.checkpoint.checkpoint_sequential(net, 2, x, use_reentrant=reentrant)
        (y.sum() + (y2 * y2).sum()).backward()
        after = L.rand(3)  # the generator continues where the forward left it
        res.append([y.detach().numpy(), x.grad.numpy(), net[0].weight.grad.numpy(), net[5].bias.grad.numpy(),
                    after.numpy()])
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reentrant", [True, False])
def test_activations_are_not_kept_and_the_function_runs_again_in_backward(reentrant):
    calls, inner = [], []

    def fn(x):
        calls.append(1)
        h = x.exp()
        inner.append(weakref.ref(h))
        return (h * h).sin()

    x = ember.randn(4, requires_grad=True)
    y = checkpoint(fn, x, use_reentrant=reentrant)
    gc.collect()
    assert inner[0]() is None, "the forward's activation is still alive"
    assert len(calls) == 1
    y.sum().backward()
    assert len(calls) == 2
    xr = x.detach().requires_grad_(True)
    (xr.exp() * xr.exp()).sin().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xr.grad.numpy(), rtol=1e-6)


def test_non_reentrant_works_with_grad_kwargs_and_retain_graph():
    w = ember.randn(3, requires_grad=True)

    def fn(x, *, scale):
        return (x * w).tanh() * scale

    x = ember.randn(3, requires_grad=True)
    y = checkpoint(fn, x, scale=2.0, use_reentrant=False).sum()
    g1 = ember.autograd.grad(y, (x, w), retain_graph=True)
    g2 = ember.autograd.grad(y, (x, w))  # a second backward call recomputes again
    t = (x * w).tanh().mul(2.0).sum()
    gt = ember.autograd.grad(t, (x, w))
    for a, b, c in zip(g1, g2, gt):
        np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-6)
        np.testing.assert_allclose(b.numpy(), c.numpy(), rtol=1e-6)


def test_reentrant_refuses_grad_and_inputs_as_pytorch():
    msgs = []
    for L in (torch, ember):
        x = L.ones(3, requires_grad=True)
        y = L.utils.checkpoint.checkpoint(lambda t: t.exp(), x, use_reentrant=True).sum()
        with pytest.raises(RuntimeError) as info:
            L.autograd.grad(y, x)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1] and "use_reentrant=True" in msgs[1]


def test_warnings_and_argument_errors_match_pytorch():
    for L in (torch, ember):
        x = L.ones(2, requires_grad=True)
        with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
            L.utils.checkpoint.checkpoint(lambda t: t * 2, x)
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            L.utils.checkpoint.checkpoint(lambda t: t * 2, L.ones(2), use_reentrant=True)
        with pytest.raises(ValueError, match="Unexpected keyword arguments: k"):
            L.utils.checkpoint.checkpoint(lambda t, k: t * k, x, k=2, use_reentrant=True)
        with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only supported"):
            L.utils.checkpoint.checkpoint(lambda t: t, x, use_reentrant=True, debug=True)


def test_a_recomputation_that_differs_from_the_forward_is_an_error():
    state = {}
    x = ember.randn(3, requires_grad=True)

    def shapes(x):
        return (x[: 2 if state["short"] else 3] * 2).pow(2)

    state["short"] = False
    y = checkpoint(shapes, x, use_reentrant=False)
    state["short"] = True
    with pytest.raises(CheckpointError, match="Recomputed values for the following tensors have different metadata"):
        y.sum().backward()

    def fewer(x):
        return x.exp().exp() if not state["short"] else x.exp() * 1.0

    state["short"] = False
    y = checkpoint(fewer, x, use_reentrant=False)
    state["short"] = True
    with pytest.raises(CheckpointError, match="A different number of tensors was saved"):
        y.sum().backward()


def test_saved_tensors_hooks_pack_and_unpack_what_backward_needs():
    packed = []

    def pack(t):
        packed.append(t.shape)
        return ("box", t.detach().clone())

    def unpack(p):
        return p[1]

    x = ember.randn(4, requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x * x.exp()).sum()
    assert packed  # mul saved its inputs, exp its result
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), ((1 + x) * x.exp()).detach().numpy(), rtol=1e-6)
    with ember.autograd.graph.save_on_cpu():
        z = x.sin().sum()
    z.backward()
    with ember.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with ember.autograd.graph.saved_tensors_hooks(pack, unpack):
                pass


def test_an_in_place_change_after_saving_is_still_detected_with_hooks():
    x = ember.randn(3, requires_grad=True)
    a = x * 1
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = (a * a).sum()
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_checkpoint_sequential_on_a_list_of_functions():
    fns = [lambda t: t * 2, lambda t: t.sin(), lambda t: t + 1, lambda t: t.exp()]
    x = ember.randn(3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = checkpoint_sequential(fns, 2, x, use_reentrant=False)
    y.sum().backward()
    xr = x.detach().requires_grad_(True)
    ((xr * 2).sin() + 1).exp().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xr.grad.numpy(), rtol=1e-6)
