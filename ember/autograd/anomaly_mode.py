"""Anomaly detection (mirrors ``torch/autograd/anomaly_mode.py``): nodes remember the traceback of the
forward op that created them, and a backward function returning NaN raises, naming the node and showing
where it was created."""
from __future__ import annotations

import traceback
import warnings
from typing import Any, Callable, Sequence

enabled = False
check_nan_enabled = True


class detect_anomaly:
    """Context manager (and decorator) enabling anomaly detection."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only "
                      "be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        global enabled, check_nan_enabled
        self.prev = (enabled, check_nan_enabled)
        enabled, check_nan_enabled = True, self.check_nan

    def __exit__(self, *exc: object) -> None:
        global enabled, check_nan_enabled
        enabled, check_nan_enabled = self.prev

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*a: Any, **k: Any) -> Any:
            with self.__class__(self.check_nan):
                return fn(*a, **k)
        return wrapper


class set_detect_anomaly:
    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        global enabled, check_nan_enabled
        self.prev = (enabled, check_nan_enabled)
        enabled, check_nan_enabled = bool(mode), check_nan

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        global enabled, check_nan_enabled
        enabled, check_nan_enabled = self.prev


def is_anomaly_enabled() -> bool:
    return enabled


def record(node: Any) -> None:
    """Called when a node is created in anomaly mode: keep the forward traceback."""
    node._anomaly_trace = "".join(traceback.format_stack()[:-3])


def check_nan(node: Any, outputs: Sequence[Any]) -> None:
    if not check_nan_enabled:
        return
    for i, g in enumerate(outputs):
        if g is not None and g.is_floating_point() and bool(g.isnan().any()):
            if node._anomaly_trace:
                warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                              f"{node._anomaly_trace}", UserWarning, stacklevel=2)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
