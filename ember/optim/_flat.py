"""Running an elementwise optimizer update per parameter or over flat buffers.

Note [Flat buffers]
PyTorch's ``foreach`` optimizers launch one multi-tensor kernel per operation.  ember's equivalent puts
every parameter of a group (one bucket per dtype and array module) into one contiguous 1-D buffer and
runs the optimizer's ``_update`` once on it, so each operation is one NumPy call over all elements
instead of one call per tensor.  The parameters are re-pointed at views into that buffer (their
``_data`` becomes ``buffer[offset:offset + numel].reshape(shape)``), and so is each per-parameter state
tensor (``exp_avg``, ...; the 0-d ``step`` values live in a small buffer of their own), so after the
first step nothing is copied in or out: only the gradients are gathered (one ``concatenate``).

A tensor is only re-pointed when that is invisible: it is C-contiguous, and nothing else refers to its
array (no NumPy view of it exists: ``sys.getrefcount``), or its array is already a view into one of our
buffers.  Otherwise the bucket keeps a private buffer and copies the tensors in and out around the
update; the numbers are the same either way.  The layout is checked every step by identity
(``t._data is view``): a parameter replaced through ``p.data = ...``, ``load_state_dict`` on the
optimizer or ``module.to(...)`` makes the bucket rebuild itself from the tensors' current values.

The update is elementwise and its scalars (bias corrections, step sizes) depend only on the step
count and the hyper-parameters, so running it over the concatenation gives exactly the numbers of
running it per tensor, provided all tensors of the bucket are at the same step (and share the other
0-d state values); a bucket where they differ (after ``add_param_group`` or loading mismatched state)
takes the per-parameter path for that step.  Large buffers are processed in chunks that stay in
cache, spread over the intra-op thread pool (``ember/aten/parallel.py``; NumPy releases the GIL inside ufuncs).
"""
from __future__ import annotations

import sys
import weakref
import numpy as np

from ember.aten import parallel

_OWNED: dict = {}          # id(buffer) -> (weakref to it, span starts, span stops), for every flat buffer made here
CHUNK = 1 << 17            # elements per chunk of the flat update (bench/optim_step.py: 32K-1M all close)


def _xp(a):
    if isinstance(a, np.ndarray):
        return np
    import cupy
    return cupy


def _as_real(a):
    """The real view PyTorch's optimizers take of complex tensors (``view_as_real``)."""
    if a.dtype.kind != "c":
        return a
    xp = _xp(a)
    r = a.real
    return xp.lib.stride_tricks.as_strided(r, a.shape + (2,), r.strides + (r.itemsize,))


def _owned(base) -> bool:
    entry = _OWNED.get(id(base))
    return entry is not None and entry[0]() is base


def slot_of(base, offset: int):
    """``(start, stop)``: the element range of the tensor slot of flat buffer ``base`` holding element
    ``offset``, or None when ``base`` is not one of ours.  Serialization saves a re-pointed tensor as its
    own slot, not the whole buffer (see ember/serialization.py)."""
    import bisect
    entry = _OWNED.get(id(base))
    if entry is None or entry[0]() is not base:
        return None
    starts, stops = entry[1], entry[2]
    i = bisect.bisect_right(starts, offset) - 1
    if i < 0 or offset >= stops[i]:
        return None
    return starts[i], stops[i]


def _rebindable(t) -> bool:
    a = t._data
    if a.base is not None and not _owned(a.base):
        return False
    if not a.flags.c_contiguous:
        return False
    return sys.getrefcount(a) <= 3  # t's slot, the local ``a`` and the call's argument: no other view exists


class _FlatList:
    """Tensors of one dtype seen as one 1-D buffer (bound: the tensors are views into it)."""

    __slots__ = ("buf", "views", "bound", "spans", "__weakref__")

    def __init__(self, tensors, xp, dtype):
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
        self.views = [t._data for t in tensors] if bound else None
        if bound:
            key = id(buf)
            _OWNED[key] = (weakref.ref(buf, lambda _r, key=key: _OWNED.pop(key, None)),
                           [a for a, _, _ in spans], [b for _, b, _ in spans])

    def valid(self, tensors) -> bool:
        if self.bound:
            for t, v in zip(tensors, self.views):
                if t._data is not v:
                    return False
            return True
        for t, (a, b, shape) in zip(tensors, self.spans):
            if t._data.shape != shape or t._data.dtype != self.buf.dtype or _xp(t._data) is not _xp(self.buf):
                return False
        return True

    def load(self, tensors) -> None:
        if not self.bound:
            _xp(self.buf).concatenate([t._data.reshape(-1) for t in tensors], out=self.buf)

    def store(self, tensors) -> None:
        if not self.bound:
            buf = self.buf
            for t, (a, b, shape) in zip(tensors, self.spans):
                t._data[...] = buf[a:b].reshape(shape)


class _Bucket:
    """The flat layout of one bucket of one parameter group (see Note [Flat buffers])."""

    __slots__ = ("ids", "params", "tensors", "scalars", "grad", "tmps")

    def __init__(self, params, states, tkeys, skeys, xp, dtype):
        self.ids = tuple(map(id, params))
        self.params = _FlatList(params, xp, dtype)
        self.tensors = {k: _FlatList([st[k] for st in states], xp, dtype) for k in tkeys}
        self.scalars = {k: _FlatList([st[k] for st in states], np, states[0][k]._data.dtype) for k in skeys}
        self.grad = xp.empty(self.params.buf.size, dtype)
        self.tmps = []

    def valid(self, params, states, tkeys, skeys) -> bool:
        if not self.params.valid(params):
            return False
        for keys, lists in ((tkeys, self.tensors), (skeys, self.scalars)):
            for k in keys:
                for st in states:
                    if k not in st:
                        return False
                if not lists[k].valid([st[k] for st in states]):
                    return False
        return True


