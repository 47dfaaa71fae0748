"""The optimizer ops: ``_foreach_add_`` and the fused optimizer steps (``_fused_sgd_``, ``_fused_adam_``,
``_fused_adamw_``, ``_fused_adagrad_`` with PyTorch's schemas; ``_fused_rmsprop_``, ``_fused_adadelta_``,
``_fused_adamax_``, ``_fused_nadam_``, ``_fused_radam_``, ``_fused_asgd_``, ``_fused_rprop_`` for the optimizers
PyTorch runs with foreach ops only).

These are CompositeExplicitAutograd kernels that take tensors: each computes the step's Python floats from its
hyper-parameters and the 0-d state (``scalars``) and hands the array update of ``aten/kernels/optim.py`` to
``aten/arena.py``, which runs it over the arenas of the parameter list (Note [Fused optimizer steps]). The optimizer
frontend (``ember/optim``) increments the ``step`` tensors with ``_foreach_add_`` first, as PyTorch's does.
"""
from __future__ import annotations

from typing import Any

from ember.aten import arena
from ember.aten.kernels import optim as K
from ember.c10 import arena as c10_arena
from ember.c10.dtype import float32, float64, get_default_dtype

__all__ = ["_foreach_add__Scalar", "_fused_sgd_", "_fused_adam_", "_fused_adamw_", "_fused_adagrad_", "_fused_rmsprop_",
           "_fused_adadelta_", "_fused_adamax_", "_fused_nadam_", "_fused_radam_", "_fused_asgd_", "_fused_rprop_"]


def _foreach_add__Scalar(self: Any, scalar: Any) -> Any:
    """``t.add_(scalar)`` for each tensor; one operation when the list is a run of slots of one arena (the step
    counters of a fused optimizer's parameter group)."""
    if not self:
        raise RuntimeError("Tensor list must have at least one tensor.")
    if any(t._rg for t in self):                # through autograd: leaves refuse, other tensors are recorded
        for t in self:
            t.add_(scalar)
        return None
    span = c10_arena.span_of([t._data for t in self]) if self[0]._device.type != "meta" else None
    if span is not None:
        buf, a, b = span
        buf[a:b] += buf.dtype.type(scalar)
    else:
        for t in self:
            if t._device.type != "meta":
                t._data += t._data.dtype.type(scalar)
    for t in self:
        t._vc.version += 1
    return None


def _step(S: Any) -> float:
    return float(S["step"].reshape(-1)[0])


def _fused_sgd_(self: Any, grads: Any, momentum_buffer_list: Any, weight_decay: Any, momentum: Any, lr: Any,
                dampening: Any, nesterov: Any, maximize: Any, is_first_step: Any, grad_scale: Any = None,
                found_inf: Any = None) -> Any:
    c = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay, "nesterov": nesterov}
    tensors = {"momentum_buffer": momentum_buffer_list} if momentum != 0 else {}
    arena.fused_step(K.sgd_update, self, grads, tensors, {}, lambda S: dict(c), maximize, is_first_step,
                     grad_scale, found_inf)


def _adam(self: Any, grads: Any, exp_avgs: Any, exp_avg_sqs: Any, max_exp_avg_sqs: Any, state_steps: Any,
          lr: Any, beta1: Any, beta2: Any, weight_decay: Any, eps: Any, amsgrad: Any, maximize: Any,
          grad_scale: Any, found_inf: Any, decoupled: Any) -> Any:
    def scalars(S: Any) -> Any:
        step = _step(S)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        return {"lr": lr, "beta1": beta1, "beta2": beta2, "eps": eps, "weight_decay": weight_decay,
                "decoupled": decoupled, "amsgrad": amsgrad, "step_size": lr / bias_correction1,
                "bias_correction2_sqrt": bias_correction2 ** 0.5}
    tensors = {"exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs}
    if amsgrad:
        tensors["max_exp_avg_sq"] = max_exp_avg_sqs
    arena.fused_step(K.adam_update, self, grads, tensors, {"step": state_steps}, scalars, maximize, False,
                     grad_scale, found_inf)


def _fused_adam_(self: Any, grads: Any, exp_avgs: Any, exp_avg_sqs: Any, max_exp_avg_sqs: Any, state_steps: Any,
                 lr: Any, beta1: Any, beta2: Any, weight_decay: Any, eps: Any, amsgrad: Any, maximize: Any,
                 grad_scale: Any = None, found_inf: Any = None) -> Any:
    _adam(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2, weight_decay, eps,
          amsgrad, maximize, grad_scale, found_inf, False)


def _fused_adamw_(self: Any, grads: Any, exp_avgs: Any, exp_avg_sqs: Any, max_exp_avg_sqs: Any, state_steps: Any,
                  lr: Any, beta1: Any, beta2: Any, weight_decay: Any, eps: Any, amsgrad: Any, maximize: Any,
                  grad_scale: Any = None, found_inf: Any = None) -> Any:
    _adam(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2, weight_decay, eps,
          amsgrad, maximize, grad_scale, found_inf, True)


def _fused_adagrad_(self: Any, grads: Any, state_sums: Any, state_steps: Any, lr: Any, lr_decay: Any,
                    weight_decay: Any, eps: Any, maximize: Any, grad_scale: Any = None, found_inf: Any = None) -> Any:
    def scalars(S: Any) -> Any:
        return {"clr": lr / (1 + (_step(S) - 1) * lr_decay), "eps": eps, "weight_decay": weight_decay}
    arena.fused_step(K.adagrad_update, self, grads, {"sum": state_sums}, {"step": state_steps}, scalars, maximize,
                     False, grad_scale, found_inf)


def _fused_rmsprop_(self: Any, grads: Any, square_avgs: Any, grad_avgs: Any, momentum_buffer_list: Any,
                    state_steps: Any, lr: Any, alpha: Any, eps: Any, weight_decay: Any, momentum: Any,
                    centered: Any, maximize: Any) -> Any:
    c = {"lr": lr, "alpha": alpha, "eps": eps, "weight_decay": weight_decay, "momentum": momentum,
         "centered": centered}
    tensors = {"square_avg": square_avgs}
    if momentum > 0:
        tensors["momentum_buffer"] = momentum_buffer_list
    if centered:
        tensors["grad_avg"] = grad_avgs
    arena.fused_step(K.rmsprop_update, self, grads, tensors, {"step": state_steps}, lambda S: dict(c), maximize)


def _fused_adadelta_(self: Any, grads: Any, square_avgs: Any, acc_deltas: Any, state_steps: Any, lr: Any,
                     rho: Any, eps: Any, weight_decay: Any, maximize: Any) -> Any:
    c = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay}
    arena.fused_step(K.adadelta_update, self, grads, {"square_avg": square_avgs, "acc_delta": acc_deltas},
                     {"step": state_steps}, lambda S: dict(c), maximize)


