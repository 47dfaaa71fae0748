"""TensorImpl: what a tensor is below autograd (mirrors ``c10/core/TensorImpl.h``).

A TensorImpl holds a strided array (``_data``: a NumPy/CuPy array, possibly a view into a larger
one), the dispatch key set of its backend (``_ks``, an int bitset), its device, and a version counter
shared with every view of it (``_vc``).  Sizes, strides (in elements) and the storage offset are read
off the array, so creating a view is creating an array view: no bookkeeping is done twice.

Note [Meta tensors]
A meta tensor has sizes, strides and a dtype but no data.  Its ``_data`` is a NumPy array of the
right shape, dtype and strides laid over a one-element buffer: view kernels (which only compute
strides and offsets) run on it unchanged and give PyTorch's strides; nothing ever reads it.  Compute
kernels never see it: the Meta registrations (ember/aten/meta.py) compute shapes and dtypes only.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from ember.c10.device import device
from ember.c10.dispatch_key import CONJ_BIT, NEG_BIT, SPARSE_MASK, DispatchKey
from ember.c10.dtype import dtype, from_numpy_dtype
from ember.c10.size import Size, size_of_shape
from ember.c10.storage import UntypedStorage, array_data_ptr, root_array

_QUANTIZED_CPU_BIT = int(DispatchKey.QuantizedCPU)


class VersionCounter:
    """Counts in-place writes; shared by a tensor and all its views (``Tensor._version``).

    Every result tensor makes one, so it has no ``__init__``: a fresh counter reads the class's 0 and the first write
    (``vc.version += 1``) gives the instance its own value (a Python ``__init__`` frame was a quarter of a result
    tensor's cost)."""

    version = 0


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


_FAKE_BUFFERS: dict[Any, Any] = {}


_OUTGROWN_FAKE_BUFFERS: dict[int, Any] = {}   # id -> a buffer an offset outgrew (kept alive: the id stays its own)


def is_fake_buffer(root: Any) -> bool:
    return _FAKE_BUFFERS.get(root.dtype) is root or id(root) in _OUTGROWN_FAKE_BUFFERS


def fake_array(shape: Iterable[int], dtype_np: Any, strides: Iterable[int] | None = None, offset: int = 0) -> Any:
    """A metadata-only array for a meta tensor (Note [Meta tensors]). A storage ``offset`` places it that many
    elements into a zero buffer of the dtype (calloc'd: its pages are never touched), so that ``storage_offset``
    reads it."""
    buf = _FAKE_BUFFERS.get(dtype_np)
    if buf is None or offset >= buf.size:
        if buf is not None:
            _OUTGROWN_FAKE_BUFFERS[id(buf)] = buf
        buf = _FAKE_BUFFERS[dtype_np] = np.zeros(max(1, offset + 1, 2 * (0 if buf is None else buf.size)), dtype_np)
    if offset:
        buf = buf[offset:]
    shape = tuple(shape)
    if strides is None:
        strides = contiguous_strides(shape)
    return np.lib.stride_tricks.as_strided(buf, shape, tuple(s * buf.itemsize for s in strides),
                                           writeable=False)


class TensorImpl:
    __slots__ = ("_data", "_ks", "_vc", "_device", "__weakref__", "__dict__")
    _data: Any  # the NumPy / CuPy array
    _ks: int  # the dispatch key set, a bitset
    _vc: VersionCounter
    _device: device

    # -- metadata --------------------------------------------------------------------------
    @property
    def dtype(self) -> dtype:
        return from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> device:
        return self._device

    @property
    def shape(self) -> Size:
        return size_of_shape(self._data.shape)

    def size(self, dim: int | None = None) -> Any:  # a Size, or an int for one dim
        if dim is None:
            return size_of_shape(self._data.shape)
        if not self._data.ndim:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return int(self._data.shape[_wrap_dim(dim, self._data.ndim)])

    def dim(self) -> int:
        return int(self._data.ndim)

    ndimension = dim

    @property
    def ndim(self) -> int:
        return int(self._data.ndim)

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        return int(self._data.itemsize)

    @property
    def itemsize(self) -> int:
        return int(self._data.itemsize)

    @property
    def nbytes(self) -> int:
        return int(self._data.size * self._data.itemsize)

    def stride(self, dim: int | None = None) -> Any:  # a tuple, or an int for one dim
        a = self._data
        if self._ks >> DispatchKey.SparseCsrCPU & 1:
            raise RuntimeError(f"Sparse {_compressed_name(self)} tensors do not have strides")
        # NumPy keeps no strides for an empty array: PyTorch's contiguous ones (sizes of 0 count as 1)
        if a.size == 0:
            st = contiguous_strides(a.shape)
        else:
            n = a.itemsize
            st = tuple([s // n for s in a.strides])
        if dim is None:
            return st
        return st[_wrap_dim(dim, a.ndim)]

    def storage_offset(self) -> int:
        a = self._data
        return int((array_data_ptr(a) - array_data_ptr(root_array(a))) // a.itemsize)

    def untyped_storage(self) -> UntypedStorage:
        if self._ks & SPARSE_MASK:
            kind = "SparseTensorImpl" if self._ks >> DispatchKey.SparseCPU & 1 else "SparseCsrTensorImpl"
            raise NotImplementedError(f"Cannot access storage of {kind}")
        root = root_array(self._data)
        if self._device.type == "meta":
            n = self.storage_offset() + 1 + sum((s - 1) * st for s, st in zip(self._data.shape, self.stride()))
            return UntypedStorage(root, self._device, 0 if self._data.size == 0 else n * self._data.itemsize)
        return UntypedStorage(root, self._device)

    def data_ptr(self) -> int:
        if self._device.type == "meta":
            return 0
        if self._ks & SPARSE_MASK:
            raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")
        return array_data_ptr(self._data)

    def is_contiguous(self, memory_format: Any = None) -> bool:
        a = self._data
        if memory_format is not None and getattr(memory_format, "name", "") == "channels_last":
            return _is_channels_last(a)
        if self._ks & SPARSE_MASK:      # a sparse tensor has no strided memory (Note [Sparse tensors])
            if self._ks >> DispatchKey.SparseCsrCPU & 1:
                raise RuntimeError(f"Sparse {_compressed_name(self)} tensors do not have is_contiguous")
            return False
        if a.flags.c_contiguous:    # (NumPy's flag ignores the strides of size-1 dims, as PyTorch does)
            return True
        if a.size <= 1:
            return True
        expected = a.itemsize
        for size, st in zip(reversed(a.shape), reversed(a.strides)):
            if size != 1:
                if st != expected:
                    return False
                expected *= size
        return True

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def is_quantized(self) -> bool:
        """Whether the elements are quantized integers (Note [Quantized dtypes] in ember/c10/dtype.py)."""
        return bool(self._ks >> _QUANTIZED_CPU_BIT & 1)

    def is_conj(self) -> bool:
        """Whether the values are the conjugate of the memory (a lazy ``conj()``; Note [Math bits])."""
        return bool(self._ks & CONJ_BIT)

    def is_neg(self) -> bool:
        """Whether the values are the negation of the memory (``_neg_view()``; Note [Math bits])."""
        return bool(self._ks & NEG_BIT)

    @property
    def is_meta(self) -> bool:
        return self._device.type == "meta"

    @property
    def is_cpu(self) -> bool:
        return self._device.type == "cpu"

    # devices PyTorch has and ember does not: no tensor is ever on one (libraries test these before device paths)
    @property
    def is_mps(self) -> bool:
        return self._device.type == "mps"

    @property
    def is_xpu(self) -> bool:
        return self._device.type == "xpu"

    @property
    def is_hpu(self) -> bool:
        return self._device.type == "hpu"

    @property
    def is_ipu(self) -> bool:
        return self._device.type == "ipu"

    @property
    def is_mtia(self) -> bool:
        return self._device.type == "mtia"

    @property
    def is_xla(self) -> bool:
        return self._device.type == "xla"

    @property
    def is_vulkan(self) -> bool:
        return self._device.type == "vulkan"

    @property
    def is_maia(self) -> bool:
        return self._device.type == "maia"

    @property
    def _version(self) -> int:
        return self._vc.version

    def _bump_version(self) -> None:
        self._vc.version += 1


def _compressed_name(t: Any) -> str:
    """"CSR", "CSC", "BSR" or "BSC": a compressed sparse tensor's layout as PyTorch's errors name it."""
    return str(t.__dict__["_sp"].layout.name[7:]).upper()


def _is_channels_last(a: Any) -> bool:
    """NHWC memory order: strides (H*W*C, 1, W*C, C) in elements, ignoring size-1 dims."""
    if a.ndim != 4:
        return False
    n, c, h, w = a.shape
    want = (h * w * c, 1, w * c, c)
    return all(size == 1 or st // a.itemsize == ws for size, st, ws in zip(a.shape, a.strides, want))


def _wrap_dim(dim: int, ndim: int) -> int:
    """Wrap a possibly negative dim; PyTorch's IndexError when out of range."""
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim
