"""``ember.nn.functional`` (mirrors ``torch/nn/functional.py``): the generated ``python_module: nn`` ops
plus the functions PyTorch writes in Python over ops (argument checks, reductions, defaults)."""
from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import ember
from ember.aten import torch_function as _torch_function
from ember.aten.torch_function import (handle_torch_function, has_torch_function,  # noqa: F401
                                       has_torch_function_unary, has_torch_function_variadic)
from ember._generated.functions import avg_pool1d, conv_tbc, pixel_shuffle, pixel_unshuffle  # noqa: F401
from ember._generated.nn_functional import *  # noqa: F401,F403
from ember._generated.nn_functional import avg_pool2d, avg_pool3d, linear  # noqa: F401
from ember._generated import aten

if TYPE_CHECKING:
    from ember._tensor import Tensor

def _tuple(v: Any, n: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(v) if len(v) != 1 else tuple(v) * n
    return (v,) * n


# ------------------------------------------------------------------------------ reductions of losses
def _reduction_enum(size_average: Any, reduce: Any) -> Any:
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  stacklevel=3)
    return ret


def _reduce(loss: Any, reduction: Any) -> Any:
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}  # at::Reduction, what the loss operators take


def _get_enum(reduction: Any) -> int:
    """PyTorch's ``_Reduction.get_enum``: the at::Reduction a loss operator takes."""
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated, please use reduction='mean' instead.", stacklevel=3)
        return 1
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


def _weighted_loss(errors: Any, weight: Any, input: Any, reduction: Any) -> Any:  # noqa: A002
    """The ``weight=`` path of l1_loss / mse_loss, as PyTorch's Python computes it: the mean divides by the sum
    of the weights."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    weighted = errors * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()
    if reduction == "mean":
        return weighted.sum() / weight.sum()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def _legacy(size_average: Any, reduce: Any, reduction: Any) -> Any:
    return _reduction_enum(size_average, reduce) if size_average is not None or reduce is not None else reduction


# ------------------------------------------------------------------------------ activations
def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:  # noqa: A002
    return aten.threshold_(input, threshold, value) if inplace else aten.threshold(input, threshold, value)


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """max(0, x) elementwise (in place with ``inplace=True``)."""
    return ember.relu_(input) if inplace else ember.relu(input)


def relu_(input: Tensor) -> Tensor:  # noqa: A002
    return input.relu_()


def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """1 / (1 + e^-x) elementwise (PyTorch keeps it here for compatibility; ``torch.sigmoid`` is the same)."""
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:  # noqa: A002
    """tanh(x) elementwise (PyTorch keeps it here for compatibility; ``torch.tanh`` is the same)."""
    return input.tanh()


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input: Tensor, min_val: Any = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return aten.hardtanh_(input, min_val, max_val) if inplace else aten.hardtanh(input, min_val, max_val)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    return aten.elu_(input, alpha) if inplace else aten.elu(input, alpha)


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``torch.selu``: elu with SELU's alpha and scale (EluBackward0, as PyTorch's composite)."""
    fn = aten.elu_ if inplace else aten.elu
    return fn(input, _SELU_ALPHA, _SELU_SCALE)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    return aten.celu_(input, alpha) if inplace else aten.celu(input, alpha)


# the in-place activations nn.functional also offers by name (``torch.celu_`` ...)
def selu_(input: Tensor) -> Tensor:  # noqa: A002
    return selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return aten.celu_(input, alpha)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:  # noqa: A002
    return aten.threshold_(input, threshold, value)


def rrelu_(input: Tensor, lower: Any = 1.0 / 8, upper: Any = 1.0 / 3, training: bool = False) -> Tensor:  # noqa: A002
    return aten.rrelu_(input, lower, upper, training)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:  # noqa: A002
    return aten.leaky_relu_(input, negative_slope) if inplace else aten.leaky_relu(input, negative_slope)


def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    return aten.prelu(input, weight)


def rrelu(input: Tensor, lower: Any = 1.0 / 8, upper: Any = 1.0 / 3, training: bool = False,  # noqa: A002
          inplace: bool = False) -> Tensor:
    return aten.rrelu_(input, lower, upper, training) if inplace else aten.rrelu(input, lower, upper, training)


