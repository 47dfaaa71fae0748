"""Forward-mode AD inside (mirrors ``torch/csrc/autograd/forward_grad.{h,cpp}`` and the forward-grad half of the
generated ``VariableType`` kernels): dual levels, the tangents tensors carry per level, and the driver every
Autograd kernel calls when one of its inputs is a dual tensor.

Note [Dual tensors]
A dual tensor is an ordinary tensor with a tangent at a level: ``t.__dict__['_fwg']`` maps level -> tangent (a
tensor of ``t``'s size; ``None`` marks "no tangent here, and do not look at the base": ``unpack_dual``'s primal).
A tensor that gets a tangent also gets its backend's Autograd key (as one that requires grad does), so each op on it
reaches the op's Autograd kernel. The generated kernel's first line asks ``state.on`` (some level is entered and
visible) and whether one of its inputs has a tangent at a visible level; if so it calls ``run`` instead of its body.

``run`` takes the highest such level L, *hides* it, and calls the kernel again: with L hidden the call computes the
primal result (and records the reverse-mode graph, and handles any lower level the inputs carry). With L still
hidden it computes the result's tangent from the inputs' tangents at L: the op's forward formula
(``derivatives.yaml``'s ``result:``, PyTorch's ``auto_element_wise`` / ``auto_linear``, or ``auto_linear`` for a
view op) or, for an op without one, the double-backward trick below. Then L is visible again and the tangent is set
on the result. Because the formulas run with L hidden but every other level visible, a tangent computed at L
carries its own tangent at a lower level: that is what nested ``jvp`` (``jacfwd(jacfwd(f))``) reads. PyTorch's
public ``dual_level`` allows one level; ``ember.func.jvp`` nests them.

Note [Tangents of views]
The tangent of a view is the same view of the base's tangent: a view op on a dual tensor gets it through
``auto_linear``. An in-place op writes its new tangent into the existing one (``copy_``), so the base's tangent and
its views' stay one memory. When an in-place op gives a tensor its first tangent, views made before cannot be
reached: the tensor is marked ``_fw_shared`` at L and such a view, asked for its tangent, takes the matching
``as_strided`` of the base's (PyTorch's lazy forward-grad of views). An in-place op on a view without a tangent
first gives its base a zero tangent (strided as the base), then writes into the view of it.

Note [Forward derivative by double backward]
An op without a forward formula gets its Jacobian-vector product from its backward formula: with ``g`` a zero
cotangent that requires grad, ``u(g) = J^T g`` (one backward, graph kept) is linear in ``g``, and the gradient of
``u`` with respect to ``g`` against the tangents ``t`` is ``J t``. It costs one forward, one backward and one double
backward, and needs the op's backward formula to be differentiable (every formula written in ember ops is).
"""
from __future__ import annotations

import weakref
from typing import Any

from ember._generated import aten
from ember.c10.dispatch_key import CONJ_BIT, NEG_BIT, DispatchKey, requiring_grad
from ember.c10.forward_mode import dual as dual, level_of as level_of, state as state  # (re-exported)
import ember.autograd as _autograd   # (the package is still importing this module: its grad is read at call time)
from ember.autograd.grad_mode import _DecoratorContextManager, enable_grad, state as _gm


def enter_level() -> int:
    level = len(state.levels)
    state.levels.append(level)
    state.visible.add(level)
    state.tensors[level] = []
    state.refresh()
    return level


def exit_level(level: int) -> None:
    """Forget every tangent of ``level`` (the newest level)."""
    if not state.levels or state.levels[-1] != level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    state.levels.pop()
    state.visible.discard(level)
    for ref in state.tensors.pop(level, ()):
        t = ref()
        if t is None:
            continue
        d = t.__dict__
        g = d.get("_fwg")
        if g is not None:
            g.pop(level, None)
            if not g:
                del d["_fwg"]
        s = d.get("_fw_shared")
        if s is not None:
            s.discard(level)
    state.refresh()


