"""``LayerNorm``, ``GroupNorm``, ``RMSNorm``, ``LocalResponseNorm``, ``InstanceNorm1d/2d/3d``
(mirrors ``torch/nn/modules/normalization.py`` and ``instancenorm.py``)."""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

import numbers

import ember
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.batchnorm import _affine_parameters, _reset_affine
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter


if TYPE_CHECKING:
    from ember._tensor import Tensor


class LayerNorm(Module):
    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape: Any, eps: float = 1e-05, elementwise_affine: bool = True,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups: Any, num_channels: Any, eps: float = 1e-05, affine: bool = True,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, num_channels, affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape: Any, eps: Any = None, elementwise_affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if self.elementwise_affine:
            self.weight = Parameter(ember.empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Any:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


class _ResponseNormParams(Module):
    """The hyper-parameters both local response normalizations take (``size``, ``alpha``, ``beta``, ``k``)."""

    def __init__(self, size: Any, alpha: float = 0.0001, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def extra_repr(self) -> str:
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class LocalResponseNorm(_ResponseNormParams):
    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)


class _CrossMapLRN2dFunction(ember.autograd.Function):
    """The legacy (Lua Torch) cross-channel LRN with its own backward, as PyTorch keeps them: the forward's
    running window sum never drops channel 0 once it has entered (channels past ``pre_pad`` still count it), and the
    backward is the symmetric window's formula. Both reproduced, so values and gradients are PyTorch's."""

    @staticmethod
    def forward(ctx: Any, input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,  # noqa: A002
                k: float = 1) -> Any:
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        channels = input.size(1)
        pre_pad = int((size - 1) / 2 + 1)
        sums = (input * input).cumsum(1)
        c = ember.arange(channels, device=input.device)
        hi = (c + pre_pad - 1).clamp(max=channels - 1)
        lo = c - pre_pad
        dropped = sums.index_select(1, lo.clamp(min=0)) - sums[:, :1]
        keep = (lo >= 1).view(1, channels, 1, 1)
        scale = sums.index_select(1, hi) - ember.where(keep, dropped, ember.zeros_like(dropped))
        scale = scale * (alpha / size) + k
        output = ember.pow(scale, -beta) * input
        ctx.size, ctx.alpha, ctx.beta, ctx.scale = size, alpha, beta, scale
        ctx.save_for_backward(input, output)
        return output

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> Any:
        input, output = ctx.saved_tensors
        size, channels = ctx.size, input.size(1)
        inverse_pre_pad = int(size - (size - 1) / 2)
        ratio = grad_output * output / ctx.scale
        padded = F.pad(ratio, (0, 0, 0, 0, inverse_pre_pad, size - 1 - inverse_pre_pad))
        sums = F.pad(padded.cumsum(1), (0, 0, 0, 0, 1, 0))
        window = sums[:, size:size + channels] - sums[:, :channels]
        grad_input = ember.pow(ctx.scale, -ctx.beta) * grad_output \
            - (2 * ctx.alpha * ctx.beta / size) * input * window
        return grad_input, None, None, None, None


class CrossMapLRN2d(_ResponseNormParams):
    """Local response normalization across channels of a 4-D input, Lua Torch's legacy form (see
    ``LocalResponseNorm`` for the usual one)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__(size, alpha, beta, k)

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)
