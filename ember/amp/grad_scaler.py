"""``torch.amp.GradScaler``: dynamic loss scaling for float16 training (mirrors ``torch/amp/grad_scaler.py``).

Note [Loss scaling]
float16 gradients underflow to zero below 6e-8, so the loss is multiplied by a large *scale* before backward and
the gradients are divided by it before the optimizer uses them. The scale adapts: a step whose gradients hold an
inf or a NaN is skipped and the scale multiplied by ``backoff_factor``; after ``growth_interval`` clean steps in a
row it is multiplied by ``growth_factor``. The scale, the clean-step count and the per-step ``found_inf`` flag are
tensors on the gradients' device, updated by two operators (``_amp_foreach_non_finite_check_and_unscale_``,
``_amp_update_scale_``); the only value read back is ``found_inf``, to decide whether to step. Optimizers that set
``_step_supports_amp_scaling`` (the fused ones) get ``grad_scale`` and ``found_inf`` as attributes and unscale and
skip inside their own step.
"""
from __future__ import annotations

from typing import Any

import enum
import inspect
import warnings
from collections import abc, defaultdict

__all__ = ["OptState", "GradScaler"]


class _MultiDeviceReplicator:
    """A tensor copied lazily to each device that asks for it."""

    def __init__(self, master: Any) -> None:
        self.master = master
        self._per_device_tensors: dict[Any, Any] = {}

    def get(self, device: Any) -> Any:
        t = self._per_device_tensors.get(device)
        if t is None:
            t = self._per_device_tensors[device] = self.master.to(device=device, non_blocking=True, copy=True)
        return t


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    r"""Scale the loss so that float16 gradients do not underflow, and step the optimizer with unscaled gradients.

    Args:
        device (str): the device of the model ('cuda' by default, as in PyTorch; 'cpu' works too).
        init_scale (float): the first scale. Default: ``2.**16``.
        growth_factor (float): the scale's factor after ``growth_interval`` steps without inf/NaN. Default: 2.0.
        backoff_factor (float): the scale's factor after a step with inf/NaN gradients. Default: 0.5.
        growth_interval (int): clean steps in a row before the scale grows. Default: 2000.
        enabled (bool): False makes every method a pass-through. Default: True.

    Example::

        >>> scaler = ember.amp.GradScaler("cpu")
        >>> with ember.autocast("cpu", dtype=ember.float16):
        ...     loss = loss_fn(model(x), y)
        >>> scaler.scale(loss).backward()
        >>> scaler.step(optimizer)      # skipped if a gradient is inf/NaN
        >>> scaler.update()
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if self._device == "cuda":
            from ember import cuda
            if enabled and not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale: Any = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Any = None
            self._per_optimizer_states: dict[int, dict[str, Any]] = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str) -> tuple[Any, Any]:
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev: Any) -> None:
        import ember
        self._scale = ember.full((), self._init_scale, dtype=ember.float32, device=dev)
        self._growth_tracker = ember.full((), self._init_growth_tracker, dtype=ember.int32, device=dev)

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or an iterable of them) multiplied by the scale."""
        import ember
        if not self._enabled:
            return outputs
        if isinstance(outputs, ember.Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)
        stash: list[_MultiDeviceReplicator] = []

        def apply_scale(val: Any) -> Any:
            if isinstance(val, ember.Tensor):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, abc.Iterable):
                it = map(apply_scale, val)
                return type(val)(it) if isinstance(val, (list, tuple)) else it
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer: Any, inv_scale: Any, found_inf: Any, allow_fp16: bool) -> dict[Any, Any]:
        import ember
        from ember._generated import aten
        inv_scales = _MultiDeviceReplicator(inv_scale)
        found_infs = _MultiDeviceReplicator(found_inf)
        grads: dict[Any, dict[Any, list[Any]]] = defaultdict(lambda: defaultdict(list))
        with ember.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, ember.Tensor):
                        raise AssertionError(f"expected param to be torch.Tensor, got {type(param).__name__}")
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype == ember.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    g = param.grad
                    grads[g.device][g.dtype].append(g)
            for device, per_dtype in grads.items():
                for gs in per_dtype.values():
                    aten._amp_foreach_non_finite_check_and_unscale_(gs, found_infs.get(device),
                                                                     inv_scales.get(device))
        return found_infs._per_device_tensors

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place (to clip them, for example); ``step`` then does
        not do it again."""
        import ember
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = ember.full((), 0.0, dtype=ember.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer: Any, state: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale the gradients if ``unscale_`` was not called, then ``optimizer.step(*args, **kwargs)`` unless a
        gradient is inf/NaN. Returns what ``optimizer.step`` returned, or None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            return self._step_with_amp_arguments(optimizer, state, args, kwargs)
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def _step_with_amp_arguments(self, optimizer: Any, state: dict[str, Any], args: tuple[Any, ...],
                                 kwargs: dict[str, Any]) -> Any:
        """Note [Loss scaling]: the optimizer unscales and skips inside its step."""
        legacy = "grad_scaler" in inspect.signature(optimizer.step).parameters
        if legacy:
            warnings.warn("GradScaler is going to stop passing itself as a keyword argument to the passed "
                          "optimizer. In the near future GradScaler registers `grad_scale: Tensor` and "
                          "`found_inf: Tensor` to the passed optimizer and let the optimizer use them directly.",
                          FutureWarning, stacklevel=3)
            kwargs.update({"grad_scaler": self})
        else:
            if state["stage"] is OptState.READY:
                self._check_inf_per_device(optimizer)
            scaler = self._scale
            found_inf = sum(t.to(scaler.device, non_blocking=True) for t in state["found_inf_per_device"].values())
            optimizer.grad_scale = (getattr(optimizer, "grad_scale", None) if state["stage"] == OptState.UNSCALED
                                    else scaler * getattr(optimizer, "grad_scale", 1))
            optimizer.found_inf = found_inf
        retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        if not legacy:
            del optimizer.grad_scale
            del optimizer.found_inf
        return retval

    def update(self, new_scale: Any = None) -> None:
        """Adapt the scale after a step (Note [Loss scaling]), or set it to ``new_scale`` (a float or a one-element
        tensor)."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor "
                          "with requires_grad=False.")
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale)
        else:
            from ember._generated import aten
            found_infs = [f.to(device=_scale.device, non_blocking=True) for st in self._per_optimizer_states.values()
                          for f in st["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            combined = found_infs[0]
            for f in found_infs[1:]:
                combined += f
            aten._amp_update_scale_(_scale, _growth_tracker, combined, self._growth_factor, self._backoff_factor,
                                    self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self) -> Any:
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``, ``_growth_tracker`` (empty when
        disabled)."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _check_inf_per_device(self, optimizer: Any) -> dict[Any, Any]:
        import ember
        _scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = ember.full((), 1.0, dtype=ember.float32, device=_scale.device)
        found_inf = ember.full((), 0.0, dtype=ember.float32, device=_scale.device)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = self._unscale_grads_(
            optimizer, dummy_inv_scale, found_inf, True)
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer: Any) -> dict[Any, Any]:
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
