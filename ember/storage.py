"""Typed storages (``torch/storage.py``): ``TypedStorage``, the bytes of an ``UntypedStorage`` seen as elements of
one dtype, and the legacy per-dtype classes (``FloatStorage``, ``LongStorage``, ...) that old programs and
checkpoints name. PyTorch deprecates all of them in favour of ``UntypedStorage`` and says so once per process.

``Tensor.storage()`` returns a ``TypedStorage`` over the tensor's storage (sharing memory); ``isinstance(s,
ember.FloatStorage)`` is true for a float32 ``TypedStorage`` on the CPU, as in PyTorch."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.c10 import dtype as _dt
from ember.c10.device import canonical
from ember.c10.exceptions import warn_user
from ember.c10.storage import StorageBase, UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]

_WARNED: list[bool] = []


def _warn_typed_storage_removal() -> None:
    if not _WARNED:
        _WARNED.append(True)
        warn_user("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
                  "storage class. This should only matter to you if you are using storages directly.  To access "
                  "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()")


def _on_device(a: Any, dev: Any) -> Any:
    """A NumPy array's copy on ``dev`` (the array itself on the CPU)."""
    if dev.type == "cpu":
        return a
    import ember
    return ember.from_numpy(a).to(dev)._data


class TypedStorage:
    """Elements of ``dtype`` over an ``UntypedStorage`` (``_untyped_storage``)."""

    is_sparse = False
    dtype: Any

    def __init__(self, *args: Any, device: Any = None, dtype: Any = None, wrap_storage: Any = None,
                 _internal: bool = False) -> None:
        if not _internal:
            _warn_typed_storage_removal()
        cls_dtype = getattr(type(self), "_legacy_dtype", None)
        if cls_dtype is not None:
            if dtype is not None and dtype != cls_dtype:
                raise RuntimeError(f"{type(self).__name__}.__new__ received an invalid combination of arguments")
            dtype = cls_dtype
        if wrap_storage is not None:
            if args:
                raise RuntimeError("TypedStorage.__init__ received an invalid combination of arguments. No positional "
                                   "arguments should be given when using 'wrap_storage'")
            if dtype is None:
                raise RuntimeError("TypedStorage.__init__ received an invalid combination of arguments. Argument "
                                   "'dtype' must be specified")
            if not isinstance(wrap_storage, UntypedStorage):
                raise TypeError("TypedStorage.__init__ received an invalid combination of arguments. Argument "
                                f"'wrap_storage' must be UntypedStorage, but got {type(wrap_storage)}")
            self.dtype = dtype
            self._untyped_storage = wrap_storage
            return
        self.dtype = _dt.get_default_dtype() if dtype is None else dtype
        dev = canonical("cpu" if device is None else device)
        if len(args) > 1:
            raise RuntimeError("TypedStorage.__init__ received an invalid combination of arguments. Too many "
                               "positional arguments")
        np_dt = self.dtype.np
        if not args:
            data = np.empty(0, np_dt)
        elif isinstance(args[0], int):
            data = np.empty(args[0], np_dt)
        else:
            data = np.asarray(list(args[0])).astype(np_dt)
        self._untyped_storage = UntypedStorage(_on_device(data.reshape(-1), dev), dev)

    # -- what it is ----------------------------------------------------------------------------------------
    @property
    def device(self) -> Any:
        return self._untyped_storage.device

    @property
    def is_cuda(self) -> bool:
        return bool(self.device.type == "cuda")

    @property
    def filename(self) -> str | None:
        return None

    def untyped(self) -> UntypedStorage:
        _warn_typed_storage_removal()
        return self._untyped_storage

    def element_size(self) -> int:
        return int(self.dtype.itemsize)

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def size(self) -> int:
        return self.nbytes() // self.element_size()

    __len__ = size

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    def get_device(self) -> int:
        return -1 if self.device.type == "cpu" else (self.device.index or 0)

    def type(self, dtype: Any = None, non_blocking: bool = False) -> Any:
        if dtype is None:
            return f"{self._get_legacy_storage_class().__module__}.{self._get_legacy_storage_class().__name__}"
        return self.to(dtype=dtype) if not isinstance(dtype, str) else self

    def pickle_storage_type(self) -> str:
        return str(_LEGACY_NAMES[self.dtype.name])

    def _get_legacy_storage_class(self) -> Any:
        return _LEGACY_CLASSES.get(self.dtype.name)

    def is_pinned(self, device: Any = "cuda") -> bool:
        return False

    def pin_memory(self, device: Any = "cuda") -> TypedStorage:
        raise RuntimeError("Cannot access accelerator device when none is available.")

    def is_shared(self) -> bool:
        return self._untyped_storage.is_shared()

    def share_memory_(self) -> TypedStorage:
        self._untyped_storage.share_memory_()
        return self

    def resizable(self) -> bool:
        return True

    # -- elements ----------------------------------------------------------------------------------------------
    def _array(self) -> Any:
        """The elements as a flat array of ``dtype`` (sharing memory)."""
        return self._untyped_storage._bytes().view(self.dtype.np)

    def _index(self, idx: Any) -> int:
        n = self.size()
        if not isinstance(idx, (int, np.integer)):
            raise RuntimeError(f"can't index a {type(self)} with {type(idx)}")
        if not -n <= idx < n:
            raise IndexError(f"index {idx} out of range for storage of size {n}")
        return int(idx) % n if n else 0

    def __getitem__(self, idx: Any) -> Any:
        _warn_typed_storage_removal()
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return self._array()[self._index(idx)].item()

    def __setitem__(self, idx: Any, value: Any) -> None:
        _warn_typed_storage_removal()
        a = self._array()
        if isinstance(idx, slice):
            a[idx] = value
        else:
            a[self._index(idx)] = value

    def __iter__(self) -> Any:
        _warn_typed_storage_removal()
        return iter(self.tolist())

    def tolist(self) -> list[Any]:
        _warn_typed_storage_removal()
        a = self._array()
        if a.dtype.names is not None:       # quantized elements: their integers (Note [Quantized dtypes])
            a = a.view(a.dtype[0])
        out: list[Any] = (a.get() if hasattr(a, "get") else a).tolist()
        return out

    def fill_(self, value: Any) -> TypedStorage:
        _warn_typed_storage_removal()
        self._array()[...] = value
        return self

    def copy_(self, source: Any, non_blocking: bool | None = None) -> TypedStorage:
        _warn_typed_storage_removal()
        if isinstance(source, TypedStorage):
            src = source._array()
        elif isinstance(source, UntypedStorage):
            src = source._bytes().view(self.dtype.np)
        else:
            src = np.asarray(source)
        if src.size != self.size():
            raise RuntimeError(f"size mismatch, {self.size()} vs {src.size}")
        self._array()[...] = src.reshape(-1)
        return self

    def clone(self, memory_format: Any = None) -> TypedStorage:
        _warn_typed_storage_removal()
        return TypedStorage(wrap_storage=UntypedStorage(self._array().copy(), self.device), dtype=self.dtype,
                            _internal=True)

    def __copy__(self) -> TypedStorage:
        return TypedStorage(wrap_storage=self._untyped_storage, dtype=self.dtype, _internal=True)

    def __deepcopy__(self, memo: dict[int, Any]) -> TypedStorage:
        return self.clone()

    def __sizeof__(self) -> int:
        return super().__sizeof__() + self.nbytes()

    def cpu(self) -> TypedStorage:
        _warn_typed_storage_removal()
        return self.to(device="cpu")

    def cuda(self, device: Any = None, non_blocking: bool = False) -> TypedStorage:
        return self.to(device="cuda" if device is None else device)

    def to(self, *, device: Any = None, dtype: Any = None, non_blocking: bool = False) -> TypedStorage:
        """The elements converted to ``dtype`` and / or moved to ``device`` (a new storage unless both already
        hold)."""
        dev = self.device if device is None else canonical(device)
        dt = self.dtype if dtype is None else dtype
        if dev == self.device and dt == self.dtype:
            return TypedStorage(wrap_storage=self._untyped_storage, dtype=self.dtype, _internal=True)
        a = self._array()
        a = a.get() if hasattr(a, "get") else a
        return TypedStorage(wrap_storage=UntypedStorage(_on_device(a.astype(dt.np), dev), dev), dtype=dt,
                            _internal=True)

    def _to(self, dtype: Any) -> TypedStorage:
        return self.to(dtype=dtype)

    def double(self) -> TypedStorage:
        return self._to(_dt.float64)

    def float(self) -> TypedStorage:  # noqa: A003
        return self._to(_dt.float32)

    def half(self) -> TypedStorage:
        return self._to(_dt.float16)

    def bfloat16(self) -> TypedStorage:
        return self._to(_dt.bfloat16)

    def long(self) -> TypedStorage:
        return self._to(_dt.int64)

    def int(self) -> TypedStorage:  # noqa: A003
        return self._to(_dt.int32)

    def short(self) -> TypedStorage:
        return self._to(_dt.int16)

    def char(self) -> TypedStorage:
        return self._to(_dt.int8)

    def byte(self) -> TypedStorage:
        return self._to(_dt.uint8)

    def bool(self) -> TypedStorage:  # noqa: A003
        return self._to(_dt.bool_)

    def complex_double(self) -> TypedStorage:
        return self._to(_dt.complex128)

    def complex_float(self) -> TypedStorage:
        return self._to(_dt.complex64)

    def resize_(self, size: int) -> None:
        """``size`` elements: the first ones kept, the rest uninitialized (a new buffer, as the storage grows)."""
        _warn_typed_storage_removal()
        a = self._array()
        out = np.empty(size, self.dtype.np)
        k = min(size, a.size)
        out[:k] = a[:k]
        self._untyped_storage._set_root(out)

    @classmethod
    def from_buffer(cls, buffer: Any, byte_order: str = "native", count: int = -1, offset: int = 0,
                    dtype: Any = None) -> TypedStorage:
        """A storage over a copy of ``buffer``'s bytes (``byte_order`` 'native', 'little' or 'big')."""
        dt = getattr(cls, "_legacy_dtype", None) or dtype
        if dt is None:
            raise RuntimeError("from_buffer: must specify a 'dtype'")
        np_dt = np.dtype(dt.np).newbyteorder({"native": "=", "little": "<", "big": ">"}[byte_order])
        a = np.frombuffer(buffer, np_dt, count=count, offset=offset).astype(dt.np)
        return TypedStorage(wrap_storage=UntypedStorage(a.copy()), dtype=dt, _internal=True)

    @classmethod
    def from_file(cls, filename: str, shared: bool = False, size: int = 0) -> TypedStorage:
        """``size`` elements of the file, memory-mapped (written back when ``shared``)."""
        dt = getattr(cls, "_legacy_dtype", None) or _dt.get_default_dtype()
        untyped = UntypedStorage.from_file(filename, shared, size * dt.itemsize)
        return TypedStorage(wrap_storage=untyped, dtype=dt, _internal=True)

    def __str__(self) -> str:
        if self.device.type == "meta":
            body = "..."
        else:
            body = "\n".join(f" {v}" for v in self.tolist())
        info = f"[{type(self).__module__}.{type(self).__name__}(dtype={self.dtype}, " \
               f"device={self.device}) of size {self.size()}]"
        return f"{body}\n{info}" if body else info

    __repr__ = __str__