def glu(input: Tensor, dim: Any = -1) -> Tensor:  # noqa: A002
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    return aten.glu(input, dim)


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    return aten.log_sigmoid(input)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    return aten.softplus(input, beta, threshold)


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    return input / (input.abs() + 1)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    return aten.softshrink(input, lambd)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    return aten.hardshrink(input, lambd)


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    return input - input.tanh()


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return aten.silu_(input) if inplace else aten.silu(input)


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return aten.mish_(input) if inplace else aten.mish(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return aten.hardsigmoid_(input) if inplace else aten.hardsigmoid(input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return aten.hardswish_(input) if inplace else aten.hardswish(input)


def _softmax_dim(ndim: Any) -> Any:
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X as an "
                  "argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:  # noqa: A002
    if dim is None:
        dim = _softmax_dim(input.dim())
    return input.softmax(dim, dtype=dtype)


def softmin(input: Tensor, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:  # noqa: A002
    if dim is None:
        dim = _softmax_dim(input.dim())
    return (-input).softmax(dim, dtype=dtype)


def log_softmax(input: Tensor, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:  # noqa: A002
    if dim is None:
        dim = _softmax_dim(input.dim())
    return input.log_softmax(dim, dtype=dtype)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: Any = -1) -> Tensor:
    gumbels = -(-ember.rand_like(logits).log()).log()  # -log of Exp(1) draws
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if hard:
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = ember.zeros_like(logits).scatter_(dim, index, 1.0)
        return y_hard - y_soft.detach() + y_soft
    return y_soft


# ------------------------------------------------------------------------------ linear
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError("bilinear(): input batch dimensions do not match: got " + str(list(input1.shape[:-1]))
                           + " and " + str(list(input2.shape[:-1])))
    out = ember.einsum("...i,oij,...j->...o", [input1, weight, input2])
    return out + bias if bias is not None else out


# ------------------------------------------------------------------------------ convolution
def _conv(input: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any,  # noqa: A002
          groups: Any, nd: Any, name: Any) -> Any:
    stride, dilation = list(_tuple(stride, nd)), list(_tuple(dilation, nd))
    if isinstance(padding, str):
        op = getattr(aten, f"{name}_padding")
        return op(input, weight, bias, stride, padding, dilation, groups)
    return getattr(aten, name)(input, weight, bias, stride, list(_tuple(padding, nd)), dilation, groups)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int = 1, padding: int = 0,  # noqa: A002
           dilation: int = 1, groups: int = 1) -> Tensor:
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int = 1, padding: int = 0,  # noqa: A002
           dilation: int = 1, groups: int = 1) -> Tensor:
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int = 1, padding: int = 0,  # noqa: A002
           dilation: int = 1, groups: int = 1) -> Tensor:
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_transpose(input: Any, weight: Any, bias: Any, stride: Any, padding: Any,  # noqa: A002
                    output_padding: Any, groups: Any, dilation: Any, nd: Any, name: Any) -> Any:
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input of "
                           f"size: {list(input.shape)}")
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    out = aten.convolution(x, weight, bias, _tuple(stride, nd), _tuple(padding, nd), _tuple(dilation, nd), True,
                             _tuple(output_padding, nd), groups)
    return out if batched else out.squeeze(0)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int = 1,  # noqa
                     padding: int = 0, output_padding: int = 0, groups: int = 1, dilation: int = 1) -> Tensor:
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                           "conv_transpose1d")


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int = 1,  # noqa
                     padding: int = 0, output_padding: int = 0, groups: int = 1, dilation: int = 1) -> Tensor:
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                           "conv_transpose2d")


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int = 1,  # noqa
                     padding: int = 0, output_padding: int = 0, groups: int = 1, dilation: int = 1) -> Tensor:
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                           "conv_transpose3d")


# ------------------------------------------------------------------------------ pooling
def _max_pool(input: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: Any,  # noqa: A002
              return_indices: Any, nd: Any) -> Any:
    k = _tuple(kernel_size, nd)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else _tuple(stride, nd)
    p, d = _tuple(padding, nd), _tuple(dilation, nd)
    if nd == 1:
        if input.dim() not in (2, 3):
            raise RuntimeError(f"max_pool1d() Expected 2D or 3D input tensor, but got {list(input.shape)}")
        v, i = aten.max_pool2d_with_indices(input.unsqueeze(-2), (1,) + k, (1,) + s, (0,) + p, (1,) + d, ceil_mode)
        v, i = v.squeeze(-2), i.squeeze(-2)
    elif nd == 2:
        v, i = aten.max_pool2d_with_indices(input, k, s, p, d, ceil_mode)
    else:
        v, i = aten.max_pool3d_with_indices(input, k, s, p, d, ceil_mode)
    return (v, i) if return_indices else v


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: int = 0, dilation: int = 1,  # noqa
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: int = 0, dilation: int = 1,  # noqa
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: int = 0, dilation: int = 1,  # noqa
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: int = 0,  # noqa: A002
                            dilation: int = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """(output, indices), whatever ``return_indices`` says (PyTorch's with-indices half of max_pool1d)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 1)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: int = 0,  # type: ignore[no-redef]  # noqa: A002,E501
                            dilation: int = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 2)


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: int = 0,  # type: ignore[no-redef]  # noqa: A002,E501
                            dilation: int = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 3)


def pdist(input: Tensor, p: float = 2) -> Tensor:  # noqa: A002
    """The p-norm distances between the rows of a 2-D input, pair by pair (i < j), row-major: the upper
    triangle of ``cdist(input, input, p)`` without its diagonal."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    return aten._pdist_forward(input.contiguous(), p)


