"""``torch.overrides``: the ``__torch_function__`` protocol's public helpers.

A class that defines ``__torch_function__(cls, func, types, args=(), kwargs=None)`` -- a Tensor subclass or any
other type -- receives every public ember function, Tensor method and operator called with one of its instances,
and a ``TorchFunctionMode`` receives every call made while it is active. The machinery is in
``ember/aten/torch_function.py`` (where the check costs plain tensors one flag test per call).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ember.aten.torch_function import (DisableTorchFunction, DisableTorchFunctionSubclass,  # noqa: F401
                                   _disabled_torch_function_impl, _get_current_function_mode,
                                   _get_current_function_mode_stack, _is_torch_function_mode_enabled,
                                   _len_torch_function_stack, _pop_mode, _pop_mode_temporarily, _push_mode,
                                   handle_torch_function, has_torch_function, has_torch_function_unary,
                                   has_torch_function_variadic, is_tensor_like)

__all__ = ["get_ignored_functions", "get_overridable_functions", "get_default_nowrap_functions",
           "handle_torch_function", "has_torch_function", "resolve_name", "is_tensor_like",
           "is_tensor_method_or_property", "wrap_torch_function", "enable_reentrant_dispatch", "TorchFunctionMode",
           "BaseTorchFunctionMode"]


def get_default_nowrap_functions() -> set[Callable[..., Any]]:
    """Functions whose results the default ``Tensor.__torch_function__`` does not convert to the subclass."""
    from ember._tensor import _default_nowrap_functions
    return _default_nowrap_functions()


def _tensor_methods() -> set[Any]:
    from ember._tensor import Tensor
    return {v for k, v in vars(Tensor).items() if callable(v) and not isinstance(v, type)}


def is_tensor_method_or_property(func: Callable[..., Any]) -> bool:
    """Whether ``func`` is a method or property getter of Tensor (what fx records as ``call_method``)."""
    return func in _tensor_methods() or getattr(func, "__name__", None) == "__get__"


def get_ignored_functions() -> set[Callable[..., Any]]:
    """Public functions that take no tensor and so never reach ``__torch_function__``."""
    import ember
    names = ("is_tensor", "is_storage", "set_default_dtype", "get_default_dtype", "manual_seed", "seed",
             "initial_seed", "get_rng_state", "set_rng_state", "is_grad_enabled", "set_grad_enabled",
             "compile", "load", "save", "set_printoptions", "get_num_threads", "set_num_threads",
             "use_deterministic_algorithms", "are_deterministic_algorithms_enabled", "promote_types", "result_type",
             "can_cast", "is_floating_point", "is_complex")
    return {getattr(ember, n) for n in names if hasattr(ember, n)}


def get_overridable_functions() -> dict[Any, list[Callable[..., Any]]]:
    """The overridable functions of each namespace: ``ember``, ``ember.nn.functional``, ``ember.linalg``,
    ``ember.fft``, ``ember.special`` and the Tensor methods."""
    import ember
    import types
    ignored = get_ignored_functions()
    out: dict[Any, list[Callable[..., Any]]] = {}
    for ns in (ember, ember.nn.functional, ember.linalg, ember.fft, ember.special):
        out[ns] = sorted((f for n, f in vars(ns).items() if not n.startswith("_") and
                          isinstance(f, types.FunctionType) and f not in ignored), key=lambda f: f.__name__)
    out[ember.Tensor] = sorted((f for n, f in vars(ember.Tensor).items() if isinstance(f, types.FunctionType)),
                               key=lambda f: f.__name__)
    return out


def resolve_name(f: Callable[..., Any]) -> str | None:
    """The public name of ``f`` (``torch.add``, ``torch.Tensor.add``, ``torch.nn.functional.relu``)."""
    import ember
    name = getattr(f, "__name__", None)
    if name is None:
        return None
    for prefix, ns in (("torch.Tensor", ember.Tensor), ("torch", ember), ("torch.nn.functional", ember.nn.functional),
                       ("torch.linalg", ember.linalg), ("torch.fft", ember.fft), ("torch.special", ember.special)):
        if getattr(ns, name, None) is f:
            return f"{prefix}.{name}"
    return None


def wrap_torch_function(dispatcher: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Make a Python function overridable: ``dispatcher(*args, **kwargs)`` returns the arguments to inspect."""
    def inner(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner


class TorchFunctionMode:
    """Receives every public call made while it is active (``with Mode():``) as
    ``__torch_function__(func, types, args, kwargs)``; inside that method the mode is not active, so calling
    ``func(*args, **kwargs)`` runs the function (or the next mode down)."""

    inner: Any

    def __init__(self) -> None:
        pass

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        raise NotImplementedError

    def __enter__(self) -> TorchFunctionMode:
        _push_mode(self)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        _pop_mode()

    @classmethod
    def push(cls, *args: Any, **kwargs: Any) -> TorchFunctionMode:
        import warnings
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`",
                      stacklevel=2)
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that runs every function unchanged (a base for modes that override a few)."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


class enable_reentrant_dispatch:
    """Accepted for PyTorch compatibility: ember's dispatcher is re-entrant already."""

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        pass
