"""The ``__torch_function__`` protocol's machinery (PyTorch: ``torch/csrc/utils/python_arg_parser.cpp``'s
overloaded-argument handling, ``torch/csrc/utils/disable_torch_function.cpp`` and ``torch/overrides.py``).

A public function -- ``ember.add``, ``Tensor.add``, ``a + b``, ``F.linear`` -- hands the call to
``__torch_function__`` when a torch function mode is active or an argument's type overrides it: a Tensor subclass
(whose inherited default runs the function and returns the subclass, see ``Tensor.__torch_function__``) or any
other object that defines it (an fx ``Proxy``). Plain tensors and Parameters never do.

Note [Keeping __torch_function__ off the path of plain tensors]
The check costs one load of ``ENABLED[0]`` per public call: that flag is true only while a mode is active or once
a tensor of a subclass that overrides ``__torch_function__`` has been made (``note_subclass``), and only then do
the bindings scan their arguments (``dispatch``). An argument that is neither a Tensor nor a Python value never
passes a binding's fast path, so the bindings' slow path -- which raises "invalid combination of arguments"
otherwise -- looks for overriding arguments there (``overloaded_args``), flag or no flag. Python-written public
functions (``F.cross_entropy``) do both through ``overridable``.

The state (the mode stack, the two disabling contexts) is process-wide here, where PyTorch keeps it per thread.
It lives in the op library's layer, as PyTorch's ``PythonTorchFunctionTLS`` does in ATen, so that every layer
above (``ember.autograd`` re-exports ``handle_torch_function``) can reach it.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable

from ember.c10.tensor_impl import TensorImpl

# ENABLED[0]: whether a public call must look for __torch_function__ overrides at all (see the Note above)
ENABLED = [False]
NOT_HANDLED = object()          # dispatch's answer when no override applies: the caller goes on as usual

_modes: list[Any] = []          # the torch function mode stack, innermost last
_subclasses_seen = [False]      # a tensor of an overriding subclass exists (or did)
_disabled = [0, 0]              # nesting depth of DisableTorchFunctionSubclass, DisableTorchFunction


def _disabled_torch_function_impl(func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
    """The ``__torch_function__`` of types that opt out (``Parameter``): a type whose attribute is this function
    never overrides anything. Called, it runs ``func`` with torch function handling of subclasses disabled."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


_switches: list[Callable[[bool], None]] = []   # setters of the module-global copies of ENABLED[0]


def on_switch(setter: Callable[[bool], None]) -> None:
    """Call ``setter(on)`` now and whenever the protocol turns on or off: a module whose hot path tests the switch
    keeps its own global copy with it (``_TF_ON``: one global load, the cheapest test Python has)."""
    setter(ENABLED[0])
    _switches.append(setter)


_on_first_use: list[Callable[[], None]] = []   # run once, the first time the switch turns on


def on_first_use(callback: Callable[[], None]) -> None:
    """Run ``callback`` the first time a mode or an overriding subclass turns the protocol on (the Tensor class
    then installs the wrappers of its shape queries: Note [Wrappers installed on first use] in ember/_tensor.py)."""
    _on_first_use.append(callback)


def _refresh() -> None:
    on = not _disabled[1] and (bool(_modes) or (_subclasses_seen[0] and not _disabled[0]))
    ENABLED[0] = on
    for setter in _switches:
        setter(on)
    while on and _on_first_use:
        _on_first_use.pop(0)()


# types known not to override (the exact Tensor, registered by ember._tensor; the rest as they are met)
_PLAIN: set[type] = {int, float, bool, complex, str, type(None), slice, type(Ellipsis)}
_OVERRIDING: set[type] = set()


def _overrides(t: type) -> bool:
    """Whether values of type ``t`` take part in __torch_function__ dispatch."""
    if t in _PLAIN:
        return False
    if t in _OVERRIDING:
        return True
    tf = getattr(t, "__torch_function__", None)
    fn = getattr(tf, "__func__", tf)
    # PyTorch's own tensor classes count as plain: their default __torch_function__ would only call the ember
    # function again (a PyTorch tensor compared with an ember one would recurse)
    if tf is None or fn is _disabled_torch_function_impl or \
            (t.__module__ in ("torch", "torch.nn.parameter") and t.__name__ in ("Tensor", "Parameter")):
        if t is not list and t is not tuple:    # (containers are looked into, never marked plain)
            _PLAIN.add(t)
        return False
    _OVERRIDING.add(t)
    return True


def note_subclass(cls: type) -> None:
    """A tensor of class ``cls`` was made: if ``cls`` overrides __torch_function__, public calls start checking."""
    if not _subclasses_seen[0] and _overrides(cls):
        _subclasses_seen[0] = True
        _refresh()


def _append(arg: Any, found: list[Any]) -> None:
    t = type(arg)
    if t in _PLAIN or not _overrides(t):
        return
    for i, seen in enumerate(found):
        if type(seen) is t:
            return
        if issubclass(t, type(seen)):   # subclasses before their superclasses, else left to right
            found.insert(i, arg)
            return
    found.append(arg)