def _step_value(S) -> float:
    step = S["step"]
    step += 1
    return float(step.reshape(-1)[0])


def single_step(opt, p, group, tkeys, skeys) -> None:
    """PyTorch's single-tensor path: the update on this parameter's own arrays."""
    import ember
    st = opt.state[p]
    fresh = False
    for k in tkeys:
        if k not in st:
            st[k] = ember.zeros_like(p, memory_format=ember.preserve_format)
            fresh = True
    xp = _xp(p._data)
    pa = _as_real(p._data)
    g = _as_real(xp.array(p.grad._data, copy=True))
    T = {k: _as_real(st[k]._data) for k in tkeys}
    S = {k: st[k]._data for k in skeys}
    step = _step_value(S) if "step" in S else 0.0
    c = opt._scalars(group, step, S)
    c["fresh"] = fresh
    if group.get("maximize"):
        xp.negative(g, out=g)
    tmps: dict = {}
    opt._update(xp, pa, g, T, c, lambda i: tmps.setdefault(i, xp.empty_like(pa)))
    p._vc.version += 1


def _uniform(lists, skeys) -> bool:
    for k in skeys:
        a = lists[k].buf
        if a.size > 1 and not (a == a[0]).all():
            return False
    return True


def flat_step(opt, index, bucket_key, params, group, tkeys, skeys) -> bool:
    """The update over the bucket's flat buffers; False when it must take the per-parameter path."""
    import ember
    states = [opt.state[p] for p in params]
    missing = [k for k in tkeys if k not in states[0]]
    for st in states:
        if [k for k in tkeys if k not in st] != missing:
            return False                 # some tensors have the state, others not yet
    fresh = bool(missing)
    for k in missing:
        for p, st in zip(params, states):
            st[k] = ember.zeros_like(p, memory_format=ember.preserve_format)

    cache = opt._flat_cache
    key = (index, bucket_key)
    ent = cache.get(key)
    if ent is None or ent.ids != tuple(map(id, params)) or not ent.valid(params, states, tkeys, skeys):
        for k in [k for k in cache if k[0] == index]:
            del cache[k]         # drop our references first, so the tensors can be re-pointed
        ent = None
        xp, dtype = _xp(params[0]._data), params[0]._data.dtype   # (holding the array would block its re-pointing)
        ent = cache[key] = _Bucket(params, states, tkeys, skeys, xp, dtype)
    if not _uniform(ent.scalars, skeys):
        return False

    xp = _xp(ent.grad)
    ent.params.load(params)
    for k in tkeys:
        ent.tensors[k].load([st[k] for st in states])
    for k in skeys:
        ent.scalars[k].load([st[k] for st in states])
    xp.concatenate([p.grad._data.reshape(-1) for p in params], out=ent.grad)

    S = {k: ent.scalars[k].buf for k in skeys}
    step = _step_value(S) if "step" in S else 0.0
    c = opt._scalars(group, step, S)
    c["fresh"] = fresh
    if group.get("maximize"):
        xp.negative(ent.grad, out=ent.grad)
    _run_chunked(opt, xp, ent, c, tkeys)

    ent.params.store(params)
    for k in tkeys:
        ent.tensors[k].store([st[k] for st in states])
    for k in skeys:
        ent.scalars[k].store([st[k] for st in states])
    for p in params:
        p._vc.version += 1
    return True


def _run_chunked(opt, xp, ent, c, tkeys) -> None:
    P, G = ent.params.buf, ent.grad
    T = {k: ent.tensors[k].buf for k in tkeys}
    n = P.size
    if xp is not np or n <= 2 * CHUNK:
        tmps = ent.tmps
        opt._update(xp, P, G, T, c, lambda i: _tmp(tmps, i, n, P.dtype, xp))
        return
    bounds = [(a, min(a + CHUNK, n)) for a in range(0, n, CHUNK)]
    workers = parallel.get_num_threads()
    per = (len(bounds) + workers - 1) // workers
    jobs = [bounds[i:i + per] for i in range(0, len(bounds), per)]

    def run(job):
        tmps: dict = {}

        def tmp(i, m):
            if i not in tmps:
                tmps[i] = np.empty(CHUNK, P.dtype)
            return tmps[i][:m]
        for a, b in job:
            opt._update(np, P[a:b], G[a:b], {k: v[a:b] for k, v in T.items()}, c, lambda i, m=b - a: tmp(i, m))

    futures = [parallel.executor().submit(run, job) for job in jobs[1:]]
    run(jobs[0])
    for f in futures:
        f.result()


def _tmp(tmps, i, n, dtype, xp):
    while len(tmps) <= i:
        tmps.append(xp.empty(n, dtype))
    return tmps[i]


def group_step(opt, index, group, params) -> None:
    """One step of ``opt`` for ``params`` (the group's tensors that have a gradient)."""
    tkeys = opt._tensor_keys(group)
    skeys = opt._scalar_keys
    if group.get("foreach") is False and not group.get("fused"):
        for p in params:
            single_step(opt, p, group, tkeys, skeys)
        return
    buckets: dict = {}
    single = []
    for p in params:
        dtype = p._data.dtype
        if dtype.kind == "c" or p.grad._data.dtype != dtype:
            single.append(p)
        else:
            buckets.setdefault((dtype, type(p._data)), []).append(p)
    for key, ps in buckets.items():
        if not flat_step(opt, index, key, ps, group, tkeys, skeys):
            single.extend(ps)
    for p in single:
        single_step(opt, p, group, tkeys, skeys)
