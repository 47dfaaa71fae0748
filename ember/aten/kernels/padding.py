"""Kernels of constant, reflection and replication padding
(``aten/src/ATen/native/{PadNd,ReflectionPad,ReplicationPadding}.cpp``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels._common import Array, shape_str

__all__ = ["constant_pad_nd"]

# ------------------------------------------------------------------------------ padding
def constant_pad_nd(xp: Any, self: Array, pad: Any, value: Array = 0) -> Any:
    pad = tuple(pad)
    if len(pad) % 2:
        raise RuntimeError("Length of pad must be even but instead it equals " + str(len(pad)))
    if len(pad) // 2 > self.ndim:
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions of the input. "
                           f"Pad length is {len(pad)} while the input has {self.ndim} dimensions.")
    src = self
    widths = [(0, 0)] * self.ndim
    for i in range(len(pad) // 2):
        ax = self.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo < 0:                  # negative padding crops (a view), as PyTorch's narrow does
            src = src[(slice(None),) * ax + (slice(-lo, None),)] if _narrowable(src, ax, lo) else src
            lo = 0
        if hi < 0:
            src = src[(slice(None),) * ax + (slice(0, src.shape[ax] + hi),)] if _narrowable(src, ax, hi) else src
            hi = 0
        widths[ax] = (lo, hi)
    if not any(lo or hi for lo, hi in widths):
        return xp.ascontiguousarray(src) if src is not self else src.copy()
    # one fill and one copy of the interior (np.pad per padded dim was a full copy each, and slower)
    shape = tuple(max(0, s + lo + hi) for s, (lo, hi) in zip(src.shape, widths))
    out = xp.empty(shape, self.dtype)
    out[...] = value
    if src.size:
        out[tuple(slice(lo, lo + s) for s, (lo, _) in zip(src.shape, widths))] = src
    return out


def _narrowable(a: Array, ax: int, crop: int) -> bool:
    if a.shape[ax] + crop < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    return True


# ------------------------------------------------------------------------------ reflection / replication padding
_PAD_DIM_NAMES = {1: ("W",), 2: ("H", "W"), 3: ("D", "H", "W")}


def pad_source_index(n: int, lo: int, hi: int, reflect: bool) -> np.ndarray:
    """For each output position along a padded dim, the input position it copies: mirrored about the edge
    (reflection: ``-q`` / ``2(n-1) - q``) or clamped to it (replication); negative padding crops."""
    q = np.arange(-lo, n + hi)
    if reflect:
        q = np.abs(q)
        q = np.where(q > n - 1, 2 * (n - 1) - q, q)
        return q
    return np.clip(q, 0, n - 1)


def _pad_checks(self: Array, padding: Any, nd: int, reflect: bool) -> None:
    """PyTorch's checks of reflection_pad{1,2,3}d / replication_pad{1,2,3}d (``ReflectionPad.cpp``,
    ``ReplicationPadding.cpp``)."""
    dim = self.ndim
    if dim not in (nd + 1, nd + 2) or any(s == 0 for s in self.shape[int(dim == nd + 2):]):
        raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {shape_str(self.shape)}")
    if len(padding) != 2 * nd:
        raise RuntimeError(f"padding size is expected to be {2 * nd}, but got: {len(padding)}")
    ins = self.shape[dim - nd:]
    outs = []
    for i in range(nd):                      # padding lists the last dim first
        lo, hi = padding[2 * (nd - 1 - i)], padding[2 * (nd - 1 - i) + 1]
        n = ins[i]
        if reflect and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #{4 + 2 * (nd - 1 - i)}: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension {dim - nd + i} of input "
                               f"{shape_str(self.shape)}")
        outs.append(n + lo + hi)
    if any(o < 1 for o in outs):
        names = _PAD_DIM_NAMES[nd]
        raise RuntimeError(f"input ({', '.join(f'{a}: {n}' for a, n in zip(names, ins))}) is too small. Calculated "
                           f"output {' '.join(f'{a}: {o}' for a, o in zip(names, outs))}")


def _pad_nd(xp: Any, self: Array, padding: Any, nd: int, reflect: bool) -> Any:
    _pad_checks(self, padding, nd, reflect)
    out = self
    for i in range(nd):
        axis = self.ndim - 1 - i
        lo, hi = padding[2 * i], padding[2 * i + 1]
        out = xp.take(out, xp.asarray(pad_source_index(self.shape[axis], lo, hi, reflect)), axis=axis)
    return xp.ascontiguousarray(out)


def _def_pad(name: str, nd: int, reflect: bool) -> None:
    def kernel(xp: Any, self: Array, padding: Any) -> Any:
        return _pad_nd(xp, self, padding, nd, reflect)
    kernel.__name__ = kernel.__qualname__ = name
    globals()[name] = kernel
    __all__.append(name)


for _nd in (1, 2, 3):
    _def_pad(f"reflection_pad{_nd}d", _nd, True)
    _def_pad(f"replication_pad{_nd}d", _nd, False)
