"""Stochastic gradient descent (mirrors ``torch/optim/sgd.py``)."""
from __future__ import annotations

import ember
from ember._generated import aten
from ember.optim.optimizer import _amp_arguments, _check_fused_foreach, _check_lr, _ElementwiseOptimizer, _to_float

__all__ = ["SGD"]


class SGD(_ElementwiseOptimizer):
    """SGD with optional momentum (PyTorch's formulation: ``buf = momentum * buf + (1 - dampening) * g``,
    ``p -= lr * buf``), Nesterov momentum and L2 weight decay."""

    _has_step = False

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
        _check_fused_foreach(fused, foreach, differentiable, self)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    def _init_state(self, p, group, state):
        pass  # the momentum buffer is made on the first step, as a copy of the gradient

    def _keeps_state(self, group):
        return group["momentum"] != 0

    def _run(self, group, params, states):
        momentum = group["momentum"]
        bufs, first = [], False
        if momentum != 0:
            have = ["momentum_buffer" in st for st in states]
            if any(have) and not all(have):  # some parameters take their first step with momentum, others not
                for p, st in zip(params, states):
                    self._run(group, [p], [st])
                return
            first = not have[0]
            if first:
                for p, st in zip(params, states):
                    st["momentum_buffer"] = ember.zeros_like(p, memory_format=ember.preserve_format)
            bufs = [st["momentum_buffer"] for st in states]
        aten._fused_sgd_(params, [p.grad for p in params], bufs, weight_decay=_to_float(group["weight_decay"]),
                         momentum=momentum, lr=_to_float(group["lr"]), dampening=group["dampening"],
                         nesterov=group["nesterov"], maximize=group["maximize"], is_first_step=first,
                         **_amp_arguments(self, group))

    def _sparse_step(self, group, p, state):
        """PyTorch's single-tensor step for a sparse gradient: the momentum buffer starts as a (sparse) copy of the
        gradient; weight decay would add the dense parameter to it, which PyTorch refuses."""
        grad = -p.grad if group["maximize"] else p.grad
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.clone().detach()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
        p.add_(grad, alpha=-_to_float(group["lr"]))
