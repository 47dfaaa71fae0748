"""Custom autograd functions (mirrors ``torch/autograd/function.py`` and ``torch/csrc/autograd/python_function.cpp``).

``Function.apply`` runs ``forward`` without recording, then — when grad is enabled and an input requires
grad — makes the outputs' ``grad_fn`` a node of class ``<Name>Backward`` whose ``apply`` calls the user's
``backward``.  As in PyTorch, that node *is* the ``ctx`` the user's ``forward`` received, so what
``forward`` stores on ``ctx`` is there in ``backward``.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from ember._generated import aten
from ember.autograd.grad_mode import no_grad, state
from ember.autograd import forward_grad as _fw
from ember.autograd.graph import Node, SavedVariable
from ember.autograd.recording import check_inplace, collect_next_edges, input_meta, set_history
from ember.c10.tensor_impl import TensorImpl

if TYPE_CHECKING:  # isinstance(x, _Tensor) narrows to the frontend's class for type checkers
    from ember._tensor import Tensor as _Tensor
else:
    _Tensor = TensorImpl  # every ember tensor is one


class FunctionCtx:
    """What ``forward`` can tell ``backward`` (``ctx.save_for_backward``, ``ctx.mark_dirty``, ...)."""

    def save_for_backward(self, *tensors: Any) -> None:
        self._to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        self._to_save_fwd = tensors

    def mark_dirty(self, *args: Any) -> None:
        self._dirty = args

    def mark_non_differentiable(self, *args: Any) -> None:
        self._non_differentiable = args

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node (and ctx) of one call of a custom Function."""

    _forward_cls: Any = None

    def __init__(self) -> None:
        Node.__init__(self)
        self._to_save = ()
        self._saved_list = None
        self._dirty = ()
        self._non_differentiable = ()
        self._materialize = True
        self.needs_input_grad = ()
        self._input_is_tensor: tuple[bool, ...] = ()
        self._output_meta: tuple[Any, ...] = ()

    _in_jvp = False

    @property
    def saved_tensors(self) -> Any:
        if self._in_jvp:   # (the user's jvp reads what save_for_forward kept)
            return tuple(getattr(self, "_to_save_fwd", ()))
        if self._saved_list is None:
            return tuple(self._to_save)
        return tuple(s.unpack(self) if isinstance(s, SavedVariable) else s for s in self._saved_list)

    saved_variables = saved_tensors

    def release_variables(self) -> None:
        if self._saved_list is not None:
            for s in self._saved_list:
                if isinstance(s, SavedVariable):
                    s.release()
        self._released = True

    def apply(self, grads: Any) -> Any:
        cls: Any = self._forward_cls
        if self._materialize:
            grads = [aten.zeros(tuple(shape), dtype=dt, device=dev) if g is None and shape is not None else g
                     for g, (shape, dt, dev) in zip(grads, self._output_meta)]
        result = cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n_in = len(self._input_is_tensor)
        if len(result) != n_in:
            if len(result) > n_in and all(r is None for r in result[n_in:]):
                result = result[:n_in]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients (expected "
                                   f"{n_in}, got {len(result)})")
        return [g for g, is_t in zip(result, self._input_is_tensor) if is_t]


