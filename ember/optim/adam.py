"""Adam (mirrors ``torch/optim/adam.py``; ``AdamW`` is Adam with decoupled weight decay)."""
from __future__ import annotations

import ember
from ember._generated import aten
from ember.optim.optimizer import (_zero_state, _check_betas, _check_fused_foreach, _check_lr, _check_nonnegative,
                                   _ElementwiseOptimizer, _to_float)

__all__ = ["Adam"]


class Adam(_ElementwiseOptimizer):
    """Adam (Kingma & Ba) with optional AMSGrad; ``decoupled_weight_decay=True`` gives AdamW."""

    _op = aten._fused_adam_
    _sparse_name = "Adam"       # AdamW's refusal too, as in PyTorch
    _sparse_hint = ", please consider SparseAdam instead"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_lr(lr)
        _check_nonnegative(eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        if isinstance(betas[0], ember.Tensor) != isinstance(betas[1], ember.Tensor):
            raise ValueError("betas must be either both floats or both Tensors")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable, self)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
            group.setdefault("decoupled_weight_decay", False)

    def _init_state(self, p, group, state):
        _zero_state(p, state, *(k for k in self._lists(group)[:3] if k is not None))

    def _lists(self, group):
        return ("exp_avg", "exp_avg_sq", "max_exp_avg_sq" if group["amsgrad"] else None, "step")

    def _hyper(self, group):
        beta1, beta2 = (_to_float(b) for b in group["betas"])
        return dict(lr=_to_float(group["lr"]), beta1=beta1, beta2=beta2, weight_decay=group["weight_decay"],
                    eps=group["eps"], amsgrad=group["amsgrad"], maximize=group["maximize"])

    def _op_for(self, group):
        return aten._fused_adamw_ if group["decoupled_weight_decay"] else aten._fused_adam_
