"""Dropout (``Dropout.cpp``): elementwise, feature (whole channels) and alpha (SELU-preserving) dropout, each with
an in-place form, all written in ops over one noise tensor drawn with ``bernoulli_(1 - p)``; and the backward of
``native_dropout``, the two-output form that decompositions and compilers use."""
from __future__ import annotations

from typing import Any

import math

from ember._generated import aten
from ember.aten.dispatcher import python_dispatcher_enabled

__all__ = ["dropout", "dropout_", "feature_dropout", "feature_dropout_", "alpha_dropout", "alpha_dropout_",
           "feature_alpha_dropout", "feature_alpha_dropout_", "native_dropout_backward"]

_ALPHA = 1.7580993408473766  # SELU's scale * alpha: dropped units are set to -_ALPHA before the affine correction


def _dropout_impl(input: Any, p: Any, train: Any, feature: Any, alpha: Any, inplace: Any) -> Any:  # noqa: A002
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not (feature or alpha or inplace) and python_dispatcher_enabled():
        # traced: PyTorch's Python decomposition runs there -- a copy, or native_dropout (Note [The Python dispatcher])
        return aten.native_dropout(input, p, train)[0] if train and p != 0 else aten.clone(input)
    if p == 0 or not train or input.numel() == 0:
        return input
    if p == 1:
        zero = aten.zeros((), dtype=input.dtype, device=input.device)      # (at::zeros({}, options))
        return input.mul_(zero) if inplace else input * zero
    if feature:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        noise = aten.new_empty(input, (input.shape[0], input.shape[1]) + (1,) * (input.dim() - 2))
    else:
        noise = aten.empty_like(input)
    noise.bernoulli_(1 - p)
    if not alpha:
        noise.div_(1 - p)
        return input.mul_(noise) if inplace else input * noise
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = noise.add(-1).mul_(_ALPHA * a).add_(_ALPHA * a * p)
    noise.mul_(a)
    return input.mul_(noise).add_(b) if inplace else (input * noise).add_(b)


def dropout(input: Any, p: Any, train: Any) -> Any:  # noqa: A002
    """``input * bernoulli(1 - p) / (1 - p)`` elementwise (PyTorch's CPU mask)."""
    return _dropout_impl(input, p, train, False, False, False)


def dropout_(self: Any, p: Any, train: Any) -> Any:
    return _dropout_impl(self, p, train, False, False, True)


def feature_dropout(input: Any, p: Any, train: Any) -> Any:  # noqa: A002
    """One mask value per (sample, channel), shared over the remaining dimensions."""
    return _dropout_impl(input, p, train, True, False, False)


def feature_dropout_(self: Any, p: Any, train: Any) -> Any:
    return _dropout_impl(self, p, train, True, False, True)


def alpha_dropout(input: Any, p: Any, train: Any) -> Any:  # noqa: A002
    """Dropped units become ``-1.7581``, then ``a x + b`` restores zero mean and unit variance (SELU networks)."""
    return _dropout_impl(input, p, train, False, True, False)


def alpha_dropout_(self: Any, p: Any, train: Any) -> Any:
    return _dropout_impl(self, p, train, False, True, True)


def feature_alpha_dropout(input: Any, p: Any, train: Any) -> Any:  # noqa: A002
    return _dropout_impl(input, p, train, True, True, False)


def feature_alpha_dropout_(self: Any, p: Any, train: Any) -> Any:
    return _dropout_impl(self, p, train, True, True, True)


def native_dropout_backward(grad_output: Any, mask: Any, scale: Any) -> Any:
    return grad_output * mask * scale
