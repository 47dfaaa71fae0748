"""Observers (mirrors ``torch/ao/quantization/observer.py``): modules that watch the tensors flowing through them
and choose quantization parameters (scale, zero point) for them.

Note [Choosing quantization parameters]
An affine observer maps ``[min(min_val, 0), max(max_val, 0)]`` onto ``[quant_min, quant_max]``:
``scale = (max - min) / (quant_max - quant_min)`` (at least ``eps``), ``zero_point = quant_min - round(min /
scale)`` clamped to the range. A symmetric one centres the range on zero: ``scale = max(-min, max) / ((quant_max -
quant_min) / 2)`` and the zero point is 0 (128 for unsigned types). Minimum and maximum are the running extremes
(``MinMaxObserver``), their exponential moving averages (``MovingAverage*``), per channel (``PerChannel*``), or the
range a histogram search finds that minimises the quantization error (``HistogramObserver``). All of it is written
in ember ops on the observers' buffers, so they save and load with ``state_dict`` as PyTorch's do.
"""
from __future__ import annotations

from typing import Any

import functools
import warnings

import ember
from ember import nn
from ember.nn.modules.module import Module
from ember.ao.quantization.utils import (calculate_qmin_qmax, check_min_max_valid, is_per_channel, is_per_tensor,
                                         validate_qmin_qmax)

__all__ = ["ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver", "MovingAverageMinMaxObserver",
           "PerChannelMinMaxObserver", "MovingAveragePerChannelMinMaxObserver", "HistogramObserver",
           "PlaceholderObserver", "NoopObserver", "default_observer", "default_placeholder_observer",
           "default_weight_observer", "default_histogram_observer", "default_per_channel_weight_observer",
           "default_dynamic_quant_observer", "default_float_qparams_observer", "get_observer_state_dict"]

_EPS = float(ember.finfo(ember.float32).eps)


class _PartialWrapper:
    """``Observer.with_args(...)``: a constructor with some arguments bound (a ``functools.partial`` that can bind
    more)."""

    def __init__(self, p: Any) -> None:
        self.p = p
        self.callable_args: dict[str, Any] = {}

    def __call__(self, *args: Any, **keywords: Any) -> Any:
        for name, make in self.callable_args.items():
            if name not in keywords:
                keywords = {**keywords, name: make()}
        return self.p(*args, **keywords)

    def __repr__(self) -> str:
        return self.p.__repr__() + self.callable_args.__repr__()

    def with_args(self, **kwargs: Any) -> _PartialWrapper:
        return _with_args(self, **kwargs)

    def with_callable_args(self, **kwargs: Any) -> _PartialWrapper:
        result = _PartialWrapper(p=self.p)
        result.callable_args = {**self.callable_args, **kwargs}
        return result


def _with_args(cls_or_self: Any, **kwargs: Any) -> _PartialWrapper:
    return _PartialWrapper(functools.partial(cls_or_self, **kwargs))


def _with_callable_args(cls_or_self: Any, **kwargs: Any) -> _PartialWrapper:
    return _PartialWrapper(functools.partial(cls_or_self)).with_callable_args(**kwargs)


class ObserverBase(Module):
    """An observer: ``forward`` records statistics of its input and returns it; ``calculate_qparams`` answers
    (scale, zero_point)."""

    def __init__(self, dtype: Any, is_dynamic: bool = False) -> None:
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    def forward(self, x: Any) -> Any:
        raise NotImplementedError

    def calculate_qparams(self) -> Any:
        raise NotImplementedError

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


_ALLOWED_DTYPES = ("qint8", "quint8", "qint32", "int8", "uint8", "int16", "int32", "uint16", "float8_e5m2",
                   "float8_e4m3fn", "quint4x2")