def _list_with_default(out_size: Any, defaults: Any) -> Any:
    """PyTorch's ``_list_with_default``: None entries of an output size take the input's size."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    return aten.adaptive_avg_pool1d(input, _tuple(output_size, 1))


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    return aten.adaptive_avg_pool2d(input, _tuple(_list_with_default(output_size, input.shape), 2))


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    return aten.adaptive_avg_pool3d(input, _tuple(_list_with_default(output_size, input.shape), 3))


def _adaptive_max_pool(input: Tensor, output_size: Any, nd: int) -> Any:  # noqa: A002
    """(values, indices) of adaptive max pooling over the last ``nd`` dims (``None`` sizes keep the input's)."""
    size = _tuple(output_size, 1) if nd == 1 else _tuple(_list_with_default(output_size, input.shape), nd)
    return getattr(aten, f"adaptive_max_pool{nd}d")(input, size)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:  # noqa: A002
    out = _adaptive_max_pool(input, output_size, 1)
    return out if return_indices else out[0]


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:  # noqa: A002
    out = _adaptive_max_pool(input, output_size, 2)
    return out if return_indices else out[0]


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:  # noqa: A002
    out = _adaptive_max_pool(input, output_size, 3)
    return out if return_indices else out[0]


def _fractional_max_pool(input: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any,  # noqa: A002
                         return_indices: bool, _random_samples: Any, nd: int) -> Any:
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if isinstance(output_ratio, (tuple, list)) and len(output_ratio) > nd:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = _tuple(output_ratio, nd)
        output_size = [int(input.size(d - nd) * ratio[d]) for d in range(nd)]
    if _random_samples is None:
        n_batch = 1 if input.dim() == nd + 1 else input.size(0)
        _random_samples = ember.rand(n_batch, input.size(-nd - 1), nd, dtype=input.dtype, device=input.device)
    fn = aten.fractional_max_pool2d if nd == 2 else aten.fractional_max_pool3d
    out = fn(input, _tuple(kernel_size, nd), _tuple(output_size, nd), _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None,  # noqa: A002
                          output_ratio: Any = None, return_indices: bool = False, _random_samples: Any = None) -> Any:
    """Max pooling over windows placed pseudo-randomly (one random draw per plane and dim, ``ember.rand`` unless
    ``_random_samples`` is given), down to ``output_size`` or ``output_ratio`` of the input."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2)


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None,  # noqa: A002
                          output_ratio: Any = None, return_indices: bool = False, _random_samples: Any = None) -> Any:
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,  # noqa: A002
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Any = None) -> Any:
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, True, _random_samples, 2)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,  # noqa: A002
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Any = None) -> Any:
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, True, _random_samples, 3)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:  # noqa
    return _adaptive_max_pool(input, output_size, 1)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:  # noqa
    return _adaptive_max_pool(input, output_size, 2)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:  # noqa
    return _adaptive_max_pool(input, output_size, 3)


def lp_pool1d(input: Tensor, norm_type: Any, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * relu(out.abs())).mul(kernel_size).pow(1.0 / norm_type)


def lp_pool2d(input: Tensor, norm_type: Any, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    kw, kh = _tuple(kernel_size, 2)
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * relu(out.abs())).mul(kw * kh).pow(1.0 / norm_type)


def lp_pool3d(input: Tensor, norm_type: Any, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """The ``norm_type``-norm over each ``kernel_size`` window: ``(sum x**p)**(1/p)`` (through the average pool)."""
    kd, kw, kh = _tuple(kernel_size, 3)
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * relu(out.abs())).mul(kd * kw * kh).pow(1.0 / norm_type)


# ------------------------------------------------------------------------------ normalization
def _verify_batch_size(size: Any) -> None:
    """PyTorch's: training statistics need more than one value per channel."""
    prod = size[0]
    for s in size[2:]:
        prod *= s
    if prod == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def batch_norm(input: Tensor, running_mean: Tensor, running_var: Tensor, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1, eps: float = 1e-05) -> Tensor:
    if training and input.dim() >= 1:
        _verify_batch_size(input.shape)
    return ember.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
                            ember.backends.cudnn.enabled)


def _verify_spatial_size(size: Any) -> None:
    """PyTorch's: instance statistics need more than one spatial element."""
    if math.prod(size[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,  # noqa
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-05) -> Tensor:
    if use_input_stats:
        _verify_spatial_size(input.size())
    return aten.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, False)


def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-05) -> Tensor:
    return aten.layer_norm(input, tuple(normalized_shape), weight, bias, eps, ember.backends.cudnn.enabled)


def rms_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None, eps: Any = None) -> Tensor:
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return aten.rms_norm(input, tuple(normalized_shape), weight, eps)


