"""Rprop (mirrors ``torch/optim/rprop.py``)."""
from __future__ import annotations

import ember
from ember.optim.optimizer import _check_lr, _ElementwiseOptimizer, _scalar_dtype, _to_float

__all__ = ["Rprop"]


class Rprop(_ElementwiseOptimizer):
    """Resilient backpropagation (Riedmiller & Braun): per-element step sizes grown by ``etaplus`` while
    the gradient keeps its sign and shrunk by ``etaminus`` when it flips; only the sign of g is used."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _tensor_keys(self, group):
        return ("prev", "step_size")

    def _init_state(self, p, group, state):
        state["step"] = ember.tensor(0.0, dtype=_scalar_dtype())
        state["prev"] = ember.zeros_like(p, memory_format=ember.preserve_format)
        if p.is_complex():
            state["step_size"] = ember.full_like(p.grad, complex(_to_float(group["lr"]), _to_float(group["lr"])))
        else:
            state["step_size"] = ember.full_like(p.grad, _to_float(group["lr"]))

    @staticmethod
    def _scalars(group, step, S):
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        return {"etaminus": etaminus, "etaplus": etaplus, "min": step_size_min, "max": step_size_max}

    @staticmethod
    def _update(xp, p, g, T, c, tmp):
        sign = tmp(0)
        prev, step_size = T["prev"], T["step_size"]
        xp.multiply(g, prev, out=sign)
        xp.sign(sign, out=sign)
        positive, negative, zero = sign > 0, sign < 0, sign == 0
        xp.copyto(sign, c["etaplus"], where=positive)
        xp.copyto(sign, c["etaminus"], where=negative)
        xp.copyto(sign, 1, where=zero)
        step_size *= sign
        xp.clip(step_size, c["min"], c["max"], out=step_size)
        xp.copyto(g, 0, where=sign == sign.dtype.type(c["etaminus"]))
        xp.copyto(prev, g)
        xp.sign(g, out=g)
        g *= -1
        g *= step_size
        p += g
