"""Helpers shared by the array kernels: dtype computation, elementwise marking, dim wrapping.

Kernels take the array module ``xp`` (NumPy or CuPy) first, then arrays (for tensor arguments) and
Python values (for everything else), and return arrays.  They raise PyTorch's errors themselves.
"""
from __future__ import annotations

from typing import Any, Callable, TypeVar

import numpy as np

from ember.aten import parallel
from ember.aten.wrap import shape_str as shape_str  # (re-exported: the kernels' messages use it)
from ember.c10 import dtype as dt
from ember.c10.dtype import from_numpy_dtype, result_type_of, scalar_type_name

_BY_NP = dt._BY_NP
_NUMBER = (bool, int, float, complex)


# A NumPy or CuPy array (CuPy ships no type stubs, so kernels type their arrays loosely).
Array = Any
_Kernel = TypeVar("_Kernel", bound=Callable[..., Any])


def elementwise(fn: _Kernel) -> _Kernel:
    """Mark ``fn`` elementwise: its Meta kernel runs on one-element stand-ins (see aten/meta.py), and a
    NumPy broadcasting ValueError from it is reported in PyTorch's words by the generated wrapper
    (``ember.aten.wrap.value_error``), on the error path only."""
    setattr(fn, "elementwise", True)
    return fn


def meta_shape(shape_fn: Callable[..., Any]) -> Callable[[_Kernel], _Kernel]:
    """Attach a ``(args) -> (shape, numpy dtype)`` function used by the Meta kernel."""
    def deco(fn: _Kernel) -> _Kernel:
        setattr(fn, "meta_shape", shape_fn)
        return fn
    return deco


# A range handed to a pooled Python thread costs a thread wake-up, 60-90 us on a 2-core VM (Note [Splitting a loop
# over threads] in compiled.py), against 88 us for np.tanh of 262144 float32 values on one core. NumPy's loops on
# halves pay from about a million values on (tanh of 2^20: 424 us serial, 381 split; 2^22: 1365, 848).
_CHUNKED_MIN = 1 << 20


def chunked(xp: Any, fn: Any, x: Array) -> Any:
    """fn(x) for a dtype-preserving elementwise fn, spread over the intra-op threads on large contiguous
    NumPy arrays (``parallel_for``; NumPy releases the GIL in its loops). A ufunc writes its range of the
    result in place; another fn's range is copied there."""
    if xp is not np or x.size < _CHUNKED_MIN or parallel.get_num_threads() < 2 \
            or parallel.in_parallel_region() or not x.flags.c_contiguous:
        return fn(x)
    flat = x.reshape(-1)
    out = np.empty(x.shape, x.dtype)
    into = out.reshape(-1)
    ufunc = isinstance(fn, np.ufunc)

    def run(b: Any, e: Any) -> Any:
        with np.errstate(all="ignore"):            # error state is per thread
            if ufunc:
                fn(flat[b:e], out=into[b:e])
            else:
                into[b:e] = fn(flat[b:e])
    parallel.parallel_for(0, flat.size, parallel.GRAIN_SIZE, run)
    return out


def meta_kernel(meta_fn: Callable[..., Any]) -> Callable[[_Kernel], _Kernel]:
    """Attach ``meta_fn(np, *args)``, run by the Meta kernel on the stand-ins in place of the kernel itself
    (for kernels that write into an argument, like native_batch_norm's running statistics)."""
    def deco(fn: _Kernel) -> _Kernel:
        setattr(fn, "meta_kernel", meta_fn)
        return fn
    return deco


def result_np_dtype(*operands: Any) -> Any:
    """NumPy dtype of PyTorch's result type for these arrays / Python scalars (Note [Type promotion])."""
    a = operands[0]
    if len(operands) == 2:
        b = operands[1]
        ta = getattr(a, "dtype", None)
        tb = getattr(b, "dtype", None)
        if ta is not None and ta is tb and (a.ndim or not b.ndim):
            return ta
        if ta is not None and type(b) in _NUMBER:  # fast path: tensor op python scalar
            cat = _BY_NP[ta]._cat
            scat = 0 if type(b) is bool else 1 if type(b) is int else 2 if type(b) is float else 3
            if scat <= cat:
                return ta
    return result_type_of(operands).np


def is_integral(npdt: Any, include_bool: bool = True) -> bool:
    return npdt.kind in "iu" or (include_bool and npdt.kind == "b")


def compute_dtype(npdt: Any) -> Any:
    """Half-precision types compute in float32 (PyTorch's opmath type), everything else in itself."""
    if npdt.itemsize == 2 and npdt.kind != "i" and npdt.kind != "u":
        return np.dtype(np.float32)
    return npdt


def float_result(npdt: Any) -> Any:
    """Ops like ``exp`` give the default dtype for integral and bool inputs."""
    if npdt.kind in "biu":
        return dt.get_default_dtype().np
    return npdt


def type_name(npdt: Any) -> str:
    return scalar_type_name(from_numpy_dtype(npdt))


def wrap_dim(d: int, ndim: int) -> int:
    n = ndim if ndim > 0 else 1
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d + n if d < 0 else d


def wrap_dims(dims: Any, ndim: int) -> tuple[int, ...]:
    if len(dims) == 1:      # the common case, without a generator and a set
        return (wrap_dim(dims[0], ndim),)
    out = tuple(wrap_dim(d, ndim) for d in dims)
    if len(set(out)) != len(out):
        for i, d in enumerate(out):
            if d in out[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return out


def check_broadcast(*shapes: Any) -> tuple[int, ...]:
    from ember.aten.meta import broadcast_shapes
    return broadcast_shapes(*shapes)


def asdtype(xp: Any, a: Array, npdt: Any) -> Any:
    """``a`` (array or Python scalar) as an array of ``npdt``; no copy when it already is one."""
    if isinstance(a, _NUMBER):
        return xp.asarray(a, dtype=npdt)
    if a.dtype == npdt:
        return a
    return a.astype(npdt)


def meta_array(dtype: Any, shape: Any) -> Any:
    """A metadata-only result for a meta_kernel: ``shape`` and ``dtype``, no memory."""
    return np.broadcast_to(np.empty((), dtype), shape)
