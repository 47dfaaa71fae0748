"""``ember.compiler`` (``torch/compiler``): the questions libraries ask about compilation. ember runs eagerly
(``ember.compile`` returns the model itself until issue 18 brings graph capture), so nothing is ever being
compiled, traced for export or in a graph; the decorators return what they decorate."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

__all__ = ["compile", "reset", "allow_in_graph", "substitute_in_graph", "list_backends", "disable",
           "set_stance", "cudagraph_mark_step_begin", "is_compiling", "is_dynamo_compiling", "is_exporting",
           "assume_constant_result", "keep_tensor_guards_unsafe", "skip_guard_on_inbuilt_nn_modules_unsafe"]


def compile(*args: Any, **kwargs: Any) -> Any:  # noqa: A001 - PyTorch's name
    """``torch.compiler.compile``: the same as ``ember.compile``."""
    import ember
    return ember.compile(*args, **kwargs)


def is_compiling() -> bool:
    """True while a compiler traces the code (never in ember yet)."""
    return False


def is_dynamo_compiling() -> bool:
    return False


def is_exporting() -> bool:
    """True while ``torch.export`` traces the code (ember has no exporter yet)."""
    return False


def reset() -> None:
    """Drop every compiled artifact (there are none)."""


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list[str]:
    return []


def disable(fn: Any = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """Exclude ``fn`` from compilation (as a decorator, with or without arguments): ``fn`` unchanged."""
    if fn is None:
        return lambda f: f
    return fn


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
