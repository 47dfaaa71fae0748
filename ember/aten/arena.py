"""The fused optimizer ops' runner: one elementwise update over a parameter group's flat buffers.

Note [Fused optimizer steps]
PyTorch's ``foreach`` and ``fused`` optimizers launch one multi-tensor kernel per operation. ember's fused ops
(``_fused_adam_``, ``_fused_sgd_``, ... in ``aten/composite/optim.py``) put every tensor of a list -- the
parameters, and each list of optimizer state -- into one contiguous 1-D buffer per dtype and array module, an
arena (Note [Arenas] in ``c10/arena.py``), and run the optimizer's array update (``aten/kernels/optim.py``) once
on it, so each operation is one NumPy call over all elements instead of one call per tensor. The tensors are
re-pointed at their slots (``_data`` becomes ``buffer[start:stop].reshape(shape)``), so after the first step
nothing is copied in or out: only the gradients are gathered (one ``concatenate``).

A tensor is only re-pointed when that is invisible: it is C-contiguous and nothing else refers to its array (no
NumPy view of it exists, which only CPython's reference count can tell), or its array already is a slot of one of
our arenas. Otherwise the list keeps a private buffer and copies the tensors in and out around the update; the
numbers are the same either way. The layout is checked every step by identity (``t._data is view``): a parameter
replaced through ``p.data = ...``, ``load_state_dict`` on the optimizer or ``module.to(...)`` makes the arena
rebuild itself from the tensors' current values.

The update is elementwise and its scalars (bias corrections, step sizes) depend only on the step count and the
hyper-parameters, so running it over the concatenation gives exactly the numbers of running it per tensor, provided
all tensors are at the same step (and share the other 0-d state values); where they differ (after
``add_param_group`` or loading mismatched state) each tensor takes its own update. The compiled float32 updates
(SGD, Adam, AdamW: ``loops/optim.py``) run once over the whole buffer and split themselves over numba's threads
(a parallel driver); the NumPy updates process large buffers in chunks that stay in cache, spread over the
intra-op thread pool (``aten/parallel.py``; NumPy releases the GIL inside ufuncs). Handing the compiled update's
chunks to that pool cost more than it gained: SGD with momentum over 670k values took 540 us so, 310 us split by
its driver (2-core AMD EPYC). The arenas of a list of parameters are cached here, dropped when its first parameter
or first state tensor is freed.
"""
from __future__ import annotations

from typing import Any

import sys
import weakref

import numpy as np

from ember.aten import parallel
from ember.c10 import arena

CHUNK = 1 << 17            # elements per chunk of the flat update (bench/optim_step.py: 32K-1M all close)
_CACHE: dict[Any, Any] = {}          # (update, ids of the params, state keys) -> _Arenas


