"""The parts of a complex tensor and its lazy conjugate (``aten/src/ATen/native/UnaryOps.cpp``).

``real`` and ``imag`` are views of ``view_as_real``, so their gradients flow through ``SelectBackward0`` and
``ViewAsRealBackward0`` as in PyTorch. ``conj()`` is a view with the conjugate bit flipped (``_conj``), ``_neg_view``
one with the negative bit flipped; ``resolve_conj`` / ``resolve_neg`` materialize them (Note [Math bits])."""
from __future__ import annotations

from typing import Any

from ember._generated import aten
from ember.aten.wrap import view_of
from ember.c10.dispatch_key import CONJ_BIT, NEG_BIT
from ember.c10.dtype import bool_

__all__ = ["real", "imag", "isreal", "conj", "conj_view", "resolve_conj", "neg_view", "resolve_neg"]


def _flipped(self: Any, bit: int) -> Any:
    out = view_of(self._data.view(), self)
    out._ks ^= bit
    return out


def conj_view(self: Any) -> Any:
    """``_conj``: the same memory read as its conjugate (the bit flips: the conjugate of a conjugate view is a plain
    view)."""
    return _flipped(self, CONJ_BIT)


def neg_view(self: Any) -> Any:
    """``_neg_view``: the same memory read as its negation."""
    return _flipped(self, NEG_BIT)


def conj(self: Any) -> Any:
    return aten._conj(self) if self.is_complex() else self


def resolve_conj(self: Any) -> Any:
    return aten.clone(self) if self.is_conj() else self


def resolve_neg(self: Any) -> Any:
    return aten.clone(self) if self.is_neg() else self


def real(self: Any) -> Any:
    if not self.is_complex():
        return self
    parts = aten.view_as_real(aten._conj(self) if self.is_conj() else self)
    return aten.select_int(parts, -1, 0)


def imag(self: Any) -> Any:
    if not self.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    # the imaginary part of a conjugate view is the negation of the memory's
    parts = aten._neg_view(aten.view_as_real(aten._conj(self))) if self.is_conj() else aten.view_as_real(self)
    return aten.select_int(parts, -1, 1)


def isreal(self: Any) -> Any:
    if not self.is_complex():
        return aten.ones_like(self, dtype=bool_)
    return aten.eq_Scalar(imag(self), 0)
