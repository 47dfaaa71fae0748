"""Rebuilding tensors from checkpoint storages (mirrors ``torch/_utils.py``'s ``_rebuild_tensor_v2`` and
friends): the functions a PyTorch checkpoint's pickle calls, by their ``torch._utils`` names."""
from __future__ import annotations

import numpy as np

import ember
from ember.c10.dispatch_key import CONJ_BIT, NEG_BIT

# dtype name <-> PyTorch's legacy typed-storage class name (the dtype tag of a storage record)
_STORAGE_NAMES = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
                  "bfloat16": "BFloat16Storage", "complex64": "ComplexFloatStorage",
                  "complex128": "ComplexDoubleStorage", "int64": "LongStorage", "int32": "IntStorage",
                  "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
                  "qint8": "QInt8Storage", "quint8": "QUInt8Storage", "qint32": "QInt32Storage"}
_STORAGE_DTYPES = {v: k for k, v in _STORAGE_NAMES.items()}


def _dtype_name(dtype) -> str:
    return str(dtype).split(".")[-1]


class _StorageType:
    """What a ``torch.<X>Storage`` global stands for in a pickle: a dtype tag."""

    __slots__ = ("name", "dtype")

    def __init__(self, name):
        self.name = name
        self.dtype = getattr(ember, _STORAGE_DTYPES[name]) if name in _STORAGE_DTYPES else ember.uint8

    def __repr__(self):
        return f"StorageType(dtype={self.dtype})"


class _Storage:
    """A loaded storage: a flat writable array of its dtype, and the device its tensors go to."""

    __slots__ = ("array", "device")

    def __init__(self, array, device):
        self.array = array
        self.device = device

    def nbytes(self):
        return self.array.nbytes


def _view(storage, storage_offset, size, stride, dtype=None):
    """The tensor ``(storage_offset, size, stride)`` of ``storage``, after checking that it is inside."""
    flat = storage.array if dtype is None else storage.array.view(dtype.np)
    if not isinstance(storage_offset, int) or isinstance(storage_offset, bool) or storage_offset < 0:
        raise RuntimeError(f"invalid storage offset {storage_offset!r} in the checkpoint")
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride) or any(not isinstance(v, int) or isinstance(v, bool) or v < 0
                                        for v in size + stride):
        raise RuntimeError(f"invalid tensor size {size!r} / stride {stride!r} in the checkpoint")
    n = flat.size
    if all(s > 0 for s in size):
        last = storage_offset + sum((s - 1) * st for s, st in zip(size, stride))
        if last >= n:
            raise RuntimeError(f"a tensor of size {list(size)}, stride {list(stride)} and offset {storage_offset} "
                               f"reaches element {last} of a storage of {n} elements: the checkpoint is corrupt")
        base = flat[storage_offset:]
    else:
        base = flat[:0]
    arr = np.lib.stride_tricks.as_strided(base, size, tuple(st * flat.itemsize for st in stride))
    t = ember.from_numpy(arr)
    if storage.device is not None and storage.device.type != "cpu":
        t = t.to(storage.device)
    return t


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _view(storage, storage_offset, size, stride)


