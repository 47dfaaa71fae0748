"""Fake quantization modules (mirrors ``torch/ao/quantization/fake_quantize.py``): observe, then quantize and
dequantize in float, so that training sees the rounding a quantized model will do (quantization-aware training).
The gradient passes straight through inside the range (``fake_quantize_per_*_affine``'s formulas)."""
from __future__ import annotations

from typing import Any

import numpy as np

import ember
from ember.nn.modules.module import Module
from ember.ao.quantization.observer import (MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver,
                                            _with_args, _with_callable_args)
from ember.ao.quantization.utils import _is_float_qparams, is_per_channel, is_per_tensor

__all__ = ["FakeQuantizeBase", "FakeQuantize", "FusedMovingAvgObsFakeQuantize", "default_fake_quant",
           "default_weight_fake_quant", "default_per_channel_weight_fake_quant", "default_fused_act_fake_quant",
           "default_fused_wt_fake_quant", "default_fused_per_channel_wt_fake_quant", "disable_fake_quant",
           "enable_fake_quant", "disable_observer", "enable_observer"]


class FakeQuantizeBase(Module):
    """A fake-quantize module with switches for its two halves (``fake_quant_enabled``, ``observer_enabled``,
    buffers)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("fake_quant_enabled", ember.tensor([1], dtype=ember.uint8))
        self.register_buffer("observer_enabled", ember.tensor([1], dtype=ember.uint8))

    def forward(self, x: Any) -> Any:
        raise NotImplementedError

    def calculate_qparams(self) -> Any:
        raise NotImplementedError

    def enable_fake_quant(self, enabled: bool = True) -> None:
        self.fake_quant_enabled[0] = 1 if enabled else 0

    def disable_fake_quant(self) -> None:
        self.enable_fake_quant(False)

    def enable_observer(self, enabled: bool = True) -> None:
        self.observer_enabled[0] = 1 if enabled else 0

    def disable_observer(self) -> None:
        self.enable_observer(False)

    @classmethod
    def with_args(cls, **kwargs: Any) -> Any:
        return _with_args(cls, **kwargs)

    with_callable_args = classmethod(_with_callable_args)


class FakeQuantize(FakeQuantizeBase):
    """Observe ``X`` (an observer instance, ``activation_post_process``), keep its parameters in the ``scale`` /
    ``zero_point`` buffers, and return ``X`` fake-quantized with them.

    Args:
        observer: the observer class (``MovingAverageMinMaxObserver`` by default).
        quant_min, quant_max: the integer range.
        **observer_kwargs: passed to the observer (``dtype``, ``qscheme``, ``ch_axis``, ...).
    """

    def __init__(self, observer: Any = MovingAverageMinMaxObserver, quant_min: int | None = None,
                 quant_max: int | None = None, is_dynamic: bool = False, **observer_kwargs: Any) -> None:
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise AssertionError("quant_min must be less than or equal to quant_max")
            dtype = observer_kwargs.get("dtype", ember.quint8)
            if hasattr(observer, "p"):
                dtype = getattr(getattr(observer, "p", {}), "keywords", {}).get("dtype", dtype)
            if ember.iinfo(dtype).min > quant_min:
                raise AssertionError("quant_min out of bound")
            if quant_max > ember.iinfo(dtype).max:
                raise AssertionError("quant_max out of bound")
            observer_kwargs.update({"quant_min": quant_min, "quant_max": quant_max})
        observer_kwargs["is_dynamic"] = is_dynamic
        self.activation_post_process = observer(**observer_kwargs)
        self.quant_min = self.activation_post_process.quant_min
        self.quant_max = self.activation_post_process.quant_max
        self.is_dynamic = self.activation_post_process.is_dynamic
        zero_point_dtype = ember.float if _is_float_qparams(self.activation_post_process.qscheme) else ember.int
        self.register_buffer("scale", ember.tensor([1.0], dtype=ember.float))
        self.register_buffer("zero_point", ember.tensor([0], dtype=zero_point_dtype))
        self.dtype = self.activation_post_process.dtype
        self.qscheme = self.activation_post_process.qscheme
        self.ch_axis = getattr(self.activation_post_process, "ch_axis", -1)
        if not (is_per_channel(self.qscheme) or is_per_tensor(self.qscheme)):
            raise AssertionError("Only per channel and per tensor quantization are supported in fake quantize got "
                                 f"qscheme: {self.qscheme}")
        self.is_per_channel = is_per_channel(self.qscheme)

    def calculate_qparams(self) -> Any:
        return self.activation_post_process.calculate_qparams()

    def forward(self, X: Any) -> Any:
        if int(self.observer_enabled[0]) == 1:
            self.activation_post_process(X.detach())
            scale, zero_point = self.calculate_qparams()
            scale, zero_point = scale.to(self.scale.device), zero_point.to(self.zero_point.device)
            if self.scale.shape != scale.shape:
                self.scale.resize_(scale.shape)
                self.zero_point.resize_(zero_point.shape)
            self.scale.copy_(scale)
            self.zero_point.copy_(zero_point)
        if int(self.fake_quant_enabled[0]) == 1:
            app = self.activation_post_process
            if self.is_per_channel:
                X = ember.fake_quantize_per_channel_affine(X, self.scale, self.zero_point, self.ch_axis,
                                                           app.quant_min, app.quant_max)
            else:
                X = ember.fake_quantize_per_tensor_affine(X, self.scale, self.zero_point, app.quant_min, app.quant_max)
        return X

    def extra_repr(self) -> str:
        app = self.activation_post_process
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled={self.observer_enabled}, "
                f"quant_min={app.quant_min}, quant_max={app.quant_max}, dtype={self.dtype}, qscheme={self.qscheme}, "
                f"ch_axis={self.ch_axis}, scale={self.scale}, zero_point={self.zero_point}")

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = self.scale
        destination[prefix + "zero_point"] = self.zero_point

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: Any, strict: bool,
                              missing_keys: Any, unexpected_keys: Any, error_msgs: Any) -> None:
        for name in ("scale", "zero_point"):
            key = prefix + name
            if key in state_dict:
                getattr(self, name).resize_(state_dict[key].shape)
            elif strict:
                missing_keys.append(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """``FakeQuantize`` with a moving-average observer, as PyTorch's QAT default (PyTorch fuses observation and
    fake quantization into one operator; ember runs the same steps one after the other)."""

    def __init__(self, observer: Any = MovingAverageMinMaxObserver, quant_min: int = 0, quant_max: int = 255,
                 **observer_kwargs: Any) -> None:
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process,
                          (MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Fused observer+fake_quant module only works with MovingAverageMinMaxObserver")
        self.register_buffer("fake_quant_enabled", ember.tensor([1], dtype=ember.long))
        self.register_buffer("observer_enabled", ember.tensor([1], dtype=ember.long))
        self.is_symmetric_quant = self.activation_post_process.qscheme in (ember.per_tensor_symmetric,
                                                                           ember.per_channel_symmetric)

    def calculate_qparams(self) -> Any:
        return self.activation_post_process.calculate_qparams()

    def extra_repr(self) -> str:
        app = self.activation_post_process
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled={self.observer_enabled}, "
                f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}, quant_min={app.quant_min}, "
                f"quant_max={app.quant_max}, qscheme={self.qscheme}, reduce_range={app.reduce_range}")

    def forward(self, X: Any) -> Any:
        """PyTorch's ``fused_moving_avg_obs_fake_quant``: update the moving min / max (per row when per channel),
        choose the parameters with fbgemm's rule (Note [Choosing quantization parameters]'s symmetric case keeps
        one more negative step), fake-quantize."""
        if X.numel() == 0:
            return X.clone()
        app = self.activation_post_process
        x = X.detach()
        if self.is_per_channel:
            y = app._channels(x)
            if app.min_val.numel() == 0:
                n = y.shape[0]
                app.min_val.resize_((n,)).fill_(float("inf"))
                app.max_val.resize_((n,)).fill_(float("-inf"))
                self.scale.resize_((n,))
                self.zero_point.resize_((n,))
            cur_min, cur_max = ember.aminmax(y.float(), dim=1)
        else:
            cur_min, cur_max = ember.aminmax(x.float())
        if int(self.observer_enabled[0]):
            c = app.averaging_constant
            for run, cur in ((app.min_val, cur_min), (app.max_val, cur_max)):
                run.copy_(ember.where(ember.isinf(run), cur, run + c * (cur - run)))
        if not int(self.fake_quant_enabled[0]):
            return X
        lo, hi = app.min_val.reshape(-1).tolist(), app.max_val.reshape(-1).tolist()
        params = [_fbgemm_choose_qparams(a, b, app.quant_min, app.quant_max, self.is_symmetric_quant)
                  for a, b in zip(lo, hi)]
        self.scale.copy_(ember.tensor([p[0] for p in params], dtype=ember.float32).reshape(self.scale.shape))
        self.zero_point.copy_(ember.tensor([p[1] for p in params]).reshape(self.zero_point.shape))
        if self.is_per_channel:
            return ember.fake_quantize_per_channel_affine(X, self.scale, self.zero_point, self.ch_axis, app.quant_min,
                                                          app.quant_max)
        return ember.fake_quantize_per_tensor_affine(X, float(self.scale), int(self.zero_point), app.quant_min,
                                                     app.quant_max)


def _fbgemm_choose_qparams(x_min: float, x_max: float, qmin: int, qmax: int,
                           preserve_sparsity: bool) -> tuple[float, int]:
    """fbgemm's ``ChooseQuantizationParams`` (the fused fake-quantize's rule): a float scale; symmetric ranges are
    widened to ``[-(n/2 + 1), n/2]`` steps around a middle zero point."""
    f32 = np.float32
    lo, hi = f32(x_min), f32(x_max)
    if lo < 0 < hi and preserve_sparsity:
        sym_min, sym_max = -((qmax - qmin) // 2 + 1), (qmax - qmin) // 2
        max_scale = max(abs(float(lo) / sym_min), abs(float(hi) / sym_max))
        lo, hi = f32(max_scale * sym_min), f32(max_scale * sym_max)
    lo, hi = min(lo, f32(0)), max(hi, f32(0))
    scale = f32((float(hi) - float(lo)) / (qmax - qmin))
    with np.errstate(divide="ignore", over="ignore"):
        if scale == 0 or np.isinf(f32(1) / scale):
            scale = f32(0.1)
    s = float(scale)
    from_min, from_max = qmin - float(lo) / s, qmax - float(hi) / s
    initial = from_min if abs(qmin) - abs(float(lo) / s) < abs(qmax) - abs(float(hi) / s) else from_max
    if lo < 0 < hi and preserve_sparsity:
        initial = (qmin + qmax) / 2
    zp = qmin if initial < qmin else qmax if initial > qmax else int(np.rint(initial))
    return s, zp


default_fake_quant = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                                            dtype=ember.quint8, qscheme=ember.per_tensor_affine, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=-128,
                                                   quant_max=127, dtype=ember.qint8,
                                                   qscheme=ember.per_tensor_symmetric, reduce_range=False)
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=ember.qint8,
    qscheme=ember.per_channel_symmetric, reduce_range=False, ch_axis=0)
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=ember.quint8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=ember.qint8,
    qscheme=ember.per_tensor_symmetric)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=ember.qint8,
    qscheme=ember.per_channel_symmetric)


def disable_fake_quant(mod: Any) -> None:
    """For ``model.apply``: switch fake quantization off in every FakeQuantize."""
    if isinstance(mod, FakeQuantizeBase):
        mod.disable_fake_quant()


def enable_fake_quant(mod: Any) -> None:
    if isinstance(mod, FakeQuantizeBase):
        mod.enable_fake_quant()


def disable_observer(mod: Any) -> None:
    """For ``model.apply``: freeze the quantization parameters (stop observing)."""
    if isinstance(mod, FakeQuantizeBase):
        mod.disable_observer()


def enable_observer(mod: Any) -> None:
    if isinstance(mod, FakeQuantizeBase):
        mod.enable_observer()
