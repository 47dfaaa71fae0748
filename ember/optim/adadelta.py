"""Adadelta (mirrors ``torch/optim/adadelta.py``)."""
from __future__ import annotations

from ember.optim._elementwise import add_scaled_, ema_sq_, weight_decay_
from ember.optim.optimizer import _zero_state, _check_lr, _check_nonnegative, _ElementwiseOptimizer, _to_float

__all__ = ["Adadelta"]


class Adadelta(_ElementwiseOptimizer):
    """Adadelta (Zeiler): the step is ``sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g``."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _tensor_keys(self, group):
        return ("square_avg", "acc_delta")

    def _init_state(self, p, group, state):
        _zero_state(p, state, "square_avg", "acc_delta")

    @staticmethod
    def _scalars(group, step, S):
        return {"lr": _to_float(group["lr"]), "rho": group["rho"], "eps": group["eps"],
                "weight_decay": group["weight_decay"]}

    @staticmethod
    def _update(xp, p, g, T, c, tmp):
        t, std, delta = tmp(0), tmp(1), tmp(2)
        weight_decay_(xp, g, p, c["weight_decay"], t)
        square_avg, acc_delta = T["square_avg"], T["acc_delta"]
        rho, eps = c["rho"], c["eps"]
        ema_sq_(xp, square_avg, g, rho, t)
        xp.add(square_avg, eps, out=std)
        xp.sqrt(std, out=std)
        xp.add(acc_delta, eps, out=delta)
        xp.sqrt(delta, out=delta)
        delta /= std
        delta *= g
        ema_sq_(xp, acc_delta, delta, rho, t)
        add_scaled_(xp, p, delta, -c["lr"], t)