class hidden:
    """Ops do not see ``level``'s tangents while this is entered (the level being computed)."""

    __slots__ = ("level", "was")

    def __init__(self, level: int) -> None:
        self.level = level

    def __enter__(self) -> None:
        self.was = self.level in state.visible
        state.visible.discard(self.level)
        state.refresh()

    def __exit__(self, *exc: object) -> None:
        if self.was and self.level in state.levels:
            state.visible.add(self.level)
        state.refresh()


class fwd_grad_enabled(_DecoratorContextManager):
    """``forward_ad._set_fwd_grad_enabled``: whether ops compute tangents at all (set on construction, as PyTorch's;
    restored on exit)."""

    def __init__(self, mode: bool) -> None:
        self.mode = mode
        self.prev = state.enabled
        state.enabled = bool(mode)
        state.refresh()

    def clone(self) -> fwd_grad_enabled:
        return self.__class__(self.mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        state.enabled = self.prev
        state.refresh()


# -- tangents ---------------------------------------------------------------------------------------------------


def tangent_of(t: Any, level: int) -> Any:
    """``t``'s tangent at ``level`` or None (Note [Tangents of views] for a view whose base got one in place)."""
    d = t.__dict__
    g = d.get("_fwg")
    if g is not None and level in g:
        return g[level]
    base = d.get("_base")
    if base is not None:
        bd = base.__dict__
        shared = bd.get("_fw_shared")
        if shared and level in shared:
            bt = bd["_fwg"].get(level)
            if bt is not None:
                with hidden(level):
                    vt = bt.as_strided(tuple(t.shape), t.stride(),
                                       bt.storage_offset() + t.storage_offset() - base.storage_offset())
                set_tangent(t, vt, level)
                return vt
    return None


def set_tangent(t: Any, tangent: Any, level: int) -> None:
    d = t.__dict__
    g = d.get("_fwg")
    if g is None:
        g = d["_fwg"] = {}
    if level not in g:
        state.tensors[level].append(weakref.ref(t))
    g[level] = tangent
    if tangent is not None:
        t._ks = requiring_grad(t._ks)


# -- the driver -------------------------------------------------------------------------------------------------


class Spec:
    """What ``run`` needs to know of one operator (written by tools/codegen/gen_autograd.py)."""

    __slots__ = ("name", "diff", "lists", "jvp", "inplace", "functional", "multi", "out_diff", "fills", "view")

    def __init__(self, name: str, diff: tuple[int, ...], lists: tuple[int, ...], jvp: Any, inplace: Any,
                 functional: Any, multi: bool, out_diff: Any, fills: bool, view: bool) -> None:
        self.name = name              # the operator, for messages
        self.diff = diff              # positions of the differentiable tensor arguments
        self.lists = lists            # ... of which these are Tensor[]
        self.jvp = jvp                # (*args, *tangents, result) -> tangent(s); None: double backward
        self.inplace = inplace
        self.functional = functional  # in-place: the functional kernel (double backward runs it)
        self.multi = multi            # returns a tuple / list
        self.out_diff = out_diff      # output_differentiability, or None
        self.fills = fills            # the formula wants a zero tangent for an input without one
        self.view = view              # a view op: its tangent is a view of its input's


def run(fields: tuple[Any, ...], kernel: Any, ks: int, *args: Any) -> Any:
    """The Autograd kernel ``kernel`` of an op whose inputs are dual at a visible level (Note [Dual tensors]);
    ``fields``: the op's ``Spec``."""
    spec = Spec(*fields)
    level = level_of(*[args[i] for i in spec.diff])
    with hidden(level):
        tangents: list[Any] = []
        for i in spec.diff:
            a = args[i]
            if i in spec.lists:
                tangents.append([None if x is None else tangent_of(x, level) for x in a])
            else:
                tangents.append(None if a is None else tangent_of(a, level))
        primals = args
        if spec.inplace == "view":   # squeeze_ and the like: the tangent takes the same in-place view
            result = kernel(ks, *args)
            set_tangent(args[0], spec.jvp(*args, *tangents, result), level)
            return result
        if spec.inplace:
            self = args[0]
            own = tangent_of(self, level)
            primals = (aten.clone(self),) + args[1:]   # the value the formula differentiates at
        result = kernel(ks, *args)
        if spec.jvp is not None:
            if spec.fills:
                tangents = [_fill(t, args[i], i in spec.lists) for t, i in zip(tangents, spec.diff)]
            out_t = spec.jvp(*primals, *tangents, result)
        else:
            out_t = _double_backward(spec, ks, primals, tangents, result)
        if not spec.view:
            out_t = _unaliased(out_t, tangents, spec.multi)
        if spec.inplace:
            _write_inplace(args[0], own, out_t, level)
            return result
    if spec.multi:
        od = spec.out_diff
        for k, (r, tg) in enumerate(zip(result, out_t)):
            if tg is not None and (od is None or od[k]) and _differentiable(r):
                set_tangent(r, _fit(tg, r), level)
    elif out_t is not None and _differentiable(result):
        set_tangent(result, _fit(out_t, result), level)
    return result


def _unaliased(out_t: Any, tangents: list[Any], multi: bool) -> Any:
    """Tangents of a non-view op's outputs that share no memory with its inputs' (a formula like ``self_t``, or a
    backward that passes its gradient on, gives the input's tangent itself; an in-place op on the output would
    then change the input's tangent too)."""
    counters = {id(t._vc) for t in _flat(tangents) if t is not None and hasattr(t, "_vc")}
    if not counters:
        return out_t

    def own(t: Any) -> Any:
        return aten.clone(t) if t is not None and hasattr(t, "_vc") and id(t._vc) in counters else t
    if multi:
        return [own(t) for t in out_t]
    return own(out_t)


_MATH_BITS = CONJ_BIT | NEG_BIT
_PYTHON_BIT = 1 << DispatchKey.Python


def _fill(t: Any, p: Any, is_list: bool) -> Any:
    if is_list:
        return [(aten.zeros_like(x) if tt is None else tt) for tt, x in zip(t, p)]
    if t is None and p is not None:
        return aten.zeros_like(p)
    return t


def _differentiable(r: Any) -> bool:
    return r is not None and hasattr(r, "_ks") and (r.dtype.is_floating_point or r.dtype.is_complex)


def _fit(tg: Any, r: Any) -> Any:
    """A formula's tangent as the result's size (a formula over broadcast operands may give a smaller one); a real
    result's tangent is real (PyTorch's ``handle_r_to_c``: the real part of a formula's complex value)."""
    if tg.dtype.is_complex and not r.dtype.is_complex:
        tg = tg.real
    if tg._ks & _MATH_BITS:   # (a lazy conjugate or negation: the values, so that any view of the tangent works)
        tg = aten.resolve_neg(aten.resolve_conj(tg))
    if tuple(tg.shape) != tuple(r.shape):
        try:
            tg = tg.expand(tuple(r.shape))
        except RuntimeError:
            raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the "
                               f"original Tensor, this is not supported. Tensor is of size {list(r.shape)} while "
                               f"the given forward gradient is of size {list(tg.shape)}.") from None
    if type(tg) is type(r) and tg.stride() != r.stride() and r.numel() > 1:
        # as PyTorch's set_fw_grad: a tangent has its primal's layout, so that a view op's formula (the same view
        # of the tangent) applies to it
        fresh = aten.empty_like(r, dtype=tg.dtype)
        fresh.copy_(tg)
        return fresh
    return tg


