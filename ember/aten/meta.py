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

from typing import Any

import numpy as np

from ember.aten.dispatcher import BoxedFallback, NotImplementedForKey, register_fallback
from ember.aten.wrap import new_tensor, write_inplace, write_out
from ember.c10.device import META
from ember.c10.dispatch_key import KS_META, DispatchKey
from ember.c10.tensor_impl import TensorImpl, fake_array

_ZERO: dict[Any, Any] = {}


def _stand_in(a: Any, one: bool = False) -> Any:
    z = _ZERO.get(a.dtype)
    if z is None:  # ones, not zeros: a stand-in must not trip data checks such as integer division by zero
        z = _ZERO[a.dtype] = np.ones((), a.dtype)
    return np.broadcast_to(z, (1,) * a.ndim if one else a.shape)


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    """PyTorch's ``infer_size`` folded over the shapes, with its error message (dims compared from the
    last one backwards, so the first mismatch reported is the innermost, as in PyTorch)."""
    out: tuple[int, ...] = ()
    for i, s in enumerate(shapes):
        out = tuple(s) if i == 0 else _infer_size(out, tuple(s))
    return out


def _infer_size(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
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


def _wrap(r: Any) -> Any:
    if isinstance(r, tuple):
        return tuple(_wrap(x) for x in r)
    if isinstance(r, list):
        return [_wrap(x) for x in r]
    if isinstance(r, (np.ndarray, np.generic)):
        return new_tensor(fake_array(np.shape(r), r.dtype), KS_META, META)
    return r


def _map_arrays(args: Any, fn: Any) -> Any:
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(fn(a))
        elif isinstance(a, (list, tuple)) and a and any(isinstance(x, np.ndarray) for x in a):
            out.append(type(a)(fn(x) if isinstance(x, np.ndarray) else x for x in a))
        else:
            out.append(a)
    return out


def run_meta(kernel: Any, args: Any, kwargs: Any = None) -> Any:
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
        if len(shape) > 1 and any(a.ndim > 1 and not a.flags.c_contiguous for a in arrays):
            order = _result_order(kernel, args, kwargs)     # laid out as the real kernel lays it out
            if order is not None:
                return new_tensor(fake_array(shape, np.dtype(r.dtype), _strides_in_order(shape, order)),
                                  KS_META, META)
        return _wrap_shape(shape, r.dtype)
    r = getattr(kernel, "meta_kernel", kernel)(np, *_map_arrays(args, _stand_in), **kwargs)
    return _wrap(r)


def _small_alike(a: Any) -> Any:
    """A real array of at most 2 elements per dimension whose strides are ordered as ``a``'s (broadcast
    dimensions stay broadcast): what an elementwise kernel's result layout depends on, at no cost."""
    small = tuple(min(n, 2) for n in a.shape)
    live = [d for d in range(a.ndim) if not (a.strides[d] == 0 and a.shape[d] > 1)]
    perm = sorted(live, key=lambda d: (-abs(a.strides[d]), d))
    base = np.ones(tuple(small[d] for d in perm), a.dtype).transpose(np.argsort(perm))
    full = [small[d] if d in live else 1 for d in range(a.ndim)]
    return np.broadcast_to(base.reshape(full), small)


def _result_order(kernel: Any, args: Any, kwargs: Any) -> list[int] | None:
    """The order of the dimensions of an elementwise kernel's result in memory, outermost first (NumPy lays a
    result out as its strided inputs are, as PyTorch's TensorIterator does)."""
    try:
        r = kernel(np, *_map_arrays(args, _small_alike), **kwargs)
    except Exception:
        return None
    if not isinstance(r, np.ndarray) or r.ndim == 0:
        return None
    return sorted(range(r.ndim), key=lambda d: (-r.strides[d] if r.shape[d] > 1 else 0, d))


def _strides_in_order(shape: tuple[int, ...], order: list[int]) -> list[int]:
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], 1)
    return strides


def _wrap_shape(shape: Any, dt: Any) -> Any:
    return new_tensor(fake_array(shape, np.dtype(dt)), KS_META, META)


