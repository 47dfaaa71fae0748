"""``ember.compiler`` (``torch/compiler``): the questions libraries ask about compilation and the switches around
``ember.compile`` (graph capture is ``ember._dynamo``'s). ``is_compiling()`` is true while a graph is being
captured; nothing is ever traced for export yet."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator
from ember.c10.compile_state import capturing

__all__ = ["compile", "reset", "allow_in_graph", "substitute_in_graph", "list_backends", "disable",
           "set_stance", "cudagraph_mark_step_begin", "is_compiling", "is_dynamo_compiling", "is_exporting",
           "assume_constant_result", "keep_tensor_guards_unsafe", "skip_guard_on_inbuilt_nn_modules_unsafe"]


def compile(*args: Any, **kwargs: Any) -> Any:  # noqa: A001 - PyTorch's name
    """``torch.compiler.compile``: the same as ``ember.compile``."""
    import ember
    return ember.compile(*args, **kwargs)


def is_compiling() -> bool:
    """True while ``ember.compile`` captures a graph of the code that asks."""
    return capturing()


def is_dynamo_compiling() -> bool:
    return is_compiling()


def is_exporting() -> bool:
    """True while ``torch.export`` traces the code (ember has no exporter yet)."""
    return False


def reset() -> None:
    """Drop every captured graph: compiled functions capture again on their next call."""
    from ember._dynamo import eval_frame
    eval_frame.reset()


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list[str]:
    """The names ``backend=`` accepts (without the debugging ones, ``eager`` and ``aot_eager``)."""
    from ember._dynamo import backends
    return backends.list_backends(exclude_tags)


def disable(fn: Any = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """Keep ``fn`` out of graphs (a decorator, with or without arguments): inside a compiled region its call is
    a graph break, and a compiled function or module given here comes back uncompiled."""
    from ember._dynamo import eval_frame
    return eval_frame.disable(fn, recursive, reason=reason)


def allow_in_graph(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn


def substitute_in_graph(original_fn: Any, *, can_constant_fold_through: bool = False,
                        skip_signature_check: bool = False) -> Callable[[Any], Any]:
    return lambda fn: fn


def assume_constant_result(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn


def cudagraph_mark_step_begin() -> None:
    """Mark the start of an iteration for CUDA graphs (none are recorded)."""


@contextlib.contextmanager
def set_stance(stance: str = "default", *, skip_guard_eval_unsafe: bool = False, force_backend: Any = None) \
        -> Iterator[None]:
    """How compiled functions behave in the block ("force_eager", "eager_on_recompile", ...): all run eagerly."""
    yield


def keep_tensor_guards_unsafe(guard_entries: Any, keep_parameters: bool = False) -> Any:
    return guard_entries


def skip_guard_on_inbuilt_nn_modules_unsafe(guard_entries: Any) -> Any:
    return guard_entries
