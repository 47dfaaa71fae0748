"""Pooling layers (mirrors ``torch/nn/modules/pooling.py``)."""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.modules.utils import _ntuple


if TYPE_CHECKING:
    from ember._tensor import Tensor


class _MaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: int = 0, dilation: int = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return ("kernel_size={kernel_size}, stride={stride}, padding={padding}, dilation={dilation}, "
                "ceil_mode={ceil_mode}").format(**self.__dict__)

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[self._nd - 1]
        return fn(input, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode,
                  return_indices=self.return_indices)


class MaxPool1d(_MaxPoolNd):
    _nd = 1


class MaxPool2d(_MaxPoolNd):
    _nd = 2


class MaxPool3d(_MaxPoolNd):
    _nd = 3


class _AvgPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: int = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: Any = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        if self._nd > 1:
            self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        if self._nd == 1:
            return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                self.count_include_pad)
        fn = F.avg_pool2d if self._nd == 2 else F.avg_pool3d
        return fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                  self.divisor_override)


class AvgPool1d(_AvgPoolNd):
    _nd = 1

    def __init__(self, kernel_size: Any, stride: Any = None, padding: int = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__(_ntuple(1)(kernel_size), _ntuple(1)(stride) if stride is not None else None,
                         _ntuple(1)(padding), ceil_mode, count_include_pad)


class AvgPool2d(_AvgPoolNd):
    _nd = 2


class AvgPool3d(_AvgPoolNd):
    _nd = 3


class _AdaptiveAvgPoolNd(Module):
    _nd = 2

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        fn = (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)[self._nd - 1]
        return fn(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    _nd = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    _nd = 2


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _nd = 3


class _AdaptiveMaxPoolNd(Module):
    _nd = 2

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        fn = (F.adaptive_max_pool1d, F.adaptive_max_pool2d, F.adaptive_max_pool3d)[self._nd - 1]
        return fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _nd = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _nd = 2


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _nd = 3


class _LPPoolNd(Module):
    _nd = 2

    def __init__(self, norm_type: Any, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return "norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, ceil_mode={ceil_mode}".format(
            **self.__dict__)

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        fn = {1: F.lp_pool1d, 2: F.lp_pool2d, 3: F.lp_pool3d}[self._nd]
        return fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool1d(_LPPoolNd):
    _nd = 1


class LPPool2d(_LPPoolNd):
    _nd = 2


class LPPool3d(_LPPoolNd):
    _nd = 3


class _MaxUnpoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: int = 0) -> None:
        super().__init__()
        n = self._nd
        self.kernel_size = _ntuple(n)(kernel_size)
        self.stride = _ntuple(n)(stride if stride is not None else kernel_size)
        self.padding = _ntuple(n)(padding)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Any:  # noqa: A002
        return F._max_unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size, self._nd)


class MaxUnpool1d(_MaxUnpoolNd):
    _nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    _nd = 2


class MaxUnpool3d(_MaxUnpoolNd):
    _nd = 3


class _FractionalMaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Any = None) -> None:
        super().__init__()
        n, name = self._nd, type(self).__name__
        self.kernel_size = _ntuple(n)(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(n)(output_size) if output_size is not None else None
        self.output_ratio = _ntuple(n)(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        fn = F.fractional_max_pool2d if self._nd == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                  _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Max pooling over pseudo-randomly placed ``kernel_size`` windows (Graham's fractional max-pooling)."""
    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _nd = 3