class UniformQuantizationObserverBase(ObserverBase):
    """The affine and symmetric parameter choice shared by the observers (Note [Choosing quantization
    parameters])."""

    _version = 3

    def __init__(self, dtype: Any = ember.quint8, qscheme: Any = ember.per_tensor_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None, factory_kwargs: Any = None,
                 eps: float = _EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        factory_kwargs = nn.factory_kwargs(factory_kwargs)
        super().__init__(dtype=dtype, is_dynamic=is_dynamic, **kwargs)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for observers.                     "
                          "reduce_range will be deprecated in a future release of PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        self.register_buffer("eps", ember.tensor([eps], **factory_kwargs))
        if qscheme not in (ember.per_tensor_affine, ember.per_tensor_symmetric, ember.per_channel_affine,
                           ember.per_channel_symmetric, ember.per_channel_affine_float_qparams):
            raise AssertionError("Default Observer only works for per_tensor_affine, per_tensor_symmetric, "
                                 "per_channel_affine, per_channel_symmetric and per_channel_float_qparams "
                                 "quantization scheme")
        if str(self.dtype).split(".")[-1] not in _ALLOWED_DTYPES:
            raise AssertionError(f"Default Observer only works for {_ALLOWED_DTYPES} data type")
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange:
            validate_qmin_qmax(quant_min, quant_max)  # type: ignore[arg-type]
        self.quant_min, self.quant_max = calculate_qmin_qmax(quant_min, quant_max, self.has_customized_qrange,
                                                             self.dtype, self.reduce_range)

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: Any, strict: bool,
                              missing_keys: Any, unexpected_keys: Any, error_msgs: Any) -> None:
        version = local_metadata.get("version", None)
        if version is None or version == 1:
            state_dict[prefix + "eps"] = ember.tensor([_EPS])
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def _calculate_qparams(self, min_val: Any, max_val: Any) -> tuple[Any, Any]:
        if not check_min_max_valid(min_val, max_val):
            return ember.tensor([1.0], device=min_val.device.type), ember.tensor([0], device=min_val.device.type)
        quant_min, quant_max = self.quant_min, self.quant_max
        min_val_neg = ember.min(min_val, ember.zeros_like(min_val))
        max_val_pos = ember.max(max_val, ember.zeros_like(max_val))
        device = min_val_neg.device
        scale = ember.ones(min_val_neg.size(), dtype=ember.float32, device=device)
        zero_point = ember.zeros(min_val_neg.size(), dtype=ember.int64, device=device)
        if self.qscheme in (ember.per_tensor_symmetric, ember.per_channel_symmetric):
            max_val_pos = ember.max(-min_val_neg, max_val_pos)
            scale = max_val_pos / (float(quant_max - quant_min) / 2)
            scale = ember.max(scale, self.eps)
            if self.dtype in (ember.quint8, ember.uint8):
                mid = (quant_min + quant_max) // 2 if self.has_customized_qrange else 128
                zero_point = zero_point.new_full(zero_point.size(), mid)
            elif self.dtype is ember.uint16:
                zero_point = zero_point.new_full(zero_point.size(), 2 ** 15)
        elif self.qscheme is ember.per_channel_affine_float_qparams:
            scale = (max_val - min_val) / float(quant_max - quant_min)
            scale = ember.where(scale > self.eps, scale, ember.ones_like(scale))
            zero_point = -1 * min_val / scale
        else:
            scale = (max_val_pos - min_val_neg) / float(quant_max - quant_min)
            scale = ember.max(scale, self.eps)
            zero_point = quant_min - ember.round(min_val_neg / scale).to(ember.int)
            zero_point = ember.clamp(zero_point, quant_min, quant_max)
        if len(scale.shape) == 0:
            scale = ember.tensor([float(scale)], dtype=scale.dtype, device=device)
        if len(zero_point.shape) == 0:
            zero_point = ember.tensor([int(zero_point)], dtype=zero_point.dtype, device=device)
            if self.qscheme is ember.per_channel_affine_float_qparams:
                zero_point = ember.tensor([float(zero_point)], dtype=zero_point.dtype, device=device)
        return scale, zero_point

    def reset_min_max_vals(self) -> None:
        raise NotImplementedError("Cannot reset min/max values in the given observer.")


class MinMaxObserver(UniformQuantizationObserverBase):
    """Per-tensor parameters from the running minimum and maximum.

    Args:
        dtype: the quantized dtype (``ember.quint8`` by default).
        qscheme: ``ember.per_tensor_affine`` or ``ember.per_tensor_symmetric``.
        reduce_range: halve the range (7 bits), for x86 kernels that accumulate in 16 bits.
        quant_min, quant_max: a range of your own.
        eps: the smallest scale.
    """

    def __init__(self, dtype: Any = ember.quint8, qscheme: Any = ember.per_tensor_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None, factory_kwargs: Any = None,
                 eps: float = _EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        if not is_per_tensor(qscheme):
            raise NotImplementedError("MinMaxObserver's qscheme only support torch.per_tensor_symmetric                "
                                      "     and torch.per_tensor_affine.")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        factory_kwargs = nn.factory_kwargs(factory_kwargs)
        self.register_buffer("min_val", ember.tensor(float("inf"), **factory_kwargs))
        self.register_buffer("max_val", ember.tensor(float("-inf"), **factory_kwargs))
        if self.qscheme is ember.per_tensor_symmetric and self.reduce_range and self.dtype is ember.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric                                        "
                                      "quantization for quint8")

    def forward(self, x_orig: Any) -> Any:
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        min_val_cur, max_val_cur = ember.aminmax(x)
        self.min_val.copy_(ember.min(min_val_cur, self.min_val))
        self.max_val.copy_(ember.max(max_val_cur, self.max_val))
        return x_orig

    def calculate_qparams(self) -> tuple[Any, Any]:
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self) -> None:
        self.min_val.copy_(ember.tensor(float("inf")))
        self.max_val.copy_(ember.tensor(float("-inf")))


