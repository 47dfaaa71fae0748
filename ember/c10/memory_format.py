"""``torch.layout`` and ``torch.memory_format`` (mirrors ``c10/core/Layout.h`` and ``MemoryFormat.h``): named
constants; the lower layers use them as defaults where PyTorch's C++ does (the autograd engine's implicit gradient
is ``ones_like(output, memory_format=preserve_format)``)."""
from __future__ import annotations
from ember.c10 import naming


class _NamedConstant:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"{naming.prefix}.{self.name}"


class layout(_NamedConstant):
    __module__ = "ember"      # where it is public (Note [Printed module name])
    pass


strided = layout("strided")


class memory_format(_NamedConstant):
    __module__ = "ember"      # where it is public (Note [Printed module name])
    pass


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
legacy_contiguous_format = contiguous_format  # the same format in PyTorch (what old code asks for)
