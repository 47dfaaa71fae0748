"""RMSprop (mirrors ``torch/optim/rmsprop.py``)."""
from __future__ import annotations

from ember._generated import aten

from ember.optim.optimizer import _zero_state, _check_lr, _check_nonnegative, _ElementwiseOptimizer, _to_float

__all__ = ["RMSprop"]


class RMSprop(_ElementwiseOptimizer):
    """RMSprop (Hinton): divide by a running RMS of the gradient; ``centered`` subtracts the squared
    running mean, ``momentum`` adds a velocity buffer."""

    _op = aten._fused_rmsprop_

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        _check_nonnegative(eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group, state):
        keys = ("square_avg",) + (("momentum_buffer",) if group["momentum"] > 0 else ()) + \
            (("grad_avg",) if group["centered"] else ())
        _zero_state(p, state, *keys)

    def _lists(self, group):
        return ("square_avg", "grad_avg" if group["centered"] else None,
                "momentum_buffer" if group["momentum"] > 0 else None, "step")

    def _hyper(self, group):
        return dict(lr=_to_float(group["lr"]), alpha=group["alpha"], eps=group["eps"],
                    weight_decay=group["weight_decay"], momentum=group["momentum"], centered=group["centered"],
                    maximize=group["maximize"])