def _write_inplace(self: Any, own: Any, new: Any, level: int) -> None:
    """``self``'s tangent after an in-place op (Note [Tangents of views])."""
    if new is None:
        return
    if own is not None:
        own.copy_(new)
        return
    base = self.__dict__.get("_base")
    if base is not None:
        bt = tangent_of(base, level)
        if bt is None:
            bt = aten.zeros_like(base)
            if bt.stride() != base.stride():
                bt = aten.empty_strided(tuple(base.shape), base.stride(), dtype=bt.dtype,
                                        device=base.device).zero_()
            if new._ks & _PYTHON_BIT:   # (a batched tangent, inside jacfwd's vmap: zeros batched as it is)
                bt = bt + new.new_zeros(())
            _share(base, bt, level)
        vt = tangent_of(self, level)
        if vt is None:   # (self was made before: its view of the base's tangent)
            vt = bt.as_strided(tuple(self.shape), self.stride(),
                               bt.storage_offset() + self.storage_offset() - base.storage_offset())
            set_tangent(self, vt, level)
        vt.copy_(new)
        return
    _share(self, _fit(new, self), level)   # (_fit gives it self's layout; _unaliased, memory of its own)


def _share(t: Any, tangent: Any, level: int) -> None:
    set_tangent(t, tangent, level)
    s = t.__dict__.get("_fw_shared")
    if s is None:
        s = t.__dict__["_fw_shared"] = set()
    s.add(level)