class MovingAverageMinMaxObserver(MinMaxObserver):
    """Per-tensor parameters from exponential moving averages of the minimum and maximum
    (``min += averaging_constant * (batch_min - min)``)."""

    def __init__(self, averaging_constant: float = 0.01, dtype: Any = ember.quint8,
                 qscheme: Any = ember.per_tensor_affine, reduce_range: bool = False, quant_min: int | None = None,
                 quant_max: int | None = None, eps: float = _EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        if not is_per_tensor(qscheme):
            raise NotImplementedError("MovingAverageMinMaxObserver's qscheme only support                 "
                                      "torch.per_tensor_symmetric and torch.per_tensor_affine.                 "
                                      f"but got: {qscheme}")
        self.averaging_constant = averaging_constant
        if is_dynamic and self.averaging_constant != 1:
            raise NotImplementedError("MovingAverageMinMaxObserver doesn't support dynamic quantization for "
                                      f"averaging constant of {self.averaging_constant}")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)

    def forward(self, x_orig: Any) -> Any:
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        min_val, max_val = self.min_val, self.max_val
        if float(min_val) == float("inf") and float(max_val) == float("-inf"):
            min_val, max_val = ember.aminmax(x)
        else:
            min_val_cur, max_val_cur = ember.aminmax(x)
            min_val = min_val + self.averaging_constant * (min_val_cur - min_val)
            max_val = max_val + self.averaging_constant * (max_val_cur - max_val)
        self.min_val.copy_(min_val)
        self.max_val.copy_(max_val)
        return x_orig


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    """Per-channel parameters (along ``ch_axis``) from the running minima and maxima: weights of convolutions
    and linear layers."""

    def __init__(self, ch_axis: int = 0, dtype: Any = ember.quint8, qscheme: Any = ember.per_channel_affine,
                 reduce_range: bool = False, quant_min: int | None = None, quant_max: int | None = None,
                 factory_kwargs: Any = None, eps: float = _EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        if not is_per_channel(qscheme):
            raise NotImplementedError("PerChannelMinMaxObserver's qscheme only support                     "
                                      "torch.per_channel_symmetric, torch.per_channel_affine and "
                                      "torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError("PerChannelMinMaxObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        factory_kwargs = nn.factory_kwargs(factory_kwargs)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", ember.tensor([], **factory_kwargs))
        self.register_buffer("max_val", ember.tensor([], **factory_kwargs))
        if self.qscheme is ember.per_channel_symmetric and self.reduce_range and self.dtype is ember.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for quint8")

    def _channels(self, x: Any) -> Any:
        axes = list(range(x.dim()))
        axes[self.ch_axis], axes[0] = 0, self.ch_axis
        return ember.flatten(x.permute(axes).to(self.min_val.dtype), start_dim=1)

    def _update(self, min_val: Any, max_val: Any) -> None:
        self.min_val.resize_(min_val.shape)
        self.max_val.resize_(max_val.shape)
        self.min_val.copy_(min_val)
        self.max_val.copy_(max_val)

    def forward(self, x_orig: Any) -> Any:
        if x_orig.numel() == 0:
            return x_orig
        y = self._channels(x_orig.detach())
        min_val, max_val = ember.aminmax(y, dim=1)
        if self.min_val.numel() and self.max_val.numel():
            min_val, max_val = ember.min(min_val, self.min_val), ember.max(max_val, self.max_val)
        self._update(min_val, max_val)
        return x_orig

    def calculate_qparams(self) -> tuple[Any, Any]:
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: Any, strict: bool,
                              missing_keys: Any, unexpected_keys: Any, error_msgs: Any) -> None:
        version = local_metadata.get("version")
        names = ("min_vals", "max_vals") if version is not None and version < 3 else ("min_val", "max_val")
        for name, buf in zip(names, (self.min_val, self.max_val)):
            key = prefix + name
            if key in state_dict:
                buf.resize_(state_dict[key].shape)
            elif strict:
                missing_keys.append(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    def reset_min_max_vals(self) -> None:
        self.min_val = ember.rand(0)
        self.max_val = ember.rand(0)


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """Per-channel parameters from moving averages of the minima and maxima (quantization-aware training)."""

    def __init__(self, averaging_constant: float = 0.01, ch_axis: int = 0, dtype: Any = ember.quint8,
                 qscheme: Any = ember.per_channel_affine, reduce_range: bool = False, quant_min: int | None = None,
                 quant_max: int | None = None, eps: float = _EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        if not is_per_channel(qscheme):
            raise NotImplementedError("MovingAveragePerChannelMinMaxObserver's qscheme only support                   "
                                      "  torch.per_channel_symmetric, torch.per_channel_affine and "
                                      "torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError("MovingAveragePerChannelMinMaxObserver doesn't support dynamic quantization")
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.averaging_constant = averaging_constant

    def forward(self, x_orig: Any) -> Any:
        if x_orig.numel() == 0:
            return x_orig
        y = self._channels(x_orig.detach())
        min_cur, max_cur = ember.aminmax(y, dim=1)
        if self.min_val.numel() == 0 or self.max_val.numel() == 0:
            min_val, max_val = min_cur, max_cur
        else:
            min_val = self.min_val + self.averaging_constant * (min_cur - self.min_val)
            max_val = self.max_val + self.averaging_constant * (max_cur - self.max_val)
        self._update(min_val, max_val)
        return x_orig


class HistogramObserver(UniformQuantizationObserverBase):
    """Per-tensor parameters from a histogram of the values seen: the range kept is the one that minimises the L2
    error of quantizing the histogram (PyTorch's search, which trims bins from whichever end holds less mass)."""

    def __init__(self, bins: int = 2048, dtype: Any = ember.quint8, qscheme: Any = ember.per_tensor_affine,
                 reduce_range: bool = False, quant_min: int | None = None, quant_max: int | None = None,
                 factory_kwargs: Any = None, eps: float = _EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        if not is_per_tensor(qscheme):
            raise NotImplementedError("HistogramObserver's qscheme only support torch.per_tensor_symmetric          "
                                      "           and torch.per_tensor_affine.")
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        factory_kwargs = nn.factory_kwargs(factory_kwargs)
        self.bins = bins
        self.register_buffer("histogram", ember.zeros(self.bins, **factory_kwargs))
        self.register_buffer("min_val", ember.tensor(float("inf"), **factory_kwargs))
        self.register_buffer("max_val", ember.tensor(float("-inf"), **factory_kwargs))
        self.dst_nbins = 2 ** ember.iinfo(self.dtype).bits
        self.upsample_rate = 16

    @staticmethod
    def _get_norm(delta_begin: Any, delta_end: Any, density: Any) -> Any:
        """The integral of x^2 over [delta_begin, delta_end], times the density."""
        return density * (delta_end * delta_end * delta_end - delta_begin * delta_begin * delta_begin) / 3

    def _compute_quantization_error(self, next_start_bin: int, next_end_bin: int) -> float:
        bin_width = (self.max_val.item() - self.min_val.item()) / self.bins
        dst_bin_width = bin_width * (next_end_bin - next_start_bin + 1) / self.dst_nbins
        if dst_bin_width == 0.0:
            return 0.0
        src_bin = ember.arange(self.bins, device=self.histogram.device)
        src_bin_begin = (src_bin - next_start_bin) * bin_width
        src_bin_end = src_bin_begin + bin_width
        dst_bin_of_begin = ember.clamp(ember.div(src_bin_begin, dst_bin_width, rounding_mode="floor"), 0,
                                       self.dst_nbins - 1)
        dst_bin_of_begin_center = (dst_bin_of_begin + 0.5) * dst_bin_width
        dst_bin_of_end = ember.clamp(ember.div(src_bin_end, dst_bin_width, rounding_mode="floor"), 0,
                                     self.dst_nbins - 1)
        density = self.histogram / bin_width
        norm = ember.zeros(self.bins, device=self.histogram.device)
        delta_begin = src_bin_begin - dst_bin_of_begin_center
        norm += self._get_norm(delta_begin, ember.ones(self.bins, device=self.histogram.device) * (dst_bin_width / 2),
                               density)
        norm += (dst_bin_of_end - dst_bin_of_begin - 1) * self._get_norm(ember.tensor(-dst_bin_width / 2),
                                                                         ember.tensor(dst_bin_width / 2), density)
        dst_bin_of_end_center = dst_bin_of_end * dst_bin_width + dst_bin_width / 2
        norm += self._get_norm(ember.tensor(-dst_bin_width / 2), src_bin_end - dst_bin_of_end_center, density)
        return float(norm.sum().item())

    def _non_linear_param_search(self) -> tuple[Any, Any]:
        if self.histogram.size()[0] != self.bins:
            raise AssertionError("bins mismatch")
        bin_width = (self.max_val - self.min_val) / self.bins
        total = ember.sum(self.histogram).item()
        csum = ember.cumsum(self.histogram, dim=0).tolist()
        stepsize = 1e-5
        alpha, beta = 0.0, 1.0
        start_bin, end_bin = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha, next_beta = alpha + stepsize, beta - stepsize
            lo, hi = start_bin, end_bin
            while lo < end_bin and csum[lo] < next_alpha * total:
                lo += 1
            while hi > start_bin and csum[hi] > next_beta * total:
                hi -= 1
            next_start_bin, next_end_bin = start_bin, end_bin
            if lo - start_bin > end_bin - hi:
                next_start_bin = lo
                alpha = next_alpha
            else:
                next_end_bin = hi
                beta = next_beta
            if next_start_bin == start_bin and next_end_bin == end_bin:
                continue
            norm = self._compute_quantization_error(next_start_bin, next_end_bin)
            if norm > norm_min:
                break
            norm_min = norm
            start_bin, end_bin = next_start_bin, next_end_bin
        return self.min_val + bin_width * start_bin, self.min_val + bin_width * (end_bin + 1)

    def _upscale_histogram(self, histogram: Any, orig_min: Any, orig_max: Any, update_min: Any,
                           update_max: Any) -> Any:
        histogram = histogram.repeat_interleave(self.upsample_rate) / self.upsample_rate
        bin_size = (orig_max - orig_min) / (self.bins * self.upsample_rate)
        mid_points = ember.linspace(orig_min, orig_max, self.bins * self.upsample_rate + 1)[:-1] + 0.5 * bin_size
        boundaries = ember.linspace(update_min, update_max, self.bins + 1)
        buckets = ember.bucketize(mid_points, boundaries, right=True) - 1
        buckets[buckets >= self.bins] = self.bins - 1
        buckets[buckets < 0] = 0
        return ember.bincount(buckets, weights=histogram, minlength=self.bins)

    def _combine_histograms(self, orig_hist: Any, orig_min: Any, orig_max: Any, update_hist: Any, update_min: Any,
                            update_max: Any) -> Any:
        if bool(update_min == orig_min) and bool(update_max == orig_max):
            return orig_hist + update_hist
        if bool(orig_min == orig_max):
            bin_value = ember.sum(orig_hist)
            moved = ember.histc(orig_min, bins=self.bins, min=float(update_min), max=float(update_max)) * bin_value
            return moved + update_hist
        if bool(update_min > orig_min):
            raise AssertionError("update_min must be <= orig_min")
        if bool(update_max < orig_max):
            raise AssertionError("update_max must be >= orig_max")
        return update_hist + self._upscale_histogram(orig_hist, orig_min, orig_max, update_min, update_max)

    def reset_histogram(self, x: Any, min_val: Any, max_val: Any) -> None:
        self.min_val.resize_(min_val.shape)
        self.min_val.copy_(min_val)
        self.max_val.resize_(max_val.shape)
        self.max_val.copy_(max_val)
        if min_val.numel() != 1 or max_val.numel() != 1:
            raise AssertionError("histogram min/max values must be scalar.")
        new = ember.histc(x, self.bins, min=float(min_val), max=float(max_val))
        self.histogram.detach_().resize_(new.shape)
        self.histogram.copy_(new)

    def forward(self, x_orig: Any) -> Any:
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach()
        x_min, x_max = ember.aminmax(x)
        if float(x_min) == float("-inf") or float(x_max) == float("inf"):
            warnings.warn("torch.inf detected in input tensor, ignoring input", stacklevel=2)
            x = x[x.abs() != float("inf")]
            if x.numel() == 0:
                return x_orig
            x_min, x_max = ember.aminmax(x)
        current_min, current_max = self.min_val, self.max_val
        if float(self.min_val) == float("inf") or float(self.max_val) == float("-inf"):
            self.reset_histogram(x, x_min, x_max)
            return x_orig
        new_min = ember.min(current_min, x_min).detach()
        new_max = ember.max(current_max, x_max).detach()
        update = ember.histc(x, self.bins, min=float(new_min), max=float(new_max))
        if bool(new_min == current_min) and bool(new_max == current_max):
            combined = self.histogram + update
            self.histogram.detach_().resize_(combined.shape)
            self.histogram.copy_(combined)
        else:
            combined = self._combine_histograms(self.histogram, current_min, current_max, update, new_min, new_max)
            self.histogram.detach_().resize_(combined.shape)
            self.histogram.copy_(combined)
            self.min_val.detach_().resize_(new_min.shape)
            self.min_val.copy_(new_min)
            self.max_val.detach_().resize_(new_max.shape)
            self.max_val.copy_(new_max)
        return x_orig

    def calculate_qparams(self) -> tuple[Any, Any]:
        if float(self.min_val) == float("inf") and float(self.max_val) == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams.                                    "
                          "Returning default scale and zero point ", stacklevel=2)
            device = self.min_val.device.type
            return ember.tensor([1.0], device=device), ember.tensor([0], device=device)
        if self.bins != len(self.histogram):
            raise AssertionError("The number of bins in histogram should be equal to the number of bins supplied "
                                 "while making this observer")
        new_min, new_max = self._non_linear_param_search()
        return self._calculate_qparams(new_min, new_max)

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "min_val"] = self.min_val
        destination[prefix + "max_val"] = self.max_val

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: Any, strict: bool,
                              missing_keys: Any, unexpected_keys: Any, error_msgs: Any) -> None:
        for name in ("min_val", "max_val"):
            key = prefix + name
            if key in state_dict:
                setattr(self, name, state_dict[key])
            elif strict:
                missing_keys.append(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class PlaceholderObserver(ObserverBase):
    """Observes nothing: it carries the dtype a value should have (dynamic quantization, float16)."""

    def __init__(self, dtype: Any = ember.float32, custom_op_name: str = "", compute_dtype: Any = None,
                 quant_min: int | None = None, quant_max: int | None = None, qscheme: Any = None,
                 eps: float | None = None, is_dynamic: bool = False) -> None:
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = ember.per_tensor_affine if qscheme is None else qscheme
        self.quant_min = quant_min
        self.quant_max = quant_max
        self.eps = _EPS if eps is None else eps
        self.custom_op = custom_op_name
        if compute_dtype:
            self.is_dynamic = True
            warnings.warn("Please use `is_dynamic` instead of `compute_dtype`.                     `compute_dtype` "
                          "will be deprecated in a future release                     of PyTorch.", stacklevel=2)

    def forward(self, x: Any) -> Any:
        return x

    def extra_repr(self) -> str:
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self) -> Any:
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")  # noqa: TRY002


class NoopObserver(ObserverBase):
    def __init__(self, dtype: Any = ember.float16, custom_op_name: str = "") -> None:
        super().__init__(dtype=dtype, is_dynamic=False)
        self.custom_op = custom_op_name

    def forward(self, x: Any) -> Any:
        return x

    def calculate_qparams(self) -> Any:
        raise Exception("calculate_qparams should not be called for NoopObserver")  # noqa: TRY002


def get_observer_state_dict(mod: Any) -> Any:
    """The observers' entries of ``mod``'s state_dict (keys containing ``activation_post_process``)."""
    from collections import OrderedDict
    sd = mod.state_dict()
    od: Any = OrderedDict((k, v) for k, v in sd.items() if "activation_post_process" in k)
    od._metadata = getattr(sd, "_metadata", None)
    return od


def _is_activation_post_process(module: Any) -> bool:
    from ember.ao.quantization.fake_quantize import FakeQuantizeBase
    return isinstance(module, (ObserverBase, FakeQuantizeBase))


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_weight_observer = MinMaxObserver.with_args(dtype=ember.qint8, qscheme=ember.per_tensor_symmetric)
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(dtype=ember.qint8,
                                                                         qscheme=ember.per_channel_symmetric)
default_dynamic_quant_observer = PlaceholderObserver.with_args(dtype=ember.quint8, quant_min=0, quant_max=255,
                                                               is_dynamic=True)
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(
    dtype=ember.quint8, qscheme=ember.per_channel_affine_float_qparams, ch_axis=0)
