"""``torch.nn.grad``: the gradients of a convolution with respect to its input and to its weight, as functions
(what a hand-written backward or a custom ``autograd.Function`` calls), over ``convolution_backward``."""
from __future__ import annotations

from typing import Any

import ember
from ember._generated import aten

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _tuple(v: Any, n: int) -> tuple[int, ...]:
    return tuple(v) if isinstance(v, (tuple, list)) else (int(v),) * n


def _input_grad(n: int, input_size: Any, weight: Any, grad_output: Any, stride: Any, padding: Any, dilation: Any,
                groups: int) -> Any:
    stand_in = ember.empty(tuple(input_size), dtype=grad_output.dtype, device=grad_output.device)
    grads = aten.convolution_backward(grad_output, stand_in, weight, None, _tuple(stride, n), _tuple(padding, n),
                                      _tuple(dilation, n), False, (0,) * n, groups, (True, False, False))
    return grads[0]


def _weight_grad(n: int, input: Any, weight_size: Any, grad_output: Any, stride: Any, padding: Any,  # noqa: A002
                 dilation: Any, groups: int) -> Any:
    weight = ember.empty(tuple(weight_size), dtype=input.dtype, device=input.device)
    grads = aten.convolution_backward(grad_output, input, weight, None, _tuple(stride, n), _tuple(padding, n),
                                      _tuple(dilation, n), False, (0,) * n, groups, (False, True, False))
    return grads[1]


def conv1d_input(input_size: Any, weight: Any, grad_output: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1) -> Any:
    """The gradient of ``conv1d`` with respect to an input of ``input_size``."""
    return _input_grad(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input: Any, weight_size: Any, grad_output: Any, stride: Any = 1, padding: Any = 0,  # noqa: A002
                  dilation: Any = 1, groups: int = 1) -> Any:
    """The gradient of ``conv1d`` with respect to a weight of ``weight_size``."""
    return _weight_grad(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size: Any, weight: Any, grad_output: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1) -> Any:
    return _input_grad(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input: Any, weight_size: Any, grad_output: Any, stride: Any = 1, padding: Any = 0,  # noqa: A002
                  dilation: Any = 1, groups: int = 1) -> Any:
    return _weight_grad(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size: Any, weight: Any, grad_output: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1) -> Any:
    return _input_grad(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input: Any, weight_size: Any, grad_output: Any, stride: Any = 1, padding: Any = 0,  # noqa: A002
                  dilation: Any = 1, groups: int = 1) -> Any:
    return _weight_grad(3, input, weight_size, grad_output, stride, padding, dilation, groups)