def pooling_output_size(i: Any, k: Any, s: Any, p: Any, d: Any, ceil_mode: Any) -> Any:
    """PyTorch's ``pooling_output_shape`` (``aten/src/ATen/native/Pool.h``): windows of size ``k`` (dilation
    ``d``) at stride ``s`` over ``i`` elements padded by ``p``; with ``ceil_mode`` the last partial window counts
    if it starts inside the input or the left padding."""
    num = i + 2 * p - d * (k - 1) - 1
    o = (num + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= i + p:
        o -= 1
    return o


# Note [The Meta fallback]
# No Meta kernel is generated. Meta is a boxed fallback, as PyTorch's boxed fallbacks are kernels for every
# operator under one key that receive the operator: for an operator whose table row lists Meta (Note [Backend
# kernels] in aten/backends.py), it derives the kernel from the row — the array kernel, which arguments are
# keyword-only, the kind of result — and ``run_meta`` above; an operator without one (data-dependent shapes:
# ``nonzero``, ``unique``, ...) raises PyTorch's "Could not run ... with arguments from the 'Meta' backend".
# Composite operators never get here: their composite kernel comes first (Note [Kernel resolution]).
_DERIVED: dict[Any, Any] = {}


def derive(op: Any, wrapper: Any, kernel: Any, kwnames: Any, kind: Any, rt: Any, device_check: Any = True) -> None:
    """Record what the Meta kernel of ``op`` is derived from (called by ``register_kernels``)."""
    _DERIVED[op] = (wrapper, kernel, kwnames, kind, rt, device_check)
    op.clear_cache()


def _check_meta(args: Any) -> None:
    for a in args:
        if isinstance(a, TensorImpl):
            if a._device.type != "meta":
                raise RuntimeError(f"Tensor on device {a._device} is not on the expected device meta!")
        elif isinstance(a, (list, tuple)):
            _check_meta(a)


def _arrays(a: Any) -> Any:
    if isinstance(a, TensorImpl):
        return a._data
    if isinstance(a, list) and any(isinstance(x, TensorImpl) for x in a):
        return [x._data if isinstance(x, TensorImpl) else x for x in a]
    return a


def meta_kernel(op: Any) -> Any:
    """The Meta kernel of ``op``, derived from its table row (Note [The Meta fallback])."""
    row = _DERIVED.get(op)
    if row is None:
        def missing(ks: Any, *args: Any) -> Any:
            raise NotImplementedForKey(op._missing_message(ks))
        return missing
    wrapper, kernel, kwnames, kind, rt, device_check = row
    nout, nkw, name = op.out_arity, len(kwnames), op.name

    def meta(ks: Any, *args: Any) -> Any:
        if device_check:
            _check_meta(args)
        if kind == "view":  # view kernels compute strides only: they run on the metadata-only arrays as they are
            return wrapper(ks, *args)
        if kind == "mutating":  # a kernel that writes its first argument changes no metadata
            self = args[0]
            if self._device.type != "meta":
                raise NotImplementedError("Cannot copy out of meta tensor; no data!")
            self._vc.version += 1
            return self
        n = len(args) - nout
        npos = n - nkw
        r = run_meta(kernel, [_arrays(a) for a in args[:npos]],
                     {k: _arrays(a) for k, a in zip(kwnames, args[npos:n])})
        if kind == "inplace":
            return write_inplace(args[0], r._data, name)
        if nout == 1:
            return write_out(args[n], r._data, name)
        if nout:
            for o, x in zip(args[n:], r):
                write_out(o, x._data, name)
            return rt(*args[n:]) if rt is not None else tuple(args[n:])
        return rt(*r) if rt is not None else r
    meta.__qualname__ = meta.__name__ = f"meta_{name}_{op.overload_name or 'default'}"
    if kind == "view" and getattr(wrapper, "keeps_base", False):   # a view's result is the wrapper's (Note [Views
        setattr(meta, "keeps_base", True)                          # keep their base below autograd], dispatcher.py)
    return meta


def install() -> None:
    """The Meta key's boxed fallback (Note [Initialization] in ember/_initialize.py)."""
    register_fallback(DispatchKey.Meta, BoxedFallback(meta_kernel))
