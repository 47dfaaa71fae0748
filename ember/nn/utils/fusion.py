"""Folding an eval-mode BatchNorm into the convolution or linear layer before it (``torch/nn/utils/fusion.py``):
``bn(conv(x)) == fused(x)`` with ``w' = w * gamma / sqrt(var + eps)`` (per output channel) and
``b' = (b - mean) * gamma / sqrt(var + eps) + beta``."""
from __future__ import annotations

import copy
from typing import Any

import ember

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv: Any, bn: Any, transpose: bool = False) -> Any:
    """A copy of ``conv`` computing ``bn(conv(x))`` (both in eval mode; ``transpose`` for ConvTranspose)."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must be set (track_running_stats=True)")
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_conv_bn_weights(conv_w: Any, conv_b: Any, bn_rm: Any, bn_rv: Any, bn_eps: float, bn_w: Any, bn_b: Any,
                         transpose: bool = False) -> tuple[Any, Any]:
    """The fused ``(weight, bias)`` Parameters, in the convolution's dtypes."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    conv_b = ember.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = ember.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = ember.zeros_like(bn_rm) if bn_b is None else bn_b
    scale = bn_w * ember.rsqrt(bn_rv + bn_eps)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    w = (conv_w * scale.reshape(shape)).to(dtype=w_dtype)
    b = ((conv_b - bn_rm) * scale + bn_b).to(dtype=b_dtype)
    return ember.nn.Parameter(w, conv_w.requires_grad), ember.nn.Parameter(b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear: Any, bn: Any) -> Any:
    """A copy of ``linear`` computing ``bn(linear(x))`` (both in eval mode)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise AssertionError("To fuse, linear.out_features == bn.num_features or bn.num_features == 1")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must be set (track_running_stats=True)")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w: Any, linear_b: Any, bn_rm: Any, bn_rv: Any, bn_eps: float, bn_w: Any,
                           bn_b: Any) -> tuple[Any, Any]:
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    linear_b = ember.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * ember.rsqrt(bn_rv + bn_eps)
    w = linear_w * scale.unsqueeze(-1).to(dtype=w_dtype)
    b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=b_dtype)
    return ember.nn.Parameter(w, linear_w.requires_grad), ember.nn.Parameter(b, linear_b.requires_grad)
