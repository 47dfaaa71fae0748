"""``ember.Size``: a tuple of ints, printed ``ember.Size([2, 3])`` (``torch.Size``)."""
from __future__ import annotations

from typing import Any, Iterable, SupportsIndex
from ember.c10 import naming


class Size(tuple[int, ...]):
    __module__ = "ember"      # where it is public (Note [Printed module name])
    __slots__ = ()

    def __new__(cls, sizes: Iterable[Any] = ()) -> Size:
        return super().__new__(cls, (int(s) for s in sizes))

    def __repr__(self) -> str:
        return f"{naming.prefix}.Size([{', '.join(str(s) for s in self)}])"

    def __getitem__(self, item: SupportsIndex | slice) -> Any:
        r: Any = super().__getitem__(item)
        return Size(r) if isinstance(item, slice) else r

    def __add__(self, other: tuple[Any, ...]) -> Size:
        return Size(tuple(self) + tuple(other))

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __reduce__(self) -> tuple[type[Size], tuple[tuple[int, ...]]]:
        return (Size, (tuple(self),))


def size_of_shape(shape: tuple[int, ...]) -> Size:
    """A Size from an array's shape, whose entries are Python ints already: no per-entry conversion (``Tensor.shape``
    is read on every op; ``Size(...)``'s generator costs about 0.5 us more)."""
    return tuple.__new__(Size, shape)
