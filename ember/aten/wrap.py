"""Turning kernel results into tensors, and writing into ``self`` / ``out=`` (used by the
generated backend registrations in ``ember/_generated/registrations.py``).

Kernels are array functions; the generated wrapper for an op unwraps tensor arguments to arrays,
calls the kernel with the array module of the backend (``xp``: NumPy or CuPy), and hands the result
to one of the helpers here:

* ``new_tensor`` — a fresh tensor (own storage, new version counter);
* ``view_of`` — a view: shares the base's version counter (and, through the array, its storage);
  ``view_keeping_base`` also notes its base (``_base``), as view ops' results do;
* ``write_inplace`` — the in-place variant (``add_``): checks PyTorch's shape and casting rules,
  copies into ``self`` and bumps its version;
* ``write_out`` — the ``out=`` variant: resizes ``out`` when needed, checks casting, copies.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ember._generated import aten
from ember.c10.device import CPU
from ember.c10.dispatch_key import AUTOGRAD_SHIFT, BACKEND_MASK, KS_CPU
from ember.c10 import grad_mode as _grad_mode
from ember.c10.grad_mode import state as _grad_state
from ember.c10.dtype import can_cast, from_numpy_dtype, scalar_type_name
from ember.c10.tensor_impl import TensorImpl, VersionCounter
from ember.c10.tensor_impl import fake_array

_ND = np.ndarray

# Note [The Python tensor class]
# Kernel results are wrapped as instances of the frontend's ``ember.Tensor`` (a ``TensorImpl`` with the Python
# API), which is defined above this layer. As PyTorch's C++ core wraps results in the class torch/_tensor.py
# registers (``THPVariableClass``), ``ember/_tensor.py`` registers its class here once, with
# ``set_tensor_class``; until then results are bare ``TensorImpl`` objects. Checks use ``TensorImpl``.
_tensor_class: type = TensorImpl


def set_tensor_class(cls: type) -> None:
    global _tensor_class
    _tensor_class = cls


def new_tensor(arr: Any, ks: int, device: Any) -> Any:
    if type(arr) is not _ND and isinstance(arr, np.generic):  # NumPy returns scalars for 0-d results; a tensor
        #                                                          holds an array
        arr = np.asarray(arr)
    t: Any = object.__new__(_tensor_class)
    t._data = arr
    t._ks = ks
    t._vc = VersionCounter()
    t._device = device
    if _grad_mode.inference_used and _grad_state.inference:
        t._inference = True
    return t


def tensor_like(data: Any, like: Any) -> Any:
    """``torch.tensor(data, dtype=like.dtype, device=like.device)`` for NumPy data, below the frontend's factory
    (autograd's gradcheck and implicit gradients use it)."""
    t = new_tensor(np.array(data), KS_CPU, CPU)  # a C-contiguous copy (ascontiguousarray makes 0-d 1-d)
    return aten._to_copy(t, dtype=like.dtype, device=like.device)


def tensor_from_values(values: Any, like: Any) -> Any:
    """``at::tensor(values, like.options())`` as PyTorch's C++ composites make it: an ``empty`` of ``like``'s dtype
    (the one operator a mode sees) filled in place, moved to ``like``'s device. Under a fake mode (graph capture)
    the ``empty`` would keep no values, so the values come in as a constant the graph records (``tensor_like``)."""
    data = np.asarray(values)
    t = aten.empty_memory_format(data.shape, dtype=like.dtype, device=CPU)
    arr = t._data
    if not (isinstance(arr, np.ndarray) and arr.flags.writeable):
        return tensor_like(data, like)
    arr[...] = data
    return t if like.device == CPU else t.to(like.device)


def view_of(arr: Any, base: Any) -> Any:
    t: Any = object.__new__(_tensor_class)
    t._data = arr
    ks = base._ks   # without the Autograd key until autograd records the view (Note [The Autograd key of a tensor
    t._ks = ks & ~((ks & BACKEND_MASK) << AUTOGRAD_SHIFT)   # that does not require grad]: not_requiring_grad inline)
    t._vc = base._vc
    t._device = base._device
    if base._inference:
        t._inference = True
    return t


def view_keeping_base(arr: Any, base: Any) -> Any:
    """``view_of`` (inline: every view op's result comes here), and the view's ``_base``: the base's own base if it
    is a view itself (Note [Views keep their base below autograd] in ember/aten/dispatcher.py)."""
    t: Any = object.__new__(_tensor_class)
    t._data = arr
    ks = base._ks
    t._ks = ks & ~((ks & BACKEND_MASK) << AUTOGRAD_SHIFT)
    t._vc = base._vc
    t._device = base._device
    if base._inference:
        t._inference = True
    root = base._base
    t._base = base if root is None else root
    return t


def shape_str(shape: Any) -> str:
    """A shape as PyTorch's messages print it: ``[2, 3]``."""
    return "[" + ", ".join(str(s) for s in shape) + "]"


def check_writable(t: Any, opname: str = '') -> None:
    a = t._data
    if 0 in a.strides and a.size > 1 and any(st == 0 and sz > 1 for st, sz in zip(a.strides, a.shape)):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")


def value_error(exc: Any, kernel: Any, *tensors: Any) -> Any:
    """A ValueError escaped an array kernel: for elementwise kernels, report a broadcasting mismatch of
    the tensor arguments as PyTorch does; otherwise re-raise it unchanged."""
    if getattr(kernel, "elementwise", False):
        from ember.aten.meta import broadcast_shapes
        broadcast_shapes(*(t._data.shape for t in tensors if isinstance(t, TensorImpl)))
    raise exc


def check_devices(device_type: str, *tensors: Any) -> None:
    """Every tensor argument on ``device_type`` (0-dim CPU tensors pass as scalars, as in PyTorch)."""
    for t in tensors:
        if t is None:
            continue
        if isinstance(t, list):
            check_devices(device_type, *t)
            continue
        dt = t._device.type
        if dt != device_type and not (dt == "cpu" and t._data.ndim == 0 and device_type == "cuda"):
            if device_type == "meta":
                raise RuntimeError(f"Tensor on device {t._device} is not on the expected device meta!")
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{device_type}:0 and {t._device}!")


def write_inplace(self: Any, result: Any, opname: str = '') -> Any:
    """Copy ``result`` into ``self`` for an in-place op, with PyTorch's checks."""
    dst = self._data
    if isinstance(result, np.generic):
        result = np.asarray(result)
    if result.shape != dst.shape:
        try:
            bshape = np.broadcast_shapes(result.shape, dst.shape)
        except ValueError:
            bshape = None
        if bshape != dst.shape:
            raise RuntimeError(f"output with shape {shape_str(dst.shape)} doesn't match the broadcast shape "
                               f"{shape_str(result.shape if bshape is None else bshape)}")
    if result.dtype != dst.dtype:
        rd, dd = from_numpy_dtype(result.dtype), from_numpy_dtype(dst.dtype)
        if not can_cast(rd, dd):
            raise RuntimeError(f"result type {scalar_type_name(rd)} can't be cast to the desired output type "
                               f"{scalar_type_name(dd)}")
    check_writable(self, opname)
    if self._inference and not _grad_state.inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
                           "clone to get a normal tensor before doing inplace update.See "
                           "https://github.com/pytorch/rfcs/pull/17 for more details.")
    if self._device.type != "meta":
        if isinstance(dst, np.ndarray):     # make_writeable and xp_copyto's NumPy branch, one type test (a hot path)
            if not dst.flags.writeable:
                dst.flags.writeable = True
            dst[...] = result
        else:
            xp_copyto(dst, result)
    self._vc.version += 1
    return self


