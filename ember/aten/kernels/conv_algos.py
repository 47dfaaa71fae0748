"""Convolution algorithms (the role of ``aten/src/ATen/native/ConvUtils.h`` / cuDNN's algorithm choice).

Each pass of a convolution -- forward, input gradient, weight gradient -- has two algorithms:

* ``"gemm"``: the columns matrix (im2col) in channel-major per-sample layout ``(N, G, Cg*k, P)`` (``P`` output
  positions), so that the forward is one batched GEMM ``W @ cols`` landing directly in NCHW; the input gradient
  is the GEMM ``W^T @ grad`` followed by col2im (one strided add per kernel offset); the weight gradient is
  ``grad @ cols^T`` summed over the batch.  Fast, but the columns take ``k`` times the input's memory.
* ``"offset"``: one GEMM per kernel offset over channels-last slices of the input, accumulated; no columns
  matrix, so it suits large inputs and big kernels where im2col would not fit in memory or cache.

``choose`` picks one: with ``benchmark`` on (``ember.backends.cudnn.benchmark = True``, as in PyTorch) it
times every algorithm once for each new (pass, shapes, dtype, stride, padding, dilation, groups, array module)
key and caches the fastest; otherwise a heuristic takes ``"gemm"`` unless its columns would exceed
``GEMM_MAX_COLUMN_BYTES``."""
from __future__ import annotations

from ember.aten.kernels._common import Array

from typing import Any, Callable

import threading
import time

import numpy as np

from ember.aten.context import global_context

ALGORITHMS = ("gemm", "offset")
GEMM_MAX_COLUMN_BYTES = 1 << 30
WORKSPACE_MAX_BYTES = 256 << 20    # columns up to this size are built in a per-thread buffer kept between calls
_workspace = threading.local()
_cache: dict[Any, str] = {}                  # key -> algorithm name chosen by benchmarking
_last: dict[str, str] = {}                   # pass -> algorithm used by the latest call (for tests and learners)
force = None                       # an algorithm name to use everywhere (tests), or None


def _windows(xp: Any, x: Array, ksize: Any, stride: Any, dilation: Any) -> Any:
    """(N, C, out..., k...) view of x's windows (x already padded)."""
    nd = len(ksize)
    span = tuple(d * (k - 1) + 1 for k, d in zip(ksize, dilation))
    w = xp.lib.stride_tricks.sliding_window_view(x, span, axis=tuple(range(2, 2 + nd)))
    sl = (slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride) + \
        tuple(slice(None, None, d) for d in dilation)
    return w[sl]


def _pad(xp: Any, x: Array, padding: Any, scratch: Any = False) -> Any:
    """x with ``padding`` zeros on both sides of each spatial dim (only the border is zero-filled); in the
    padding scratch buffer if ``scratch`` (for a copy that dies inside the caller)."""
    if not any(padding):
        return x
    shape = x.shape[:2] + tuple(s + 2 * p for s, p in zip(x.shape[2:], padding))
    out = _scratch(xp, shape, x.dtype, "pad") if scratch else xp.empty(shape, dtype=x.dtype)
    lead = (slice(None), slice(None))
    for d, p in enumerate(padding):
        if p:
            before = (slice(None),) * d
            out[lead + before + (slice(0, p),)] = 0
            out[lead + before + (slice(out.shape[2 + d] - p, None),)] = 0
    out[lead + tuple(slice(p, p + s) for p, s in zip(padding, x.shape[2:]))] = x
    return out


def _scratch(xp: Any, shape: Any, dtype: Any, slot: Any = 'columns') -> Any:
    """An uninitialised array for a temporary that dies inside the calling kernel (the columns matrix).

    Like cuDNN's workspace: the same per-thread buffer serves every call, so a large columns matrix does not
    cost a fresh allocation each time -- above glibc's mmap threshold (32 MiB at most) every ``empty`` is a
    new mapping whose pages fault in one by one, which took as long as filling them (a 75 MB im2col: 7.1 ms
    fresh, 3.7 ms into a reused buffer, ``docs/performance.md``).  CuPy has its own caching pool."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    if xp is not np or nbytes > WORKSPACE_MAX_BYTES:
        return xp.empty(shape, dtype=dtype)
    bufs = _workspace.__dict__.setdefault("bufs", {})
    buf = bufs.get(slot)
    if buf is None or buf.nbytes < nbytes:
        buf = bufs[slot] = np.empty(max(nbytes, 1), dtype=np.uint8)
    return buf[:nbytes].view(dtype).reshape(shape)


def release_workspace() -> Any:
    """Frees this thread's scratch buffers; the next convolution allocates new ones."""
    _workspace.__dict__.pop("bufs", None)


def _offset_slice(off: Any, dilation: Any, stride: Any, out_sp: Any) -> Any:
    return tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, d, s, n in zip(off, dilation, stride, out_sp))