def overloaded_args(relevant: Any) -> list[Any]:
    """The arguments whose types override __torch_function__, one per type, subclasses first (PyTorch's
    ``_get_overloaded_args``): scans ``relevant`` and one level into its lists and tuples."""
    found: list[Any] = []
    if _disabled[0] or _disabled[1]:    # either context turns off every argument's override (modes stay on
        return found                    # under DisableTorchFunctionSubclass)
    for a in relevant:
        t = type(a)
        if t is list or t is tuple:
            for b in a:
                if type(b) not in _PLAIN:
                    _append(b, found)
        elif t not in _PLAIN:
            _append(a, found)
    return found


class _AllNotImplemented(TypeError):
    """Every handler answered NotImplemented (an operator turns this into Python's own NotImplemented)."""


def dispatch(public: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None, python: bool = False) -> Any:
    """``public(*args, **kwargs)`` through __torch_function__ if a mode is active or an argument overrides it;
    else ``NOT_HANDLED``. ``python``: the caller is a Python-written function, whose error when every handler
    declines is ``handle_torch_function``'s; the bindings raise PyTorch's C++ message."""
    relevant = args if not kwargs else args + tuple(kwargs.values())
    found = overloaded_args(relevant)
    mode_on = bool(_modes) and not _disabled[1]
    if not found and not mode_on:
        return NOT_HANDLED
    if python:
        return handle_torch_function(public, relevant, *args, **(kwargs or {}))
    result, mode = _call_handlers(public, found, args, kwargs or {})
    if result is not NotImplemented:
        return result
    lines = ([f"  - mode object {mode}"] if mode is not None else []) + \
        [f"  - tensor subclass {type(a)}" for a in found]
    raise _AllNotImplemented(f"Multiple dispatch failed for '{_public_name(public)}'; all __torch_function__ "
                             "handlers returned NotImplemented:\n\n" + "\n".join(lines) +
                             "\n\nFor more information, try re-running with TORCH_LOGS=not_implemented")


def _call_handlers(public: Any, found: list[Any], args: Any, kwargs: Any) -> tuple[Any, Any]:
    """The innermost mode's answer, then each overriding argument's, until one is not NotImplemented; with the
    mode asked (or None)."""
    types = tuple(type(a) for a in found)
    mode = None
    if _modes and not _disabled[1]:
        with _pop_mode_temporarily() as mode:
            result = mode.__torch_function__(public, types, args, kwargs)
        if result is not NotImplemented:
            return result, mode
    for arg in found:
        result = arg.__torch_function__(public, types, args, kwargs)
        if result is not NotImplemented:
            return result, mode
    return NotImplemented, mode


def _public_name(f: Any) -> str:
    """PyTorch's name of a public function in messages (``torch.add``, ``torch.Tensor.add``)."""
    import sys
    overrides = sys.modules.get("ember.overrides")
    name = overrides.resolve_name(f) if overrides is not None else None
    return name or f"{getattr(f, '__module__', None)}.{getattr(f, '__name__', f)}"


def handle_torch_function(public_api: Callable[..., Any], relevant_args: Any, *args: Any, **kwargs: Any) -> Any:
    """Call the innermost torch function mode's ``__torch_function__``, then each overriding argument's, until
    one answers something other than ``NotImplemented`` (``torch.overrides.handle_torch_function``)."""
    found = overloaded_args(relevant_args)
    result, mode = _call_handlers(public_api, found, args, kwargs)
    if result is not NotImplemented:
        return result
    msg = (f"no implementation found for '{_public_name(public_api)}' on types that implement "
           f"__torch_function__: {[type(a) for a in found]}")
    if mode is not None:
        msg += f" nor in mode {mode}"
    raise TypeError(msg)


def has_torch_function(relevant_args: Any) -> bool:
    """Whether a call with these arguments goes to __torch_function__ (an active mode or an overriding type)."""
    if _disabled[1]:
        return False
    return bool(_modes) or bool(overloaded_args(relevant_args))


def is_tensor_like(inp: Any) -> bool:
    """Whether ``inp`` is a Tensor (of any class) or an object whose type defines ``__torch_function__``."""
    return isinstance(inp, TensorImpl) or hasattr(type(inp), "__torch_function__")


def has_torch_function_unary(arg: Any) -> bool:
    return has_torch_function((arg,))


def has_torch_function_variadic(*args: Any) -> bool:
    return has_torch_function(args)


