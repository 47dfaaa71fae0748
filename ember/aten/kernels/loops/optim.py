"""SGD and Adam / AdamW updates element by element with PyTorch's rounding (caller: ``kernels/optim.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from numba import prange

from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import _exact, _exact_driver, chunk

# ------------------------------------------------------------------------------ optimizer updates
# PyTorch's single-tensor optimizers, element by element in one pass, with the rounding of its op-by-op form:
# float32 scalars (PyTorch rounds a Python scalar to the tensor's dtype), one float32 rounding per tensor op, in
# its order -- and no fast-math flags, which would let LLVM contract a * b + c into an FMA with one rounding.

@_exact
def sgd_step(p: Any, g: Any, buf: Any, wd: Any, momentum: Any, alpha: Any, neg_lr: Any, use_wd: bool,
             use_momentum: bool, fresh: bool, nesterov: bool, b: int, e: int) -> None:
    """g += wd p; buf = g (the first step) or buf = buf momentum + alpha g; g = g + momentum buf (Nesterov) or
    buf; p += -lr g -- each product and sum rounded to float32 as the NumPy kernel rounds it -- over the range
    [b, e) of the flat arrays."""
    p, g, buf = p[b:e], g[b:e], buf[b:e]
    for i in range(p.size):
        gi = g[i]
        if use_wd:
            gi = gi + p[i] * wd
        if use_momentum:
            if fresh:
                b = gi
            else:
                b = buf[i] * momentum
                b = b + gi * alpha
            buf[i] = b
            gi = gi + b * momentum if nesterov else b
        p[i] = p[i] + gi * neg_lr


@_exact
def adam_step(p: Any, g: Any, m: Any, v: Any, vmax: Any, decay: Any, wd: Any, w1: Any, one_minus_w1: Any,
              small_w1: bool, beta2: Any, one_minus_beta2: Any, bc2_sqrt: Any, eps: Any, neg_step: Any,
              mode_wd: int, amsgrad: bool, b: int, e: int) -> None:
    """Adam / AdamW: weight decay (mode 1: p *= 1 - lr wd; mode 2: g += wd p), exp_avg.lerp_(g, w1),
    exp_avg_sq = exp_avg_sq beta2 + (g (1 - beta2)) g, amsgrad's running max, denom = sqrt(v) / bc2_sqrt + eps,
    p += (exp_avg (-step_size)) / denom -- over the range [b, e) of the flat arrays."""
    p, g, m, v, vmax = p[b:e], g[b:e], m[b:e], v[b:e], vmax[b:e]
    for i in range(p.size):
        gi = g[i]
        pi = p[i]
        if mode_wd == 1:
            pi = pi * decay
        elif mode_wd == 2:
            gi = gi + pi * wd
        mi = m[i]
        d = gi - mi
        mi = mi + d * w1 if small_w1 else gi - d * one_minus_w1
        m[i] = mi
        vi = v[i] * beta2
        vi = vi + (gi * one_minus_beta2) * gi
        v[i] = vi
        if amsgrad:
            top = vmax[i]
            top = top if (top > vi or top != top) else vi
            vmax[i] = top
            vi = top
        den = np.sqrt(vi) / bc2_sqrt
        den = den + eps
        p[i] = pi + (mi * neg_step) / den


@compiled.parallel_of(sgd_step)
@_exact_driver
def _sgd_step_parallel(p: Any, g: Any, buf: Any, wd: Any, momentum: Any, alpha: Any, neg_lr: Any, use_wd: bool,
                       use_momentum: bool, fresh: bool, nesterov: bool, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        sgd_step(p, g, buf, wd, momentum, alpha, neg_lr, use_wd, use_momentum, fresh, nesterov, b, e)


@compiled.parallel_of(adam_step)
@_exact_driver
def _adam_step_parallel(p: Any, g: Any, m: Any, v: Any, vmax: Any, decay: Any, wd: Any, w1: Any, one_minus_w1: Any,
                        small_w1: bool, beta2: Any, one_minus_beta2: Any, bc2_sqrt: Any, eps: Any, neg_step: Any,
                        mode_wd: int, amsgrad: bool, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        adam_step(p, g, m, v, vmax, decay, wd, w1, one_minus_w1, small_w1, beta2, one_minus_beta2, bc2_sqrt, eps,
                  neg_step, mode_wd, amsgrad, b, e)
