"""Adamax (mirrors ``torch/optim/adamax.py``)."""
from __future__ import annotations

from ember._generated import aten

from ember.optim.optimizer import (_zero_state, _check_betas, _check_lr, _check_nonnegative, _ElementwiseOptimizer,
                                   _to_float)

__all__ = ["Adamax"]


class Adamax(_ElementwiseOptimizer):
    """Adamax (Kingma & Ba): Adam with the infinity norm, ``exp_inf = max(beta2 * exp_inf, |g| + eps)``."""

    _op = aten._fused_adamax_

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_nonnegative(eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group, state):
        _zero_state(p, state, "exp_avg", "exp_inf")

    def _lists(self, group):
        return ("exp_avg", "exp_inf", "step")

    def _hyper(self, group):
        beta1, beta2 = group["betas"]
        return dict(lr=_to_float(group["lr"]), beta1=beta1, beta2=beta2, eps=group["eps"],
                    weight_decay=group["weight_decay"], maximize=group["maximize"])