def overridable(fn: Callable[..., Any], as_given: bool = False,
                report_as: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """A Python-written public function that takes part in __torch_function__ (what PyTorch writes as
    ``if has_torch_function(...): return handle_torch_function(...)`` at the top of ``torch.nn.functional``'s
    functions). Plain calls cost the flag, a wrapper frame and a type check per argument. ``report_as``: the
    function handlers receive instead of this one (the public dispatcher of ``F.max_pool2d``'s plain half)."""
    plain = _PLAIN
    signature: list[Any] = []

    def handle(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # PyTorch's Python functions pass __torch_function__ their required parameters positionally and the
        # others by keyword, defaults filled in (``F.relu(x)`` arrives as ``relu(x, inplace=False)``); those it
        # writes in C (``as_given``: ``F.conv2d``) pass the arguments as the caller gave them
        reported = public if report_as is None else report_as
        if as_given:
            return dispatch(reported, args, kwargs)
        relevant = args + tuple(kwargs.values())
        if not overloaded_args(relevant) and not (_modes and not _disabled[1]):
            return NOT_HANDLED
        if not signature:
            import inspect
            signature.append(inspect.signature(fn))
        try:
            bound = signature[0].bind(*args, **kwargs)
        except TypeError:
            return handle_torch_function(reported, relevant, *args, **kwargs)
        bound.apply_defaults()
        pos, kw = [], {}
        for name, p in signature[0].parameters.items():
            if p.kind == p.VAR_POSITIONAL:
                pos.extend(bound.arguments.get(name, ()))
            elif p.kind == p.VAR_KEYWORD:
                kw.update(bound.arguments.get(name, {}))
            elif p.default is p.empty and p.kind != p.KEYWORD_ONLY:
                pos.append(bound.arguments[name])
            else:
                kw[name] = bound.arguments[name]
        return handle_torch_function(reported, relevant, *pos, **kw)

    @functools.wraps(fn)
    def public(*args: Any, **kwargs: Any) -> Any:
        if ENABLED[0]:
            r = handle(args, kwargs)
            return fn(*args, **kwargs) if r is NOT_HANDLED else r
        for a in args:
            if type(a) not in plain and _overrides_deep(a):
                break
        else:
            if not kwargs or not _any_foreign((), kwargs):
                return fn(*args, **kwargs)
        r = handle(args, kwargs)
        return fn(*args, **kwargs) if r is NOT_HANDLED else r
    return public


def seen_by_modes(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as PyTorch's functions on its ignored list that a torch function mode still receives (``tensor``,
    ``as_tensor``, ``asarray``): an active mode gets the call, an argument's ``__torch_function__`` never does."""
    @functools.wraps(fn)
    def public(*args: Any, **kwargs: Any) -> Any:
        if _modes and not _disabled[1]:
            result, _mode = _call_handlers(public, [], args, kwargs)
            if result is not NotImplemented:
                return result
        return fn(*args, **kwargs)
    return public


def _any_foreign(args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> bool:
    """A cheap pre-check: some argument's type has not been seen to be plain (a Proxy or a new type)."""
    for a in args:
        if type(a) not in _PLAIN and _overrides_deep(a):
            return True
    if kwargs:
        for a in kwargs.values():
            if type(a) not in _PLAIN and _overrides_deep(a):
                return True
    return False


def _overrides_deep(a: Any) -> bool:
    t = type(a)
    if t is list or t is tuple:
        for b in a:
            if type(b) not in _PLAIN and _overrides(type(b)):
                return True
        return False
    return _overrides(t)


# ---------------------------------------------------------------------------------------------- modes
def _push_mode(mode: Any) -> None:
    _modes.append(mode)
    _refresh()


def _pop_mode() -> Any:
    if not _modes:
        raise RuntimeError("Trying to pop from an empty mode stack")
    mode = _modes.pop()
    _refresh()
    return mode


@contextlib.contextmanager
def _pop_mode_temporarily() -> Any:
    mode = _pop_mode()
    try:
        yield mode
    finally:
        _push_mode(mode)


def _get_current_function_mode() -> Any:
    return _modes[-1] if _modes else None


def _get_current_function_mode_stack() -> list[Any]:
    return list(_modes)


def _len_torch_function_stack() -> int:
    return len(_modes)


def _is_torch_function_mode_enabled() -> bool:
    return bool(_modes) and not _disabled[1]


def _is_torch_function_enabled() -> bool:
    return not (_disabled[0] or _disabled[1])


def _is_torch_function_all_disabled() -> bool:
    return bool(_disabled[1])


class _Disabling:
    """A context that increments one of the two disabling depths (``_which``) while it is active."""

    _which = 0

    def __enter__(self) -> None:
        _disabled[self._which] += 1
        _refresh()

    def __exit__(self, *exc: Any) -> None:
        _disabled[self._which] -= 1
        _refresh()


class DisableTorchFunctionSubclass(_Disabling):
    """Inside, no argument's ``__torch_function__`` is called (torch function modes still are): what the default
    ``Tensor.__torch_function__`` runs the function under."""

    _which = 0


class DisableTorchFunction(_Disabling):
    """Inside, no ``__torch_function__`` is called at all: neither modes nor overriding arguments."""

    _which = 1


def make_module_overridable(namespace: dict[str, Any], as_given: frozenset[str] = frozenset()) -> None:
    """Wrap every public function a Python module defines (not those it imports) with ``overridable``: the
    ``has_torch_function`` check PyTorch writes at the top of each of them (``as_given``: the names PyTorch
    implements in C, whose handlers receive the arguments unchanged)."""
    import types
    module = namespace["__name__"]
    for name, fn in list(namespace.items()):
        if not name.startswith("_") and isinstance(fn, types.FunctionType) and fn.__module__ == module:
            namespace[name] = overridable(fn, name in as_given)
