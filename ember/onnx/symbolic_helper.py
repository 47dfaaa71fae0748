"""``ember.onnx.symbolic_helper``: what symbolic functions written for ``torch.onnx`` import from
``torch.onnx.symbolic_helper``. In ember's exporter the arguments a symbolic function receives are already parsed
(tensors as ONNX value names, the rest as Python values), so ``parse_args`` only converts the Python values to the
kinds its descriptors name."""
from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["parse_args", "_is_value", "_maybe_get_const", "_get_const"]

_CONVERT = {"i": int, "f": float, "b": bool, "s": str, "is": lambda v: [int(x) for x in v],
            "fs": lambda v: [float(x) for x in v]}


def _is_value(x: Any) -> bool:
    """Whether ``x`` is a graph value (a tensor) rather than a Python constant."""
    return isinstance(x, str)


def _maybe_get_const(value: Any, desc: str) -> Any:
    return value if _is_value(value) or value is None or desc in ("v", "none") else _CONVERT[desc](value)


def _get_const(value: Any, desc: str, arg_name: str) -> Any:
    if _is_value(value):
        raise RuntimeError(f"ONNX symbolic expected a constant value of the {arg_name} argument, got a tensor")
    return _maybe_get_const(value, desc)


def parse_args(*arg_descriptors: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: convert a symbolic function's constant arguments to the kinds ``arg_descriptors`` name ("v": a
    value, left as is; "i", "f", "b", "s", "is", "fs"; "none": as is)."""
    def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(g: Any, *args: Any, **kwargs: Any) -> Any:
            parsed = [_maybe_get_const(a, d) for a, d in zip(args, arg_descriptors)] + list(args[len(arg_descriptors):])
            return fn(g, *parsed, **kwargs)
        return wrapper
    return decorator
