"""The losses PyTorch writes in other ops (``Loss.cpp``), the backward ops of its margin-loss kernels
(``LossMultiMargin.cpp``, ``LossMultiLabelMargin.cpp``) and the distances of ``Distance.cpp``.

Written as PyTorch's are, so autograd records the same nodes (``margin_ranking_loss`` ends in
ClampMinBackward0); the backward ops are in ops too, so their own derivatives come for free.
"""
from __future__ import annotations

from typing import Any

import math

from ember._generated import aten
from ember.aten.meta import broadcast_shapes
from ember.c10.dtype import scalar_type_name
from ember.c10.grad_mode import state as _grad_state
from ember.c10.dtype import bool_ as _bool, float64, promote_types

_NONE, _MEAN, _SUM = 0, 1, 2  # at::Reduction

__all__ = ["kl_div", "poisson_nll_loss", "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "triplet_margin_loss", "soft_margin_loss_backward", "multi_margin_loss_backward", "multilabel_margin_loss",
           "multilabel_margin_loss_backward", "cosine_similarity", "pairwise_distance"]


def _apply_reduction(unreduced: Any, reduction: Any) -> Any:
    if reduction == _MEAN:
        return unreduced.mean()
    if reduction == _SUM:
        return unreduced.sum()
    return unreduced


def _scalar_minus(number: Any, t: Any) -> Any:
    """``number - t`` as PyTorch's C++ computes it: a tensor filled with the number, minus ``t`` in place."""
    return aten.sub__Tensor(aten.fill__Scalar(aten.empty_like(t), number), t)


def kl_div(self: Any, target: Any, reduction: Any = _MEAN, log_target: Any = False) -> Any:
    """``exp(t) (t - x)`` for a log target, else ``xlogy(t, t) - t x`` (0 where ``t == 0``)."""
    if log_target:
        out = target.exp() * (target - self)
    else:
        prod = target * self          # (C++ evaluates the right operand of ``-`` first)
        out = aten.xlogy_Tensor(target, target) - prod
    return _apply_reduction(out, reduction)


def poisson_nll_loss(input: Any, target: Any, log_input: Any, full: Any, eps: Any, reduction: Any) -> Any:  # noqa: A002
    """``exp(x) - t x`` (or ``x - t log(x + eps)``), plus Stirling's ``t log t - t + log(2 pi t) / 2`` where
    ``t > 1`` when ``full``."""
    if log_input:
        prod = target * input           # (the right operand first, as C++ evaluates it)
        loss = input.exp() - prod
    else:
        loss = input - target * (input + eps).log()
    if full:
        half_log = 0.5 * (2 * math.pi * target).log()       # (C++ order: right operands first)
        stirling = target * target.log() - target + half_log
        loss = aten.add__Tensor(loss, stirling.masked_fill(target <= 1, 0))
    return _apply_reduction(loss, reduction)


def margin_ranking_loss(input1: Any, input2: Any, target: Any, margin: Any = 0.0, reduction: Any = _MEAN) -> Any:
    diff = input1 - input2          # (C++ order: the right operand of ``*`` first; clamp_min_ in place)
    return _apply_reduction(aten.clamp_min_(-target * diff + margin, 0), reduction)


def hinge_embedding_loss(self: Any, target: Any, margin: Any = 1.0, reduction: Any = _MEAN) -> Any:
    zeros = aten.zeros_like(self)
    margin_clamp = aten.clamp_min_(_scalar_minus(margin, self), 0)
    output_margin = aten.where_self(target != 1, margin_clamp, zeros)
    output_self = aten.where_self(target != -1, self, zeros)
    return _apply_reduction(output_margin + output_self, reduction)


