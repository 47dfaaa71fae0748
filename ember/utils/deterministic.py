"""``torch.utils.deterministic``: ``fill_uninitialized_memory`` (True by default): while deterministic algorithms
are on (``ember.use_deterministic_algorithms(True)``), memory that ``empty``, ``empty_like``, ``empty_strided`` and a
growing ``resize_`` leave uninitialized is filled (NaN, or the largest integer), so no result depends on it."""
from __future__ import annotations

import sys
import types

from ember.aten.context import global_context

__all__ = ["fill_uninitialized_memory"]  # noqa: F822 - a property of the module class below


class _Deterministic(types.ModuleType):
    @property
    def fill_uninitialized_memory(self) -> bool:
        """Whether uninitialized memory is filled under deterministic algorithms."""
        return bool(global_context.fill_uninitialized_memory)

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"expected a bool, but got {type(mode).__name__}")
        global_context.fill_uninitialized_memory = mode


sys.modules[__name__].__class__ = _Deterministic
