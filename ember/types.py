"""``torch.types``: the type aliases PyTorch's annotations use (``_size``, ``Number``, ``Device``, ...)."""
from __future__ import annotations

import os
from typing import IO, Any, Sequence, TypeAlias, Union

from ember._tensor import Tensor
from ember.c10.device import device as _device
from ember.c10.dispatch_key import DispatchKey  # noqa: F401
from ember.c10.dtype import dtype as _dtype  # noqa: F401
from ember.c10.memory_format import layout as _layout_cls  # noqa: F401
from ember.c10.qscheme import qscheme as _qscheme_cls  # noqa: F401
from ember.c10.size import Size
from ember.storage import TypedStorage, UntypedStorage

__all__ = ["Number", "Device", "FileLike", "Storage"]

_bool, _int, _float, _complex, _str, _bytes = bool, int, float, complex, str, bytes
_TensorOrTensors: TypeAlias = Union[Tensor, Sequence[Tensor]]
_TensorOrOptionalTensors: TypeAlias = Union[Tensor, Sequence[Union[Tensor, None]]]
_size: TypeAlias = Union[Size, list[int], tuple[int, ...]]
_symsize: TypeAlias = _size
_dispatchkey: TypeAlias = Union[str, Any]
_layout: TypeAlias = _layout_cls
_qscheme: TypeAlias = _qscheme_cls
IntLikeType: TypeAlias = int
FloatLikeType: TypeAlias = float
BoolLikeType: TypeAlias = bool
Number: TypeAlias = Union[int, float, bool]
_Number = (int, float, bool)
FileLike: TypeAlias = Union[str, os.PathLike, IO[bytes]]
Device: TypeAlias = Union[_device, str, int, None]
Storage: TypeAlias = Union[TypedStorage, UntypedStorage]