def cosine_embedding_loss(input1: Any, input2: Any, target: Any, margin: Any = 0.0, reduction: Any = _MEAN) -> Any:
    """``1 - cos`` where ``target == 1``, ``max(0, cos - margin)`` where ``target == -1``; the cosine over the last
    dimension with 1e-12 added to each squared magnitude."""
    targ_dim = target.dim()
    if targ_dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.dim() != targ_dim + 1:
        raise RuntimeError(f"{targ_dim}D target tensor expects {targ_dim + 1}D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    prod_sum = (input1 * input2).sum(targ_dim)
    mag_square1 = (input1 * input1).sum(targ_dim) + eps
    mag_square2 = (input2 * input2).sum(targ_dim) + eps
    cos = prod_sum / aten.sqrt_(mag_square1 * mag_square2)
    zeros = aten.zeros_like(cos)
    pos = _scalar_minus(1, cos)
    neg = aten.clamp_min_(cos - margin, 0)
    output_pos = aten.where_self(target == 1, pos, zeros)
    output_neg = aten.where_self(target == -1, neg, zeros)
    return _apply_reduction(output_pos + output_neg, reduction)


def triplet_margin_loss(anchor: Any, positive: Any, negative: Any, margin: Any = 1.0, p: Any = 2,
                        eps: Any = 1e-06, swap: Any = False, reduction: Any = _MEAN) -> Any:
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not a_dim == p_dim == n_dim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs")
    dist_pos = aten.pairwise_distance(anchor, positive, p, eps)
    dist_neg = aten.pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = aten.minimum(dist_neg, aten.pairwise_distance(positive, negative, p, eps))
    return _apply_reduction((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def soft_margin_loss_backward(grad_output: Any, self: Any, target: Any, reduction: Any) -> Any:
    """``-norm * t * z / (1 + z) * grad`` with ``z = exp(-t x)``."""
    norm = 1.0 / self.numel() if reduction == _MEAN else 1.0
    z = (-target * self).exp()
    return target * z * (-norm) / (z + 1) * grad_output


def _rows(self: Any) -> Any:
    """(frames, classes) of a margin loss's input: a vector or scalar is one frame."""
    return (1, 1 if self.dim() == 0 else self.shape[0]) if self.dim() <= 1 else tuple(self.shape)


def _frame_grad(grad_output: Any, nframe: Any, reduction: Any) -> Any:
    """``grad_output`` as a (frames, 1) factor: per frame for reduction None, divided by the frames for Mean."""
    if reduction == _NONE:
        return grad_output.reshape(nframe, 1)
    return grad_output / nframe if reduction == _MEAN else grad_output


def multi_margin_loss_backward(grad_output: Any, self: Any, target: Any, p: Any, margin: Any, weight: Any = None,
                               reduction: Any = _MEAN) -> Any:
    """d/dx[j] = p z^(p-1) weight[y] / C for each ``j != y`` with ``z = margin - x[y] + x[j] > 0``, and x[y] gets minus
    their sum."""
    nframe, dim = _rows(self)
    x = self.reshape(nframe, dim)
    t = target.reshape(nframe, 1)
    z = margin - x.gather(1, t) + x
    not_target = aten.ones_like(z, dtype=_bool).scatter(1, t, False)
    active = (z > 0).logical_and(not_target)
    g = active.to(self.dtype)
    if p == 2:
        g = g * (2 * z)
    g = g / dim
    if weight is not None:
        g = g * weight.reshape(dim).gather(0, t.reshape(nframe)).unsqueeze(1)
    g = g * _frame_grad(grad_output, nframe, reduction)
    return (g - aten.zeros_like(g).scatter(1, t, g.sum(1, keepdim=True))).reshape(self.shape)


def multilabel_margin_loss(self: Any, target: Any, reduction: Any = _MEAN) -> Any:
    return aten.multilabel_margin_loss_forward(self, target, reduction)[0]


def multilabel_margin_loss_backward(grad_output: Any, self: Any, target: Any, reduction: Any, is_target: Any) -> Any:
    """Each (target k, non-target j) pair with ``1 - x[y_k] + x[j] > 0`` adds 1 / C to x[j]'s gradient and takes it
    from x[y_k]'s."""
    nframe, dim = _rows(self)
    x = self.reshape(nframe, dim)
    t = target.reshape(nframe, dim)
    valid = (t != -1).cumprod(1) != 0                                     # the targets before the first -1
    tc = aten.where_ScalarOther(valid, t, 0)
    z = 1 - x.gather(1, tc).unsqueeze(2) + x.unsqueeze(1)                # (frame, target k, class j)
    active = (z > 0).logical_and(valid.unsqueeze(2)).logical_and(is_target.reshape(nframe, 1, dim) == 0)
    a = active.to(self.dtype)
    g = (a.sum(1) - aten.zeros_like(x).scatter_add(1, tc, a.sum(2))) / dim
    return (g * _frame_grad(grad_output, nframe, reduction)).reshape(self.shape)


def cosine_similarity(x1: Any, x2: Any, dim: Any = 1, eps: Any = 1e-08) -> Any:
    """``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))`` over ``dim`` (Distance.cpp's stable form): the norms
    are cloned and clamped in place with grad mode off, so the gradient flows through the unclamped norm."""
    common = promote_types(x1.dtype, x2.dtype)
    if not common.is_floating_point:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{scalar_type_name(common)}")
    x1 = x1 if x1.dtype.is_floating_point or x1.dtype.is_complex else x1.to(common)
    x2 = x2 if x2.dtype.is_floating_point or x2.dtype.is_complex else x2.to(common)
    if tuple(x1.shape) != tuple(x2.shape):
        shape = broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
        x1, x2 = x1.expand(shape), x2.expand(shape)
    n1 = aten.linalg_vector_norm(x1, 2, (dim,), True).clone()
    n2 = aten.linalg_vector_norm(x2, 2, (dim,), True).clone()
    enabled, _grad_state.enabled = _grad_state.enabled, False
    try:
        floor = aten.scalar_tensor(eps, dtype=float64, device=n1.device)
        n1.clamp_min_(floor)
        n2.clamp_min_(floor)
    finally:
        _grad_state.enabled = enabled
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Any, x2: Any, p: Any = 2, eps: Any = 1e-06, keepdim: Any = False) -> Any:
    """``norm(x1 - x2 + eps, p)`` over the last dimension of the broadcast inputs."""
    innermost = max(x1.dim(), x2.dim()) - 1
    return aten.norm_ScalarOpt_dim(x1 - x2 + eps, p, (innermost,), keepdim)
