"""Stochastic gradient descent (mirrors ``torch/optim/sgd.py``)."""
from __future__ import annotations

from ember.optim._elementwise import add_scaled_, weight_decay_
from ember.optim.optimizer import _check_fused_foreach, _check_lr, _ElementwiseOptimizer, _to_float

__all__ = ["SGD"]


class SGD(_ElementwiseOptimizer):
    """SGD with optional momentum (PyTorch's formulation: ``buf = momentum * buf + (1 - dampening) * g``,
    ``p -= lr * buf``), Nesterov momentum and L2 weight decay."""

    _scalar_keys = ()

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    def _tensor_keys(self, group):
        return ("momentum_buffer",) if group["momentum"] != 0 else ()

    def _init_state(self, p, group, state):
        pass  # the momentum buffer is made on the first step, as a copy of the gradient

    @staticmethod
    def _scalars(group, step, S):
        return {"lr": _to_float(group["lr"]), "momentum": group["momentum"], "dampening": group["dampening"],
                "weight_decay": _to_float(group["weight_decay"]), "nesterov": group["nesterov"]}

    @staticmethod
    def _update(xp, p, g, T, c, tmp):
        t = tmp(0)
        weight_decay_(xp, g, p, c["weight_decay"], t)
        momentum = c["momentum"]
        if momentum != 0:
            buf = T["momentum_buffer"]
            if c["fresh"]:
                xp.copyto(buf, g)
            else:
                buf *= momentum
                add_scaled_(xp, buf, g, 1 - c["dampening"], t)
            if c["nesterov"]:
                add_scaled_(xp, g, buf, momentum, t)
            else:
                g = buf
        add_scaled_(xp, p, g, -c["lr"], t)
