"""RAdam (mirrors ``torch/optim/radam.py``)."""
from __future__ import annotations

import ember
from ember.optim._elementwise import ema_sq_, lerp_, weight_decay_
from ember.optim.optimizer import (_check_betas, _check_lr, _check_nonnegative, _ElementwiseOptimizer,
                                   _scalar_dtype, _to_float)

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
        state["step"] = ember.tensor(0.0, dtype=_scalar_dtype())
        state["exp_avg"] = ember.zeros_like(p, memory_format=ember.preserve_format)
        state["exp_avg_sq"] = ember.zeros_like(p, memory_format=ember.preserve_format)

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
        wd = c["weight_decay"]
        if wd != 0:
            if c["decoupled"]:
                p *= 1 - c["lr"] * wd
            else:
                weight_decay_(xp, g, p, wd, t)
        exp_avg, exp_avg_sq = T["exp_avg"], T["exp_avg_sq"]
        lerp_(xp, exp_avg, g, 1 - c["beta1"], t)
        ema_sq_(xp, exp_avg_sq, g, c["beta2"], t)
        xp.divide(exp_avg, c["bias_correction1"], out=u)   # bias-corrected exp_avg
        u *= c["lr"]
        if c["rect"] is not None:
            xp.sqrt(exp_avg_sq, out=t)
            t += c["eps"]
            xp.divide(c["bias_correction2_sqrt"], t, out=t)   # the adaptive learning rate
            u *= t
            u *= c["rect"]
        p -= u