def group_norm(input: Tensor, num_groups: Any, weight: Tensor | None = None, bias: Tensor | None = None,  # noqa: A002
               eps: float = 1e-05) -> Tensor:
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    _verify_batch_size([input.shape[0] * input.shape[1] // num_groups, num_groups] + list(input.shape[2:]))
    return aten.group_norm(input, num_groups, weight, bias, eps)


def local_response_norm(input: Tensor, size: Any, alpha: float = 0.0001, beta: float = 0.75, k: float = 1.0) -> Tensor:
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    div = input.mul(input).unsqueeze(1)
    if dim == 3:
        div = aten.constant_pad_nd(div, (0, 0, size // 2, (size - 1) // 2), 0)
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.size()
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = aten.constant_pad_nd(div, (0, 0, 0, 0, size // 2, (size - 1) // 2), 0)
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.view(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    r = input / denom
    return out.copy_(r) if out is not None else r


# ------------------------------------------------------------------------------ dropout
def _check_p(p: Any) -> Any:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    """PyTorch's CPU dropout: noise = bernoulli(1 - p) / (1 - p), output = input * noise."""
    _check_p(p)
    return aten.dropout_(input, p, training) if inplace else aten.dropout(input, p, training)


def _feature_dropout(input: Any, p: float, training: bool, inplace: bool, batched_ndim: int) -> Tensor:  # noqa: A002
    """dropout1d / dropout3d: an unbatched input gets a batch dimension for the feature dropout (in place:
    ``unsqueeze_`` and ``squeeze_`` on the caller's tensor itself, as PyTorch's)."""
    batched = input.dim() == batched_ndim
    if not batched:
        input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    result = aten.feature_dropout_(input, p, training) if inplace else aten.feature_dropout(input, p, training)
    if not batched:
        result = result.squeeze_(0) if inplace else result.squeeze(0)
    return result


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, 3)


def _warn_unusual_ndim(name: Any, inp_dim: Any, spatial: Any) -> Any:
    """dropout2d / dropout3d on an input that is neither batched nor unbatched (PyTorch's deprecation warning)."""
    if inp_dim not in (spatial + 1, spatial + 2):
        warnings.warn(f"{name}: Received a {inp_dim}-D input to {name}, which is deprecated and will result in an "
                      f"error in a future release. To retain the behavior and silence this warning, please use dropout "
                      f"instead. Note that {name} exists to provide channel-wise dropout on inputs with {spatial} "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension (i.e. {spatial + 1}D "
                      f"or {spatial + 2}D inputs).", stacklevel=3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    _check_p(p)
    _warn_unusual_ndim("dropout2d", input.dim(), 2)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=2)
    return aten.feature_dropout_(input, p, training) if inplace else aten.feature_dropout(input, p, training)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    _check_p(p)
    _warn_unusual_ndim("dropout3d", input.dim(), 3)
    return _feature_dropout(input, p, training, inplace, 5)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:  # noqa: A002
    _check_p(p)
    return aten.alpha_dropout_(input, p, training) if inplace else aten.alpha_dropout(input, p, training)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    _check_p(p)
    if inplace:
        return aten.feature_alpha_dropout_(input, p, training)
    return aten.feature_alpha_dropout(input, p, training)


# ------------------------------------------------------------------------------ embedding
def embedding(input: Tensor, weight: Tensor, padding_idx: Any = None, max_norm: Any = None,  # noqa: A002
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        input = input.contiguous()  # noqa: A001
        with ember.no_grad():
            aten.embedding_renorm_(weight, input, float(max_norm), float(norm_type))
    return aten.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    return aten.one_hot(tensor, num_classes)


# ------------------------------------------------------------------------------ padding and shapes
def pad(input: Tensor, pad: Any, mode: str = 'constant', value: float | None = None) -> Tensor:  # noqa: A002
    """``torch._C._nn.pad``: constant padding of any dims, reflect / replicate / circular of the last 1-3 dims."""
    return aten.pad(input, tuple(pad), mode, value)


def channel_shuffle(input: Tensor, groups: Any) -> Tensor:  # noqa: A002
    return aten.channel_shuffle(input, groups)


def native_channel_shuffle(input: Tensor, groups: Any) -> Tensor:  # noqa: A002
    return aten.native_channel_shuffle(input, groups)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-08) -> Tensor:
    return aten.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-06, keepdim: bool = False) -> Tensor:
    return aten.pairwise_distance(x1, x2, p, eps, keepdim)


# ------------------------------------------------------------------------------ losses
def _pointwise_loss(input: Any, target: Any, size_average: Any, reduce: Any, reduction: Any,  # noqa: A002
                    weight: Any, errors: Any, op: Any) -> Any:
    """l1_loss / mse_loss as PyTorch's Python writes them: warn on a size mismatch, broadcast, then either the
    weighted formula (``errors(x - t) * weight``) or the loss operator ``op`` with the reduction's enum."""
    _size_warning(input, target)
    reduction = _legacy(size_average, reduce, reduction)
    x, t = aten.broadcast_tensors([input, target])
    if weight is not None:
        return _weighted_loss(errors(x - t), weight, input, reduction)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return op(x, t, _REDUCTIONS[reduction])


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
            reduction: str = 'mean', weight: Tensor | None = None) -> Tensor:
    return _pointwise_loss(input, target, size_average, reduce, reduction, weight, lambda d: d.abs(), aten.l1_loss)


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
             reduction: str = 'mean', weight: Tensor | None = None) -> Tensor:
    return _pointwise_loss(input, target, size_average, reduce, reduction, weight, lambda d: d.pow(2), aten.mse_loss)


def _size_warning(input: Any, target: Any) -> Any:  # noqa: A002
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). This "
                      "will likely lead to incorrect results due to broadcasting. Please ensure they have the same "
                      "size.", stacklevel=3)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
                   reduction: str = 'mean', beta: float = 1.0) -> Tensor:
    _size_warning(input, target)
    reduction = _legacy(size_average, reduce, reduction)
    x, t = aten.broadcast_tensors([input, target])
    if beta == 0.0:
        return aten.l1_loss(x, t, _get_enum(reduction))
    return aten.smooth_l1_loss(x, t, _get_enum(reduction), beta)


def huber_loss(input: Tensor, target: Tensor, reduction: str = 'mean', delta: float = 1.0,  # noqa: A002
               weight: Tensor | None = None) -> Tensor:
    _size_warning(input, target)
    x, t = aten.broadcast_tensors([input, target])
    if weight is None:
        return aten.huber_loss(x, t, _get_enum(reduction), delta)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    weighted = aten.huber_loss(x, t, 0, delta) * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()
    if reduction == "mean":
        return weighted.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,  # noqa: A002
             ignore_index: Any = -100, reduce: Any = None, reduction: str = 'mean') -> Tensor:
    return aten.nll_loss_nd(input, target, weight, _get_enum(_legacy(size_average, reduce, reduction)), ignore_index)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,  # noqa: A002
                  ignore_index: Any = -100, reduce: Any = None, reduction: str = 'mean',
                  label_smoothing: float = 0.0) -> Tensor:
    return aten.cross_entropy_loss(input, target, weight, _get_enum(_legacy(size_average, reduce, reduction)),
                                   ignore_index, label_smoothing)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                         size_average: Any = None, reduce: Any = None, reduction: str = 'mean') -> Tensor:
    reduction_enum = _get_enum(_legacy(size_average, reduce, reduction))
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) "
                         "is deprecated. Please ensure they have the same size.")
    if weight is not None:
        weight = weight.expand(ember.broadcast_shapes(target.shape, weight.shape))
    return aten.binary_cross_entropy(input, target, weight, reduction_enum)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                                     size_average: Any = None, reduce: Any = None, reduction: str = 'mean',
                                     pos_weight: Tensor | None = None) -> Tensor:
    reduction_enum = _get_enum(_legacy(size_average, reduce, reduction))
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    return aten.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction_enum)


