"""``TorchDispatchMode`` and the helpers around ``__torch_dispatch__`` (``torch/utils/_python_dispatch.py``).

A mode receives every ATen operator called while it is active, below autograd, as
``__torch_dispatch__(func, types, args, kwargs)`` with ``func`` an ``OpOverload`` (``aten.mul.Tensor``); the
dispatcher's Python key does the work (Note [The Python key] in ``ember/_python_key.py``).
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Iterator

from ember import _python_key

__all__ = ["TorchDispatchMode", "BaseTorchDispatchMode", "is_in_torch_dispatch_mode", "_get_current_dispatch_mode",
           "_get_current_dispatch_mode_stack", "_push_mode", "_pop_mode", "_pop_mode_temporarily",
           "_disable_current_modes", "_len_torch_dispatch_stack", "is_traceable_wrapper_subclass",
           "transform_subclass", "any_torch_dispatch_mode_on_stack"]


class TorchDispatchMode:
    """Receives every ATen call made while it is active (``with Mode():``); inside ``__torch_dispatch__`` the mode
    is not active, so calling ``func(*args, **kwargs)`` goes to the next mode down or runs the kernel."""

    supports_higher_order_operators = False

    def __init__(self, _dispatch_key: Any = None) -> None:
        if _dispatch_key is not None:
            self.__dict__["_dispatch_key"] = _dispatch_key

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        raise NotImplementedError

    def __enter__(self) -> Any:
        _push_mode(self)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        _pop_mode()

    @classmethod
    def push(cls, *args: Any, **kwargs: Any) -> TorchDispatchMode:
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`",
                      stacklevel=2)
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls) -> bool:
        return False

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return False


class BaseTorchDispatchMode(TorchDispatchMode):
    """A mode that runs every operator unchanged (a base for modes that look at a few)."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


def _get_current_dispatch_mode() -> TorchDispatchMode | None:
    stack = _python_key.mode_stack()
    return stack[-1] if stack else None


def _get_current_dispatch_mode_stack() -> list[TorchDispatchMode]:
    return list(_python_key.mode_stack())


def _len_torch_dispatch_stack() -> int:
    return len(_python_key.mode_stack())


def is_in_torch_dispatch_mode(include_infra_modes: bool = True) -> bool:
    stack = _python_key.mode_stack()
    return any(include_infra_modes or not m.is_infra_mode() for m in stack)


def any_torch_dispatch_mode_on_stack(*, include_infra_modes: bool = True, respect_mode_ignore: bool = False) -> bool:
    return is_in_torch_dispatch_mode(include_infra_modes)


def _push_mode(mode: TorchDispatchMode) -> None:
    _python_key.push_mode(mode)


def _pop_mode(k: Any = None) -> TorchDispatchMode:
    return _python_key.pop_mode()  # type: ignore[no-any-return]


@contextlib.contextmanager
def _pop_mode_temporarily(k: Any = None) -> Iterator[TorchDispatchMode]:
    old = _pop_mode(k)
    try:
        yield old
    finally:
        _push_mode(old)


@contextlib.contextmanager
def _disable_current_modes() -> Iterator[list[TorchDispatchMode]]:
    old = [_pop_mode() for _ in range(_len_torch_dispatch_stack())]
    try:
        yield old
    finally:
        for mode in reversed(old):
            _push_mode(mode)


def is_traceable_wrapper_subclass(t: object) -> bool:
    """A wrapper subclass that can be flattened into inner tensors (``__tensor_flatten__`` /
    ``__tensor_unflatten__``), as PT2 needs."""
    import ember
    is_subclass = isinstance(t, ember.Tensor) and type(t) is not ember.Tensor
    return is_subclass and hasattr(t, "__tensor_flatten__") and hasattr(t, "__tensor_unflatten__")


def transform_subclass(t: Any, callback: Any, outer_size: Any = None, outer_stride: Any = None) -> Any:
    """Rebuild the wrapper subclass ``t`` with ``callback(attr_name, inner_tensor)`` applied to each inner tensor."""
    outer_size = outer_size if outer_size is not None else t.size()
    outer_stride = outer_stride if outer_stride is not None else t.stride()
    attrs, ctx = t.__tensor_flatten__()
    transformed = {attr: callback(attr, getattr(t, attr)) for attr in attrs}
    return type(t).__tensor_unflatten__(transformed, ctx, outer_size, outer_stride)
