"""Adamax (mirrors ``torch/optim/adamax.py``)."""
from __future__ import annotations

from ember.optim._elementwise import addcdiv_, lerp_, weight_decay_
from ember.optim.optimizer import (_zero_state, _check_betas, _check_lr, _check_nonnegative, _ElementwiseOptimizer,
                                   _to_float)

__all__ = ["Adamax"]


class Adamax(_ElementwiseOptimizer):
    """Adamax (Kingma & Ba): Adam with the infinity norm, ``exp_inf = max(beta2 * exp_inf, |g| + eps)``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_nonnegative(eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _tensor_keys(self, group):
        return ("exp_avg", "exp_inf")

    def _init_state(self, p, group, state):
        _zero_state(p, state, "exp_avg", "exp_inf")

    @staticmethod
    def _scalars(group, step, S):
        beta1, beta2 = group["betas"]
        return {"beta1": beta1, "beta2": beta2, "eps": group["eps"], "weight_decay": group["weight_decay"],
                "clr": _to_float(group["lr"]) / (1 - beta1 ** step)}

    @staticmethod
    def _update(xp, p, g, T, c, tmp):
        t = tmp(0)
        weight_decay_(xp, g, p, c["weight_decay"], t)
        exp_avg, exp_inf = T["exp_avg"], T["exp_inf"]
        lerp_(xp, exp_avg, g, 1 - c["beta1"], t)
        exp_inf *= c["beta2"]
        xp.abs(g, out=t)
        t += c["eps"]
        xp.maximum(exp_inf, t, out=exp_inf)
        addcdiv_(xp, p, exp_avg, exp_inf, -c["clr"], t)
