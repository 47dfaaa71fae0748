"""Weak references keyed by identity (``torch/utils/weak.py``): tensors compare elementwise, so a
``WeakKeyDictionary`` cannot hold them; these dictionaries hash and compare keys by ``id``."""
from __future__ import annotations

import weakref
from collections.abc import MutableMapping
from typing import Any, Iterator

__all__ = ["WeakIdRef", "WeakIdKeyDictionary", "WeakTensorKeyDictionary", "TensorWeakRef"]


class WeakIdRef(weakref.ref):  # type: ignore[type-arg]
    """A weak reference whose hash and equality are the referent's identity (stable after it dies)."""

    __slots__ = ("_id",)

    def __init__(self, key: Any, callback: Any = None) -> None:
        self._id = id(key)
        super().__init__(key, callback)

    def __call__(self) -> Any:
        return super().__call__()

    def __hash__(self) -> int:
        return self._id

    def __eq__(self, other: object) -> bool:
        a, b = self(), other() if isinstance(other, WeakIdRef) else None
        if a is not None and b is not None:
            return a is b
        return self is other


class WeakIdKeyDictionary(MutableMapping):  # type: ignore[type-arg]
    """A dict with weakly held keys compared by identity; an entry goes when its key is collected."""

    def __init__(self, dict: Any = None, ref_type: Any = WeakIdRef) -> None:  # noqa: A002
        self.data: dict[Any, Any] = {}
        self.ref_type = ref_type
        self_ref = weakref.ref(self)

        def remove(k: Any) -> None:
            owner = self_ref()
            if owner is not None:
                owner.data.pop(k, None)
        self._remove = remove
        if dict is not None:
            self.update(dict)

    def __getitem__(self, key: Any) -> Any:
        return self.data[self.ref_type(key)]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.data[self.ref_type(key, self._remove)] = value

    def __delitem__(self, key: Any) -> None:
        del self.data[self.ref_type(key)]

    def __contains__(self, key: object) -> bool:
        try:
            return self.ref_type(key) in self.data
        except TypeError:
            return False

    def __iter__(self) -> Iterator[Any]:
        for ref in list(self.data):
            obj = ref()
            if obj is not None:
                yield obj

    def __len__(self) -> int:
        return sum(1 for r in self.data if r() is not None)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} at {id(self):#x}>"


WeakTensorKeyDictionary = WeakIdKeyDictionary


class TensorWeakRef:
    """A weak reference to a tensor (``TensorWeakRef(t)()`` is ``t`` while it lives, else None)."""

    __slots__ = ("ref",)

    def __init__(self, tensor: Any) -> None:
        self.ref = weakref.ref(tensor)

    def __call__(self) -> Any:
        return self.ref()
