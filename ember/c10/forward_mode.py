"""Forward-mode AD's levels (the state of ``torch/csrc/autograd/forward_grad.h``'s ``ForwardADLevel``): which
dual levels exist and which of them ops see. It lives in c10, beside the grad mode, because the op library reads it
too: a composite that takes a shortcut when nothing differentiates it (``einsum`` in one array-library call, an
eigendecomposition without its vectors) must not take it for a dual tensor. The tangents themselves and the
driver of the Autograd kernels are ``ember/autograd/forward_grad.py``'s (Note [Dual tensors] there)."""
from __future__ import annotations

from typing import Any

from ember.c10.grad_mode import state as _grad_state


class _State:
    """Which levels exist and which of them ops see."""

    __slots__ = ("on", "levels", "visible", "enabled", "tensors")

    def __init__(self) -> None:
        self.on = False              # enabled and some level visible: what every Autograd kernel reads first
        self.levels: list[int] = []  # entered and not exited, oldest first; a level's number is its depth
        self.visible: set[int] = set()
        self.enabled = True          # ``_set_fwd_grad_enabled``
        self.tensors: dict[int, list[Any]] = {}  # level -> weak references to the tensors holding a tangent there

    def refresh(self) -> None:
        self.on = self.enabled and bool(self.visible)


state = _State()


def _visible_level(t: Any) -> int:
    best = -1
    d = t.__dict__
    g = d.get("_fwg")
    if g is not None:
        for lv, tg in g.items():
            if tg is not None and lv > best and lv in state.visible:
                best = lv
    base = d.get("_base")
    if base is not None:
        shared = base.__dict__.get("_fw_shared")
        if shared:
            for lv in shared:
                if lv > best and lv in state.visible and (g is None or lv not in g) and \
                        base.__dict__["_fwg"].get(lv) is not None:
                    best = lv
    return best


def level_of(*args: Any) -> int:
    """The highest visible level at which one of ``args`` (tensors, None, lists of them) has a tangent; -1 if none."""
    best = -1
    for a in args:
        if a is None:
            continue
        if isinstance(a, (list, tuple)):
            lv = level_of(*a)
        elif "_fwg" in a.__dict__ or a.__dict__.get("_base") is not None:
            lv = _visible_level(a)
        else:
            continue
        if lv > best:
            best = lv
    return best


def dual(*args: Any) -> bool:
    """Whether one of ``args`` is a dual tensor at a visible level (the generated kernels' first test)."""
    return level_of(*args) >= 0


def may_differentiate(*tensors: Any) -> bool:
    """PyTorch's ``_may_require_fw_or_bw_grad``: whether a derivative may be asked of an op on ``tensors`` -- one
    requires grad while grad mode is on, or one is dual. A composite that takes a shortcut when nothing
    differentiates it (one array-library call, a decomposition without the factors a formula needs) asks this."""
    return _grad_state.enabled and any(t._rg for t in tensors) or state.on and dual(*tensors)
