"""Grad modes (mirrors ``torch/autograd/grad_mode.py`` over ``c10/core/GradMode.h``): thread-local switches
read by every autograd kernel.  Each works as a context manager and as a decorator."""
from __future__ import annotations

import functools
from typing import Any


from ember.c10.grad_mode import state as state  # the thread-local switches live in c10, as PyTorch's


def is_grad_enabled() -> bool:
    return state.enabled


def is_inference_mode_enabled() -> bool:
    return state.inference


class _DecoratorContextManager:
    """A context manager that also decorates functions (a fresh instance per call)."""

    def __call__(self, func: Any) -> Any:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def __enter__(self) -> None:
        raise NotImplementedError

    def __exit__(self, *exc: object) -> None:
        raise NotImplementedError

    def clone(self) -> _DecoratorContextManager:
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable bare as a decorator, ``@no_grad`` as well as ``@no_grad()`` (PyTorch's class of that name)."""

    def __new__(cls, orig_func: Any = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disable gradient recording: results of ops do not require grad."""

    def __init__(self, orig_func: Any = None) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = state.enabled
        state.enabled = False

    def __exit__(self, *exc: object) -> None:
        state.enabled = self.prev


class enable_grad(_NoParamDecoratorContextManager):
    """Enable gradient recording (inside ``no_grad``)."""

    def __init__(self, orig_func: Any = None) -> None:
        self.prev = True

    def __enter__(self) -> None:
        self.prev = state.enabled
        state.enabled = True

    def __exit__(self, *exc: object) -> None:
        state.enabled = self.prev


class _ModeSetter(_DecoratorContextManager):
    """A switch of ``state`` set when the object is made. As a context manager it restores the previous value on
    exit; used as a decorator it restores it at once, and the decorated function sets it for each call (PyTorch's
    ``set_grad_enabled.__call__``)."""
    _field = ""

    def _set(self, mode: Any) -> None:
        self.prev = getattr(state, self._field)
        self.mode = bool(mode)
        setattr(state, self._field, self.mode)

    def __call__(self, orig_func: Any) -> Any:
        setattr(state, self._field, self.prev)
        return super().__call__(orig_func)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        setattr(state, self._field, self.prev)

    def clone(self) -> _DecoratorContextManager:
        return self.__class__(self.mode)  # type: ignore[call-arg]  # each subclass takes the mode


class set_grad_enabled(_ModeSetter):
    """``set_grad_enabled(mode)`` sets the mode at once; as a context manager it restores the previous one."""
    _field = "enabled"

    def __init__(self, mode: bool) -> None:
        self._set(mode)


class enforce_grad_layout_policy(_ModeSetter):
    """Whether autograd makes a leaf's new ``.grad`` obey the gradient layout contract (the strides of a
    non-overlapping, dense parameter; row-major otherwise): True by default. False keeps the incoming gradient's
    layout. Sets the policy at once; as a context manager it restores the previous one."""
    _field = "grad_layout_enforced"

    def __init__(self, enable: bool = True) -> None:
        self._set(enable)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``; tensors made inside are inference tensors, which autograd refuses to save."""

    def __new__(cls, mode: Any = True) -> Any:
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # used bare: @inference_mode

    def __init__(self, mode: Any = True) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self.prev = (state.enabled, state.inference)
        if self.mode:
            state.enabled, state.inference = False, True

    def __exit__(self, *exc: object) -> None:
        state.enabled, state.inference = self.prev

    def clone(self) -> _DecoratorContextManager:
        return self.__class__(self.mode)

    def __call__(self, func: Any = None) -> Any:
        if isinstance(func, bool) or func is None:  # @inference_mode() / @inference_mode(False)
            return self.__class__(True if func is None else func)
        return super().__call__(func)


# ember's engine runs a backward on the calling thread; PyTorch's runs device work on worker threads, which this
# switch turns off. The setting is kept (and answered) so code that toggles it runs unchanged.
_multithreading = [True]


def is_multithreading_enabled() -> bool:
    return _multithreading[0]


class set_multithreading_enabled(_DecoratorContextManager):  # noqa: N801 - PyTorch's name
    """``set_multithreading_enabled(mode)`` sets whether backward may use worker threads, at once; as a context
    manager it restores the previous setting."""

    def __init__(self, mode: bool) -> None:
        self.prev = _multithreading[0]
        self.mode = bool(mode)
        _multithreading[0] = self.mode

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        _multithreading[0] = self.prev

    def clone(self) -> _DecoratorContextManager:
        return self.__class__(self.mode)


def is_view_replay_enabled() -> bool:
    """Whether views are replayed from their base in backward (PyTorch's ``_force_original_view_tracking``):
    ember records views directly, so never."""
    return False