class FunctionMeta(type):
    """Gives every Function subclass its backward node class ``<Name>Backward``."""

    def __init__(cls, name: Any, bases: Any, attrs: Any) -> None:
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        super().__init__(name, bases, attrs)


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class of custom differentiable operations.

    Subclasses define static ``forward(ctx, *args)`` (or ``forward(*args)`` with ``setup_context(ctx,
    inputs, output)``) and ``backward(ctx, *grad_outputs)``, and are called through ``apply``.

    Example::

        >>> class Exp(Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         y = x.exp()
        ...         ctx.save_for_backward(y)
        ...         return y
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         (y,) = ctx.saved_tensors
        ...         return grad * y
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use new-"
                           "style autograd function with static forward method. (Example: https://pytorch.org/docs/"
                           "stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> None:
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward
    setup_context: Any = None

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        """The forward-mode derivative: the outputs' tangents from the inputs' (None for an input without one)."""
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        node = cls._backward_cls()
        tensors = [a for a in args if isinstance(a, _Tensor)]
        if len(tensors) == len(args):          # (the common call: tensors only)
            node._input_is_tensor = (True,) * len(args)
            node.needs_input_grad = needs = tuple([t.requires_grad for t in tensors])
        else:
            node._input_is_tensor = tuple([isinstance(a, _Tensor) for a in args])
            node.needs_input_grad = needs = tuple([isinstance(a, _Tensor) and a.requires_grad for a in args])
        record = state.enabled and True in needs
        setup = cls.setup_context           # (None on Function: forward(ctx, *args) without one)
        level = _fw.level_of(*tensors) if _fw.state.on else -1
        if level >= 0:   # a dual input: forward runs without this level's tangents, jvp gives the outputs' own
            with _fw.hidden(level):
                outputs = cls._run_forward(node, setup, args, kwargs)
            outputs = _forward_ad(cls, node, args, outputs, level)
        else:
            outputs = cls._run_forward(node, setup, args, kwargs)
        if not record:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        node._next = collect_next_edges(*tensors)
        node._input_meta = input_meta(*tensors)
        input_ids = {id(t) for t in tensors}
        dirty = {id(t) for t in node._dirty}
        non_diff = node._non_differentiable
        if dirty or not input_ids.isdisjoint([id(o) for o in outs]):
            fixed = []
            for o in outs:
                if isinstance(o, _Tensor) and id(o) in input_ids and id(o) not in dirty:
                    o = _new_view(o)
                elif isinstance(o, _Tensor) and id(o) in dirty:
                    check_inplace(o)
                fixed.append(o)
            outs = tuple(fixed)
        node._output_meta = tuple([(tuple(o.shape), o.dtype, o.device) if isinstance(o, _Tensor) else
                                   (None, None, None) for o in outs])
        if non_diff:
            nd = {id(t) for t in non_diff}
            set_history(node, tuple([o if isinstance(o, _Tensor) else None for o in outs]),
                        [isinstance(o, _Tensor) and id(o) not in nd for o in outs])
        else:
            set_history(node, tuple([o if isinstance(o, _Tensor) else None for o in outs]))
        to_save = node._to_save
        if to_save:
            node._saved_list = [SavedVariable(t, is_output=_is_one_of(t, outs)) if isinstance(t, _Tensor) else t
                                for t in to_save]
            node._to_save = ()
        else:
            node._saved_list = []
        return outs[0] if single else outs

    @classmethod
    def _run_forward(cls, node: Any, setup: Any, args: Any, kwargs: Any) -> Any:
        enabled, state.enabled = state.enabled, False      # forward runs without recording (no_grad)
        try:
            outputs = cls.forward(node, *args, **kwargs) if setup is None else cls.forward(*args, **kwargs)
        finally:
            state.enabled = enabled
        if setup is not None:
            setup(node, args, outputs)
        return outputs


def _forward_ad(cls: Any, node: Any, args: Any, outputs: Any, level: int) -> Any:
    """The outputs' tangents at ``level`` from the user's ``jvp(ctx, *input_tangents)`` (PyTorch's
    ``_wrap_outputs`` with a jvp function): ``ctx.saved_tensors`` there are what ``ctx.save_for_forward`` kept; an
    input returned as it is becomes a view of it (its tangent is the output's, not the input's)."""
    with _fw.hidden(level):
        tangents = [_fw.tangent_of(a, level) if isinstance(a, _Tensor) else None for a in args]
        node._in_jvp = True
        try:
            result = cls.jvp(node, *tangents)
        finally:
            node._in_jvp = False
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        result = (result,) if not isinstance(result, tuple) else result
        if len(result) != len(outs):
            raise RuntimeError(f"jvp() should return as many tensors as there are outputs of forward(): expected "
                               f"{len(outs)}, got {len(result)}")
        dirty = {id(t) for t in node._dirty}
        inputs = {id(a) for a in args if isinstance(a, _Tensor)}
        fixed = []
        non_diff = {id(t) for t in node._non_differentiable}
        for o, t in zip(outs, result):
            if isinstance(o, _Tensor) and id(o) in inputs and id(o) not in dirty:
                o = _new_view(o)
            if isinstance(o, _Tensor) and t is not None and id(o) not in non_diff and \
                    (o.dtype.is_floating_point or o.dtype.is_complex):
                _fw.set_tangent(o, _fw._fit(t, o), level)
            fixed.append(o)
    return fixed[0] if single else tuple(fixed)


def _new_view(o: Any) -> Any:
    """An input a Function returned as it is: its output is a new view of it (made without recording)."""
    enabled, state.enabled = state.enabled, False
    try:
        return o.view_as(o)
    finally:
        state.enabled = enabled


def _is_one_of(t: Any, outs: tuple[Any, ...]) -> bool:
    for o in outs:
        if o is t:
            return True
    return False


def once_differentiable(fn: Any) -> Any:
    """For ``backward`` methods that are not themselves differentiable: run them without recording, and
    make a second differentiation through them an error."""
    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with no_grad():
            outputs = fn(ctx, *args)
        if not state.enabled:
            return outputs
        requires = any(isinstance(a, _Tensor) and a.requires_grad for a in args)
        if not requires:
            return outputs
        tup = outputs if isinstance(outputs, tuple) else (outputs,)
        err = _DelayedError("trying to differentiate twice a function that was marked with @once_differentiable")
        err._next = collect_next_edges(*[a for a in args if isinstance(a, _Tensor)])
        outs = []
        for o in tup:
            if isinstance(o, _Tensor):
                o = o.detach()
                set_history(err, (o,))
            outs.append(o)
        return tuple(outs) if isinstance(outputs, tuple) else outs[0]
    return wrapper


class _DelayedError(Node):
    def __init__(self, msg: Any) -> None:
        super().__init__()
        self.msg = msg

    def name(self) -> str:
        return "DelayedError"

    def apply(self, grads: Any) -> Any:
        raise RuntimeError(self.msg)
