"""RAdam (mirrors ``torch/optim/radam.py``)."""
from __future__ import annotations

from ember.optim._elementwise import adam_moments_
from ember.optim.optimizer import (_zero_state, _check_betas, _check_lr, _check_nonnegative, _ElementwiseOptimizer,
                                   _to_float)

__all__ = ["RAdam"]


class RAdam(_ElementwiseOptimizer):
    """Rectified Adam (Liu et al.): plain momentum SGD until the variance of the adaptive rate is
    tractable (``rho_t > 5``), then Adam scaled by the rectification term."""

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

    def _tensor_keys(self, group):
        return ("exp_avg", "exp_avg_sq")

    def _init_state(self, p, group, state):
        _zero_state(p, state, "exp_avg", "exp_avg_sq")

    @staticmethod
    def _scalars(group, step, S):
        beta1, beta2 = group["betas"]
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        rect = None
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        return {"lr": _to_float(group["lr"]), "beta1": beta1, "beta2": beta2, "eps": group["eps"],
                "weight_decay": group["weight_decay"], "decoupled": group["decoupled_weight_decay"],
                "bias_correction1": bias_correction1, "bias_correction2_sqrt": bias_correction2 ** 0.5,
                "rect": rect}

    @staticmethod
    def _update(xp, p, g, T, c, tmp):
        t, u = tmp(0), tmp(1)
        exp_avg, exp_avg_sq = T["exp_avg"], T["exp_avg_sq"]
        adam_moments_(xp, p, g, exp_avg, exp_avg_sq, c, t)
        xp.divide(exp_avg, c["bias_correction1"], out=u)   # bias-corrected exp_avg
        u *= c["lr"]
        if c["rect"] is not None:
            xp.sqrt(exp_avg_sq, out=t)
            t += c["eps"]
            xp.divide(c["bias_correction2_sqrt"], t, out=t)   # the adaptive learning rate
            u *= t
            u *= c["rect"]
        p -= u
