"""The rows of scaled dot-product attention: the probabilities with their logsumexp, recomputed
probabilities, the scores' gradient (caller: ``kernels/attention.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import _F0, _F1, _driver, _expf, _from_order_key, _kernel, _order_key, chunk

_NEG_INF = np.float32(-np.inf)


@_kernel
def attention_softmax_rows(s: Any, L: int, scale: float, causal: bool, lse: Any, r0: int, r1: int) -> None:
    """Attention probabilities in place over the scores s (R, S) (rows r = (batch, head, query i), i = r % L), in
    float32 vectors (Note [float32 math]): x = s * scale, causal masking of keys j > i (top-left aligned, as
    PyTorch's ``is_causal``) done inline, p = exp(x - max) / sum and lse = max + log(sum). A row with every key
    masked (max -inf) gives p = 0 and lse = 0, as PyTorch's CPU flash kernel does; a row with a NaN, or a +inf, is
    NaN throughout (its sum carries the NaN of exp's argument, as in the softmax rows)."""
    S = s.shape[1]
    sc = np.float32(scale)
    for r in range(r0, r1):
        sr = s[r]
        n = min(S, r % L + 1) if causal else S
        k = _order_key(_NEG_INF)
        for j in range(n):
            k = max(k, _order_key(sr[j] * sc))
        m = _from_order_key(k)
        for j in range(n, S):
            sr[j] = _F0
        if m == _NEG_INF:                # no key, or a NaN with its sign bit set below -inf: PyTorch's 0 or NaN
            bad = False
            for j in range(n):
                bad |= sr[j] != sr[j]
            fill = np.float32(np.nan) if bad else _F0
            for j in range(n):
                sr[j] = fill
            lse[r] = fill
            continue
        t = _F0
        for j in range(n):
            e = _expf(sr[j] * sc - m)
            sr[j] = e
            t += e
        inv = _F1 / t
        for j in range(n):
            sr[j] = sr[j] * inv
        lse[r] = m + np.log(t)


@_kernel
def attention_probs_rows(s: Any, L: int, scale: float, causal: bool, lse: Any, r0: int, r1: int) -> None:
    """The probabilities again from the scores and the forward's lse (the backward recomputes them rather than
    keep them): p = exp(s * scale - lse) in place, 0 for causally masked keys; a NaN lse (a NaN row of the
    forward) gives NaN."""
    S = s.shape[1]
    sc = np.float32(scale)
    for r in range(r0, r1):
        sr = s[r]
        n = min(S, r % L + 1) if causal else S
        top = lse[r]
        for j in range(n):
            sr[j] = _expf(sr[j] * sc - top)
        for j in range(n, S):
            sr[j] = _F0 if top == top else top


@_kernel
def attention_score_grad_rows(p: Any, dp: Any, d: Any, scale: float, r0: int, r1: int) -> None:
    """The scores' gradient in place over dp: ds = p (dp - d) scale, d = sum(grad_out * out) per row (the
    softmax backward's sum(dp * p), computed from the output)."""
    S = p.shape[1]
    sc = np.float32(scale)
    for r in range(r0, r1):
        pr = p[r]
        dr = dp[r]
        dd = d[r]
        for j in range(S):
            dr[j] = pr[j] * (dr[j] - dd) * sc


@compiled.parallel_of(attention_softmax_rows)
@_driver
def _attention_softmax_rows_parallel(s: Any, L: int, scale: float, causal: bool, lse: Any, work: int,
                                     chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        attention_softmax_rows(s, L, scale, causal, lse, b, e)


@compiled.parallel_of(attention_probs_rows)
@_driver
def _attention_probs_rows_parallel(s: Any, L: int, scale: float, causal: bool, lse: Any, work: int,
                                   chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        attention_probs_rows(s, L, scale, causal, lse, b, e)


@compiled.parallel_of(attention_score_grad_rows)
@_driver
def _attention_score_grad_rows_parallel(p: Any, dp: Any, d: Any, scale: float, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        attention_score_grad_rows(p, dp, d, scale, b, e)


# ------------------------------------------------------------------------------ runners
def attention_softmax(scores: Any, L: int, scale: float, causal: bool) -> Any:
    """In place over the float32 scores (R, S), rows (batch, head, query): the attention probabilities of
    ``scores * scale`` (keys after the query masked if ``causal``); returns each row's logsumexp (float32)."""
    kernel = attention_softmax_rows
    lse = np.empty(scores.shape[0], np.float32)
    compiled.split(kernel, scores.shape[0], compiled.row_grain(scores.shape[1]), scores, L, float(scale), causal, lse)
    return lse


def attention_probs(scores: Any, L: int, scale: float, causal: bool, lse: Any) -> None:
    """In place over the float32 scores (R, S): exp(scores * scale - lse), 0 where causally masked."""
    kernel = attention_probs_rows
    lse = np.ascontiguousarray(lse).reshape(-1)
    compiled.split(kernel, scores.shape[0], compiled.row_grain(scores.shape[1]), scores, L, float(scale), causal, lse)


def attention_score_grad(p: Any, dp: Any, d: Any, scale: float) -> None:
    """In place over dp (R, S), float32: p * (dp - d) * scale, ``d`` one value per row."""
    kernel = attention_score_grad_rows
    d = np.ascontiguousarray(d).reshape(-1)
    compiled.split(kernel, p.shape[0], compiled.row_grain(p.shape[1]), p, dp, d, float(scale))