def kl_div(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
           reduction: str = 'mean', log_target: bool = False) -> Tensor:
    if size_average is not None or reduce is not None:
        reduction_enum = _get_enum(_reduction_enum(size_average, reduce))
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
        reduction_enum = _get_enum("sum" if reduction == "batchmean" else reduction)
    reduced = aten.kl_div(input, target, reduction_enum, log_target=log_target)
    if reduction == "batchmean" and input.dim() != 0:
        reduced = reduced / input.size()[0]
    return reduced


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,  # noqa
                     size_average: Any = None, eps: float = 1e-08, reduce: Any = None,
                     reduction: str = 'mean') -> Tensor:
    reduction = _legacy(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    return aten.poisson_nll_loss(input, target, log_input, full, eps, _get_enum(reduction))


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor, full: bool = False, eps: float = 1e-06,  # noqa: A002
                      reduction: str = 'mean') -> Tensor:
    if var.dim() == input.dim() - 1 and tuple(var.shape) == tuple(input.shape[:-1]):
        var = var.unsqueeze(-1)
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clamp(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
                     reduction: str = 'mean') -> Tensor:
    return aten.soft_margin_loss(input, target, _get_enum(_legacy(size_average, reduce, reduction)))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: Any = None, reduce: Any = None, reduction: str = 'mean') -> Tensor:
    reduction_enum = _get_enum(_legacy(size_average, reduce, reduction))
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return aten.margin_ranking_loss(input1, input2, target, margin, reduction_enum)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: Any = None,  # noqa: A002
                         reduce: Any = None, reduction: str = 'mean') -> Tensor:
    return aten.hinge_embedding_loss(input, target, margin, _get_enum(_legacy(size_average, reduce, reduction)))


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: int = 0,
                          size_average: Any = None, reduce: Any = None, reduction: str = 'mean') -> Tensor:
    return aten.cosine_embedding_loss(input1, input2, target, margin,
                                      _get_enum(_legacy(size_average, reduce, reduction)))


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                                size_average: Any = None, reduce: Any = None, reduction: str = 'mean') -> Tensor:
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / input.shape[-1]
    return _reduce(loss, _legacy(size_average, reduce, reduction))


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,  # noqa: A002
                      weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
                      reduction: str = 'mean') -> Tensor:
    reduction_enum = _get_enum(_legacy(size_average, reduce, reduction))
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    return aten.multi_margin_loss(input, target, p, margin, weight, reduction_enum)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
                           reduction: str = 'mean') -> Tensor:
    return aten.multilabel_margin_loss(input, target, _get_enum(_legacy(size_average, reduce, reduction)))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: int = 2, eps: float = 1e-06, swap: bool = False, size_average: Any = None,
                        reduce: Any = None, reduction: str = 'mean') -> Tensor:
    reduction_enum = _get_enum(_legacy(size_average, reduce, reduction))
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return aten.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction_enum)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Any = None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = 'mean') -> Tensor:
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = ember.minimum(d_neg, dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


# ------------------------------------------------------------------------------ attention
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: Any = None, enable_gqa: bool = False) -> Tensor:
    return aten.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                                             enable_gqa=enable_gqa)


