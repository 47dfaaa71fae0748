"""Averaged SGD (mirrors ``torch/optim/asgd.py``)."""
from __future__ import annotations

import ember
from ember.optim._elementwise import add_scaled_, weight_decay_
from ember.optim.optimizer import _check_lr, _check_nonnegative, _ElementwiseOptimizer, _scalar_dtype, _to_float

__all__ = ["ASGD"]


class ASGD(_ElementwiseOptimizer):
    """Averaged SGD (Polyak & Juditsky): SGD with a decaying rate ``eta`` plus a running average ``ax``
    of the iterates, started after ``t0`` steps."""

    _scalar_keys = ("step", "eta", "mu")

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _tensor_keys(self, group):
        return ("ax",)

    def _init_state(self, p, group, state):
        state["step"] = ember.zeros((), dtype=_scalar_dtype())
        state["eta"] = ember.tensor(_to_float(group["lr"]), dtype=_scalar_dtype())
        state["mu"] = ember.ones((), dtype=_scalar_dtype())
        state["ax"] = ember.zeros_like(p, memory_format=ember.preserve_format)

    @staticmethod
    def _scalars(group, step, S):
        lr, lambd, alpha, t0 = _to_float(group["lr"]), group["lambd"], group["alpha"], group["t0"]
        eta = float(S["eta"].reshape(-1)[0])
        mu = float(S["mu"].reshape(-1)[0])
        # for the next step; PyTorch makes them with torch.as_tensor (default dtype), then copies them in
        as_tensor = _scalar_dtype().np.type
        S["eta"][...] = as_tensor(lr / ((1 + lambd * lr * step) ** alpha))
        S["mu"][...] = as_tensor(1 / max(1, step - t0))
        return {"eta": eta, "mu": mu, "lambd": lambd, "weight_decay": group["weight_decay"]}

    @staticmethod
    def _update(xp, p, g, T, c, tmp):
        t = tmp(0)
        weight_decay_(xp, g, p, c["weight_decay"], t)
        eta = c["eta"]
        p *= 1 - c["lambd"] * eta
        add_scaled_(xp, p, g, -eta, t)
        ax = T["ax"]
        if c["mu"] != 1:
            xp.subtract(p, ax, out=t)
            t *= c["mu"]
            ax += t
        else:
            xp.copyto(ax, p)
