"""The base of functorch's wrapper subclasses (vmap's ``BatchedTensor``, functionalize's ``FunctionalTensor``):
a tensor with no data of its own whose every operator goes to the class's ``_handle`` below autograd (Note [The
Python key] in ember/_python_key.py), with ``__torch_function__`` off so that the public API reaches the dispatcher
unchanged."""
from __future__ import annotations

from typing import Any

from ember._tensor import Tensor
from ember.aten.torch_function import _disabled_torch_function_impl


class WrapperTensor(Tensor):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    __torch_function__ = staticmethod(_disabled_torch_function_impl)

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return cls._handle(func, args, kwargs or {})

    @staticmethod
    def _handle(func: Any, args: Any, kwargs: Any) -> Any:
        raise NotImplementedError
