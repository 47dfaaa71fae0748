"""Adadelta (mirrors ``torch/optim/adadelta.py``)."""
from __future__ import annotations

from ember._generated import aten

from ember.optim.optimizer import _zero_state, _check_lr, _check_nonnegative, _ElementwiseOptimizer, _to_float

__all__ = ["Adadelta"]


class Adadelta(_ElementwiseOptimizer):
    """Adadelta (Zeiler): the step is ``sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g``."""

    _op = aten._fused_adadelta_

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group, state):
        _zero_state(p, state, "square_avg", "acc_delta")

    def _lists(self, group):
        return ("square_avg", "acc_delta", "step")

    def _hyper(self, group):
        return dict(lr=_to_float(group["lr"]), rho=group["rho"], eps=group["eps"], weight_decay=group["weight_decay"],
                    maximize=group["maximize"])