def _double_backward(spec: Spec, ks: int, primals: tuple[Any, ...], tangents: list[Any], result: Any) -> Any:
    """Note [Forward derivative by double backward]."""
    args = list(primals)
    xs: list[Any] = []
    ts: list[Any] = []

    def alias(p: Any, t: Any) -> Any:
        if t is None or p is None:
            return p
        x = aten.alias(p) if p._rg else detached(p)
        if not x._rg:
            x.requires_grad_(True)
        xs.append(x)
        ts.append(t)
        return x

    record = _gm.enabled and (any(p is not None and getattr(p, "_rg", False) for p in _flat(primals)) or
                              any(t is not None and t._rg for t in _flat(tangents)))
    with enable_grad():
        for i, t in zip(spec.diff, tangents):
            if i in spec.lists:
                args[i] = [alias(p, tt) for p, tt in zip(args[i], t)]
            else:
                args[i] = alias(args[i], t)
        kernel = spec.functional
        if kernel is None:
            raise not_implemented(spec.name)
        out = kernel(ks | _autograd_bits(xs), *args)
        outs = list(out) if spec.multi else [out]
        keep = [k for k, o in enumerate(outs) if _differentiable(o) and o._rg and
                (spec.out_diff is None or spec.out_diff[k])]
        gs = [aten.zeros_like(outs[k]).requires_grad_(True) for k in keep]
        if not keep:
            res: list[Any] = []
        else:
            try:
                vjps = _autograd.grad([outs[k] for k in keep], xs, gs, create_graph=True, allow_unused=True)
                pairs = [(v, t) for v, t in zip(vjps, ts) if v is not None and v._rg]
                if pairs:
                    res = list(_autograd.grad([v for v, _ in pairs], gs, [t for _, t in pairs], create_graph=record,
                                     allow_unused=True))
                else:
                    res = [None] * len(keep)
            except (RuntimeError, NotImplementedError) as exc:
                # a backward that is not differentiable ("derivative for ... is not implemented"): no forward
                # derivative either, said in PyTorch's words, the backward's refusal kept as the cause
                if "not implemented" not in str(exc):
                    raise
                raise not_implemented(spec.name) from exc
    tang: list[Any] = [None] * len(outs)
    for k, r in zip(keep, res):
        tang[k] = r if r is not None else aten.zeros_like(outs[k])
    if not record:
        tang = [None if x is None else x.detach() for x in tang]
    return tang if spec.multi else tang[0]


def _autograd_bits(xs: list[Any]) -> int:
    ks = 0
    for x in xs:
        ks |= x._ks
    return ks


def detached(p: Any) -> Any:
    """``p`` outside the reverse-mode graph, keeping its tangents at the levels ops see (nested ``jvp``,
    forward-over-reverse)."""
    x = p.detach()
    if state.on:
        for lv in state.visible:
            tg = tangent_of(p, lv)
            if tg is not None:
                set_tangent(x, tg, lv)
    return x


def _flat(xs: Any) -> Any:
    for x in xs:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def not_implemented(name: str) -> RuntimeError:
    return RuntimeError(f"Trying to use forward AD with {name} that does not support it because it has not been "
                        "implemented yet.")
