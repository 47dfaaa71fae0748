"""``ember.jit`` (``torch/jit``): TorchScript is not part of ember (not planned: ember is Python throughout). What
libraries ask of it on an eager run works as on PyTorch outside scripting: nothing is being scripted or traced,
``ignore`` / ``unused`` / ``export`` return what they decorate, ``Final`` is ``typing.Final``. ``script``,
``trace`` and ``load`` raise an error that says so."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Final, Iterator  # noqa: F401 - Final is torch.jit.Final

__all__ = ["is_scripting", "is_tracing", "ignore", "unused", "export", "script", "trace", "trace_module", "load",
           "save", "Final", "annotate", "interface", "optimized_execution", "fork", "wait", "ScriptModule",
           "ScriptFunction", "Error", "freeze", "optimize_for_inference", "strict_fusion", "isinstance",
           "script_if_tracing", "TracerWarning"]

_NO_TORCHSCRIPT = ("TorchScript is not available in ember: {what} needs the TorchScript compiler. Run the model "
                   "eagerly (ember.compile gives graph capture from Python instead).")


class Error(RuntimeError):
    """``torch.jit.Error``."""


class ScriptModule:
    """Stands for ``torch.jit.ScriptModule`` in ``isinstance`` checks: no ember object is one."""


class ScriptFunction:
    """Stands for ``torch.jit.ScriptFunction`` in ``isinstance`` checks."""


class TracerWarning(Warning):
    """``torch.jit.TracerWarning``: what the tracer warns with (libraries filter it; ember never traces)."""

    @staticmethod
    def ignore_lib_warnings() -> None:
        import warnings
        warnings.filterwarnings("ignore", category=TracerWarning, module="torch.(?!jit)")


def script_if_tracing(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Compile ``fn`` only when called under ``torch.jit.trace``: ember never traces, so ``fn`` itself."""
    return fn


_script_if_tracing = script_if_tracing


def _overload(func: Callable[..., Any]) -> Callable[..., Any]:
    """A TorchScript overload declaration; eagerly the last definition of the name is the one that runs."""
    return func


_overload_method = _overload


def is_scripting() -> bool:
    """True inside TorchScript-compiled code: never in ember."""
    return False


def is_tracing() -> bool:
    """True while ``torch.jit.trace`` records: never in ember."""
    return False


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """Leave a function out of scripting: the function itself (also as ``@ignore(drop=True)``)."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn


def export(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn


def interface(obj: Any) -> Any:
    return obj


def annotate(the_type: Any, the_value: Any) -> Any:
    return the_value


def isinstance(obj: Any, target_type: Any) -> bool:  # noqa: A001 - torch.jit.isinstance
    import builtins
    try:
        return builtins.isinstance(obj, target_type)
    except TypeError:
        return False


@contextlib.contextmanager
def optimized_execution(should_optimize: bool) -> Iterator[None]:
    yield


@contextlib.contextmanager
def strict_fusion() -> Iterator[None]:
    yield


def fork(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``func`` now and hand back a future-like holding its result (``torch.jit.wait`` unwraps it)."""
    return _Done(func(*args, **kwargs))


class _Done:
    def __init__(self, value: Any) -> None:
        self._value = value

    def wait(self) -> Any:
        return self._value


def wait(future: Any) -> Any:
    return future.wait()


def _refuse(what: str) -> Any:
    raise RuntimeError(_NO_TORCHSCRIPT.format(what=what))


def script(obj: Any, *args: Any, **kwargs: Any) -> Any:
    return _refuse("torch.jit.script")


def trace(func: Any, *args: Any, **kwargs: Any) -> Any:
    return _refuse("torch.jit.trace")


def trace_module(mod: Any, *args: Any, **kwargs: Any) -> Any:
    return _refuse("torch.jit.trace_module")


def load(f: Any, *args: Any, **kwargs: Any) -> Any:
    return _refuse("torch.jit.load (a TorchScript archive)")


def save(m: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
    return _refuse("torch.jit.save")


def freeze(mod: Any, *args: Any, **kwargs: Any) -> Any:
    return _refuse("torch.jit.freeze")


def optimize_for_inference(mod: Any, *args: Any, **kwargs: Any) -> Any:
    return _refuse("torch.jit.optimize_for_inference")
