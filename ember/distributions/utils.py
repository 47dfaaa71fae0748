"""Helpers shared by the distributions (mirrors ``torch/distributions/utils.py``)."""
from __future__ import annotations

import numbers

import ember

__all__ = ["broadcast_all", "clamp_probs", "euler_constant", "lazy_property", "logits_to_probs", "probs_to_logits",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


def broadcast_all(*values):
    """Numbers become tensors (of the first tensor argument's dtype, else the default dtype), then all
    are broadcast together."""
    if not all(isinstance(v, (ember.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects implementing "
                         "__torch_function__.")
    if not all(isinstance(v, ember.Tensor) for v in values):
        options = dict(dtype=ember.get_default_dtype())
        for v in values:
            if isinstance(v, ember.Tensor):
                options = dict(dtype=v.dtype, device=v.device)
                break
        values = [v if isinstance(v, ember.Tensor) else ember.tensor(v, **options) for v in values]
    return ember.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return ember.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim):
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    required_shape = tuple(value.shape[:-dim]) + (-1,)
    return value.reshape(required_shape).sum(-1)


def clamp_probs(probs):
    """Clamp into the open interval ``(eps, 1 - eps)`` of the dtype."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return ember.sigmoid(logits)
    return ember.nn.functional.softmax(logits, dim=-1)


class lazy_property:
    """Computed on first access, then cached in the instance (``probs`` from ``logits`` and back)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a lazy_property looks like on the class: also a ``property`` (for documentation tools)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (from diagonal ``diag``) of the trailing square matrices, row by row, as vectors."""
    n = mat.shape[-1]
    if n != mat.shape[-2]:
        raise ValueError("Expected a square matrix, but got a matrix of shape "
                         f"{tuple(mat.shape[-2:])}")
    if not -n <= diag < n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    arange = ember.arange(n, device=mat.device)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    return mat[..., tril_mask]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of ``tril_matrix_to_vec``: vectors of length ``n (n + 1) / 2`` (for ``diag`` 0) become
    lower-triangular matrices."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = ember.finfo(vec.dtype).eps
    if not round(n) - n < eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n.item()) if isinstance(n, ember.Tensor) else round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    arange = ember.arange(n, device=vec.device)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    mat[..., tril_mask] = vec
    return mat
