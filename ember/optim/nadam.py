"""NAdam (mirrors ``torch/optim/nadam.py``)."""
from __future__ import annotations

import ember
from ember.optim._elementwise import adam_moments_, addcdiv_
from ember.optim.optimizer import (_check_betas, _check_lr, _check_nonnegative, _ElementwiseOptimizer,
                                   _scalar_dtype, _to_float)

__all__ = ["NAdam"]


class NAdam(_ElementwiseOptimizer):
    """Adam with Nesterov momentum (Dozat) and the momentum-decay schedule
    ``mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))``."""

    _scalar_keys = ("step", "mu_product")

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

    def _tensor_keys(self, group):
        return ("exp_avg", "exp_avg_sq")

    def _init_state(self, p, group, state):
        state["step"] = ember.tensor(0.0, dtype=_scalar_dtype())
        state["mu_product"] = ember.ones((), dtype=_scalar_dtype())
        state["exp_avg"] = ember.zeros_like(p, memory_format=ember.preserve_format)
        state["exp_avg_sq"] = ember.zeros_like(p, memory_format=ember.preserve_format)

    @staticmethod
    def _scalars(group, step, S):
        beta1, beta2 = group["betas"]
        lr, momentum_decay = _to_float(group["lr"]), group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product = S["mu_product"]
        mu_product *= mu                       # in the state's dtype, as PyTorch's 0-d tensor op
        mu_product = float(mu_product.reshape(-1)[0])
        mu_product_next = mu_product * mu_next
        return {"lr": lr, "beta1": beta1, "beta2": beta2, "eps": group["eps"], "weight_decay": group["weight_decay"],
                "decoupled": group["decoupled_weight_decay"], "bias_correction2": 1 - beta2 ** step,
                "grad_coef": -lr * (1.0 - mu) / (1.0 - mu_product),
                "avg_coef": (-lr * mu_next) / (1.0 - mu_product_next)}

    @staticmethod
    def _update(xp, p, g, T, c, tmp):
        t, denom = tmp(0), tmp(1)
        exp_avg, exp_avg_sq = T["exp_avg"], T["exp_avg_sq"]
        adam_moments_(xp, p, g, exp_avg, exp_avg_sq, c, t)
        xp.divide(exp_avg_sq, c["bias_correction2"], out=denom)
        xp.sqrt(denom, out=denom)
        denom += c["eps"]
        addcdiv_(xp, p, g, denom, c["grad_coef"], t)
        addcdiv_(xp, p, exp_avg, denom, c["avg_coef"], t)
