"""The legacy tensor type classes (``torch/csrc/tensor/python_tensor.cpp``): ``torch.FloatTensor``,
``torch.LongTensor``, ... and their ``torch.cuda`` twins.

They are not subclasses of ``Tensor``: each stands for a (dtype, device type) pair. ``isinstance(t,
torch.LongTensor)`` asks whether ``t`` is an int64 CPU tensor; calling one makes a tensor of its type
(``torch.FloatTensor(2, 3)`` uninitialized, ``torch.LongTensor([1, 2])`` from data, ``torch.FloatTensor()``
empty); ``t.type(torch.DoubleTensor)`` converts. Type annotations such as ``ids: torch.LongTensor`` need
nothing more.
"""
from __future__ import annotations

from typing import Any

from ember._tensor import _TYPE_STRINGS, Tensor
from ember.c10 import dtype as _dt

__all__ = [name.split(".")[-1] for name in _TYPE_STRINGS.values()]


class _TensorTypeMeta(type):
    dtype: Any
    is_cuda: bool

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.is_cuda == cls.is_cuda

    def __repr__(cls) -> str:
        return f"<class '{cls.__module__}.{cls.__name__}'>"


class _TensorType(metaclass=_TensorTypeMeta):
    def __new__(cls, *args: Any, device: Any = None) -> Any:  # type: ignore[misc]
        import ember
        dev = device if device is not None else ("cuda" if cls.is_cuda else "cpu")
        if not args:
            return ember.empty(0, dtype=cls.dtype, device=dev)
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype is not cls.dtype:
                raise TypeError(f"expected {cls.__module__}.{cls.__name__} (got {args[0].type()})")
            return args[0]
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args) or \
                (len(args) == 1 and isinstance(args[0], ember.Size)):
            return ember.empty(tuple(args[0]) if isinstance(args[0], ember.Size) else args, dtype=cls.dtype,
                               device=dev)
        if len(args) == 1:
            return ember.tensor(args[0], dtype=cls.dtype, device=dev)
        raise TypeError(f"new() received an invalid combination of arguments - got {len(args)} arguments")


def _make(module: str, name: str, dtype: Any, is_cuda: bool) -> type:
    return _TensorTypeMeta(name, (_TensorType,), {"dtype": dtype, "is_cuda": is_cuda, "__module__": module})


for _np_name, _full in _TYPE_STRINGS.items():
    _name = _full.split(".")[-1]
    globals()[_name] = _make("torch", _name, _dt._BY_NAME[_np_name], False)

CUDA_TYPES = {(_full.split(".")[-1]): _make("torch.cuda", _full.split(".")[-1], _dt._BY_NAME[_np_name], True)
              for _np_name, _full in _TYPE_STRINGS.items()}
