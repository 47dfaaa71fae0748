"""SparseAdam (mirrors ``torch/optim/sparse_adam.py``): Adam for sparse gradients (``nn.Embedding(sparse=True)``),
updating the moments and the parameter only at the rows a step's gradient holds."""
from __future__ import annotations

import math

import ember
from ember._generated import aten
from ember.optim.optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam's lazy variant: each step touches only the indices of the (coalesced) sparse gradient; the moments of
    the other rows keep their values. Parameters are dense; their gradients must be sparse."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize: bool = False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse_params, complex_params = [], []
        for index, group in enumerate(self.param_groups):
            for d_index, p in enumerate(group["params"]):
                if p.is_sparse:
                    sparse_params.append([index, d_index])
                if p.is_complex():
                    complex_params.append([index, d_index])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter tensors")
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             "parameters")

    @ember.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = None
        if closure is not None:
            with ember.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if not p.grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = ember.zeros_like(p, memory_format=ember.preserve_format)
                    state["exp_avg_sq"] = ember.zeros_like(p, memory_format=ember.preserve_format)
                state["step"] += 1
                _sparse_adam(p, p.grad, state["exp_avg"], state["exp_avg_sq"], state["step"], group["eps"], beta1,
                             beta2, group["lr"], group.get("maximize", False))
        return loss


def _sparse_adam(param, grad, exp_avg, exp_avg_sq, step, eps, beta1, beta2, lr, maximize) -> None:
    grad = (-grad if maximize else grad).coalesce()      # the update is not linear: one value per index
    indices, values = grad._indices(), grad._values()
    if values.numel() == 0:
        return
    size = tuple(grad.shape)

    def make_sparse(vals):
        return aten._sparse_coo_tensor_unsafe(indices, vals, size)

    old_exp_avg = exp_avg.sparse_mask(grad)._values()
    exp_avg_update = values.sub(old_exp_avg).mul_(1 - beta1)
    exp_avg.add_(make_sparse(exp_avg_update))
    old_exp_avg_sq = exp_avg_sq.sparse_mask(grad)._values()
    exp_avg_sq_update = values.pow(2).sub_(old_exp_avg_sq).mul_(1 - beta2)
    exp_avg_sq.add_(make_sparse(exp_avg_sq_update))
    numer = exp_avg_update.add_(old_exp_avg)
    denom = exp_avg_sq_update.add_(old_exp_avg_sq).sqrt_().add_(eps)
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    param.add_(make_sparse(-step_size * numer.div_(denom)))
