"""Untyped storage: the bytes behind one or more tensors (mirrors ``c10/core/Storage.h``).

ember keeps a tensor's data as a NumPy (or CuPy) array that may be a view of a larger one; the
storage of a tensor is the array that owns the memory at the root of that view chain, so views of one
tensor report the same storage, ``data_ptr`` and byte size, as in PyTorch.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.c10.device import device as _device


def root_array(arr: Any) -> Any:
    """The array that owns the memory ``arr`` views."""
    r = arr
    while True:
        b = getattr(r, "base", None)
        if b is not None and not hasattr(b, "shape") and hasattr(getattr(b, "base", None), "shape"):
            b = b.base  # np.lib.stride_tricks.as_strided keeps its source behind a small wrapper object
        if b is None or not hasattr(b, "dtype") or not hasattr(b, "shape"):
            return r
        r = b


def array_data_ptr(arr: Any) -> int:
    if isinstance(arr, np.ndarray):
        return int(arr.__array_interface__["data"][0])
    return int(arr.data.ptr)  # CuPy


def shared_copy(data: Any) -> Any:
    """A copy of the flat uint8 array ``data`` in an anonymous shared memory mapping (processes forked afterwards
    see the same bytes)."""
    import mmap
    n = int(data.size)
    shared = np.frombuffer(mmap.mmap(-1, max(n, 1)), np.uint8, count=n)
    shared[...] = data
    return shared


class StorageBase:
    """The base class of untyped storages (``torch._C.StorageBase``)."""

    __slots__ = ()


class UntypedStorage(StorageBase):
    """Bytes on a device.  ``nbytes()``, ``data_ptr()``, ``device``, ``size()``."""
    __module__ = "ember.storage"      # where it is public (Note [Printed module name])

    __slots__ = ("_root", "device", "_nbytes")

    def __init__(self, root: Any = 0, device: Any = None, nbytes: int | None = None) -> None:
        if isinstance(root, int):  # ``UntypedStorage(n)``: n uninitialized bytes, as PyTorch's constructor
            root = np.empty(root, np.uint8)
        if not isinstance(device, _device):
            from ember.c10.device import canonical
            device = canonical("cpu" if device is None else device)
        self._root = root
        self.device = device
        self._nbytes = root.size * root.itemsize if nbytes is None else nbytes

    @classmethod
    def from_file(cls, filename: str, shared: bool = False, nbytes: int = 0) -> UntypedStorage:
        """The bytes of a file, memory-mapped: written back to the file when ``shared``, copy-on-write
        otherwise (``torch.UntypedStorage.from_file``); ``nbytes`` 0 means the whole file."""
        import os
        size = nbytes or os.path.getsize(filename)
        if size == 0:
            return cls(np.empty(0, np.uint8))
        return cls(np.memmap(filename, dtype=np.uint8, mode="r+" if shared else "c", shape=(size,)))

    def __getitem__(self, idx: Any) -> Any:
        """A byte (an int) or, for a slice, the storage of those bytes (sharing memory)."""
        b = self._bytes()
        if isinstance(idx, slice):
            if idx.step not in (None, 1):
                raise RuntimeError("Storage slicing with a step is not supported")
            return UntypedStorage(b[idx], self.device)
        return int(b[idx])

    def __setitem__(self, idx: Any, value: Any) -> None:
        self._bytes()[idx] = value

    def fill_(self, value: int) -> UntypedStorage:
        self._bytes()[...] = value
        return self

    def copy_(self, src: UntypedStorage, non_blocking: bool = False) -> UntypedStorage:
        if src.nbytes() != self.nbytes():
            raise RuntimeError(f"size mismatch, {self.nbytes()} vs {src.nbytes()}")
        self._bytes()[...] = src._bytes()
        return self

    def cpu(self) -> UntypedStorage:
        return self

    def untyped(self) -> UntypedStorage:
        return self

    def is_shared(self) -> bool:
        """In shared memory: an anonymous shared mapping (``share_memory_``), or a CUDA storage."""
        import mmap
        base = getattr(self._root, "base", None)
        return self.device.type == "cuda" or isinstance(getattr(base, "obj", base), mmap.mmap)

    def share_memory_(self) -> UntypedStorage:
        """Move the bytes to an anonymous shared memory mapping, which processes forked afterwards share (the
        tensors over this storage see the new memory; a no-op when already shared, and for CUDA)."""
        if self.is_shared() or self.device.type != "cpu":
            return self
        self._set_root(shared_copy(self._bytes()))
        return self

    def _set_root(self, new_root: Any) -> None:
        """Swap the memory behind this storage handle (``resize_``, ``share_memory_``). Tensors keep the memory
        they view: ``Tensor.share_memory_`` / ``resize_`` rebind the tensor itself."""
        self._root = new_root
        self._nbytes = new_root.size * new_root.itemsize

    @property
    def is_cuda(self) -> bool:
        return bool(self.device.type == "cuda")

    def nbytes(self) -> int:
        return self._nbytes

    def size(self) -> int:
        return self._nbytes

    __len__ = size

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        if self.device.type == "meta":
            return 0
        return array_data_ptr(self._root)

    def _bytes(self) -> Any:
        """The storage as a flat uint8 array (shares memory)."""
        r = np.ascontiguousarray(self._root) if self._root.ndim else self._root.reshape(1)
        return r.view(np.uint8).reshape(-1)

    def tolist(self) -> list[int]:
        out: list[int] = self._bytes().tolist()
        return out

    def __eq__(self, other: object) -> bool:  # two handles on one storage compare by identity of the memory
        return isinstance(other, UntypedStorage) and other._root is self._root

    def __hash__(self) -> int:
        return id(self._root)

    def __repr__(self) -> str:
        body = "\n".join(f" {b}" for b in self.tolist()) if self.device.type != "meta" else " ..."
        return f"{body}\n[ember.storage.UntypedStorage(device={self.device}) of size {self._nbytes}]"
