"""``nn.Parameter`` and ``nn.Buffer`` (mirrors ``torch/nn/parameter.py``)."""
from __future__ import annotations

from typing import Any

from collections import OrderedDict

from ember._tensor import Tensor


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any = None) -> Any:
    return Parameter(data, requires_grad)


class Parameter(Tensor):
    """A Tensor that a ``Module`` registers as one of its parameters when assigned as an attribute.

    ``Parameter(data)`` shares ``data``'s storage (and version counter, like ``detach()``) and is a leaf
    that requires grad unless ``requires_grad=False``."""

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Any:
        import ember
        if data is None:
            data = ember.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        t = data.detach().as_subclass(cls)
        t.requires_grad_(requires_grad)
        return t

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: Any) -> Any:
        if id(self) in memo:
            return memo[id(self)]
        r = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = r
        return r

    def __reduce_ex__(self, proto: Any) -> Any:
        return (_rebuild_parameter, (self.data, self.requires_grad, OrderedDict()))


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a ``Module`` attribute
    (``persistent=False`` leaves it out of the ``state_dict``)."""

    def __new__(cls, data: Any = None, *, persistent: bool = True) -> Any:
        import ember
        if data is None:
            data = ember.empty(0)
        t = data.detach().as_subclass(cls)
        t.__dict__["persistent"] = persistent
        return t



class UninitializedParameter(Parameter):
    """Placeholder of the lazy modules; materialised on first use (not supported by ember's layers yet)."""
