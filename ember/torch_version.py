"""``torch.torch_version``: ``TorchVersion``, a ``str`` that compares as a version (``torch.__version__ >= "2.1"``,
``>= (2, 1)``), by PEP 440's ordering: release numbers, then pre-releases (a < b < rc) before the release, then
post-releases, development releases first, and a local label (``+ember0.1.0``) after the plain version."""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["TorchVersion"]

_PATTERN = re.compile(r"^\s*v?(?:(\d+)!)?(\d+(?:\.\d+)*)(?:[-_.]?(a|alpha|b|beta|c|rc|pre|preview)[-_.]?(\d*))?"
                      r"(?:(?:-(\d+))|(?:[-_.]?(post|rev|r)[-_.]?(\d*)))?(?:[-_.]?(dev)[-_.]?(\d*))?"
                      r"(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$", re.IGNORECASE)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_INF = float("inf")


class InvalidVersion(ValueError):
    pass


def _key(text: str) -> tuple[Any, ...]:
    m = _PATTERN.match(text)
    if m is None:
        raise InvalidVersion(f"Invalid version: '{text}'")
    epoch, release, pre_l, pre_n, post_dash, post_l, post_n, dev_l, dev_n, local = m.groups()
    rel = [int(p) for p in release.split(".")]
    while len(rel) > 1 and rel[-1] == 0:
        rel.pop()
    post = int(post_dash) if post_dash else (int(post_n or 0) if post_l else None)
    dev = int(dev_n or 0) if dev_l else None
    if pre_l:
        pre: tuple[Any, ...] = (_PRE[pre_l.lower()], int(pre_n or 0))
    elif post is None and dev is not None:
        pre = (-_INF,)  # 1.0.dev0 sorts before 1.0a0
    else:
        pre = (_INF,)
    loc = tuple((1, int(p), "") if p.isdigit() else (0, 0, p.lower()) for p in re.split(r"[-_.]", local)) \
        if local else ()
    return (int(epoch or 0), tuple(rel), pre, -_INF if post is None else post, _INF if dev is None else dev, loc)


class TorchVersion(str):
    """A version string that compares with strings, tuples such as ``(2, 1)`` and version objects."""

    __slots__ = ()

    def _other_key(self, other: Any) -> tuple[Any, ...]:
        if isinstance(other, str):
            return _key(other)
        if isinstance(other, Iterable):
            return _key(".".join(str(p) for p in other))
        return _key(str(other))  # packaging.version.Version and the like print as their version

    def _cmp(self, other: Any, op: str) -> bool:
        try:
            a, b = _key(self), self._other_key(other)
        except InvalidVersion:
            result: bool = getattr(str, op)(self, other)
            return result
        return bool({"__lt__": a < b, "__le__": a <= b, "__gt__": a > b, "__ge__": a >= b, "__eq__": a == b,
                     "__ne__": a != b}[op])

    def __lt__(self, other: Any) -> bool:
        return self._cmp(other, "__lt__")

    def __le__(self, other: Any) -> bool:
        return self._cmp(other, "__le__")

    def __gt__(self, other: Any) -> bool:
        return self._cmp(other, "__gt__")

    def __ge__(self, other: Any) -> bool:
        return self._cmp(other, "__ge__")

    def __eq__(self, other: object) -> bool:
        return self._cmp(other, "__eq__")

    def __ne__(self, other: object) -> bool:
        return self._cmp(other, "__ne__")

    __hash__ = str.__hash__
