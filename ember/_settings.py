"""Process-wide switches of ``torch.*`` (``torch/__init__.py`` over ``at::Context``): deterministic algorithms,
float32 matmul precision, warn-always, anomaly detection, and the constants ``pi``, ``e``, ``inf``, ``nan``.

ember's kernels are deterministic already (NumPy), and float32 matrix products always run in float32, so the
first two are recorded and reported back as PyTorch reports them, without changing what runs."""
from __future__ import annotations

import math
import warnings

from ember.aten.context import global_context
from ember.autograd import anomaly_mode

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision", "get_float32_matmul_precision",
           "set_warn_always", "is_warn_always_enabled", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled", "pi", "e", "inf", "nan", "newaxis"]

pi, e, inf, nan = math.pi, math.e, math.inf, math.nan
newaxis = None

_state = {"matmul_precision": "highest", "warn_always": False}
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    global_context.deterministic_algorithms, global_context.deterministic_warn_only = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return global_context.deterministic_algorithms


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return global_context.deterministic_warn_only


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """``"default"`` / 0: off; ``"warn"`` / 1: deterministic, warn only; ``"error"`` / 2: deterministic."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not global_context.deterministic_algorithms:
        return 0
    return 1 if global_context.deterministic_warn_only else 2


def set_float32_matmul_precision(precision: str) -> None:
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the "
                      f"currentsetFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _state["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    return _state["matmul_precision"]


def set_warn_always(b: bool) -> None:
    _state["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    return _state["warn_always"]


def is_anomaly_enabled() -> bool:
    return anomaly_mode.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return anomaly_mode.check_nan_enabled


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    anomaly_mode.enabled, anomaly_mode.check_nan_enabled = bool(enabled), bool(check_nan)
