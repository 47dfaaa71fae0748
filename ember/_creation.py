"""Tensors from Python data and NumPy arrays: ``tensor``, ``as_tensor``, ``asarray``, ``from_numpy``
(``torch/csrc/utils/tensor_new.cpp``, ``tensor_numpy.cpp``)."""
from __future__ import annotations

import warnings

import numpy as np

from ember.aten import torch_function as _torch_function
from ember.aten.dispatcher import tls as _dispatch_tls
from ember.aten.wrap import new_tensor
from ember.c10 import dtype as _dt
from ember.c10.device import canonical
from ember.c10.dispatch_key import KS_OF_DEVICE_TYPE, DispatchKey
from ember.c10.storage import UntypedStorage
from ember.c10.tensor_impl import fake_array
from ember.c10.device import device as _device

_PYTHON_BIT = 1 << DispatchKey.Python


def _place(arr: np.ndarray, device):
    """Wrap a NumPy array as a tensor on ``device`` (copied to the GPU, or reduced to metadata)."""
    dev = canonical(device)
    if dev.type == "meta":
        arr = fake_array(arr.shape, arr.dtype)
    elif dev.type == "cuda":
        import cupy
        if dev.index is not None:
            with cupy.cuda.Device(dev.index):
                arr = cupy.asarray(arr)
        else:
            arr = cupy.asarray(arr)
            dev = _device("cuda", 0)
    t = new_tensor(arr, KS_OF_DEVICE_TYPE[dev.type], dev)
    if _dispatch_tls.keys[0] & _PYTHON_BIT:    # a dispatch mode sees the new constant, as PyTorch's does
        from ember._generated import aten
        t = aten.lift_fresh(t)
    return t


def _leaf_kind(data):
    """The Python type of the first scalar leaf of nested sequences (for dtype inference)."""
    x = data
    while isinstance(x, (list, tuple)) and len(x):
        x = x[0]
    return x


def _infer(data, want=None):
    """(array, inferred dtype) for ``data``; Python numbers convert straight to ``want`` when given (so
    ``tensor([1/3], dtype=float64)`` is not rounded through the default dtype first)."""
    from ember._tensor import Tensor
    if isinstance(data, Tensor):
        from ember.aten.math_bits import values_of
        return values_of(data.cpu())._data, data.dtype      # (a lazy conjugate's values)
    if isinstance(data, np.ndarray):
        return data, _dt.from_numpy_dtype(data.dtype)
    from ember.storage import TypedStorage
    if isinstance(data, TypedStorage):  # a legacy storage: its elements
        a = data._array()
        return (a.get() if hasattr(a, "get") else a), data.dtype
    if isinstance(data, (np.number, np.bool_)):
        return np.asarray(data), _dt.from_numpy_dtype(data.dtype)
    if isinstance(data, (bool, int, float, complex)):
        d = _dt.scalar_dtype(data)
        if isinstance(data, int) and not isinstance(data, bool) and not -(1 << 63) <= data < (1 << 63):
            raise RuntimeError("Overflow when unpacking long")
        return np.asarray(data, dtype=(want or d).np), d
    if isinstance(data, str):
        raise TypeError("new(): invalid data type 'str'")
    if not isinstance(data, (list, tuple)):
        if hasattr(data, "__array__"):
            a = np.asarray(data)
            return a, _dt.from_numpy_dtype(a.dtype)
        raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    _check_ragged(data, 0)
    leaves = []
    _collect_kinds(data, leaves)
    cats = set()
    explicit = None
    for leaf in leaves:
        if isinstance(leaf, Tensor) or isinstance(leaf, np.ndarray) or isinstance(leaf, np.generic):
            d = leaf.dtype if isinstance(leaf, Tensor) else _dt.from_numpy_dtype(leaf.dtype)
            explicit = d if explicit is None else _dt.promote_types(explicit, d)
        elif isinstance(leaf, bool):
            cats.add(_dt.bool_)
        elif isinstance(leaf, int):
            cats.add(_dt.int64)
        elif isinstance(leaf, float):
            cats.add(_dt.get_default_dtype())
        elif isinstance(leaf, complex):
            cats.add(_dt.default_complex_dtype())
        elif isinstance(leaf, str):
            raise TypeError("new(): invalid data type 'str'")
        else:
            raise TypeError(f"Could not infer dtype of {type(leaf).__name__}")
    d = explicit
    for c in cats:
        d = c if d is None else _dt.promote_types(d, c)
    if d is None:
        d = _dt.get_default_dtype()
    conv = _to_nested_python(data)
    target = d if want is None or explicit is not None else want
    try:
        arr = np.array(conv, dtype=target.np if target is not _dt.bfloat16 else np.float64)
    except OverflowError:
        raise RuntimeError("Overflow when unpacking long") from None
    return arr.astype(target.np, copy=False), d


def _collect_kinds(x, out):
    from ember._tensor import Tensor
    if isinstance(x, (list, tuple)):
        for y in x:
            _collect_kinds(y, out)
    else:
        if isinstance(x, Tensor) and x.numel() != 1:  # a tensor in a sequence is one number, as in PyTorch
            raise ValueError("only one element tensors can be converted to Python scalars")
        out.append(x)


def _to_nested_python(x):
    from ember._tensor import Tensor
    if isinstance(x, (list, tuple)):
        return [_to_nested_python(y) for y in x]
    if isinstance(x, Tensor):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x


