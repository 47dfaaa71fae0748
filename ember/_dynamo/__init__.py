"""``ember._dynamo`` (``torch/_dynamo``): the names libraries touch on a CPU-only eager run. Graph capture is
issue 18; until then nothing is compiled, the markers are recorded on the tensor (as PyTorch records them) and
read by nobody, and ``config`` holds the settings scripts set."""
from __future__ import annotations

from typing import Any, Callable

from ember._dynamo import config, exc  # noqa: F401
from ember.compiler import allow_in_graph, assume_constant_result, disable, is_compiling, reset  # noqa: F401

__all__ = ["allow_in_graph", "assume_constant_result", "disable", "is_compiling", "reset", "config", "exc",
           "mark_dynamic", "mark_static", "mark_static_address", "maybe_mark_dynamic", "optimize",
           "graph_break", "is_dynamo_supported", "disallow_in_graph", "forbid_in_graph", "run"]


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
    """The old spelling of ``compile``: a decorator returning its function."""
    return lambda fn: fn


def run(fn: Any = None) -> Any:
    return fn


def graph_break() -> None:
    """Break the graph here when compiling (nothing to break in eager mode)."""


def is_dynamo_supported() -> bool:
    """Whether graph capture works on this platform: not in ember yet (issue 18)."""
    return False


def disallow_in_graph(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn


forbid_in_graph = disallow_in_graph