def _none_or_dtype(input: Any) -> Any:  # noqa: A002
    if input is None:
        return None
    if isinstance(input, ember.Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _canonical_mask(mask: Any, mask_name: Any, other_type: Any, other_name: Any, target_type: Any,
                    check_other: bool = True) -> Any:
    """A bool mask (True = not allowed to attend) becomes a float mask with -inf there; float masks stay."""
    if mask is None:
        return None
    if mask.dtype == ember.bool:
        return ember.zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    return mask


def _mha_shape_check(query: Any, key: Any, value: Any, key_padding_mask: Any,  # noqa: A002
                     attn_mask: Any, num_heads: Any) -> Any:
    """Whether the input is batched (3-D) or not (2-D), with PyTorch's checks."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != (num_heads, query.shape[0], key.shape[0]):
                raise AssertionError(f"Expected `attn_mask` shape to be {(num_heads, query.shape[0], key.shape[0])} "
                                     f"but got {attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                         "tensor")


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: Any,
                                 num_heads: Any, in_proj_weight: Tensor, in_proj_bias: Tensor,
                                 bias_k: Tensor, bias_v: Tensor, add_zero_attn: Any, dropout_p: Any,
                                 out_proj_weight: Tensor, out_proj_bias: Tensor, training: bool = True,
                                 key_padding_mask: Tensor | None = None, need_weights: bool = True,
                                 attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
                                 q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
                                 v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
                                 static_v: Tensor | None = None, average_attn_weights: bool = True,
                                 is_causal: bool = False) -> Any:
    """Multi-head attention over (L, N, E) inputs (or unbatched (L, E)), as ``torch.nn.functional`` computes
    it: in-projection, heads, scaled dot products with masks, softmax, dropout, out-projection."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask",
                                       query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
        b_q, b_k, b_v = in_proj_bias.chunk(3) if in_proj_bias is not None else (None, None, None)
        q, k, v = linear(query, q_proj_weight, b_q), linear(key, k_proj_weight, b_k), linear(value, v_proj_weight, b_v)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        if query is key and key is value:
            q, k, v = linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
        else:
            w_q, w_k, w_v = in_proj_weight.chunk(3)
            b_q, b_k, b_v = in_proj_bias.chunk(3) if in_proj_bias is not None else (None, None, None)
            q, k, v = linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key/value.")
        k = ember.cat([k, bias_k.repeat(1, bsz, 1)])
        v = ember.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = (k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None else static_k)
    v = (v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None else static_v)
    if add_zero_attn:
        zshape = (bsz * num_heads, 1, head_dim)
        k = ember.cat([k, ember.zeros(zshape, dtype=k.dtype, device=k.device)], dim=1)
        v = ember.cat([v, ember.zeros(zshape, dtype=v.dtype, device=v.device)], dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.size(1)
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{key_padding_mask.shape}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        if attn_mask is not None:
            w = ember.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            w = ember.bmm(q_scaled, k.transpose(-2, -1))
        w = softmax(w, dim=-1)
        if dropout_p > 0.0:
            w = dropout(w, p=dropout_p)
        out = ember.bmm(w, v)
        out = out.transpose(0, 1).contiguous().reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
        w = w.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            w = w.mean(dim=1)
        if not is_batched:
            out, w = out.squeeze(1), w.squeeze(0)
        return out, w
    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).contiguous().reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None


# ------------------------------------------------------------------------------ interpolation
_INTERP_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_UPSAMPLE_OPS = {("nearest", 1): "upsample_nearest1d", ("nearest", 2): "upsample_nearest2d",
                 ("nearest", 3): "upsample_nearest3d", ("nearest-exact", 1): "_upsample_nearest_exact1d",
                 ("nearest-exact", 2): "_upsample_nearest_exact2d", ("nearest-exact", 3): "_upsample_nearest_exact3d",
                 ("linear", 1): "upsample_linear1d", ("bilinear", 2): "upsample_bilinear2d",
                 ("bicubic", 2): "upsample_bicubic2d", ("trilinear", 3): "upsample_trilinear3d"}


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = 'nearest',  # noqa: A002
                align_corners: Any = None, recompute_scale_factor: Any = None, antialias: bool = False) -> Tensor:
    """PyTorch's argument handling, then the ``upsample_*`` operator of the mode (``.vec`` overloads: an output size
    or per-dim scale factors) or ``adaptive_avg_pool*d`` for ``area``."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError("Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                                 "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                                 "(o1, o2, ...,oK) format.")
            if not all(isinstance(v, int) or (isinstance(v, ember.Tensor) and not v.dtype.is_floating_point)
                       for v in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                                f"Tuple[int, int, int], but got size with types {[type(v) for v in size]}")
            output_size = [int(v) for v in size]
        else:
            output_size = [int(size)] * dim
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError("Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape "
                                 f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                                 "scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = [float(v) for v in scale_factor]
        else:
            scale_factors = [float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor is not None and recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor is not None and recompute_scale_factor:
        output_size = [math.floor(float(input.size(i + 2)) * scale_factors[i]) for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    if mode == "lanczos" and input.dim() == 4:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if antialias:     # filtered resampling (ember/aten/kernels/resample.py)
        return getattr(aten, f"_upsample_{mode}2d_aa_vec")(input, output_size, align_corners, scale_factors)
    if mode == "area" and input.dim() in (3, 4, 5):
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[dim - 1](input, output_size)
    op = _UPSAMPLE_OPS.get((mode, dim))
    if op is None:
        if input.dim() in (3, 4, 5) and mode in _MODE_DIMS:
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {_MODE_DIMS[mode] + 2}D input")
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: {_INTERP_MODES} (got {mode})")
    fn = getattr(aten, op + "_vec")
    if mode in _MODE_DIMS:
        return fn(input, output_size, align_corners, scale_factors)
    return fn(input, output_size, scale_factors)


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = 'nearest',  # noqa: A002
             align_corners: Any = None) -> Tensor:
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:  # noqa: A002
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:  # noqa: A002
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ------------------------------------------------------------------------------ unfold / fold
def unfold(input: Tensor, kernel_size: Any, dilation: int = 1, padding: int = 0, stride: int = 1) -> Tensor:
    """Sliding local blocks: ``(N, C, H, W) -> (N, C * kh * kw, L)`` (``im2col``)."""
    return aten.im2col(input, _tuple(kernel_size, 2), _tuple(dilation, 2), _tuple(padding, 2), _tuple(stride, 2))


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: int = 1, padding: int = 0,  # noqa: A002
         stride: int = 1) -> Tensor:
    """Sums sliding local blocks back into an image: ``(N, C * kh * kw, L) -> (N, C, H, W)`` (``col2im``)."""
    return aten.col2im(input, _tuple(output_size, 2), _tuple(kernel_size, 2), _tuple(dilation, 2), _tuple(padding, 2),
                       _tuple(stride, 2))


# ------------------------------------------------------------------------------ max unpooling
def _max_unpool(input: Any, indices: Any, kernel_size: Any, stride: Any, padding: Any,  # noqa: A002
                output_size: Any, nd: Any) -> Any:
    k = _tuple(kernel_size, nd)
    s = _tuple(stride if stride is not None else kernel_size, nd)
    p = _tuple(padding, nd)
    default = [(input.size(input.dim() - nd + i) - 1) * s[i] + k[i] - 2 * p[i] for i in range(nd)]
    if output_size is None:
        out = default
    else:
        out = list(output_size)
        if len(out) == nd + 2:
            out = out[2:]
        if len(out) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                             f"length of '{len(out)}'")
        for i in range(nd):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < out[i] < hi:
                raise ValueError(f'invalid output_size "{tuple(out)}" (dim {i} must be between {lo} and {hi})')
    if nd == 1:  # as PyTorch's: a unit width, then max_unpool2d
        return aten.max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1), (out[0], 1)).squeeze(-1)
    if nd == 2:
        return aten.max_unpool2d(input, indices, tuple(out))
    return aten.max_unpool3d(input, indices, tuple(out), tuple(s), tuple(p))


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: int = 0,  # noqa: A002
                 output_size: Any = None) -> Tensor:
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: int = 0,  # noqa: A002
                 output_size: Any = None) -> Tensor:
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: int = 0,  # noqa: A002
                 output_size: Any = None) -> Tensor:
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


# ------------------------------------------------------------------------------ embedding bags
def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: Any = None,  # noqa: A002
                  norm_type: int = 2, scale_grad_by_freq: bool = False, mode: str = 'mean',
                  sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False, padding_idx: Any = None) -> Tensor:
    """Sums, means or maxes of bags of embeddings: bags are the rows of a 2-D ``input``, or the slices of a
    1-D ``input`` starting at ``offsets``; entries equal to ``padding_idx`` are left out of their bag."""
    if weight.dtype == ember.int64 and input.dtype.is_floating_point:
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                      "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                      stacklevel=2)
        weight, input = input, weight  # noqa: A001
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, then "
                         f"it must have the same shape as the input ({tuple(input.shape)})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        offsets = ember.arange(0, input.numel(), input.size(1), dtype=input.dtype, device=input.device)
        include_last_offset = False
        input = input.reshape(-1)  # noqa: A001
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in _BAG_MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        embedding(input, weight, max_norm=max_norm, norm_type=norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    return aten.embedding_bag_padding_idx(weight, input, offsets, scale_grad_by_freq, _BAG_MODES[mode], sparse,
                                          per_sample_weights, include_last_offset, padding_idx)[0]


_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}


# ------------------------------------------------------------------------------ spatial transformers
def _grid_align_default(align_corners: Any) -> Any:
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.", stacklevel=3)
        return False
    return align_corners


def affine_grid(theta: Tensor, size: Any, align_corners: Any = None) -> Tensor:
    """Sampling grids ``(N, H, W, 2)`` (or ``(N, D, H, W, 3)``) of the affine maps ``theta`` applied to the
    normalised output coordinates in ``[-1, 1]``."""
    align_corners = _grid_align_default(align_corners)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation of "
                      "affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return aten.affine_grid_generator(theta, size, align_corners)


def grid_sample(input: Tensor, grid: Tensor, mode: str = 'bilinear', padding_mode: str = 'zeros',  # noqa: A002
                align_corners: Any = None) -> Tensor:
    """Samples ``input`` (N, C, H, W) [or (N, C, D, H, W)] at the normalised positions ``grid`` (N, Ho, Wo, 2)
    [(N, Do, Ho, Wo, 3)], with bilinear (trilinear) or nearest interpolation and zeros / border / reflection
    padding, as PyTorch's grid sampler computes it; differentiable in both."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    align_corners = _grid_align_default(align_corners)
    return aten.grid_sampler(input, grid, ("bilinear", "nearest", "bicubic").index(mode),
                             ("zeros", "border", "reflection").index(padding_mode), align_corners)


