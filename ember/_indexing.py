"""``Tensor.__getitem__`` / ``__setitem__`` (mirrors ``torch/csrc/autograd/python_variable_indexing.cpp``).

As in PyTorch, an index is applied in two steps: the *basic* parts (integers, slices, ``None``,
``...``, Python bools) give one view of the tensor (a single ``as_strided`` call through the
dispatcher), then the *advanced* parts (integer / bool tensors, lists) go to ``index.Tensor`` (reading)
or ``index_put_`` (writing).  Integers select before advanced indexing happens, which is where PyTorch
differs from NumPy: ``x[0, :, [0, 1]]`` has shape ``(x.shape[1], 2)``.
"""
from __future__ import annotations

import numbers

import numpy as np

from ember._generated.aten import _op_index_Tensor, _op_select_int, _op_slice_Tensor, _op_unsqueeze
from ember import _tensor
from ember._tensor import Tensor
from ember.c10 import dtype as _dt

_ELLIPSIS = type(Ellipsis)


def _as_index_tensor(obj, device):
    import ember
    t = ember.tensor(obj, device=device)
    if t.dtype.is_floating_point:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return t


def _is_int(i) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _split(t: Tensor, index):
    """(numpy basic key, advanced index list over the view's dims or None)."""
    if not isinstance(index, tuple):
        index = (index,)
    for i in index:  # fast path: integers and slices with positive steps only
        ti = type(i)
        if not (ti is int or (ti is slice and (i.step is None or (type(i.step) is int and i.step > 0)))):
            break
    else:
        if len(index) <= t._data.ndim:
            return index, None
    items = []
    for i in index:
        if isinstance(i, Tensor) or i is None or isinstance(i, (slice, _ELLIPSIS, bool, np.bool_)) or _is_int(i):
            items.append(i)
        elif isinstance(i, (list, np.ndarray)) or (isinstance(i, tuple)):
            items.append(_as_index_tensor(i, t.device))
        elif isinstance(i, numbers.Integral):
            items.append(int(i))
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             "valid indices (got " + type(i).__name__ + ")")
    consumed = 0
    for i in items:
        if isinstance(i, Tensor):
            consumed += i.dim() if i.dtype in (_dt.bool_, _dt.uint8) else 1
        elif _is_int(i) or isinstance(i, slice):
            consumed += 1
    if consumed > t.dim():
        raise IndexError(f"too many indices for tensor of dimension {t.dim()}")
    key, adv, out_dim, has_adv = [], [], 0, False
    seen_ellipsis = False
    for i in items:
        if isinstance(i, _ELLIPSIS):
            if seen_ellipsis:
                raise IndexError("an index can only have a single ellipsis ('...')")
            seen_ellipsis = True
            n = t.dim() - consumed
            key.extend([slice(None)] * n)
            adv.extend([None] * n)
            out_dim += n
        elif i is None or isinstance(i, (bool, np.bool_)):
            key.append(None)
            adv.append(None)
            out_dim += 1
            if isinstance(i, (bool, np.bool_)) and not i:
                has_adv = True
                adv[-1] = "false"
        elif _is_int(i):
            key.append(int(i))
        elif isinstance(i, slice):
            if i.step is not None and int(i.step) <= 0:
                if int(i.step) == 0:
                    raise ValueError("slice step cannot be zero")
                raise ValueError("step must be greater than zero")
            key.append(slice(*(None if v is None else int(v) for v in (i.start, i.stop, i.step))))
            adv.append(None)
            out_dim += 1
        else:  # tensor
            has_adv = True
            k = i.dim() if i.dtype in (_dt.bool_, _dt.uint8) else 1
            if i.dtype in (_dt.bool_, _dt.uint8) and i.dim() == 0:
                key.append(None)
                adv.append(i)
                out_dim += 1
                continue
            key.extend([slice(None)] * k)
            adv.append(i)
            adv.extend(["skip"] * (k - 1))
            out_dim += k
    return tuple(key), (adv if has_adv else None)


_FULL = slice(None)


def _basic_view(t: Tensor, key):
    """Apply integers, slices and ``None`` with ``select`` / ``slice`` / ``unsqueeze`` view ops, as
    PyTorch's ``applySlicing`` does (a full slice costs nothing)."""
    dim = 0
    shape = t._data.shape
    src = 0  # the dimension of ``t`` the next key element indexes
    for k in key:
        if k is None:
            t = _op_unsqueeze.call(t._ks, t, dim)
            dim += 1
        elif k.__class__ is slice:
            if k != _FULL:
                t = _op_slice_Tensor.call(t._ks, t, dim, k.start, k.stop, 1 if k.step is None else k.step)
            dim += 1
            src += 1
        else:  # an integer
            n = shape[src]
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for dimension {src} with size {n}")
            t = _op_select_int.call(t._ks, t, dim, k)
            src += 1
    return t


def _adv_list(view: Tensor, adv):
    import ember
    out = []
    for j, i in enumerate(adv):
        if isinstance(i, str):
            if i == "false":  # x[False]: an empty selection along a new dim
                out.append(ember.zeros((0,), dtype=ember.int64, device=view.device))
            continue
        out.append(i)
    while out and out[-1] is None:
        out.pop()
    return out


def getitem(t: Tensor, index):
    if index.__class__ is Tensor and index._data.dtype == np.int64 and index._data.ndim:  # x[idx]
        return _op_index_Tensor.call(t._ks | index._ks, t, [index])
    key, adv = _split(t, index)
    view = _basic_view(t, key)
    if adv is None:
        return view
    idx = _adv_list(view, adv)
    return _op_index_Tensor.call(view._ks | _ks(idx), view, idx)


def _ks(idx) -> int:
    ks = 0
    for i in idx:
        if i is not None:
            ks |= i._ks
    return ks


def setitem(t: Tensor, index, value) -> None:
    import ember
    key, adv = _split(t, index)
    view = _basic_view(t, key)
    if adv is None:
        if isinstance(value, Tensor):
            view.copy_(value)
        else:
            view.fill_(value)
        return
    if not isinstance(value, Tensor):
        value = ember.tensor(value, dtype=t.dtype, device=t.device)
    idx = _adv_list(view, adv)
    view.index_put_(idx, value)


_tensor._indexing_getitem, _tensor._indexing_setitem = getitem, setitem  # what Tensor.__getitem__ / __setitem__ call
