"""Compiler backends by name (``torch/_dynamo/backends/registry.py``): a backend takes the captured
``GraphModule`` and the example inputs and returns the callable that runs in its place."""
from __future__ import annotations

from typing import Any, Callable

from ember._dynamo import exc

_BACKENDS: dict[str, Callable[..., Any]] = {}
_DEBUG = {"eager", "aot_eager"}


def register_backend(compiler_fn: Callable[..., Any] | None = None, name: str | None = None,
                     tags: Any = ()) -> Any:
    """Register ``compiler_fn`` under ``name`` (its ``__name__`` by default); usable as a decorator."""
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    key = name or compiler_fn.__name__
    if key in _BACKENDS:
        raise AssertionError(f"duplicate name: {key}")
    _BACKENDS[key] = compiler_fn
    return compiler_fn


def lookup_backend(compiler_fn: Any) -> Callable[..., Any]:
    """The backend function for a name or a callable."""
    if isinstance(compiler_fn, str):
        if compiler_fn not in _BACKENDS:
            raise exc.InvalidBackend(f"Invalid backend: {compiler_fn!r}, see `torch._dynamo.list_backends()` for "
                                     "available backends.")
        return _BACKENDS[compiler_fn]
    if not callable(compiler_fn):
        raise exc.InvalidBackend(f"Invalid backend: {compiler_fn!r}")
    return compiler_fn


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list[str]:
    """The registered backends' names (without the debugging ones unless ``exclude_tags`` is empty)."""
    hide = _DEBUG if exclude_tags and "debug" in exclude_tags else set()
    return sorted(k for k in _BACKENDS if k not in hide)


@register_backend(name="eager")
def eager(gm: Any, example_inputs: Any, **kwargs: Any) -> Callable[..., Any]:
    """Run the captured graph as it is: each ATen operator through the dispatcher (autograd included)."""
    return gm.forward


@register_backend(name="aot_eager")
def aot_eager(gm: Any, example_inputs: Any, **kwargs: Any) -> Callable[..., Any]:
    """The captured graph run through the dispatcher (ember's AOT forward/backward partitioning is not built
    yet, so this is the ``eager`` backend)."""
    return gm.forward


@register_backend(name="inductor")
def inductor(gm: Any, example_inputs: Any, **kwargs: Any) -> Callable[..., Any]:
    """ember's counterpart of Inductor. The graph runs through the dispatcher for now; the code generator that
    calls kernels directly and fuses pointwise chains is the next part of this backend."""
    return gm.forward
