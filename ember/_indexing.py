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

from ember._creation import _PYTHON_BIT, _place
from ember.aten.dispatcher import tls as _dispatch_tls
from ember.c10.checked_convert import checked_convert
from ember._generated import aten
from ember._generated.aten import _op_alias, _op_index_Tensor, _op_select_int, _op_slice_Tensor, _op_unsqueeze
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
    ellipsis, nones = -1, 0
    for j, i in enumerate(index):  # the next fastest: with None and one ellipsis too
        ti = type(i)
        if ti is int or (ti is slice and (i.step is None or (type(i.step) is int and i.step > 0))):
            continue
        if i is None:
            nones += 1
        elif i is Ellipsis and ellipsis < 0:
            ellipsis = j
        else:
            break
    else:
        ndim = t._data.ndim
        consumed = len(index) - nones - (ellipsis >= 0)
        if consumed <= ndim:
            if ellipsis < 0:
                return index, None
            return index[:ellipsis] + (slice(None),) * (ndim - consumed) + index[ellipsis + 1:], None
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
            if isinstance(i, (bool, np.bool_)):
                has_adv = True
                adv[-1] = "true" if i else "false"
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


_INT64_MAX = 2 ** 63 - 1


def _basic_view(t: Tensor, key, skip_full: bool = True):
    """Apply integers, slices and ``None`` with ``select`` / ``slice`` / ``unsqueeze`` view ops, as PyTorch's
    ``applySlicing`` does. A slice that keeps a whole dimension (start 0, stop at or past its end, step 1) costs
    nothing, except in ``x[a:b]`` alone, which PyTorch always slices (``skip_full=False``). An omitted start is 0
    and an omitted stop INT64_MAX in the ``slice`` call, as in PyTorch's."""
    dim = 0
    shape = t._data.shape
    src = 0  # the dimension of ``t`` the next key element indexes
    for k in key:
        if k is None:
            t = _op_unsqueeze.call(t._ks, t, dim)
            dim += 1
        elif k.__class__ is slice:
            start = 0 if k.start is None else k.start
            stop = _INT64_MAX if k.stop is None else k.stop
            step = 1 if k.step is None else k.step
            if not (skip_full and start == 0 and step == 1 and stop >= shape[src]):
                t = _op_slice_Tensor.call(t._ks, t, dim, start, stop, step)
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
            if i in ("false", "true"):  # x[False] / x[True]: an index of [] / [0] along the new dim, made as PyTorch's
                # boolToIndexingTensor makes it (an empty tensor, filled with 0 for True)
                flag = aten.empty_memory_format((1 if i == "true" else 0,), dtype=ember.int64, layout=ember.strided,
                                            device=view.device)
                out.append(flag.fill_(0.0) if i == "true" else flag)
            continue
        out.append(i)
    while out and out[-1] is None:
        out.pop()
    return out


def getitem(t: Tensor, index):
    if index.__class__ is Tensor and index._data.dtype == np.int64 and index._data.ndim:  # x[idx]
        return _op_index_Tensor.call(t._ks | index._ks, t, [index])
    key, adv = _split(t, index)
    view = _basic_view(t, key, skip_full=index.__class__ is not slice)
    if adv is None:
        # a view that is the tensor itself (x[...], x[:, :]) is returned as a new alias of it, as PyTorch does
        return _op_alias.call(t._ks, t) if view is t else view
    idx = _adv_list(view, adv)
    return _op_index_Tensor.call(view._ks | _ks(idx), view, idx)


def _ks(idx) -> int:
    ks = 0
    for i in idx:
        if i is not None:
            ks |= i._ks
    return ks


def _copy_to(dst: Tensor, src: Tensor) -> None:
    """PyTorch's ``copy_to`` for ``x[basic] = value``: ``copy_`` when the shapes agree, ``fill_`` from a 0-dim CPU
    value, else the value with its leading 1s dropped (a ``view``), expanded to the destination and copied."""
    if dst.shape == src.shape:
        dst.copy_(src)
    elif src.dim() == 0 and src.device.type == "cpu":
        dst.fill_(src)
    else:
        sizes = list(src.shape)
        while sizes and sizes[0] == 1:
            sizes.pop(0)
        dst.copy_(src.view(sizes).expand(list(dst.shape)))


def setitem(t: Tensor, index, value) -> None:
    number = None
    if not isinstance(value, Tensor):  # a Python value becomes a tensor of t's dtype first (a mode sees lift_fresh)
        number = _checked_value(value, t)
        value = None if not (_dispatch_tls.keys[0] | t._ks) & _PYTHON_BIT else _number_tensor(number, t)
    key, adv = _split(t, index)
    view = _basic_view(t, key)
    if adv is None:
        if value is None:  # no mode sees the ops: fill with the number directly (the same values and autograd)
            view.fill_(number)
        else:
            _copy_to(view, value)
        return
    idx = _adv_list(view, adv)
    view.index_put_(idx, _number_tensor(number, t) if value is None else value)


def _checked_value(value, t: Tensor):
    """PyTorch's ``valueToTensor`` for a bool, int, float or complex: the number converted to ``t``'s dtype as c10
    converts a scalar (a value that overflows the dtype is refused; a half-precision one becomes inf, as PyTorch's
    does); anything else is not a value to assign."""
    if not isinstance(value, (bool, int, float, complex, np.integer)):
        kind = type(value)
        name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        raise TypeError(f"can't assign a {name} to a {t.type()}")
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and not -2 ** 63 <= value < 2 ** 63:
        raise ValueError("Overflow when unpacking long long")  # (PyTorch reads an integer as an int64)
    return checked_convert(value, t.dtype.np, half_saturates=True)


def _number_tensor(number, t: Tensor) -> Tensor:
    return _place(np.array(number, dtype=t.dtype.np), t.device)


_tensor._indexing_getitem, _tensor._indexing_setitem = getitem, setitem  # what Tensor.__getitem__ / __setitem__ call