# ------------------------------------------------------------------------------ CTC
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor,  # noqa: A002
             blank: int = 0, reduction: str = 'mean', zero_infinity: bool = False) -> Tensor:
    """Connectionist Temporal Classification loss (Graves et al. 2006): the ``ctc_loss`` operator (``_ctc_loss``'s
    alpha recursion; its backward is PyTorch's gradient, the one with respect to the logits of a log_softmax)."""
    return ember.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _get_enum(reduction),
                          zero_infinity)


# helpers PyTorch's nn.functional exposes: the Tensor class, nn.grad, and the TorchScript-era argument helpers
from ember._tensor import Tensor  # noqa: E402,F401
from ember.nn import grad  # noqa: E402,F401


class _BroadcastingListCls:
    """``BroadcastingList2[int]`` in an annotation: an int or a list of two (what TorchScript broadcast)."""

    def __getitem__(self, types: Any) -> None:
        return None


BroadcastingList1 = BroadcastingList2 = BroadcastingList3 = _BroadcastingListCls()
boolean_dispatched: dict = {}


def assert_int_or_pair(arg, arg_name, message):
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """A function calling ``if_true`` or ``if_false`` by a boolean argument (``arg_name``, or positional
    ``arg_index``; ``default`` when absent), as ``max_pool2d``'s ``return_indices`` chooses; one of the two may
    carry the docstring."""
    def fn(*args, **kwargs):
        flag = kwargs[arg_name] if arg_name in kwargs else args[arg_index] if arg_index < len(args) else default
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    if if_true.__doc__ is None and if_false.__doc__ is not None:
        if_true.__doc__ = if_false.__doc__
    elif if_false.__doc__ is None and if_true.__doc__ is not None:
        if_false.__doc__ = if_true.__doc__
    elif if_false.__doc__ is not None and if_true.__doc__ is not None:
        raise RuntimeError("only one function can have a docstring")
    fn.__doc__ = if_true.__doc__
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    boolean_dispatched[fn] = {"if_true": if_true, "if_false": if_false, "index": arg_index, "default": default,
                              "arg_name": arg_name}
    return fn


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",  # noqa: A002
                         ignore_index=None, label_smoothing=0.0, options=None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``; with ``options`` (a
    ``nn.LinearCrossEntropyOptions``) computed a batch chunk at a time, without holding the whole logits. A
    ``linear_weight`` of shape (C, d_1, ..., d_K, in_features) gives the K-dimensional loss."""
    import math as _math
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    num_batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not num_batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires "
                           f"batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*num_batches, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    chunkable = (not out_features and reduction in ("mean", "sum", "none") and label_smoothing == 0.0
                 and target.dtype == ember.int64)
    if options is not None and not chunkable:
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
                      "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, out_features == (). Got "
                      f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                      f"out_features={out_features}, tracing=False, linear_bias.shape="
                      f"{tuple(linear_bias.shape) if linear_bias is not None else None}.", stacklevel=2)
    if options is not None and chunkable:
        from ember.nn.modules.linear_cross_entropy import chunked
        batched = input.dim() == 2
        x, t = (input, target) if batched else (input.unsqueeze(0), target.unsqueeze(0))
        resolved = options._adjust(num_batches=x.shape[0], in_features=in_features, num_classes=num_classes,
                                   dtype=x.dtype, device=x.device)
        result = chunked(x, linear_weight, t, linear_bias, weight, reduction, ignore_index, resolved)
        return result if batched else result.squeeze(0)
    if out_features:
        rows = _math.prod(out_features) * num_classes
        linear_weight = linear_weight.reshape((rows, in_features))
        linear_bias = None if linear_bias is None else linear_bias.reshape(rows)
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                         label_smoothing=label_smoothing)


# the functions PyTorch's nn.functional takes from C (torch._C._nn or torch.*): __torch_function__ sees their
# arguments as the caller gave them
_C_FUNCTIONS = frozenset(("adaptive_avg_pool1d", "bilinear", "celu_", "channel_shuffle", "conv1d", "conv2d", "conv3d",
                          "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "cosine_similarity",
                          "hardshrink", "logsigmoid", "native_channel_shuffle", "one_hot", "pairwise_distance", "pdist",
                          "prelu", "relu_", "rrelu_", "scaled_dot_product_attention", "selu_", "softplus",
                          "softshrink", "threshold_"))
# Note [Keeping __torch_function__ off the path of plain tensors]
_torch_function.make_module_overridable(globals(), _C_FUNCTIONS)
# the names a torch function mode reads from ``func.__name__``: PyTorch's C function and its Python ``_threshold``
logsigmoid.__name__ = logsigmoid.__qualname__ = "log_sigmoid"
threshold.__name__ = threshold.__qualname__ = "_threshold"


def _boolean_dispatch(if_true: Any, if_false: Any, arg_index: int, name: str) -> Any:
    """PyTorch's ``boolean_dispatch``: ``return_indices`` picks the with-indices function or the plain one before a
    ``__torch_function__`` handler is asked, so a mode sees the one that runs (``max_pool2d_with_indices`` when
    indices are asked for)."""
    def fn(*args: Any, **kwargs: Any) -> Any:
        flag = kwargs["return_indices"] if "return_indices" in kwargs else \
            (args[arg_index] if len(args) > arg_index else False)
        return (if_true if flag else plain)(*args, **kwargs)
    # the plain half hands handlers the public function itself (fx records ``F.max_pool2d`` as the target)
    plain = _torch_function.overridable(getattr(if_false, "__wrapped__", if_false), report_as=fn)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = if_false.__doc__
    return fn


max_pool1d = _boolean_dispatch(max_pool1d_with_indices, max_pool1d, 6, "max_pool1d")
max_pool2d = _boolean_dispatch(max_pool2d_with_indices, max_pool2d, 6, "max_pool2d")
max_pool3d = _boolean_dispatch(max_pool3d_with_indices, max_pool3d, 6, "max_pool3d")
adaptive_max_pool1d = _boolean_dispatch(adaptive_max_pool1d_with_indices, adaptive_max_pool1d, 2, "adaptive_max_pool1d")
adaptive_max_pool2d = _boolean_dispatch(adaptive_max_pool2d_with_indices, adaptive_max_pool2d, 2, "adaptive_max_pool2d")
adaptive_max_pool3d = _boolean_dispatch(adaptive_max_pool3d_with_indices, adaptive_max_pool3d, 2, "adaptive_max_pool3d")
fractional_max_pool2d = _boolean_dispatch(fractional_max_pool2d_with_indices, fractional_max_pool2d, 4,
                                          "fractional_max_pool2d")
fractional_max_pool3d = _boolean_dispatch(fractional_max_pool3d_with_indices, fractional_max_pool3d, 4,
                                          "fractional_max_pool3d")