def _check_ragged(data, dim):
    if not isinstance(data, (list, tuple)) or not data:
        return
    first = data[0]
    if isinstance(first, (list, tuple)):
        n = len(first)
        for x in data:
            if not isinstance(x, (list, tuple)):
                raise ValueError(f"expected sequence of length {n} at dim {dim + 1}")
            if len(x) != n:
                raise ValueError(f"expected sequence of length {n} at dim {dim + 1} (got {len(x)})")
        for x in data:
            _check_ragged(x, dim + 1)
    else:
        for x in data:
            if isinstance(x, (list, tuple)):
                raise ValueError(f"expected sequence of length 1 at dim {dim + 1} (got {len(x)})" if len(x) != 1
                                 else "Could not infer dtype of list")


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """Copy ``data`` (nested lists, NumPy arrays, scalars, tensors) into a new tensor.

    Args:
        data: values; the dtype is inferred as PyTorch does (Python floats -> the default dtype).
        dtype: the element type; device: where the tensor lives; requires_grad: record autograd history.

    Example::

        >>> ember.tensor([[1., 2.], [3., 4.]])
        tensor([[1., 2.],
                [3., 4.]])
    """
    from ember._tensor import Tensor
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    arr, d = _infer(data, dtype)
    if dtype is not None:
        d = dtype
    if isinstance(data, np.ndarray) and _dispatch_tls.keys[0] & _PYTHON_BIT and data.dtype.kind in "biufc":
        # PyTorch wraps the array, then copies it into the tensor: a dispatch mode sees lift_fresh and _to_copy
        from ember._generated import aten
        t = aten._to_copy(_place(np.array(data, copy=True), "cpu"), dtype=d, device=canonical(device or "cpu"))
        return t.requires_grad_(True) if requires_grad else t
    if arr.dtype != d.np:
        with np.errstate(all="ignore"):
            arr = arr.astype(d.np)
    else:
        arr = arr.copy()
    if device is None and isinstance(data, Tensor):
        device = data.device
    t = _place(np.ascontiguousarray(arr) if arr.ndim else arr, device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_numpy(ndarray: np.ndarray):
    """A CPU tensor sharing memory with ``ndarray``."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a "
                         "copy of your array  with array.copy().) ")
    if not ndarray.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")
    _dt.from_numpy_dtype(ndarray.dtype)
    if any(s % ndarray.itemsize for s in ndarray.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy "
                         "array to reallocate the memory.")
    if not ndarray.flags.writeable:
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
                      "This means writing to this tensor will result in undefined behavior. You may want to copy "
                      "the array to protect its data or make it writable before converting it to a tensor. This "
                      "type of warning will be suppressed for the rest of this program.", UserWarning, stacklevel=2)
    return _place(ndarray, "cpu")


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with a NumPy array or tensor when dtype and device allow."""
    from ember._tensor import Tensor
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype) if (dtype or device) else data
    if isinstance(data, UntypedStorage):  # the storage's bytes, seen as ``dtype`` (uint8 by default)
        b = data._bytes()
        t = from_numpy(b.view(dtype.np) if dtype is not None else b)
        return t if device is None else t.to(device)
    if isinstance(data, np.ndarray) and (device is None or canonical(device).type == "cpu"):
        t = from_numpy(data) if all(s >= 0 for s in data.strides) else from_numpy(data.copy())
        return t if dtype is None or dtype is t.dtype else t.to(dtype)
    return _tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    from ember._tensor import Tensor
    if copy:
        t = _tensor(obj.detach() if isinstance(obj, Tensor) and hasattr(obj, "detach") else obj, dtype=dtype,
                   device=device) if not isinstance(obj, Tensor) else obj.to(device=device, dtype=dtype, copy=True)
    else:
        t = _as_tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over the bytes of a Python buffer object (shared, not copied): ``count`` elements of ``dtype``
    from ``offset`` bytes on (``-1``: to the end)."""
    view = memoryview(buffer)
    if view.readonly:
        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
                      "means you can write to the underlying (supposedly non-writable) buffer using the tensor. You "
                      "may want to copy the buffer to protect its data or make it writable before converting it to a "
                      "tensor. This type of warning will be suppressed for the rest of this program.", UserWarning,
                      stacklevel=2)
    item = dtype.itemsize
    length = view.nbytes
    if length <= 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % item:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({item})")
        count = (length - offset) // item
    elif offset + count * item > length:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset ({offset} bytes) must not be "
                         f"greater than actual buffer length ({length} bytes)")
    arr = np.frombuffer(buffer, dtype=np.uint8, count=count * item, offset=offset).view(dtype.np)
    t = from_numpy(arr) if arr.flags.writeable else from_numpy(arr.copy())
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any object that speaks DLPack (``__dlpack__``: NumPy arrays, CuPy arrays, other
    frameworks' tensors), or with a DLPack capsule."""
    from ember._tensor import Tensor
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if hasattr(ext_tensor, "__dlpack__"):
        dev = ext_tensor.__dlpack_device__()[0] if hasattr(ext_tensor, "__dlpack_device__") else 1
        if dev == 2:  # kDLCUDA
            import cupy
            t = new_tensor(cupy.from_dlpack(ext_tensor), KS_OF_DEVICE_TYPE["cuda"], canonical("cuda"))
            return t
        return from_numpy(np.from_dlpack(ext_tensor))
    return from_numpy(np.from_dlpack(_Capsule(ext_tensor)))


class _Capsule:
    """A DLPack capsule, as the object NumPy's ``from_dlpack`` expects."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)


# The public names: a torch function mode receives these three calls, as in PyTorch (the calls between them above
# stay internal).
_tensor, _as_tensor, _asarray = tensor, as_tensor, asarray
tensor = _torch_function.seen_by_modes(_tensor)
as_tensor = _torch_function.seen_by_modes(_as_tensor)
asarray = _torch_function.seen_by_modes(_asarray)