def _xp(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        return np
    import cupy  # type: ignore[import-not-found, unused-ignore]
    return cupy


def _as_real(a: Any) -> Any:
    """The real view PyTorch's optimizers take of complex tensors (``view_as_real``)."""
    if a.dtype.kind != "c":
        return a
    xp = _xp(a)
    r = a.real
    return xp.lib.stride_tricks.as_strided(r, a.shape + (2,), r.strides + (r.itemsize,))


def _rebindable(t: Any) -> bool:
    a = t._data
    if a.base is not None and not arena.is_arena(a.base):
        return False
    if not a.flags.c_contiguous:
        return False
    return sys.getrefcount(a) <= 3  # t's slot, the local ``a`` and the call's argument: no other view exists


class _FlatList:
    """Tensors of one dtype seen as one 1-D buffer (bound: the tensors are views into it, an arena)."""

    __slots__ = ("buf", "views", "bound", "spans", "__weakref__")

    def __init__(self, tensors: Any, xp: Any, dtype: Any) -> None:
        bound = all(_rebindable(t) for t in tensors)
        spans, off = [], 0
        for t in tensors:
            n = t._data.size
            spans.append((off, off + n, t._data.shape))
            off += n
        buf = xp.empty(off, dtype)
        for t, (a, b, shape) in zip(tensors, spans):
            buf[a:b] = t._data.reshape(-1)
            if bound:
                t._data = buf[a:b].reshape(shape)
        self.buf, self.spans, self.bound = buf, spans, bound
        self.views: list[Any] = [t._data for t in tensors] if bound else []  # bound only
        if bound:
            arena.register(buf, [a for a, _, _ in spans], [b for _, b, _ in spans], self.views)

    def valid(self, tensors: Any) -> bool:
        if self.bound:
            for t, v in zip(tensors, self.views):
                if t._data is not v:
                    return False
            return True
        for t, (a, b, shape) in zip(tensors, self.spans):
            if t._data.shape != shape or t._data.dtype != self.buf.dtype or _xp(t._data) is not _xp(self.buf):
                return False
        return True

    def load(self, tensors: Any) -> None:
        if not self.bound:
            _xp(self.buf).concatenate([t._data.reshape(-1) for t in tensors], out=self.buf)

    def store(self, tensors: Any) -> None:
        if not self.bound:
            buf = self.buf
            for t, (a, b, shape) in zip(tensors, self.spans):
                t._data[...] = buf[a:b].reshape(shape)


class _Arenas:
    """The flat layout of one list of parameters and their state lists."""

    __slots__ = ("ids", "params", "tensors", "scalars", "grad", "tmps", "__weakref__")

    def __init__(self, params: Any, tensors: Any, scalars: Any, xp: Any, dtype: Any) -> None:
        self.ids = tuple(map(id, params))
        self.params = _FlatList(params, xp, dtype)
        self.tensors = {k: _FlatList(ts, xp, dtype) for k, ts in tensors.items()}
        self.scalars = {k: _FlatList(ts, _xp(ts[0]._data), ts[0]._data.dtype) for k, ts in scalars.items()}
        self.grad = xp.empty(self.params.buf.size, dtype)
        self.tmps: list[Any] = []

    def valid(self, params: Any, tensors: Any, scalars: Any) -> bool:
        if not self.params.valid(params):
            return False
        for lists, given in ((self.tensors, tensors), (self.scalars, scalars)):
            if lists.keys() != given.keys():
                return False
            for k, ts in given.items():
                if not lists[k].valid(ts):
                    return False
        return True


def _uniform(S: Any) -> bool:
    for a in S.values():
        if a.size > 1 and not (a == a[0]).all():
            return False
    return True


def _bump(tensors: Any) -> None:
    for t in tensors:
        t._vc.version += 1


def fused_step(update: Any, params: Any, grads: Any, tensors: dict[str, Any], scalars: dict[str, Any], scalars_fn: Any,
               maximize: bool, fresh: bool = False, grad_scale: Any = None, found_inf: Any = None) -> None:
    """One optimizer step: ``update(xp, p, g, T, c, tmp)`` over the parameters ``params`` with gradients ``grads``,
    their state ``tensors`` (key -> list, shaped as the parameters) and 0-d state ``scalars`` (key -> list), where
    ``c = scalars_fn(S)`` gives the step's Python floats from the 0-d state values ``S``. ``grad_scale`` divides the
    gradients first; a nonzero ``found_inf`` skips the step (PyTorch's fused-optimizer AMP arguments)."""
    if not params:
        return
    if params[0]._device.type == "meta":
        _bump(params)
        return
    if found_inf is not None and float(found_inf._data.reshape(-1)[0]) != 0:
        return
    if grad_scale is not None:     # PyTorch's fused steps leave the gradients unscaled, in place
        scale = float(grad_scale._data.reshape(-1)[0])
        for g in grads:
            g._data[...] = g._data / g._data.dtype.type(scale)
            g._vc.version += 1
    buckets: dict[Any, Any] = {}
    single = []
    for i, p in enumerate(params):
        dtype = p._data.dtype
        if dtype.kind == "c" or grads[i]._data.dtype != dtype:
            single.append(i)
        else:
            buckets.setdefault((dtype, type(p._data)), []).append(i)
    if len(params) == 1:
        single, buckets = [0], {}
    for key, ix in buckets.items():
        if not _flat_step(update, [params[i] for i in ix], [grads[i] for i in ix],
                          {k: [ts[i] for i in ix] for k, ts in tensors.items()},
                          {k: [ts[i] for i in ix] for k, ts in scalars.items()}, scalars_fn, maximize, fresh):
            single.extend(ix)
    for i in single:
        _single_step(update, params[i], grads[i], {k: ts[i] for k, ts in tensors.items()},
                     {k: ts[i] for k, ts in scalars.items()}, scalars_fn, maximize, fresh)


def _single_step(update: Any, p: Any, grad: Any, T: Any, S: Any, scalars_fn: Any, maximize: Any, fresh: Any) -> None:
    """PyTorch's single-tensor path: the update on this parameter's own arrays."""
    xp = _xp(p._data)
    pa = _as_real(p._data)
    g = _as_real(xp.array(grad._data, copy=True))
    c = scalars_fn({k: t._data for k, t in S.items()})
    c["fresh"] = fresh
    if maximize:
        xp.negative(g, out=g)
    tmps: dict[Any, Any] = {}
    update(xp, pa, g, {k: _as_real(t._data) for k, t in T.items()}, c,
           lambda i: tmps.setdefault(i, xp.empty_like(pa)))
    p._vc.version += 1
    _bump(T.values())
    _bump(S.values())


def _flat_step(update: Any, params: Any, grads: Any, tensors: Any, scalars: Any, scalars_fn: Any, maximize: Any,
               fresh: Any) -> bool:
    """The update over the arenas of ``params``; False when each tensor must take its own update."""
    key = (update, tuple(map(id, params)), tuple(tensors), tuple(scalars))
    ent = _CACHE.get(key)
    if ent is None or not ent.valid(params, tensors, scalars):
        _CACHE.pop(key, None)  # drop our references first, so the tensors can be re-pointed
        ent = None
        xp, dtype = _xp(params[0]._data), params[0]._data.dtype   # (holding the array would block its re-pointing)
        ent = _CACHE[key] = _Arenas(params, tensors, scalars, xp, dtype)
        for owner in [params[0]] + [ts[0] for ts in tensors.values()]:
            weakref.finalize(owner, _CACHE.pop, key, None)
    for k, ts in scalars.items():
        ent.scalars[k].load(ts)
    S = {k: ent.scalars[k].buf for k in scalars}
    if not _uniform(S):
        return False

    xp = _xp(ent.grad)
    ent.params.load(params)
    for k, ts in tensors.items():
        ent.tensors[k].load(ts)
    xp.concatenate([g._data.reshape(-1) for g in grads], out=ent.grad)

    c = scalars_fn(S)
    c["fresh"] = fresh
    if maximize:
        xp.negative(ent.grad, out=ent.grad)
    _run_chunked(update, xp, ent, c)

    ent.params.store(params)
    for k, ts in tensors.items():
        ent.tensors[k].store(ts)
        _bump(ts)
    for k, ts in scalars.items():
        ent.scalars[k].store(ts)
        _bump(ts)
    _bump(params)
    return True


def _run_chunked(update: Any, xp: Any, ent: Any, c: Any) -> None:
    P, G = ent.params.buf, ent.grad
    T = {k: v.buf for k, v in ent.tensors.items()}
    n = P.size
    splits_itself = getattr(update, "compiled", None)   # a compiled loop that splits itself over the threads
    if xp is not np or n <= 2 * CHUNK or (splits_itself is not None and splits_itself(xp, P)):
        tmps = ent.tmps
        update(xp, P, G, T, c, lambda i: _tmp(tmps, i, n, P.dtype, xp))
        return
    bounds = [(a, min(a + CHUNK, n)) for a in range(0, n, CHUNK)]
    workers = parallel.get_num_threads()
    per = (len(bounds) + workers - 1) // workers
    jobs = [bounds[i:i + per] for i in range(0, len(bounds), per)]

    def run(job: Any) -> Any:
        tmps: dict[Any, Any] = {}

        def tmp(i: Any, m: Any) -> Any:
            if i not in tmps:
                tmps[i] = np.empty(CHUNK, P.dtype)
            return tmps[i][:m]
        for a, b in job:
            update(np, P[a:b], G[a:b], {k: v[a:b] for k, v in T.items()}, c, lambda i, m=b - a: tmp(i, m))

    futures = [parallel.executor().submit(run, job) for job in jobs[1:]]
    run(jobs[0])
    for f in futures:
        f.result()


def _tmp(tmps: Any, i: Any, n: Any, dtype: Any, xp: Any) -> Any:
    while len(tmps) <= i:
        tmps.append(xp.empty(n, dtype))
    return tmps[i]
