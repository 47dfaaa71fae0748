"""Custom autograd Functions, against PyTorch's behaviour."""
import numpy as np
import pytest

import ember
from ember.autograd import Function, once_differentiable

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


class MyExp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


class ScaleWithSetup(Function):
    @staticmethod
    def forward(x, k):
        return x * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.k = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.k, None


def test_forward_backward_and_grad_fn_name():
    x = ember.tensor([0.5, 1.0], dtype=ember.float64, requires_grad=True)
    y = MyExp.apply(x)
    assert y.grad_fn.name() == "MyExpBackward" and type(y.grad_fn).__name__ == "MyExpBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5, 1.0]))
    assert ember.autograd.gradcheck(MyExp.apply, (x,))
    assert ember.autograd.gradgradcheck(MyExp.apply, (x,))


def test_setup_context_style_and_non_tensor_inputs():
    x = ember.ones(3, requires_grad=True)
    y = ScaleWithSetup.apply(x, 4.0)
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 4.0, 4.0]


def test_needs_input_grad_mark_non_differentiable_and_materialize():
    seen = {}

    class Split(Function):
        @staticmethod
        def forward(ctx, x, y):
            seen["needs"] = ctx.needs_input_grad
            idx = x.argmax().reshape(1)
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            seen["g_idx"] = g_idx
            return g * 2, None

    x = ember.tensor([1.0, -2.0], requires_grad=True)
    a, idx = Split.apply(x, ember.ones(2))
    assert seen["needs"] == (True, False) and not idx.requires_grad
    a.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert seen["g_idx"] is not None  # materialized as zeros (set_materialize_grads defaults to True)


def test_mark_dirty_in_place_function():
    class AddOneInPlace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    for lib, F in ((ember, AddOneInPlace),):
        a = lib.ones(2, requires_grad=True)
        b = a * 3
        c = F.apply(b)
        assert c is b and c.grad_fn.name() == "AddOneInPlaceBackward"
        c.sum().backward()
        assert a.grad.tolist() == [3.0, 3.0]
    leaf = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        AddOneInPlace.apply(leaf)


def test_wrong_number_of_gradients_is_an_error():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    x = ember.ones(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="function BadBackward returned an incorrect number of gradients "
                                           "\\(expected 2, got 1\\)"):
        Bad.apply(x, x).sum().backward()


def test_once_differentiable():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = ember.tensor([3.0], requires_grad=True)
    v = ember.ones(1, requires_grad=True)  # as in PyTorch, only grads that require grad trigger the guard
    (g,) = ember.autograd.grad(Square.apply(x), x, grad_outputs=v, create_graph=True)
    assert g.tolist() == [6.0]
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                           "@once_differentiable"):
        g.backward()


def test_saved_tensor_modified_in_place_is_detected():
    x = ember.ones(2, requires_grad=True)
    y = x * 1
    z = MyExp.apply(y)
    z.add_(1)  # the saved output changed
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