def _columns(xp: Any, x: Array, ksize: Any, stride: Any, padding: Any, dilation: Any, groups: Any,
             out_sp: Any = None) -> Any:
    """(N, G, Cg * K, P) contiguous columns of x's windows (truncated to ``out_sp`` if given)."""
    nd = len(ksize)
    cols = _windows(xp, _pad(xp, x, padding, scratch=True), ksize, stride, dilation)      # N, C, out..., k...
    if out_sp is not None:
        cols = cols[(slice(None), slice(None)) + tuple(slice(0, n) for n in out_sp)]
    out_sp = cols.shape[2:2 + nd]
    perm = (0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd))
    N, C = x.shape[:2]
    K = int(np.prod(ksize))
    P = int(np.prod(out_sp))
    cols = cols.transpose(perm)
    buf = _scratch(xp, cols.shape, x.dtype)
    buf[...] = cols
    return buf.reshape(N, groups, (C // groups) * K, P), out_sp


# ------------------------------------------------------------------------------ gemm (im2col)
def _fwd_gemm(xp: Any, x: Array, w: Any, stride: Any, padding: Any, dilation: Any, groups: Any) -> Any:
    ksize = w.shape[2:]
    cols, out_sp = _columns(xp, x, ksize, stride, padding, dilation, groups)     # a scratch buffer
    O = w.shape[0]
    wm = w.reshape(groups, O // groups, -1)
    out = xp.matmul(wm, cols)                                                # N, G, Og, P
    return out.reshape((x.shape[0], O) + tuple(out_sp))


def _gin_gemm(xp: Any, gout: Any, w: Any, in_shape: Any, stride: Any, padding: Any, dilation: Any, groups: Any) -> Any:
    ksize = w.shape[2:]
    full = tuple(d * (k - 1) - p for k, d, p in zip(ksize, dilation, padding))
    exact = all(o + f - p == i for o, f, p, i in zip(gout.shape[2:], full, padding, in_shape[2:]))
    if all(s == 1 for s in stride) and min(full) >= 0 and exact:
        # stride 1: the input gradient is the "full" convolution of grad with the flipped, transposed weight,
        # i.e. one more forward GEMM instead of GEMM + col2im
        nd = len(ksize)
        O, Cg = w.shape[:2]
        wt = w.reshape((groups, O // groups, Cg) + tuple(ksize)).swapaxes(1, 2)
        wt = wt[(Ellipsis,) + (slice(None, None, -1),) * nd].reshape((groups * Cg, O // groups) + tuple(ksize))
        gx = _fwd_gemm(xp, gout, xp.ascontiguousarray(wt), stride, full, dilation, groups)
        return gx
    N, C = in_shape[:2]
    O = w.shape[0]
    ksize = w.shape[2:]
    out_sp = gout.shape[2:]
    P = int(np.prod(out_sp))
    wm = w.reshape(groups, O // groups, -1)
    gc = xp.matmul(wm.transpose(0, 2, 1), gout.reshape(N, groups, O // groups, P))  # N, G, Cg*K, P
    gc = gc.reshape((N, C) + tuple(ksize) + tuple(out_sp))
    padded = tuple(s + 2 * p for s, p in zip(in_shape[2:], padding))
    gx = xp.zeros((N, C) + padded, dtype=gout.dtype)
    for off in np.ndindex(*ksize):
        gx[(slice(None), slice(None)) + _offset_slice(off, dilation, stride, out_sp)] += \
            gc[(slice(None), slice(None)) + off]
    return _crop(gx, padding, in_shape)


def _gw_gemm(xp: Any, gout: Any, x: Array, w_shape: Any, stride: Any, padding: Any, dilation: Any, groups: Any) -> Any:
    cols, out_sp = _columns(xp, x, w_shape[2:], stride, padding, dilation, groups, out_sp=gout.shape[2:])
    N = gout.shape[0]
    O = w_shape[0]
    g = gout.reshape(N, groups, O // groups, -1)
    gw = xp.matmul(g, cols.transpose(0, 1, 3, 2)).sum(axis=0)              # G, Og, Cg*K
    return gw.reshape(w_shape)


# ------------------------------------------------------------------------------ offset (GEMM per kernel offset)
def _fwd_offset(xp: Any, x: Array, w: Any, stride: Any, padding: Any, dilation: Any, groups: Any) -> Any:
    ksize = w.shape[2:]
    xpad = _pad(xp, x, padding)
    out_sp = tuple((p - d * (k - 1) - 1) // s + 1 for p, k, s, d in zip(xpad.shape[2:], ksize, stride, dilation))
    xt = xp.moveaxis(xpad, 1, -1)                                            # N, sp..., C (a view)
    N, C = x.shape[:2]
    O = w.shape[0]
    cg, og = C // groups, O // groups
    out = xp.zeros((N,) + out_sp + (O,), dtype=np.result_type(x.dtype, w.dtype))
    for off in np.ndindex(*ksize):
        sl = (slice(None),) + _offset_slice(off, dilation, stride, out_sp)
        for g in range(groups):
            xs = xt[sl + (slice(g * cg, (g + 1) * cg),)]
            wk = w[(slice(g * og, (g + 1) * og), slice(None)) + off]          # Og, Cg
            out[..., g * og:(g + 1) * og] += xs @ wk.T
    return xp.moveaxis(out, -1, 1)


def _gin_offset(xp: Any, gout: Any, w: Any, in_shape: Any, stride: Any, padding: Any, dilation: Any,
                groups: Any) -> Any:
    N, C = in_shape[:2]
    O = w.shape[0]
    cg, og = C // groups, O // groups
    ksize = w.shape[2:]
    padded = tuple(s + 2 * p for s, p in zip(in_shape[2:], padding))
    gx = xp.zeros((N, C) + padded, dtype=gout.dtype)
    out_sp = gout.shape[2:]
    for off in np.ndindex(*ksize):
        sl = _offset_slice(off, dilation, stride, out_sp)
        for g in range(groups):
            go = gout[:, g * og:(g + 1) * og]                                 # N, Og, out...
            wk = w[(slice(g * og, (g + 1) * og), slice(None)) + off]          # Og, Cg
            contrib = xp.tensordot(go, wk, axes=((1,), (0,)))                 # N, out..., Cg
            gx[(slice(None), slice(g * cg, (g + 1) * cg)) + sl] += xp.moveaxis(contrib, -1, 1)
    return _crop(gx, padding, in_shape)


def _gw_offset(xp: Any, gout: Any, x: Array, w_shape: Any, stride: Any, padding: Any, dilation: Any,
               groups: Any) -> Any:
    nd = x.ndim - 2
    ksize = w_shape[2:]
    xpad = _pad(xp, x, padding)
    out_sp = gout.shape[2:]
    C, O = x.shape[1], w_shape[0]
    cg, og = C // groups, O // groups
    sp_axes = (0,) + tuple(range(2, 2 + nd))
    gw = xp.empty(w_shape, dtype=np.result_type(gout.dtype, x.dtype))
    for off in np.ndindex(*ksize):
        xs = xpad[(slice(None), slice(None)) + _offset_slice(off, dilation, stride, out_sp)]
        for g in range(groups):
            gw[(slice(g * og, (g + 1) * og), slice(None)) + off] = xp.tensordot(
                gout[:, g * og:(g + 1) * og], xs[:, g * cg:(g + 1) * cg], axes=(sp_axes, sp_axes))
    return gw


def _crop(gx: Any, padding: Any, in_shape: Any) -> Any:
    if any(padding):
        return gx[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, in_shape[2:]))]
    return gx


IMPLS: dict[str, dict[str, Callable[..., Any]]] = {"forward": {"gemm": _fwd_gemm, "offset": _fwd_offset},
         "input_grad": {"gemm": _gin_gemm, "offset": _gin_offset},
         "weight_grad": {"gemm": _gw_gemm, "offset": _gw_offset}}


def _column_bytes(pass_name: Any, a: Array, b: Array, extra: Any) -> Any:
    """Bytes of the gemm algorithm's columns matrix for this call."""
    if pass_name == "forward":
        x, w = a, b
        k = int(np.prod(w.shape[2:]))
        return x.shape[0] * x.shape[1] * k * int(np.prod(x.shape[2:])) * x.itemsize
    if pass_name == "input_grad":
        gout, w = a, b
        return extra[0] * extra[1] * int(np.prod(w.shape[2:])) * int(np.prod(gout.shape[2:])) * gout.itemsize
    gout, x = a, b
    return x.shape[0] * x.shape[1] * int(np.prod(extra[2:])) * int(np.prod(gout.shape[2:])) * x.itemsize


def run(pass_name: Any, xp: Any, a: Array, b: Array, extra: Any, stride: Any, padding: Any, dilation: Any,
        groups: Any) -> Any:
    """Runs ``pass_name`` with the chosen algorithm; ``extra`` is the input shape (input_grad), the weight
    shape (weight_grad) or None (forward)."""
    impls = IMPLS[pass_name]
    if force is not None:
        algo = force
    elif global_context.benchmark_cudnn:
        key = (pass_name, xp.__name__, tuple(a.shape), tuple(b.shape), None if extra is None else tuple(extra),
               str(a.dtype), str(b.dtype), tuple(stride), tuple(padding), tuple(dilation), groups)
        algo = _cache.get(key)
        if algo is None:                   # time every candidate once, keep the fastest (and its result)
            best: tuple[float, str, Any] | None = None
            for name in ALGORITHMS:
                t0 = time.perf_counter()
                r = impls[name](xp, a, b, *([] if extra is None else [extra]), stride, padding, dilation, groups)
                if xp is not np:
                    xp.cuda.Device().synchronize()
                dt = time.perf_counter() - t0
                if best is None or dt < best[0]:
                    best = (dt, name, r)
            assert best is not None
            _cache[key] = best[1]
            _last[pass_name] = best[1]
            return best[2]
    elif _column_bytes(pass_name, a, b, extra) <= GEMM_MAX_COLUMN_BYTES:
        algo = "gemm"
    else:
        algo = "offset"
    _last[pass_name] = algo
    return impls[algo](xp, a, b, *([] if extra is None else [extra]), stride, padding, dilation, groups)
