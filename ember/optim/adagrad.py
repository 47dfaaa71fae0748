"""Adagrad (mirrors ``torch/optim/adagrad.py``)."""
from __future__ import annotations

import ember
from ember._generated import aten
from ember.optim.optimizer import (_check_fused_foreach, _check_lr, _check_nonnegative, _ElementwiseOptimizer,
                                   _scalar_dtype, _to_float)

__all__ = ["Adagrad"]


class Adagrad(_ElementwiseOptimizer):
    """Adagrad (Duchi et al.): divide by the root of the summed squared gradients; the state is made
    when the optimizer is constructed, as in PyTorch."""

    _op = aten._fused_adagrad_

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        _check_nonnegative(lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable, self)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group, self.state[p])

    def _init_state(self, p, group, state):
        state["step"] = ember.tensor(0.0, dtype=ember.float32 if group["fused"] else _scalar_dtype())
        init_value = complex(group["initial_accumulator_value"], group["initial_accumulator_value"]) \
            if p.is_complex() else group["initial_accumulator_value"]
        state["sum"] = ember.full_like(p, init_value, memory_format=ember.preserve_format)

    def _lists(self, group):
        return ("sum", "step")

    def _hyper(self, group):
        return dict(lr=_to_float(group["lr"]), lr_decay=group["lr_decay"], weight_decay=group["weight_decay"],
                    eps=group["eps"], maximize=group["maximize"])

    def _sparse_step(self, group, p, state):
        """PyTorch's single-tensor step for a sparse gradient: the sums and the parameter change only at the
        (coalesced) gradient's indices."""
        state["step"].add_(1)
        step = float(state["step"])
        grad = -p.grad if group["maximize"] else p.grad
        if group["weight_decay"] != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        clr = _to_float(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
        grad = grad.coalesce()
        indices, values, size = grad._indices(), grad._values(), tuple(grad.shape)
        state["sum"].add_(aten._sparse_coo_tensor_unsafe(indices, values.pow(2), size))
        std = state["sum"].sparse_mask(grad)._values().sqrt_().add_(group["eps"])
        p.add_(aten._sparse_coo_tensor_unsafe(indices, values / std, size), alpha=-clr)
