"""The Autograd fallback (mirrors ``torch/csrc/autograd/autograd_not_implemented_fallback.cpp``). An ``out=``
overload refuses inputs that require grad (one boxed kernel for all of them, instead of one generated each); an
op without a derivative formula runs below autograd; if grad is enabled and one of its tensor inputs requires
grad, its floating-point outputs get a ``NotImplemented`` node, so backward through them raises
``derivative for aten::<op> is not implemented`` (PyTorch's words) instead of silently dropping the gradient."""
from __future__ import annotations

from typing import Any

from ember.aten.dispatcher import BoxedFallback, keys_below, register_fallback
from ember.autograd.forward_grad import not_implemented
from ember.autograd.grad_mode import state
from ember.c10 import forward_mode as _fw
from ember.autograd.graph import NotImplementedBackward
from ember.autograd.recording import collect_next_edges, set_history
from ember.c10.dispatch_key import AUTOGRAD_KEYS, DispatchKey

_BELOW = keys_below(DispatchKey.ADInplaceOrView)


def _tensors(args: Any) -> Any:
    for a in args:
        if hasattr(a, "_rg"):
            yield a
        elif isinstance(a, list):
            for t in a:
                if hasattr(t, "_rg"):
                    yield t


def _make(op: Any) -> Any:
    if op.out_arity:
        return _make_out(op)
    name = op.name + (f".{op.overload_name}" if op.overload_name else "")
    qualified = op.qualified_name

    def autograd_not_implemented(ks: Any, *args: Any) -> Any:
        if _fw.state.on and _fw.dual(*_tensors(args)):
            out = op.redispatch(ks & _BELOW, *args)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            if any(hasattr(o, "_rg") and (o.dtype.is_floating_point or o.dtype.is_complex) for o in outs):
                raise not_implemented(name)   # (PyTorch's words; an op without float outputs has no tangent)
            return out
        out = op.redispatch(ks & _BELOW, *args)
        if state.enabled:
            req = [t for t in _tensors(args) if t._rg]
            if req:
                outs = out if isinstance(out, (tuple, list)) else (out,)
                outs = [o for o in outs if hasattr(o, "_rg")]
                if any(o.dtype.is_floating_point or o.dtype.is_complex for o in outs):
                    node = NotImplementedBackward(qualified)
                    node._next = collect_next_edges(*req)
                    set_history(node, outs)
        return out

    autograd_not_implemented.__qualname__ = f"autograd_not_implemented[{name}]"
    autograd_not_implemented.only_for_grad = True  # type: ignore[attr-defined]  # Note [Kernel resolution]
    return autograd_not_implemented


def _make_out(op: Any) -> Any:
    """``out=`` overloads: PyTorch's autograd refuses them when an input requires grad (the result written into
    ``out`` would have no history); otherwise they run below autograd."""
    n_out = op.out_arity
    message = (f"{op.name}(): functions with out=... arguments don't support automatic differentiation, but one "
               "of the arguments requires grad.")

    def autograd_out(ks: Any, *args: Any) -> Any:
        if state.enabled and any(t._rg for t in _tensors(args[:-n_out])):
            raise RuntimeError(message)
        return op.redispatch(ks & _BELOW, *args)

    autograd_out.__qualname__ = f"autograd_out[{op.name}.{op.overload_name}]"
    autograd_out.only_for_grad = True  # type: ignore[attr-defined]
    return autograd_out


def install() -> None:
    fb = BoxedFallback(_make)
    for key in AUTOGRAD_KEYS:
        register_fallback(key, fb)
