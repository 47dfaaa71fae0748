"""Adagrad (mirrors ``torch/optim/adagrad.py``)."""
from __future__ import annotations

import ember
from ember.optim._elementwise import addcdiv_, addcmul_, weight_decay_
from ember.optim.optimizer import (_check_fused_foreach, _check_lr, _check_nonnegative, _ElementwiseOptimizer,
                                   _scalar_dtype, _to_float)

__all__ = ["Adagrad"]


class Adagrad(_ElementwiseOptimizer):
    """Adagrad (Duchi et al.): divide by the root of the summed squared gradients; the state is made
    when the optimizer is constructed, as in PyTorch."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        _check_nonnegative(lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group, self.state[p])

    def _tensor_keys(self, group):
        return ("sum",)

    def _init_state(self, p, group, state):
        state["step"] = ember.tensor(0.0, dtype=ember.float32 if group["fused"] else _scalar_dtype())
        init_value = complex(group["initial_accumulator_value"], group["initial_accumulator_value"]) \
            if p.is_complex() else group["initial_accumulator_value"]
        state["sum"] = ember.full_like(p, init_value, memory_format=ember.preserve_format)

    @staticmethod
    def _scalars(group, step, S):
        lr = _to_float(group["lr"])
        return {"clr": lr / (1 + (step - 1) * group["lr_decay"]), "eps": group["eps"],
                "weight_decay": group["weight_decay"]}

    @staticmethod
    def _update(xp, p, g, T, c, tmp):
        t, std = tmp(0), tmp(1)
        weight_decay_(xp, g, p, c["weight_decay"], t)
        state_sum = T["sum"]
        addcmul_(xp, state_sum, g, g, 1, t)
        xp.sqrt(state_sum, out=std)
        std += c["eps"]
        addcdiv_(xp, p, g, std, -c["clr"], t)
