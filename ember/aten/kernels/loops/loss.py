"""The negative log-likelihood loss over rows of class scores in one pass each way, as PyTorch's CPU kernels
(``nll_loss_out_frame`` / ``nll_loss_backward_out_frame``, ``LossNLL.cpp``) run it (caller: ``kernels/loss.py``).

The NumPy formulation takes a dozen array operations (the valid mask, the bounds test, a gather of the targets'
scores and weights, selects, two sums), about 1 us each: ``nll_loss`` of 128 x 10 scores cost 40 us where
PyTorch's takes 5. These loops visit each row once.

Note [NLL's cascade sum]
PyTorch sums the reduced loss and the total weight in the scores' dtype with a cascade of 8 partial sums: the row
term goes into level 0, and after every 2^p rows (p = max(4, ceil(log2 M) / 8), so 16 for any batch below 2^40)
level j is carried into level j + 1; the levels are added in order at the end. ``nll_sum`` does the same, so the
loss has PyTorch's bits; the NumPy fallback (a pairwise sum) may differ in the last place.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels.loops._common import _exact

LEVELS = 8       # PyTorch's cascade_sum_num_levels


@_exact
def nll_rows(x: Any, t: Any, weight: Any, has_weight: bool, ignore_index: int, out: Any) -> int:
    """out[i] = -x[i, t[i]] * weight[t[i]] (without weights -x[i, t[i]]), 0 where t[i] == ignore_index, for the
    (M, C) scores ``x``; returns the first row whose target is out of bounds, or -1."""
    n, c = x.shape
    for i in range(n):
        k = t[i]
        if k == ignore_index:
            out[i] = 0
            continue
        if k < 0 or k >= c:
            return i
        out[i] = -x[i, k] * weight[k] if has_weight else -x[i, k]
    return -1


@_exact
def nll_sum(x: Any, t: Any, weight: Any, has_weight: bool, ignore_index: int, level_power: int) -> Any:
    """The cascade sums (Note [NLL's cascade sum]) of -x[i, t[i]] (times weight[t[i]]) and of the weights, in x's
    dtype; returns (the loss sum, the weight sum, the first row whose target is out of bounds or -1, the number of
    ignored rows)."""
    n, c = x.shape
    loss = np.zeros(LEVELS, x.dtype)
    wsum = np.zeros(LEVELS, x.dtype)
    mask = (1 << level_power) - 1
    ignored = 0
    bad = -1
    for b in range(n):
        k = t[b]
        if k == ignore_index:
            ignored += 1
            continue
        if k < 0 or k >= c:
            bad = b
            break
        d = x[b, k]
        if has_weight:
            w = weight[k]
            loss[0] -= d * w
            wsum[0] += w
        else:
            loss[0] -= d
        for j in range(LEVELS - 1):
            if b & (mask << (j * level_power)) != 0:
                break
            wsum[j + 1] += wsum[j]
            loss[j + 1] += loss[j]
            wsum[j] = 0
            loss[j] = 0
    total_loss = loss[0] * 0        # std::accumulate from scalar_t{0}, level by level
    total_weight = total_loss
    for j in range(LEVELS):
        total_loss += loss[j]
        total_weight += wsum[j]
    return total_loss, total_weight, bad, ignored


@_exact
def nll_grad_rows(t: Any, weight: Any, has_weight: bool, ignore_index: int, g: Any, per_row: bool,
                  grad_input: Any) -> int:
    """grad_input[i, t[i]] = weight[t[i]] * v (without weights v) on the zeroed (M, C) ``grad_input``, v being
    -g[i] per row (reduction None) or g[0] (the reduced loss's gradient, already negated and divided); ignored
    rows stay 0. Returns the first row whose target is out of bounds, or -1."""
    n, c = grad_input.shape
    for i in range(n):
        k = t[i]
        if k == ignore_index:
            continue
        if k < 0 or k >= c:
            return i
        v = -g[i] if per_row else g[0]
        grad_input[i, k] = weight[k] * v if has_weight else v
    return -1
