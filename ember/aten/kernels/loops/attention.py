"""The rows of scaled dot-product attention: the probabilities with their logsumexp, recomputed
probabilities, the scores' gradient (caller: ``kernels/attention.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import _exp_le1, _kernel

@_kernel
def attention_softmax_rows(s: Any, L: int, scale: float, causal: bool, lse: Any, r0: int, r1: int) -> None:
    """Attention probabilities in place over the scores s (R, S) (rows r = (batch, head, query i), i = r % L):
    x = s * scale, causal masking of keys j > i (top-left aligned, as PyTorch's ``is_causal``) done inline,
    p = exp(x - max) / sum and lse = max + log(sum). A row with every key masked (max -inf) gives p = 0 and
    lse = 0, as PyTorch's CPU flash kernel does; a row with a NaN, or a +inf, is NaN throughout."""
    S = s.shape[1]
    for r in range(r0, r1):
        n = min(S, r % L + 1) if causal else S
        m = -np.inf
        for j in range(n):
            v = np.float64(s[r, j]) * scale
            m = v if (v > m or v != v) else m
        for j in range(n, S):
            s[r, j] = 0
        if m == -np.inf:
            for j in range(n):
                s[r, j] = 0
            lse[r] = 0
            continue
        if not (m < np.inf):
            for j in range(n):
                s[r, j] = np.nan
            lse[r] = np.nan
            continue
        t = 0.0
        for j in range(n):
            e = _exp_le1(np.float64(s[r, j]) * scale - m)
            s[r, j] = e
            t += e
        inv = 1.0 / t
        for j in range(n):
            s[r, j] = np.float64(s[r, j]) * inv
        lse[r] = m + np.log(t)


@_kernel
def attention_probs_rows(s: Any, L: int, scale: float, causal: bool, lse: Any, r0: int, r1: int) -> None:
    """The probabilities again from the scores and the forward's lse (the backward recomputes them rather than
    keep them): p = exp(s * scale - lse) in place, 0 for causally masked keys. exp's argument is <= 0 up to
    rounding (lse >= every x of its row), the domain of ``_exp_le1``."""
    S = s.shape[1]
    for r in range(r0, r1):
        n = min(S, r % L + 1) if causal else S
        top = np.float64(lse[r])
        if top != top:                  # a NaN row of the forward: NaN gradients
            for j in range(S):
                s[r, j] = np.nan
            continue
        for j in range(n):
            s[r, j] = _exp_le1(np.float64(s[r, j]) * scale - top)
        for j in range(n, S):
            s[r, j] = 0


@_kernel
def attention_score_grad_rows(p: Any, dp: Any, d: Any, scale: float, r0: int, r1: int) -> None:
    """The scores' gradient in place over dp: ds = p (dp - d) scale, d = sum(grad_out * out) per row (the
    softmax backward's sum(dp * p), computed from the output)."""
    S = p.shape[1]
    for r in range(r0, r1):
        dr = np.float64(d[r])
        for j in range(S):
            dp[r, j] = np.float64(p[r, j]) * (np.float64(dp[r, j]) - dr) * scale


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