def _set_tensor_metadata(t, metadata):
    """The math bits a checkpoint recorded (``{"conj": True}``, ``{"neg": True}``; Note [Math bits])."""
    if metadata:
        unknown = set(metadata) - {"conj", "neg"}
        if unknown:
            raise RuntimeError(f"unknown tensor metadata {sorted(unknown)} in the checkpoint")
        t._ks |= (CONJ_BIT if metadata.get("conj") else 0) | (NEG_BIT if metadata.get("neg") else 0)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    t = _view(storage, storage_offset, size, stride)
    _set_tensor_metadata(t, metadata)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    if not isinstance(dtype, ember.dtype):
        raise RuntimeError(f"invalid dtype {dtype!r} in the checkpoint")
    if storage.array.nbytes % dtype.itemsize:
        raise RuntimeError("a storage's size is not a multiple of its tensor's element size: the checkpoint is corrupt")
    t = _view(storage, storage_offset, size, stride, dtype)
    _set_tensor_metadata(t, metadata)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params, requires_grad, backward_hooks):
    """A quantized tensor: its integers from ``storage`` (a ``QInt8Storage`` ...) and its quantizer from
    ``quantizer_params`` -- ``(per_tensor_affine, scale, zero_point)`` or ``(per_channel_affine, scales,
    zero_points, axis)``, as PyTorch writes them."""
    from ember.aten.composite.quantize import wrap_quantized
    from ember.aten.quantized import quantizer as Qz
    qdtype = ember.c10.dtype.from_numpy_dtype(storage.array.dtype)
    if qdtype not in ember.c10.dtype.QUANTIZED_DTYPES:
        raise RuntimeError(f"a quantized tensor over a storage of {qdtype}: the checkpoint is corrupt")
    t = _view(storage, storage_offset, size, stride)
    ints = t._data.view(Qz.underlying(qdtype))
    scheme = quantizer_params[0]
    if scheme is ember.per_tensor_affine or scheme is ember.per_tensor_symmetric:
        _, scale, zero_point = quantizer_params
        quantizer = Qz.PerTensorAffineQuantizer(qdtype, float(scale), int(zero_point))
    elif scheme is ember.per_channel_affine or scheme is ember.per_channel_symmetric:
        _, scales, zero_points, axis = quantizer_params
        quantizer = Qz.PerChannelAffineQuantizer(qdtype, scales.numpy(), zero_points.numpy(), int(axis))
    else:
        raise RuntimeError(f"Can't deserialize quantized tensor with qscheme {scheme}")
    return wrap_quantized(Qz.as_quantized(ints, quantizer), t.device)


def _sparse_parts(t) -> tuple:
    """What PyTorch pickles for a sparse tensor (``torch/_tensor.py``'s ``_reduce_ex_internal``): COO ``(indices,
    values, size, is_coalesced)``; the compressed layouts ``(compressed_indices, plain_indices, values, size)``."""
    if t.layout is ember.sparse_coo:
        return (t._indices(), t._values(), t.size(), t.is_coalesced())
    if t.layout in (ember.sparse_csr, ember.sparse_bsr):
        return (t.crow_indices(), t.col_indices(), t.values(), t.size())
    return (t.ccol_indices(), t.row_indices(), t.values(), t.size())


def _get_layout(name: str):
    """The layout named ``torch.<name>`` in a checkpoint (PyTorch's ``torch.serialization._get_layout``)."""
    layout = getattr(ember, name.rpartition(".")[2], None)
    if not isinstance(layout, ember.layout):
        raise RuntimeError(f"unknown layout {name!r} in the checkpoint")
    return layout


def _rebuild_sparse_tensor(layout, data):
    """A sparse tensor from its layout and parts, as PyTorch pickles it: COO ``(indices, values, size,
    is_coalesced)``, compressed ``(compressed_indices, plain_indices, values, size)``. Its invariants are checked, as
    PyTorch checks every sparse tensor a load makes: a checkpoint's indices are never trusted."""
    if layout is ember.sparse_coo:
        if len(data) == 3:          # written before is_coalesced was saved
            indices, values, size = data
            is_coalesced = None
        else:
            indices, values, size, is_coalesced = data
        return ember.sparse_coo_tensor(indices, values, size, check_invariants=True, is_coalesced=is_coalesced)
    if layout in (ember.sparse_csr, ember.sparse_csc, ember.sparse_bsr, ember.sparse_bsc):
        compressed, plain, values, size = data
        return ember.sparse_compressed_tensor(compressed, plain, values, size, layout=layout, check_invariants=True)
    raise RuntimeError(f"rebuilding sparse tensor for layout {layout}")


def _rebuild_parameter(data, requires_grad, backward_hooks):
    return ember.nn.Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    param = ember.nn.Parameter(data, requires_grad)
    if isinstance(state, dict):
        for k, v in state.items():
            setattr(param, k, v)
    return param


def _rebuild_from_type_v2(func, new_type, args, state):
    ret = func(*args)
    if type(ret) is not new_type and new_type in (ember.Tensor, ember.nn.Parameter):
        ret = ret.as_subclass(new_type)
    if isinstance(state, dict):
        for k, v in state.items():
            setattr(ret, k, v)
    return ret
