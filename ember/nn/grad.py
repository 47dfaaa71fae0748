"""Gradients of convolutions with respect to their input or weight (``torch/nn/grad.py``), for code that writes
its own backward: ``conv2d_input(input_size, weight, grad_output, ...)`` is what autograd gives the input of
``conv2d`` for that ``grad_output``."""
from __future__ import annotations

from typing import Any

import ember

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _grad_of(conv: Any, which: str, size: Any, other: Any, grad_output: Any, stride: Any, padding: Any,
             dilation: Any, groups: int) -> Any:
    with ember.enable_grad():
        x = ember.zeros(tuple(size), dtype=grad_output.dtype, device=grad_output.device, requires_grad=True)
        if which == "input":
            out = conv(x, other.detach(), None, stride, padding, dilation, groups)
        else:
            out = conv(other.detach(), x, None, stride, padding, dilation, groups)
        (g,) = ember.autograd.grad(out, x, grad_output)
    return g


def conv1d_input(input_size: Any, weight: Any, grad_output: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1) -> Any:
    return _grad_of(ember.nn.functional.conv1d, "input", input_size, weight, grad_output, stride, padding, dilation,
                    groups)


def conv1d_weight(input: Any, weight_size: Any, grad_output: Any, stride: Any = 1, padding: Any = 0,  # noqa: A002
                  dilation: Any = 1, groups: int = 1) -> Any:
    return _grad_of(ember.nn.functional.conv1d, "weight", weight_size, input, grad_output, stride, padding,
                    dilation, groups)


def conv2d_input(input_size: Any, weight: Any, grad_output: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1) -> Any:
    return _grad_of(ember.nn.functional.conv2d, "input", input_size, weight, grad_output, stride, padding, dilation,
                    groups)


def conv2d_weight(input: Any, weight_size: Any, grad_output: Any, stride: Any = 1, padding: Any = 0,  # noqa: A002
                  dilation: Any = 1, groups: int = 1) -> Any:
    return _grad_of(ember.nn.functional.conv2d, "weight", weight_size, input, grad_output, stride, padding,
                    dilation, groups)


def conv3d_input(input_size: Any, weight: Any, grad_output: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1) -> Any:
    return _grad_of(ember.nn.functional.conv3d, "input", input_size, weight, grad_output, stride, padding, dilation,
                    groups)


def conv3d_weight(input: Any, weight_size: Any, grad_output: Any, stride: Any = 1, padding: Any = 0,  # noqa: A002
                  dilation: Any = 1, groups: int = 1) -> Any:
    return _grad_of(ember.nn.functional.conv3d, "weight", weight_size, input, grad_output, stride, padding,
                    dilation, groups)
