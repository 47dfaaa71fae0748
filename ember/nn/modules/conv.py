"""``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d`` (mirrors ``torch/nn/modules/conv.py``)."""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

import math

import ember
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.module import Module
from ember.nn.modules.utils import _ntuple
from ember.nn.parameter import Parameter


if TYPE_CHECKING:
    from ember._tensor import Tensor


def _reverse_repeat_tuple(t: Any, n: Any) -> Any:
    return tuple(x for x in reversed(t) for _ in range(n))


class _ConvNd(Module):
    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
                     "out_channels", "kernel_size"]

    def __init__(self, in_channels: Any, out_channels: Any, kernel_size: Any, stride: Any, padding: Any,
                 dilation: Any, transposed: Any, output_padding: Any, groups: Any, bias: Any,
                 padding_mode: Any, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total_padding = d * (k - 1)
                    left_pad = total_padding // 2
                    self._reversed_padding_repeated_twice[2 * i] = left_pad
                    self._reversed_padding_repeated_twice[2 * i + 1] = total_padding - left_pad
        else:
            self._reversed_padding_repeated_twice = list(_reverse_repeat_tuple(self.padding, 2))
        if transposed:
            shape = (in_channels, out_channels // groups) + tuple(kernel_size)
        else:
            shape = (out_channels, in_channels // groups) + tuple(kernel_size)
        self.weight = Parameter(ember.empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state: Any) -> None:
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _Conv(_ConvNd):
    _nd = 2

    def __init__(self, in_channels: Any, out_channels: Any, kernel_size: Any, stride: int = 1,
                 padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = 'zeros', device: Any = None, dtype: Any = None) -> None:
        n = self._nd
        super().__init__(in_channels, out_channels, _ntuple(n)(kernel_size), _ntuple(n)(stride),
                         padding if isinstance(padding, str) else _ntuple(n)(padding), _ntuple(n)(dilation),
                         False, _ntuple(n)(0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Any) -> Any:  # noqa: A002
        conv = (F.conv1d, F.conv2d, F.conv3d)[self._nd - 1]
        if self.padding_mode != "zeros":
            return conv(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight, bias,
                        self.stride, _ntuple(self._nd)(0), self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    _nd = 1


class Conv2d(_Conv):
    _nd = 2


class Conv3d(_Conv):
    _nd = 3


class _ConvTransposeNd(_ConvNd):
    _nd = 2

    def __init__(self, in_channels: Any, out_channels: Any, kernel_size: Any, stride: int = 1,
                 padding: int = 0, output_padding: int = 0, groups: int = 1, bias: bool = True,
                 dilation: int = 1, padding_mode: str = 'zeros', device: Any = None, dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        n = self._nd
        super().__init__(in_channels, out_channels, _ntuple(n)(kernel_size), _ntuple(n)(stride), _ntuple(n)(padding),
                         _ntuple(n)(dilation), True, _ntuple(n)(output_padding), groups, bias, padding_mode, device,
                         dtype)

    def _output_padding(self, input: Tensor, output_size: Any) -> Any:  # noqa: A002
        if output_size is None:
            return self.output_padding
        n = self._nd
        output_size = list(output_size)[-n:]
        spatial = input.shape[input.dim() - n:]
        ret = []
        for d in range(n):
            min_size = ((spatial[d] - 1) * self.stride[d] - 2 * self.padding[d] + self.dilation[d]
                        * (self.kernel_size[d] - 1) + 1)
            max_size = min_size + self.stride[d] - 1
            if not (min_size <= output_size[d] <= max_size):
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from "
                                 f"{[min_size]} to {[max_size]} (for an input of {list(spatial)})")
            ret.append(output_size[d] - min_size)
        return tuple(ret)

    def forward(self, input: Tensor, output_size: Any = None) -> Any:  # noqa: A002
        op = self._output_padding(input, output_size)
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._nd - 1]
        return fn(input, self.weight, self.bias, self.stride, self.padding, op, self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    _nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    _nd = 2


class ConvTranspose3d(_ConvTransposeNd):
    _nd = 3


def __getattr__(name: str) -> Any:
    # PyTorch defines the lazy modules' base here; ember's lives in lazy.py (which imports this module)
    if name == "_LazyConvXdMixin":
        from ember.nn.modules.lazy import _LazyConvXdMixin
        return _LazyConvXdMixin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
