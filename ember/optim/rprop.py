"""Rprop (mirrors ``torch/optim/rprop.py``)."""
from __future__ import annotations

import ember
from ember._generated import aten
from ember.optim.optimizer import _check_lr, _ElementwiseOptimizer, _scalar_dtype, _to_float

__all__ = ["Rprop"]


class Rprop(_ElementwiseOptimizer):
    """Resilient backpropagation (Riedmiller & Braun): per-element step sizes grown by ``etaplus`` while
    the gradient keeps its sign and shrunk by ``etaminus`` when it flips; only the sign of g is used."""

    _op = aten._fused_rprop_

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group, state):
        state["step"] = ember.tensor(0.0, dtype=_scalar_dtype())
        state["prev"] = ember.zeros_like(p, memory_format=ember.preserve_format)
        if p.is_complex():
            state["step_size"] = ember.full_like(p.grad, complex(_to_float(group["lr"]), _to_float(group["lr"])))
        else:
            state["step_size"] = ember.full_like(p.grad, _to_float(group["lr"]))

    def _lists(self, group):
        return ("prev", "step_size", "step")

    def _hyper(self, group):
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        return dict(etaminus=etaminus, etaplus=etaplus, step_size_min=step_size_min, step_size_max=step_size_max,
                    maximize=group["maximize"])
