"""``ember._dynamo`` (``torch/_dynamo``): graph capture (``capture.py``, Note [Capture]), the compiled callables
and their caches (``eval_frame.py``), the backends, ``explain`` and ``reset``. The dynamic-shape markers are
recorded on the tensor, as PyTorch records them; capture specializes on every shape (no symbolic sizes yet)."""
from __future__ import annotations

from typing import Any, Callable

from ember._dynamo import config, exc  # noqa: F401
from ember.compiler import allow_in_graph, assume_constant_result, disable, is_compiling, reset  # noqa: F401
from ember.c10 import compile_state as _cs

__all__ = ["allow_in_graph", "assume_constant_result", "disable", "is_compiling", "reset", "config", "exc",
           "mark_dynamic", "mark_static", "mark_static_address", "maybe_mark_dynamic", "optimize",
           "graph_break", "is_dynamo_supported", "disallow_in_graph", "forbid_in_graph", "run", "explain",
           "list_backends", "register_backend", "lookup_backend", "OptimizedModule"]


def __getattr__(name: str) -> Any:
    if name in ("OptimizedModule", "explain", "ExplainOutput"):
        from ember._dynamo import eval_frame
        return getattr(eval_frame, name)
    if name in ("list_backends", "register_backend", "lookup_backend"):
        from ember._dynamo import backends
        return getattr(backends, name)
    raise AttributeError(f"module 'torch._dynamo' has no attribute '{name}'")


def mark_dynamic(t: Any, index: Any, *, min: int | None = None, max: int | None = None, **kwargs: Any) -> None:  # noqa: A002
    """Mark dims of ``t`` as dynamic for a later compilation (recorded as ``t._dynamo_dynamic_indices``)."""
    dims = {index} if isinstance(index, int) else set(index)
    t._dynamo_dynamic_indices = getattr(t, "_dynamo_dynamic_indices", set()) | dims


def maybe_mark_dynamic(t: Any, index: Any) -> None:
    mark_dynamic(t, index)


def mark_static(t: Any, index: Any = None) -> None:
    """Mark ``t`` (or dims of it) as static for a later compilation."""
    t._dynamo_static_indices = getattr(t, "_dynamo_static_indices", set()) | (
        set() if index is None else ({index} if isinstance(index, int) else set(index)))


def mark_static_address(t: Any, guard: bool = True) -> None:
    """Mark ``t``'s storage as fixed across calls (a static input of a CUDA graph): recorded on ``t``."""
    t._dynamo_static_input_type = "guarded" if guard else "unguarded"


def optimize(backend: Any = "inductor", *, nopython: bool = False, **kwargs: Any) -> Callable[[Any], Any]:
    """The old spelling of ``compile``: a decorator compiling its function or module with ``backend``."""
    from ember._dynamo import eval_frame
    return eval_frame.optimize(backend, nopython=nopython, **kwargs)


def run(fn: Any = None) -> Any:
    """Run ``fn`` with the graphs already captured and no new capture: ember runs it as it is."""
    return fn


def graph_break(msg: str = "") -> None:
    """Break the graph here when compiling."""
    _cs.graph_break("Call to `torch._dynamo.graph_break()`" + (f": {msg}" if msg else ""),
                    "User-inserted graph break.")


def is_dynamo_supported() -> bool:
    """Whether graph capture works on this platform (it does wherever ember runs)."""
    return True


def disallow_in_graph(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn


forbid_in_graph = disallow_in_graph
