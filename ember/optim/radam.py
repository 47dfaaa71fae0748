"""RAdam (mirrors ``torch/optim/radam.py``)."""
from __future__ import annotations

from ember._generated import aten

from ember.optim.optimizer import (_zero_state, _check_betas, _check_lr, _check_nonnegative, _ElementwiseOptimizer,
                                   _to_float)

__all__ = ["RAdam"]


class RAdam(_ElementwiseOptimizer):
    """Rectified Adam (Liu et al.): plain momentum SGD until the variance of the adaptive rate is
    tractable (``rho_t > 5``), then Adam scaled by the rectification term."""

    _op = aten._fused_radam_

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_lr(lr)
        _check_nonnegative(eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group, state):
        _zero_state(p, state, "exp_avg", "exp_avg_sq")

    def _lists(self, group):
        return ("exp_avg", "exp_avg_sq", "step")

    def _hyper(self, group):
        beta1, beta2 = group["betas"]
        return dict(lr=_to_float(group["lr"]), beta1=beta1, beta2=beta2, eps=group["eps"],
                    weight_decay=group["weight_decay"], decoupled_weight_decay=group["decoupled_weight_decay"],
                    maximize=group["maximize"])
