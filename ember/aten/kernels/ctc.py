"""Kernels of the CTC loss and its backward (``aten/src/ATen/native/LossCTC.cpp``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import compiled
from ember.aten.kernels._common import Array, meta_array, meta_kernel, type_name

__all__ = ["_ctc_loss", "_ctc_loss_backward"]

# ------------------------------------------------------------------------------ CTC
# ``LossCTC.cpp`` (Graves et al. 2006): the negative log-likelihood of each target under all alignments, by the
# alpha recursion (eq. 6-8) over the extended target ``blank, l1, blank, l2, ..., blank`` in log space, vectorised
# over the batch; the backward runs the beta recursion (eq. 10-11) and returns PyTorch's gradient (eq. 16), which
# is the gradient with respect to the logits of a log_softmax: ``exp(lp) - exp(log(sum alpha*beta) + nll - lp)``.
_CTC = "ctc_loss_allocate_outputs"


def _ctc_setup(log_probs: Array, targets: Array, input_lengths: Any, target_lengths: Any, blank: Any) -> Any:
    if not (log_probs.dtype.kind == "f"):
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{type_name(log_probs.dtype)}'")
    if log_probs.ndim != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.ndim}-dimensional tensor for argument "
                           f"#1 'log_probs' (while checking arguments for {_CTC})")
    if targets.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #2 'targets' to have one of the following scalar types: "
                           f"Long, Int; but got torch.{type_name(targets.dtype)}Tensor instead (while checking "
                           f"arguments for {_CTC})")
    t_len, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    il, tl = [int(v) for v in input_lengths], [int(v) for v in target_lengths]
    if len(il) != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tl) != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    for v in tl:
        if v < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value {v} (while checking "
                               f"arguments for {_CTC})")
    s_max = max(tl) if tl else 0
    tg = np.asarray(targets.get() if hasattr(targets, "get") else targets).astype(np.int64)
    labels = np.full((n, max(s_max, 1)), blank, np.int64)
    if tg.ndim == 1:
        if tg.shape[0] != sum(tl):
            raise RuntimeError(f"Expected tensor to have size {sum(tl)} at dimension 0, but got size {tg.shape[0]} for "
                               f"argument #2 'targets' (while checking arguments for {_CTC})")
        off = 0
        for b in range(n):
            labels[b, :tl[b]] = tg[off:off + tl[b]]
            off += tl[b]
    else:
        if tg.shape[0] != n:
            raise RuntimeError(f"Expected tensor to have size {n} at dimension 0, but got size {tg.shape[0]} for "
                               f"argument #2 'targets' (while checking arguments for {_CTC})")
        if tg.shape[1] < s_max:
            raise RuntimeError(f"Expected tensor to have size at least {s_max} at dimension 1, but got size "
                               f"{tg.shape[1]} for argument #2 'targets' (while checking arguments for {_CTC})")
        for b in range(n):
            labels[b, :tl[b]] = tg[b, :tl[b]]
    for v in il:
        if v < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value {v} (while checking "
                               f"arguments for {_CTC})")
        if v > t_len:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_len}, but got value {v} (while "
                               f"checking arguments for {_CTC})")
    ext = np.full((n, 2 * s_max + 1), blank, np.int64)
    ext[:, 1::2] = labels[:, :s_max]
    skip = np.zeros(ext.shape, bool)                         # s-2 -> s allowed: a label differing from s-2's
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    valid = np.arange(ext.shape[1])[None, :] <= 2 * np.asarray(tl, np.int64)[:, None]
    return np.asarray(il, np.int64), np.asarray(tl, np.int64), ext, skip, valid


def _logsumexp3(xp: Any, a: Array, b: Array, c: Any) -> Any:
    m = xp.maximum(xp.maximum(a, b), c)
    m = compiled.where(xp, m == -np.inf, 0, m)
    with np.errstate(all="ignore"):
        return xp.log(xp.exp(a - m) + xp.exp(b - m) + xp.exp(c - m)) + m


def _ctc_meta(xp: Any, log_probs: Array, targets: Array, input_lengths: Any, target_lengths: Any, blank: Any = 0,
              zero_infinity: Any = False) -> Any:
    t_len, n, _ = log_probs.shape
    s_max = max([int(v) for v in target_lengths], default=0)
    return (meta_array(log_probs.dtype, (n,)),
            meta_array(log_probs.dtype, (n, t_len, 2 * s_max + 1)))


@meta_kernel(_ctc_meta)
def _ctc_loss(xp: Any, log_probs: Array, targets: Array, input_lengths: Any, target_lengths: Any, blank: Any = 0,
              zero_infinity: Any = False) -> Any:
    il, tl, ext, skip, valid = _ctc_setup(log_probs, targets, input_lengths, target_lengths, blank)
    t_len, n, _ = log_probs.shape
    lp = log_probs
    width = ext.shape[1]
    ext_x, skip_x, valid_x = xp.asarray(ext), xp.asarray(skip), xp.asarray(valid)
    emit = xp.take_along_axis(lp, xp.broadcast_to(ext_x[None], (t_len, n, width)), axis=2)   # (T, N, 2S+1)
    ninf = xp.asarray(-np.inf, lp.dtype)
    log_alpha = xp.full((n, t_len, width), -np.inf, lp.dtype)
    if t_len:
        a = xp.full((n, width), -np.inf, lp.dtype)
        a[:, 0] = emit[0, :, 0]
        a[:, 1:2] = compiled.where(xp, xp.asarray(tl > 0)[:, None], emit[0, :, 1:2], ninf) if width > 1 else a[:, 1:2]
        log_alpha[:, 0] = a
        for t in range(1, t_len):
            a1 = xp.concatenate([xp.full((n, 1), -np.inf, lp.dtype), a[:, :-1]], 1)
            a2 = xp.concatenate([xp.full((n, 2), -np.inf, lp.dtype), a[:, :-2]], 1)[:, :width]
            a2 = compiled.where(xp, skip_x, a2, ninf)
            a = compiled.where(xp, valid_x, _logsumexp3(xp, a, a1, a2) + emit[t], ninf)
            log_alpha[:, t] = a
    nll = xp.empty(n, lp.dtype)
    for b in range(n):
        if il[b] == 0:
            nll[b] = 0 if tl[b] == 0 else np.inf
            continue
        last = log_alpha[b, il[b] - 1]
        l1 = last[2 * tl[b]]
        l2 = last[2 * tl[b] - 1] if tl[b] > 0 else ninf
        nll[b] = -_logsumexp3(xp, l1, l2, ninf)
    return nll, log_alpha


def _ctc_backward_meta(xp: Any, grad: Array, log_probs: Array, *args: Any, **kwargs: Any) -> Any:
    return meta_array(log_probs.dtype, log_probs.shape)


@meta_kernel(_ctc_backward_meta)
def _ctc_loss_backward(xp: Any, grad: Array, log_probs: Array, targets: Array, input_lengths: Any,
                       target_lengths: Any, neg_log_likelihood: Array, log_alpha: Array, blank: Any,
                       zero_infinity: Any = False) -> Any:
    il, tl, ext, skip, valid = _ctc_setup(log_probs, targets, input_lengths, target_lengths, blank)
    t_len, n, c = log_probs.shape
    lp = log_probs
    width = ext.shape[1]
    ext_x = xp.asarray(ext)
    emit = xp.take_along_axis(lp, xp.broadcast_to(ext_x[None], (t_len, n, width)), axis=2)
    ninf = xp.asarray(-np.inf, lp.dtype)
    # skip into s from s+2 (the mirror of the alpha recursion's s-2 -> s)
    skip_next = np.zeros(ext.shape, bool)
    skip_next[:, :-2] = skip[:, 2:]
    skip_x, valid_x = xp.asarray(skip_next), xp.asarray(valid)
    log_beta = xp.full((n, t_len, width), -np.inf, lp.dtype)
    rows = np.arange(n)
    for t in range(t_len - 1, -1, -1):
        starts = il - 1 == t                                  # the batch elements whose last step is t
        b = xp.full((n, width), -np.inf, lp.dtype)
        if t < t_len - 1:
            nxt = log_beta[:, t + 1]
            b1 = xp.concatenate([nxt[:, 1:], xp.full((n, 1), -np.inf, lp.dtype)], 1)
            b2 = xp.concatenate([nxt[:, 2:], xp.full((n, 2), -np.inf, lp.dtype)], 1)[:, :width]
            b2 = compiled.where(xp, skip_x, b2, ninf)
            b = compiled.where(xp, valid_x, _logsumexp3(xp, nxt, b1, b2) + emit[t], ninf)
        if starts.any():
            init = xp.full((n, width), -np.inf, lp.dtype)
            init[rows, 2 * tl] = emit[t][rows, 2 * tl]
            has = tl > 0
            init[rows[has], 2 * tl[has] - 1] = emit[t][rows[has], 2 * tl[has] - 1]
            b = compiled.where(xp, xp.asarray(starts)[:, None], init, b)
        b = compiled.where(xp, xp.asarray(t < il)[:, None], b, ninf)
        log_beta[:, t] = b
    # log of the sum of alpha * beta over the positions of each label (eq. 16), per (t, n, c)
    ab = xp.moveaxis(log_alpha, 1, 0) + xp.moveaxis(log_beta, 1, 0)                       # (T, N, 2S+1)
    flat_idx = (xp.arange(t_len * n).reshape(t_len, n, 1) * c + ext_x[None]).reshape(-1)
    vals = ab.reshape(-1)
    m = xp.full(t_len * n * c, -np.inf, lp.dtype)
    xp.maximum.at(m, flat_idx, vals)
    m0 = compiled.where(xp, m == -np.inf, 0, m)
    with np.errstate(all="ignore"):
        acc = xp.zeros(t_len * n * c, lp.dtype)
        xp.add.at(acc, flat_idx, xp.exp(vals - m0[flat_idx]))
        lcab = (xp.log(acc) + m0).reshape(t_len, n, c)
        nll = neg_log_likelihood.reshape(1, n, 1)
        g = (xp.exp(lp) - xp.exp(lcab + nll - lp)) * grad.reshape(1, n, 1)
    live = xp.asarray(np.arange(t_len)[:, None] < il[None, :])[..., None]
    g = compiled.where(xp, live, g, 0)
    if zero_infinity:
        g = compiled.where(xp, xp.isinf(nll) & (nll > 0), 0, g)
    return g.astype(lp.dtype, copy=False)
