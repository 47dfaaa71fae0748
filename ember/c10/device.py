"""``ember.device`` (mirrors ``c10/core/Device.h``): a device type and an optional index."""
from __future__ import annotations

from typing import Any

_TYPES = ("cpu", "cuda", "meta")


class device:
    """Where a tensor's data lives: ``device("cpu")``, ``device("cuda:1")``, ``device("cuda", 0)``."""
    __module__ = "ember"      # where it is public (Note [Printed module name])

    __slots__ = ("type", "index", "_prev")
    type: str
    index: int | None
    _prev: device

    def __init__(self, type: str | int | device, index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            if index is not None:
                raise RuntimeError("device(): with a device argument, index must not be given")
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int) and not isinstance(type, bool):  # device(0) -> cuda:0, as PyTorch
            index = type
            type = "cuda"
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got ({type!r})")
        s = type
        if ":" in s:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed "
                                   f"explicitly: {s}")
            s, _, idx = s.partition(":")
            if not idx.isdigit() or (len(idx) > 1 and idx[0] == "0"):
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if s not in _TYPES:
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta device type at start of device string: {type}")
        if index is not None:
            if not isinstance(index, int) or index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
            if s == "cpu" and index != 0:
                raise RuntimeError(f"CPU device index must be -1 or zero, got {index}")
        self.type, self.index = s, index

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, TypeError):
                return False
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self) -> tuple[Any, tuple[str, int | None]]:
        return (device, (self.type, self.index))

    def __enter__(self) -> device:  # ``with ember.device("cpu"):`` sets the default factory device
        from ember.c10 import _state
        self._prev = _state.default_device
        _state.default_device = self
        return self

    def __exit__(self, *exc: Any) -> None:
        from ember.c10 import _state
        _state.default_device = self._prev


CPU = device("cpu")
META = device("meta")


def canonical(d: device | str | int | None) -> device:
    """``None`` -> current default device; strings and ints -> ``device``."""
    if d is None:
        from ember.c10 import _state
        return _state.default_device
    if type(d) is device:
        return d
    return device(d)
