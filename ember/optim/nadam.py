"""NAdam (mirrors ``torch/optim/nadam.py``)."""
from __future__ import annotations

import ember
from ember._generated import aten
from ember.optim.optimizer import (_check_betas, _check_lr, _check_nonnegative, _ElementwiseOptimizer,
                                   _scalar_dtype, _to_float)

__all__ = ["NAdam"]


class NAdam(_ElementwiseOptimizer):
    """Adam with Nesterov momentum (Dozat) and the momentum-decay schedule
    ``mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))``."""

    _op = aten._fused_nadam_

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_lr(lr)
        _check_nonnegative(eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group, state):
        state["step"] = ember.tensor(0.0, dtype=_scalar_dtype())
        state["mu_product"] = ember.ones((), dtype=_scalar_dtype())
        state["exp_avg"] = ember.zeros_like(p, memory_format=ember.preserve_format)
        state["exp_avg_sq"] = ember.zeros_like(p, memory_format=ember.preserve_format)

    def _lists(self, group):
        return ("exp_avg", "exp_avg_sq", "mu_product", "step")

    def _hyper(self, group):
        beta1, beta2 = group["betas"]
        return dict(lr=_to_float(group["lr"]), beta1=beta1, beta2=beta2, eps=group["eps"],
                    weight_decay=group["weight_decay"], momentum_decay=group["momentum_decay"],
                    decoupled_weight_decay=group["decoupled_weight_decay"], maximize=group["maximize"])
