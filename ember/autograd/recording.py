"""Recording ops in the graph (mirrors ``torch/csrc/autograd/VariableTypeUtils.h`` and
``functions/utils.h``): which edges a new node gets, how outputs get their history, and PyTorch's
in-place checks.  The generated autograd kernels (ember/_generated/autograd.py) call these."""
from __future__ import annotations

from typing import Any

from ember.autograd import anomaly_mode
from ember.autograd.graph import AccumulateGrad, Edge
from ember.c10.dispatch_key import AUTOGRAD_SHIFT, BACKEND_MASK
from ember.c10.grad_mode import state as _grad_state


def grad_accumulator(t: Any) -> Any:
    """The ``AccumulateGrad`` of a leaf that requires grad (one per leaf, created on first use)."""
    acc = t.__dict__.get("_acc")
    if acc is None:
        acc = t.__dict__["_acc"] = AccumulateGrad(t)
    return acc


# Note [View history]
# A view and its base share a version counter. When the base (or another view of it) is changed in place, the
# base's history becomes a CopySlices node, and a view made before no longer reads from it: as PyTorch's
# ``VariableHooks::grad_fn`` does, a recorded view remembers the version its history was made at
# (``_attr_version``) and, used at a later version, gets a fresh history: an ``AsStridedBackward0`` of the
# base's current one. (A view made without recording has no ``_attr_version`` and keeps no history.)
def view_history(t: Any) -> Any:
    """``t``'s ``grad_fn``, regenerated first if ``t`` is a recorded view whose base changed since."""
    base = t._base
    if base is not None:
        d = t.__dict__
        v = d.get("_attr_version")
        if v is not None and v != t._vc.version and base._rg:
            from ember.autograd.graph import AsStridedBackward0
            fn = AsStridedBackward0(base, t)
            fn._next = (gradient_edge(base),)
            set_history(fn, (t,))
            d["_attr_version"] = t._vc.version
    return t._grad_fn


def gradient_edge(t: Any) -> Any:
    """Where the gradient of ``t`` goes: its ``grad_fn`` output, or its accumulator, or nowhere."""
    fn = t._grad_fn if t._base is None else view_history(t)
    if fn is not None:
        return Edge(fn, t._output_nr)
    if t._rg:
        return Edge(grad_accumulator(t), 0)
    return None


def collect_next_edges(*tensors: Any) -> tuple[Any, ...]:
    return tuple([None if t is None else gradient_edge(t) for t in tensors])   # (a list is built faster)


def set_history(node: Any, outputs: Any, differentiable: Any = None) -> None:
    """Make ``node`` the ``grad_fn`` of each differentiable output (``set_history``)."""
    node._num_outputs = len(outputs)
    for i, out in enumerate(outputs):
        if out is None or (differentiable is not None and not differentiable[i]):
            continue
        if not (out.dtype.is_floating_point or out.dtype.is_complex):
            continue
        d = out.__dict__
        d["_grad_fn"] = node
        d["_output_nr"] = i
        d["_rg"] = True
        out._ks |= (out._ks & BACKEND_MASK) << AUTOGRAD_SHIFT   # requiring_grad (Note [The Autograd key of a ...])
    if anomaly_mode.enabled:
        anomaly_mode.record(node)


def rebase_history(t: Any, node: Any) -> None:
    """After an in-place op recorded as ``node`` on ``t``: ``t``'s new history is ``node``; when ``t`` is a
    view, the base's history becomes ``CopySlices(node)`` and the view reads from it."""
    base = t.__dict__.get("_base")
    if base is None:
        set_history(node, (t,))
        return
    from ember.autograd.graph import AsStridedBackward0, CopySlices
    cs = CopySlices(base, t, node)
    cs._next = (gradient_edge(base),) + tuple(node._next[1:])
    set_history(cs, (base,))
    view_fn = AsStridedBackward0(base, t)
    view_fn._next = (Edge(cs, 0),)
    set_history(view_fn, (t,))
    t.__dict__["_attr_version"] = t._vc.version


def check_inplace(t: Any) -> None:
    """PyTorch's ``check_inplace``: a leaf that requires grad (or a view of one) can't be modified."""
    if not _grad_state.enabled:
        return
    base = t.__dict__.get("_base")
    if base is not None and base._rg and base._grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if t._rg and t._grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def check_no_requires_grad(t: Any, name: str, fn: str) -> None:
    """PyTorch's ``check_no_requires_grad``: a tensor argument that has no derivative formula (and is not declared
    ``non_differentiable``) must not require grad while grad mode is on."""
    if t is None:
        return
    for x in (t if isinstance(t, list) else (t,)):
        if x is not None and x._rg:
            raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument '{name}'. This "
                               "input cannot have requires_grad True.")


def input_meta(*tensors: Any) -> tuple[Any, ...]:
    return tuple([None if t is None else (t._data.shape, t.dtype) for t in tensors])
