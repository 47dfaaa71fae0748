"""``ember.func`` (``torch.func``): composable function transforms -- ``vmap`` (Note [Batched tensors] in
``ember/_functorch/vmap.py``), ``grad``, ``grad_and_value``, ``vjp``, ``jacrev``, ``hessian`` (Note [Function
transforms on the autograd engine] in ``ember/_functorch/eager_transforms.py``), ``functional_call`` and
``stack_module_state``, and the forward-mode ``jvp``, ``jacfwd`` and ``linearize`` (Note [Forward-mode transforms]).
``functionalize`` removes a function's mutations (Note [Functionalization] in ``ember/_functorch/functionalize.py``).
"""
from __future__ import annotations

from typing import Any

import ember
from ember._functorch.eager_transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from ember._functorch.functionalize import FunctionalTensor, functionalize
from ember._functorch.vmap import BatchedTensor, vmap
from ember.nn.modules.batchnorm import _BatchNorm
from ember.nn.utils.stateless import functional_call

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize",
           "functional_call", "functionalize", "stack_module_state", "replace_all_batch_norm_modules_", "debug_unwrap"]


def debug_unwrap(tensor: Any, *, recurse: bool = True) -> Any:
    """``torch.func.debug_unwrap``: the tensor inside a batched tensor (the whole batch), for printing inside a
    vmap; with ``recurse``, through every level."""
    while isinstance(tensor, (BatchedTensor, FunctionalTensor)):
        tensor = tensor._value
        if not recurse:
            break
    return tensor


def replace_all_batch_norm_modules_(root: Any) -> Any:
    """``torch.func.replace_all_batch_norm_modules_``: every batch-norm module under ``root`` stops tracking running
    statistics (its running mean / var become None), so that it normalizes each example's own batch under vmap.
    In place; returns ``root``."""
    for m in root.modules():
        if isinstance(m, _BatchNorm):
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root


def stack_module_state(models: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``torch.func.stack_module_state``: the parameters and buffers of ``models`` (modules of one structure),
    each stacked along a new first dimension -- the state of an ensemble for ``vmap(functional_call)``. The stacked
    parameters are new leaves that require grad where the originals did."""
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    first = type(models[0])
    if not all(type(m) is first for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named: list[dict[str, Any]], leaves: bool) -> dict[str, Any]:
        out = {}
        for name in named[0]:
            t = ember.stack([d[name].detach() for d in named])
            out[name] = t.requires_grad_(named[0][name].requires_grad) if leaves else t
        return out
    params = stacked([dict(m.named_parameters()) for m in models], True)
    buffers = stacked([dict(m.named_buffers()) for m in models], False)
    return params, buffers
