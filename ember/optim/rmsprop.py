"""RMSprop (mirrors ``torch/optim/rmsprop.py``)."""
from __future__ import annotations

from ember.optim._elementwise import add_scaled_, addcdiv_, addcmul_, ema_sq_, lerp_, weight_decay_
from ember.optim.optimizer import _zero_state, _check_lr, _check_nonnegative, _ElementwiseOptimizer, _to_float

__all__ = ["RMSprop"]


class RMSprop(_ElementwiseOptimizer):
    """RMSprop (Hinton): divide by a running RMS of the gradient; ``centered`` subtracts the squared
    running mean, ``momentum`` adds a velocity buffer."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        _check_nonnegative(eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _tensor_keys(self, group):
        keys = ("square_avg",)
        if group["momentum"] > 0:
            keys += ("momentum_buffer",)
        if group["centered"]:
            keys += ("grad_avg",)
        return keys

    def _init_state(self, p, group, state):
        _zero_state(p, state, *self._tensor_keys(group))

    @staticmethod
    def _scalars(group, step, S):
        return {"lr": _to_float(group["lr"]), "alpha": group["alpha"], "eps": group["eps"],
                "weight_decay": group["weight_decay"], "momentum": group["momentum"], "centered": group["centered"]}

    @staticmethod
    def _update(xp, p, g, T, c, tmp):
        t, avg = tmp(0), tmp(1)
        weight_decay_(xp, g, p, c["weight_decay"], t)
        square_avg = T["square_avg"]
        alpha = c["alpha"]
        ema_sq_(xp, square_avg, g, alpha, t)
        if c["centered"]:
            grad_avg = T["grad_avg"]
            lerp_(xp, grad_avg, g, 1 - alpha, t)
            xp.copyto(avg, square_avg)
            addcmul_(xp, avg, grad_avg, grad_avg, -1, t)
            xp.sqrt(avg, out=avg)
        else:
            xp.sqrt(square_avg, out=avg)
        avg += c["eps"]
        if c["momentum"] > 0:
            buf = T["momentum_buffer"]
            buf *= c["momentum"]
            addcdiv_(xp, buf, g, avg, 1, t)
            add_scaled_(xp, p, buf, -c["lr"], t)
        else:
            addcdiv_(xp, p, g, avg, -c["lr"], t)