def make_writeable(a: Any) -> None:
    """Let an in-place kernel write ``a``: a NumPy array can be read-only (an expanded view, a buffer
    ``from_numpy`` warned about); CuPy's arrays have no such flag."""
    if isinstance(a, np.ndarray) and not a.flags.writeable:
        a.flags.writeable = True


def xp_copyto(dst: Any, src: Any) -> None:
    if isinstance(dst, np.ndarray):
        dst[...] = src      # np.copyto(dst, src, casting="unsafe") -- the same cast, without its Python wrapper
    else:  # CuPy
        import cupy  # type: ignore[import-not-found, unused-ignore]
        cupy.copyto(dst, src, casting="unsafe")


def write_out(out: Any, result: Any, opname: str = '') -> Any:
    """Store ``result`` in ``out``, resizing it as PyTorch's ``out=`` does."""
    if not isinstance(out, TensorImpl):
        raise TypeError(f"{opname}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if isinstance(result, np.generic):
        result = np.asarray(result)
    rd, od = from_numpy_dtype(result.dtype), from_numpy_dtype(out._data.dtype)
    if rd is not od and not can_cast(rd, od):
        raise RuntimeError(f"result type {scalar_type_name(rd)} can't be cast to the desired output type "
                           f"{scalar_type_name(od)}")
    if out._data.shape != result.shape:
        if out._data.size != 0:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{shape_str(out._data.shape)}, which does not match the required output shape "
                f"{shape_str(result.shape)}. This behavior is deprecated, and in a future PyTorch release "
                "outputs will not be resized unless they have zero elements. You can explicitly reuse an "
                "out tensor t by resizing it, inplace, to zero elements with t.resize_(0).", UserWarning,
                stacklevel=4)
        if out._device.type == "meta":
            out._data = fake_array(result.shape, out._data.dtype)
        else:
            xp = np if isinstance(result, np.ndarray) else __import__("cupy")
            out._data = xp.empty(result.shape, out._data.dtype)
    elif out._device.type != "meta":
        check_writable(out)
    if out._device.type != "meta":
        xp_copyto(out._data, result)
    out._vc.version += 1
    return out
