"""``ember._dynamo.utils`` (``torch/_dynamo/utils.py``): the helpers libraries import from it."""
from __future__ import annotations

from typing import Any


def is_compile_supported(device_type: Any) -> bool:
    """Whether ``ember.compile`` compiles for ``device_type`` ("cpu", "cuda", a device): the CPU always; CUDA when
    CuPy is installed (the generated code calls the same array kernels on its arrays)."""
    from ember._dynamo import is_dynamo_supported
    from ember.c10.device import canonical
    kind = canonical(device_type).type
    if kind == "cpu":
        return is_dynamo_supported()
    if kind == "cuda":
        import importlib.util
        return is_dynamo_supported() and importlib.util.find_spec("cupy") is not None
    return False

