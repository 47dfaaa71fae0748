"""Arenas: flat buffers whose slices are the storage of several tensors.

Note [Arenas]
The fused optimizer ops (``ember/aten/arena.py``) keep a parameter group's tensors -- the parameters and their
optimizer state -- as consecutive slices ("slots") of one flat buffer, so that an update is one NumPy call per
operation over every element. Such a buffer is an *arena*. c10 records, for each arena, where its slots start and
stop: serialization saves storages, as PyTorch does, and asks ``slot_of`` so that a tensor living in an arena is
saved as its own slot rather than the whole buffer; the foreach ops ask ``span_of`` whether a list of tensors is a
run of consecutive slots of one arena, which they then update with one call. Nothing above c10 keeps this record.
"""
from __future__ import annotations

import bisect
import weakref
from typing import Any, Sequence

_Entry = tuple["weakref.ref[Any]", list[int], list[int], dict[int, tuple[int, "weakref.ref[Any]"]]]
# id(buffer) -> (weakref to it, slot starts, slot stops, {id(view): (slot, weakref to view)})
_ARENAS: dict[int, _Entry] = {}


def register(buf: Any, starts: Sequence[int], stops: Sequence[int], views: Sequence[Any] = ()) -> None:
    """Record ``buf`` as an arena whose slots are ``[starts[i], stops[i])`` (increasing, element offsets);
    ``views[i]``, when given, is the array the tensor in slot i holds (``span_of`` recognises it by identity)."""
    key = id(buf)
    slots = {id(v): (i, weakref.ref(v)) for i, v in enumerate(views)}

    def forget(_ref: Any, key: int = key) -> None:
        _ARENAS.pop(key, None)
    _ARENAS[key] = (weakref.ref(buf, forget), list(starts), list(stops), slots)


def _entry(base: Any) -> _Entry | None:
    entry = _ARENAS.get(id(base))
    return entry if entry is not None and entry[0]() is base else None


def is_arena(base: Any) -> bool:
    return _entry(base) is not None


def slot_of(base: Any, offset: int) -> tuple[int, int] | None:
    """``(start, stop)``: the slot of arena ``base`` holding element ``offset``; None when ``base`` is not an arena
    (or the offset lies between slots)."""
    entry = _entry(base)
    if entry is None:
        return None
    starts, stops = entry[1], entry[2]
    i = bisect.bisect_right(starts, offset) - 1
    if i < 0 or offset >= stops[i]:
        return None
    return starts[i], stops[i]


def span_of(arrays: Sequence[Any]) -> tuple[Any, int, int] | None:
    """``(buffer, start, stop)`` when ``arrays`` are the registered views of consecutive slots of one arena, in
    order (so one operation on ``buffer[start:stop]`` is that operation on each of them); else None."""
    if not arrays:
        return None
    base = arrays[0].base
    entry = _entry(base) if base is not None else None
    if entry is None:
        return None
    slots = entry[3]
    first = -1
    for k, a in enumerate(arrays):
        e = slots.get(id(a))
        if e is None or e[1]() is not a:
            return None
        if first < 0:
            first = e[0]
        elif e[0] != first + k:
            return None
    return base, entry[1][first], entry[2][first + len(arrays) - 1]
