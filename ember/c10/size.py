"""``ember.Size``: a tuple of ints, printed ``ember.Size([2, 3])`` (``torch.Size``)."""
from __future__ import annotations


class Size(tuple):
    __slots__ = ()

    def __new__(cls, sizes=()):
        return super().__new__(cls, (int(s) for s in sizes))

    def __repr__(self) -> str:
        return f"ember.Size([{', '.join(str(s) for s in self)}])"

    def __getitem__(self, item):
        r = super().__getitem__(item)
        return Size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __reduce__(self):
        return (Size, (tuple(self),))