def _fused_adamax_(self: Any, grads: Any, exp_avgs: Any, exp_infs: Any, state_steps: Any, lr: Any, beta1: Any,
                   beta2: Any, eps: Any, weight_decay: Any, maximize: Any) -> Any:
    def scalars(S: Any) -> Any:
        return {"beta1": beta1, "beta2": beta2, "eps": eps, "weight_decay": weight_decay,
                "clr": lr / (1 - beta1 ** _step(S))}
    arena.fused_step(K.adamax_update, self, grads, {"exp_avg": exp_avgs, "exp_inf": exp_infs},
                     {"step": state_steps}, scalars, maximize)


def _fused_nadam_(self: Any, grads: Any, exp_avgs: Any, exp_avg_sqs: Any, mu_products: Any, state_steps: Any,
                  lr: Any, beta1: Any, beta2: Any, eps: Any, weight_decay: Any, momentum_decay: Any,
                  decoupled_weight_decay: Any, maximize: Any) -> Any:
    def scalars(S: Any) -> Any:
        step = _step(S)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product = S["mu_product"]
        mu_product *= mu                       # in the state's dtype, as PyTorch's 0-d tensor op
        mu_product = float(mu_product.reshape(-1)[0])
        mu_product_next = mu_product * mu_next
        return {"lr": lr, "beta1": beta1, "beta2": beta2, "eps": eps, "weight_decay": weight_decay,
                "decoupled": decoupled_weight_decay, "bias_correction2": 1 - beta2 ** step,
                "grad_coef": -lr * (1.0 - mu) / (1.0 - mu_product),
                "avg_coef": (-lr * mu_next) / (1.0 - mu_product_next)}
    arena.fused_step(K.nadam_update, self, grads, {"exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs},
                     {"step": state_steps, "mu_product": mu_products}, scalars, maximize)


def _fused_radam_(self: Any, grads: Any, exp_avgs: Any, exp_avg_sqs: Any, state_steps: Any, lr: Any, beta1: Any,
                  beta2: Any, eps: Any, weight_decay: Any, decoupled_weight_decay: Any, maximize: Any) -> Any:
    def scalars(S: Any) -> Any:
        step = _step(S)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        rect = None
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        return {"lr": lr, "beta1": beta1, "beta2": beta2, "eps": eps, "weight_decay": weight_decay,
                "decoupled": decoupled_weight_decay, "bias_correction1": bias_correction1,
                "bias_correction2_sqrt": bias_correction2 ** 0.5, "rect": rect}
    arena.fused_step(K.radam_update, self, grads, {"exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs},
                     {"step": state_steps}, scalars, maximize)


def _fused_asgd_(self: Any, grads: Any, axs: Any, mus: Any, etas: Any, state_steps: Any, lr: Any, lambd: Any,
                 alpha: Any, t0: Any, weight_decay: Any, maximize: Any) -> Any:
    def scalars(S: Any) -> Any:
        step = _step(S)
        eta = float(S["eta"].reshape(-1)[0])
        mu = float(S["mu"].reshape(-1)[0])
        # for the next step; PyTorch makes them with torch.as_tensor (the default dtype), then copies them in
        as_tensor = (float64 if get_default_dtype() is float64 else float32).np.type
        S["eta"][...] = as_tensor(lr / ((1 + lambd * lr * step) ** alpha))
        S["mu"][...] = as_tensor(1 / max(1, step - t0))
        return {"eta": eta, "mu": mu, "lambd": lambd, "weight_decay": weight_decay}
    arena.fused_step(K.asgd_update, self, grads, {"ax": axs}, {"step": state_steps, "eta": etas, "mu": mus},
                     scalars, maximize)


def _fused_rprop_(self: Any, grads: Any, prevs: Any, step_sizes: Any, state_steps: Any, etaminus: Any,
                  etaplus: Any, step_size_min: Any, step_size_max: Any, maximize: Any) -> Any:
    c = {"etaminus": etaminus, "etaplus": etaplus, "min": step_size_min, "max": step_size_max}
    arena.fused_step(K.rprop_update, self, grads, {"prev": prevs, "step_size": step_sizes}, {"step": state_steps},
                     lambda S: dict(c), maximize)
