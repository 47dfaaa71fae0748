"""Gradient clipping (mirrors ``torch/nn/utils/clip_grad.py``)."""
from __future__ import annotations

from typing import Any

import warnings

import ember


def _grads(parameters: Any) -> Any:
    if isinstance(parameters, ember.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors: Any, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach: Any = None) -> Any:
    if isinstance(tensors, ember.Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return ember.tensor(0.0)
    norms = [ember.linalg.vector_norm(g.detach(), norm_type) for g in tensors]
    total = ember.linalg.vector_norm(ember.stack(norms), norm_type)
    if error_if_nonfinite and bool(total.isnan() | total.isinf()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           "anyway, set `error_if_nonfinite=False`")
    return total


def clip_grad_norm_(parameters: Any, max_norm: Any, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: Any = None) -> Any:
    """Scale the gradients in place so that their joint norm is at most ``max_norm``; returns that norm."""
    if isinstance(parameters, ember.Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    grads = _grads(parameters)
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grads_with_norm_(parameters: Any, max_norm: Any, total_norm: Any, foreach: Any = None) -> None:
    """Scale the gradients in place by ``max_norm / (total_norm + 1e-6)``, clamped to 1: the second half of
    ``clip_grad_norm_``, for a ``total_norm`` computed elsewhere (``get_total_norm``)."""
    if isinstance(parameters, ember.Tensor):
        parameters = [parameters]
    grads = _grads(list(parameters))
    if not grads:
        return
    clip_coef = float(max_norm) / (total_norm + 1e-6)
    clip_coef_clamped = clip_coef.clamp(max=1.0)
    with ember.no_grad():
        for g in grads:
            g.mul_(clip_coef_clamped.to(g.dtype))


def clip_grad_norm(parameters: Any, max_norm: Any, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: Any = None) -> Any:
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Any, clip_value: Any, foreach: Any = None) -> Any:
    clip_value = float(clip_value)
    with ember.no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)
