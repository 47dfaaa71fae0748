"""The dispatcher's Python key: where ``__torch_dispatch__`` is called (PyTorch:
``aten/src/ATen/core/PythonFallbackKernel.cpp`` and ``torch/csrc/autograd/python_variable.cpp``'s dispatch).

Note [The Python key]
``DispatchKey.Python`` sits below the autograd keys and ``ADInplaceOrView`` and above the backends. A call reaches it
when a tensor argument carries the key -- a wrapper subclass (``Tensor._make_wrapper_subclass``) or a subclass
that defines ``__torch_dispatch__`` -- or while a ``TorchDispatchMode`` is active, which adds the key to the
thread's included keys. Tensors without it never get here: their key set has no Python bit, so the cost for them is
nothing at all. One fallback serves every operator (``python_fallback``): by the time it runs, autograd has already
recorded the call (or a CompositeImplicitAutograd op has been decomposed into the ops it is written in), so the
handler sees ATen operators as PyTorch's handlers do -- ``aten.t.default`` and ``aten.mm.default`` for ``F.linear``.

The fallback hands the call to, in order: the innermost mode (popped off the stack while its handler runs, so that
calling ``func(*args)`` inside goes to the next mode down, or to the kernel); then each overriding subclass among the
arguments (subclasses before their superclasses, else left to right) until one answers something other than
``NotImplemented``. Handlers run below autograd, as in PyTorch: the autograd keys are excluded while they run, so
the ops they call are not recorded a second time.

Note [Pre-dispatch]
``DispatchKey.PreDispatch`` sits above the autograd keys (PyTorch's place for it, just below ``PythonDispatcher``).
A mode pushed with ``pre_dispatch_mode`` (``make_fx(pre_dispatch=True)``, ``ember.export``) includes the key on the
thread, and ``pre_dispatch_fallback`` hands it every operator call *before* autograd sees it: a
CompositeImplicitAutograd operator (``linear``, ``batch_norm``, ``reshape``) arrives whole rather than as the ops it
decomposes into, and an in-place op arrives as itself. The handler runs with the key excluded (or with the next
mode down in charge), so calling ``func(*args)`` inside it takes the ordinary path -- autograd, the decomposition,
the Python key's modes (a ``FakeTensorMode``) -- without being recorded again. A call the handler answers
``NotImplemented`` runs as if the key were absent.
"""
from __future__ import annotations

from typing import Any

import threading

from ember._ops import overload_of
from ember.aten.dispatcher import BoxedFallback, python_key_used, register_fallback, tls
from ember.c10.dispatch_key import AUTOGRAD_MASK, MATH_BITS, DispatchKey
from ember.c10.tensor_impl import TensorImpl

PYTHON_BIT = 1 << DispatchKey.Python
_BELOW_PYTHON = PYTHON_BIT - 1
_AUTOGRAD_AND_VIEW = AUTOGRAD_MASK | 1 << DispatchKey.ADInplaceOrView


class _ModeStack(threading.local):
    def __init__(self) -> None:
        self.modes: list[Any] = []
        self.pre_dispatch: list[Any] = []       # Note [Pre-dispatch]


_stack = _ModeStack()


def mode_stack() -> list[Any]:
    """This thread's TorchDispatchMode stack, innermost last."""
    return _stack.modes


def _sync_included() -> None:
    """The Python key is included exactly while the mode stack is not empty."""
    inc, keep = tls.keys
    tls.keys = (inc | PYTHON_BIT if _stack.modes else inc & ~PYTHON_BIT, keep)


_on_first_use: list[Any] = []


def on_first_use(callback: Any) -> None:
    """Run ``callback`` the first time a dispatch mode or a tensor with the Python key appears in the process (the
    Tensor class then lets ``item()`` / ``detach()`` look for the key: plain programs never pay for the test)."""
    if python_key_used[0]:
        callback()
    else:
        _on_first_use.append(callback)


def note_used() -> None:
    if not python_key_used[0]:
        python_key_used[0] = True
        for cb in _on_first_use:
            cb()


def push_mode(mode: Any) -> None:
    note_used()
    _stack.modes.append(mode)
    _sync_included()


def pop_mode() -> Any:
    if not _stack.modes:
        raise RuntimeError("Trying to pop from an empty mode stack")
    mode = _stack.modes.pop()
    _sync_included()
    return mode


PRE_DISPATCH_BIT = 1 << DispatchKey.PreDispatch


def _sync_pre_dispatch() -> None:
    inc, keep = tls.keys
    tls.keys = (inc | PRE_DISPATCH_BIT if _stack.pre_dispatch else inc & ~PRE_DISPATCH_BIT, keep)


class pre_dispatch_mode:
    """Context manager: ``mode`` handles every operator call above autograd while it is active (Note
    [Pre-dispatch]); modes nest, the innermost first."""

    def __init__(self, mode: Any) -> None:
        self.mode = mode

    def __enter__(self) -> Any:
        _stack.pre_dispatch.append(self.mode)
        _sync_pre_dispatch()
        return self.mode

    def __exit__(self, *exc: Any) -> None:
        _stack.pre_dispatch.remove(self.mode)
        _sync_pre_dispatch()


