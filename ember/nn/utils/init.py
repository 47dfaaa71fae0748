"""``skip_init`` (``torch/nn/utils/init.py``): a module whose parameters and buffers are allocated but not
initialized (built on the meta device, then given uninitialized memory on the target device)."""
from __future__ import annotations

import inspect
from typing import Any

__all__ = ["skip_init"]


def skip_init(module_cls: Any, *args: Any, **kwargs: Any) -> Any:
    """``module_cls(*args, **kwargs)`` without running its initialization of parameters and buffers; the class
    must accept a ``device`` argument."""
    import ember
    if not issubclass(module_cls, ember.nn.Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
