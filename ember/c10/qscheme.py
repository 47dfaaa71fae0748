"""Quantization schemes (mirrors ``c10/core/QScheme.h``): how a quantized tensor maps its integers to reals --
one ``scale`` / ``zero_point`` for the whole tensor (``per_tensor_affine``) or one per slice along an ``axis``
(``per_channel_affine``); the ``*_symmetric`` schemes are what observers are asked for (zero point at the middle of
the range) and the ``float_qparams`` one keeps float zero points (embedding bags)."""
from __future__ import annotations

from typing import Any
from ember.c10 import naming

__all__ = ["qscheme", "per_tensor_affine", "per_channel_affine", "per_tensor_symmetric", "per_channel_symmetric",
           "per_channel_affine_float_qparams"]


class qscheme:
    """A quantization scheme, printed ``ember.per_tensor_affine``."""
    __module__ = "ember"      # where it is public (Note [Printed module name])

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"{naming.prefix}.{self.name}"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (_by_name, (self.name,))


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")
ALL_QSCHEMES = (per_tensor_affine, per_channel_affine, per_tensor_symmetric, per_channel_symmetric,
                per_channel_affine_float_qparams)
_BY_NAME = {q.name: q for q in ALL_QSCHEMES}


def _by_name(name: str) -> qscheme:
    return _BY_NAME[name]
