"""Symbolic functions registered by users and libraries (``torch.onnx.register_custom_op_symbolic``), and the graph
context they build ONNX nodes with.

A symbolic function ``fn(g, *args)`` translates one operator: ``g.op("Name", *inputs, outputs=1, **attributes)``
adds an ONNX node (attribute names end in their type: ``alpha_f``, ``axis_i``, ``mode_s``, ``value_t``,
``pads_is``, ...) and returns its output(s). Tensor arguments arrive as ONNX value names, the others as Python values,
as ``symbolic_helper.parse_args`` would have parsed them. Registrations are per opset: an export at opset N uses the
registration with the highest version not above N. They take precedence over ember's own translations."""
from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

_REGISTRY: dict[str, dict[int, Callable[..., Any]]] = {}


def register_custom_op_symbolic(symbolic_name: str, symbolic_fn: Callable[..., Any], opset_version: int) -> None:
    """Export operator ``symbolic_name`` ("namespace::op") with ``symbolic_fn`` from opset ``opset_version`` on."""
    from ember.onnx.errors import OnnxExporterError
    if symbolic_name.startswith("::"):
        symbolic_name = f"aten{symbolic_name}"
    if not re.match(r"^[a-zA-Z0-9-_]+::[a-zA-Z-_]+[a-zA-Z0-9-_]*$", symbolic_name):
        raise OnnxExporterError(f"Failed to register operator {symbolic_name}. The symbolic name must match the "
                                "format domain::name, and should start with a letter and contain only alphanumerical "
                                "characters")
    _REGISTRY.setdefault(symbolic_name, {})[int(opset_version)] = symbolic_fn


def unregister_custom_op_symbolic(symbolic_name: str, opset_version: int) -> None:
    if symbolic_name.startswith("::"):
        symbolic_name = f"aten{symbolic_name}"
    _REGISTRY.get(symbolic_name, {}).pop(int(opset_version), None)


def custom_translation(op: str, opset: int) -> Callable[..., Any] | None:
    """A translation ``(ctx, node, *args, **kwargs)`` running the symbolic function registered for ``op`` ("ns::name",
    no overload) at the highest opset not above ``opset``, or None."""
    versions = [v for v in _REGISTRY.get(op, {}) if v <= opset]
    if not versions:
        return None
    fn = _REGISTRY[op][max(versions)]

    def translate(ctx: Any, node: Any, *args: Any, **kwargs: Any) -> Any:
        out = fn(GraphContext(ctx), *args, **kwargs)
        return list(out) if isinstance(out, tuple) else out
    return translate


class GraphContext:
    """The ``g`` a symbolic function receives: ``g.op`` adds nodes to the graph being exported; ``g.opset``."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx
        self.opset = ctx.opset

    def op(self, opname: str, *raw_args: Any, outputs: int = 1, **kwargs: Any) -> Any:
        if opname == "Constant" and "value_t" in kwargs:
            return self._ctx.const(_array(kwargs["value_t"]), hint="const")
        inputs = [a if isinstance(a, str) else (self._ctx.const(_array(a), hint="const") if a is not None else "")
                  for a in raw_args]
        attrs = {}
        for key, value in kwargs.items():
            name, _, kind = key.rpartition("_")
            if not name or kind not in ("f", "i", "s", "t", "fs", "is", "ss", "ts"):
                raise ValueError(f"Invalid attribute specifier '{key}' names must be suffixed with type, e.g. "
                                 f"'dim_i' or 'dims_i'")
            if kind == "t":
                from onnx import numpy_helper
                value = numpy_helper.from_array(_array(value))
            attrs[name] = value
        out = self._ctx.add(opname.split("::", 1)[-1], inputs, outputs=outputs, name_hint=opname.split("::")[-1]
                            .lower(), **attrs)
        return tuple(out) if outputs > 1 else out


def _array(value: Any) -> Any:
    import ember
    if isinstance(value, ember.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)
