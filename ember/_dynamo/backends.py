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
    """AOT autograd's forward and backward graphs (Note [AOT autograd]), each run through the dispatcher: the
    partitioning without the code generation, for debugging the one apart from the other."""
    from ember._functorch.aot_autograd import aot_module_simplified
    from ember._inductor.compile_fx import needs_autograd
    if not needs_autograd(gm):
        return gm.forward

    def no_grad_forward(g: Any, ex: Any) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            from ember.autograd.grad_mode import no_grad
            with no_grad():
                return g.forward(*args)
        return run
    try:
        run = aot_module_simplified(gm, example_inputs, no_grad_forward, no_grad_forward)
    except Exception:           # a backward formula that reads values (masked_select): the dispatcher's path
        run = None
    return run if run is not None else gm.forward


@register_backend(name="inductor")
def inductor(gm: Any, example_inputs: Any, **kwargs: Any) -> Callable[..., Any]:
    """ember's counterpart of Inductor: a graph with no autograd to record becomes one generated function that
    calls the array kernels directly (Note [Graph code]); a graph that needs autograd becomes AOT autograd's
    forward and backward graphs (Note [AOT autograd]), each such a function."""
    from ember._inductor.compile_fx import compile_fx
    return compile_fx(gm, example_inputs)