class _LegacyStorageMeta(type):
    """``isinstance(s, FloatStorage)``: a float32 TypedStorage on the CPU is one, as in PyTorch."""

    _legacy_dtype: Any

    def __instancecheck__(cls, instance: Any) -> bool:
        if type(instance) is TypedStorage:
            return bool(cls._legacy_dtype == instance.dtype and instance.device.type == "cpu")
        return type.__instancecheck__(cls, instance)

    @property
    def dtype(cls) -> Any:
        return cls._legacy_dtype


class _LegacyStorage(TypedStorage, metaclass=_LegacyStorageMeta):
    @classmethod
    def _new_shared(cls, size: int) -> TypedStorage:
        s = cls(size)
        return s.share_memory_()


_LEGACY_NAMES = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
                 "bfloat16": "BFloat16Storage", "complex64": "ComplexFloatStorage",
                 "complex128": "ComplexDoubleStorage", "int64": "LongStorage", "int32": "IntStorage",
                 "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
                 "qint8": "QInt8Storage", "quint8": "QUInt8Storage", "qint32": "QInt32Storage"}
_LEGACY_CLASSES: dict[str, Any] = {}
for _name, _cls_name in _LEGACY_NAMES.items():
    _cls = _LegacyStorageMeta(_cls_name, (_LegacyStorage,), {"_legacy_dtype": getattr(_dt, "bool_" if _name == "bool"
                                                                                      else _name)})
    _cls.__module__ = "ember"
    _LEGACY_CLASSES[_name] = _cls


def is_storage(obj: Any) -> bool:
    return isinstance(obj, (TypedStorage, StorageBase))


def _typed_storage_of(tensor: Any) -> TypedStorage:
    return TypedStorage(wrap_storage=tensor.untyped_storage(), dtype=tensor.dtype, _internal=True)