def pre_dispatch_fallback(handle: Any, ks: int, values: tuple[Any, ...]) -> Any:
    """The PreDispatch key's kernel for every operator (Note [Pre-dispatch])."""
    func = overload_of(handle, tls.in_formula)
    args, kwargs = func._unbox(values)
    modes = _stack.pre_dispatch
    mode = modes.pop()
    prev = tls.keys
    _sync_pre_dispatch()
    try:
        r = mode.__torch_dispatch__(func, (), args, kwargs)
        if r is NotImplemented:
            tls.keys = (prev[0] & ~PRE_DISPATCH_BIT, prev[1])
            r = handle.call(ks & ~PRE_DISPATCH_BIT, *values)
    finally:
        modes.append(mode)
        tls.keys = prev
    return r


def _disabled_torch_dispatch_impl(func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
    """``Tensor.__torch_dispatch__``: a class whose attribute is this function does not override dispatch."""
    return NotImplemented


def has_torch_dispatch(cls: type) -> bool:
    return getattr(cls, "__torch_dispatch__", _disabled_torch_dispatch_impl) is not _disabled_torch_dispatch_impl


def _add_overloaded(arg: Any, found: list[Any]) -> None:
    if not (arg._ks & PYTHON_BIT):
        return
    t = type(arg)
    if not has_torch_dispatch(t):
        return
    for i, seen in enumerate(found):
        if seen is t:
            return
        if issubclass(t, seen):
            found.insert(i, t)
            return
    found.append(t)


def _overloaded_types(values: tuple[Any, ...]) -> list[type]:
    found: list[type] = []
    for v in values:
        if isinstance(v, TensorImpl):
            _add_overloaded(v, found)
        elif isinstance(v, (list, tuple)):
            for t in v:
                if isinstance(t, TensorImpl):
                    _add_overloaded(t, found)
    return found


def _run_below_autograd(fn: Any, func: Any, types: tuple[type, ...], args: Any, kwargs: Any,
                        keep_python: bool) -> Any:
    prev = inc, keep = tls.keys
    prev_formula = tls.in_formula
    tls.keys = (inc if keep_python else inc & ~PYTHON_BIT, keep & ~_AUTOGRAD_AND_VIEW)
    tls.in_formula = False      # a handler is user code, whatever called it
    try:
        return fn(func, types, args, kwargs)
    finally:
        tls.keys = prev
        tls.in_formula = prev_formula


def python_fallback(handle: Any, ks: int, values: tuple[Any, ...]) -> Any:
    """The Python key's kernel for every operator (Note [The Python key])."""
    func = overload_of(handle, tls.in_formula)
    args, kwargs = func._unbox(values)
    types = _overloaded_types(values)
    tried: list[str] = []
    modes = _stack.modes
    if modes:
        mode = modes.pop()
        try:
            r = _run_below_autograd(mode.__torch_dispatch__, func, tuple(types), args, kwargs, bool(modes))
        finally:
            modes.append(mode)
        if r is not NotImplemented:
            return r
        tried.append(f"  - mode object {mode!r}")
    elif not types:     # nothing here overrides dispatch: the kernel below (which reads any math bits' values)
        return handle.redispatch(ks & (_BELOW_PYTHON | MATH_BITS), *values)
    for cls in types:
        handler = cls.__torch_dispatch__
        r = _run_below_autograd(handler, func, tuple(types), args, kwargs, True)
        if r is not NotImplemented:
            return r
        tried.append(f"  - tensor subclass {cls!r}")
    raise TypeError(f"Multiple dispatch failed for 'ember._ops.{func}'; all __torch_dispatch__ handlers returned "
                    "NotImplemented:\n\n" + "\n".join(tried) + "\n\nFor more information, try re-running with "
                    "TORCH_LOGS=not_implemented")


def _make_kernel(handle: Any) -> Any:
    def python_key_kernel(ks: int, *values: Any) -> Any:
        return python_fallback(handle, ks, values)
    python_key_kernel.__qualname__ = f"python_fallback[{handle.qualified_name}]"
    return python_key_kernel


def _make_pre_dispatch_kernel(handle: Any) -> Any:
    def pre_dispatch_kernel(ks: int, *values: Any) -> Any:
        return pre_dispatch_fallback(handle, ks, values)
    pre_dispatch_kernel.__qualname__ = f"pre_dispatch_fallback[{handle.qualified_name}]"
    return pre_dispatch_kernel


def install() -> None:
    """The Python and PreDispatch keys' boxed fallbacks (Note [Initialization] in ember/_initialize.py)."""
    register_fallback(DispatchKey.Python, BoxedFallback(_make_kernel))
    register_fallback(DispatchKey.PreDispatch, BoxedFallback(_make_pre_dispatch_kernel))
