"""Averaged SGD (mirrors ``torch/optim/asgd.py``)."""
from __future__ import annotations

import ember
from ember._generated import aten
from ember.optim.optimizer import _check_lr, _check_nonnegative, _ElementwiseOptimizer, _scalar_dtype, _to_float

__all__ = ["ASGD"]


class ASGD(_ElementwiseOptimizer):
    """Averaged SGD (Polyak & Juditsky): SGD with a decaying rate ``eta`` plus a running average ``ax``
    of the iterates, started after ``t0`` steps."""

    _op = aten._fused_asgd_

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group, state):
        state["step"] = ember.zeros((), dtype=_scalar_dtype())
        state["eta"] = ember.tensor(_to_float(group["lr"]), dtype=_scalar_dtype())
        state["mu"] = ember.ones((), dtype=_scalar_dtype())
        state["ax"] = ember.zeros_like(p, memory_format=ember.preserve_format)

    def _lists(self, group):
        return ("ax", "mu", "eta", "step")

    def _hyper(self, group):
        return dict(lr=_to_float(group["lr"]), lambd=group["lambd"], alpha=group["alpha"], t0=group["t0"],
                    weight_decay=group["weight_decay"], maximize=group["maximize"])
