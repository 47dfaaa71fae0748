"""Python operators (``ember.library``): the same programs as with ``torch.library`` give the same values and
gradients, meta tensors go to the fake implementation, ``ember.ops.<ns>.<name>`` reaches them."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def _define(L, ns):
    def scaled_sin(x, k):
        return (x * k).sin()

    scaled_sin.__annotations__ = {"x": L.Tensor, "k": float, "return": L.Tensor}  # real types, not strings
    scaled_sin = L.library.custom_op(f"{ns}::scaled_sin", mutates_args=())(scaled_sin)

    @scaled_sin.register_fake
    def _(x, k):
        return L.empty_like(x)

    def setup_context(ctx, inputs, output):
        x, k = inputs
        ctx.save_for_backward(x)
        ctx.k = k

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x * ctx.k).cos() * ctx.k, None

    L.library.register_autograd(f"{ns}::scaled_sin", backward, setup_context=setup_context)
    return scaled_sin


def test_custom_op_values_gradients_meta_and_namespace_match_pytorch():
    x = np.random.default_rng(0).standard_normal(5)
    res = []
    for L, ns in ((torch, "embertest_t"), (ember, "embertest_e")):
        op = _define(L, ns)
        t = L.tensor(x, requires_grad=True)
        y = getattr(L.ops, ns).scaled_sin(t, 2.0)
        y.sum().backward()
        m = op(L.ones(3, 4, device="meta"), 1.5)
        res.append((y.detach().numpy(), t.grad.numpy(), tuple(m.shape), m.device.type))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12)
    assert res[1][2:] == res[0][2:] == ((3, 4), "meta")


def test_an_op_without_autograd_refuses_backward_and_kernels_per_device():
    @ember.library.custom_op("embertest::plain", mutates_args=())
    def plain(x):
        return x * 3

    x = ember.ones(2, requires_grad=True)
    y = plain(x)
    with pytest.raises(RuntimeError, match="Autograd has not been implemented for operator embertest::plain"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="There was no fake impl registered"):
        plain(ember.ones(2, device="meta"))
    plain.register_kernel("cpu", lambda t: t * 4)
    assert plain(ember.ones(2)).tolist() == [4.0, 4.0]
    with pytest.raises(AttributeError, match="'embertest' object has no attribute 'nope'"):
        ember.ops.embertest.nope


def test_library_define_and_impl():
    lib = ember.library.Library("embertest_lib", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    lib.impl("twice", lambda x: ember.empty_like(x), "Meta")
    assert ember.ops.embertest_lib.twice(ember.ones(2)).tolist() == [2.0, 2.0]
    assert ember.ops.embertest_lib.twice(ember.ones(2, device="meta")).device.type == "meta"
    lib._destroy()
