"""Meta kernels: shapes, dtypes and errors, no data (Note [Meta tensors] in ``c10/tensor_impl.py``).

One Meta kernel is derived from each array kernel, by kind:

* view kernels only compute strides and offsets, so they run unchanged on a meta tensor's
  metadata-only array and give PyTorch's strides;
* elementwise kernels (marked ``@elementwise`` in ``aten/kernels``) run on one-element stand-ins of
  their inputs, which yields the result dtype and any dtype error; the shape is the broadcast shape;
* kernels that declare ``meta_shape`` (factories, random ops) return ``(shape, dtype)`` directly;
* any other kernel runs on one-filled stand-ins (read-only, broadcast from a single element) of the
  inputs' shapes, which gives the exact result shape, dtype and errors at the cost of the output's
  memory only.
"""
from __future__ import annotations

import numpy as np

from ember.c10.device import META
from ember.c10.dispatch_key import KS_META
from ember.c10.tensor_impl import fake_array

_ZERO = {}


def _stand_in(a, one: bool = False):
    z = _ZERO.get(a.dtype)
    if z is None:  # ones, not zeros: a stand-in must not trip data checks such as integer division by zero
        z = _ZERO[a.dtype] = np.ones((), a.dtype)
    return np.broadcast_to(z, (1,) * a.ndim if one else a.shape)


def broadcast_shapes(*shapes) -> tuple:
    """PyTorch's ``infer_size`` folded over the shapes, with its error message (dims compared from the
    last one backwards, so the first mismatch reported is the innermost, as in PyTorch)."""
    out = ()
    for i, s in enumerate(shapes):
        out = tuple(s) if i == 0 else _infer_size(out, tuple(s))
    return out


def _infer_size(a: tuple, b: tuple) -> tuple:
    ndim = max(len(a), len(b))
    res = [0] * ndim
    for i in range(ndim - 1, -1, -1):
        off = ndim - 1 - i
        da, db = len(a) - 1 - off, len(b) - 1 - off
        sa = a[da] if da >= 0 else 1
        sb = b[db] if db >= 0 else 1
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at "
                               f"non-singleton dimension {i}")
        res[i] = sb if sa == 1 else sa
    return tuple(res)


def _wrap(r):
    from ember.aten.wrap import new_tensor
    if isinstance(r, tuple):
        return tuple(_wrap(x) for x in r)
    if isinstance(r, list):
        return [_wrap(x) for x in r]
    if isinstance(r, (np.ndarray, np.generic)):
        return new_tensor(fake_array(np.shape(r), r.dtype), KS_META, META)
    return r


def _map_arrays(args, fn):
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(fn(a))
        elif isinstance(a, (list, tuple)) and a and any(isinstance(x, np.ndarray) for x in a):
            out.append(type(a)(fn(x) if isinstance(x, np.ndarray) else x for x in a))
        else:
            out.append(a)
    return out


def run_meta(kernel, args, kwargs=None):
    """Compute the meta result of a non-view kernel called as ``kernel(np, *args)``."""
    kwargs = kwargs or {}
    shape_fn = getattr(kernel, "meta_shape", None)
    if shape_fn is not None:
        shape, dt = shape_fn(*args, **kwargs)
        return _wrap_shape(shape, dt)
    if getattr(kernel, "elementwise", False):
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        shape = broadcast_shapes(*(a.shape for a in arrays))
        r = kernel(np, *_map_arrays(args, lambda a: _stand_in(a, True)), **kwargs)
        return _wrap_shape(shape, r.dtype)
    r = getattr(kernel, "meta_kernel", kernel)(np, *_map_arrays(args, _stand_in), **kwargs)
    return _wrap(r)


def _wrap_shape(shape, dt):
    from ember.aten.wrap import new_tensor
    return new_tensor(fake_array(shape, np.dtype(dt)), KS_META, META)


def pooling_output_size(i, k, s, p, d, ceil_mode):
    """PyTorch's ``pooling_output_shape`` (``aten/src/ATen/native/Pool.h``): windows of size ``k`` (dilation
    ``d``) at stride ``s`` over ``i`` elements padded by ``p``; with ``ceil_mode`` the last partial window counts
    if it starts inside the input or the left padding."""
    num = i + 2 * p - d * (k - 1) - 1
    o = (num + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= i + p:
        o -= 1
    return o
