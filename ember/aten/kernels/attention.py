"""Kernels of the CPU fused attention op (``aten/src/ATen/native/transformers/attention.cpp``)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.aten.kernels import compiled, loops
from ember.aten.kernels._common import Array, asdtype, compute_dtype, type_name
from ember.aten.kernels.linalg import stacked_matmul
from ember.c10.dtype import BF16_NP

__all__ = ["_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention_for_cpu_backward"]

# ------------------------------------------------------------------------------ attention (the CPU "flash" op)
# PyTorch's _scaled_dot_product_flash_attention_for_cpu: softmax(q k^T * scale + mask) v in one op, returning the
# rows' logsumexp instead of the probabilities; its backward recomputes them from q, k and the logsumexp. ember
# computes the two products with BLAS over all (batch, head) pairs and, for float32, the softmax with its causal
# mask and logsumexp in one compiled pass over the scores (no mask tensor, no separate scale / add / max / exp
# passes); other dtypes run the same steps in NumPy.
def _flash_checks(query: Array, key: Array, value: Array, dropout_p: Any, attn_mask: Array) -> None:
    name = "scaled_dot_product_attention_flash_attention"
    if query.dtype.kind != "f" and query.dtype != BF16_NP:
        raise RuntimeError(f"{name}: Expected data type in FP32, FP64, BF16, FP16, but got "
                           f"{type_name(query.dtype)} instead.")
    if not (query.ndim == key.ndim == value.ndim == 4):
        raise RuntimeError(f"{name}: Accept only 4 dims inputs shape of {{B, H, T, K}}")
    if dropout_p != 0.0:
        raise RuntimeError(f"{name}: Currently do not support dropout > 0")
    if not (query.shape[3] == value.shape[3] and key.shape[3] == value.shape[3]):
        raise RuntimeError(f"{name}: Q/K/V should have the same head size")
    if attn_mask is not None and attn_mask.dtype not in (np.float32, query.dtype):
        raise RuntimeError(f"{name}: Attention mask is the same data type as query")
    if attn_mask is not None and attn_mask.ndim not in (2, 4):
        raise RuntimeError(f"{name}: Attention mask dim in {{2, 4}}")


def _flash_scale(query: Array, scale: Any) -> float:
    return 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)


def _flash_scores(xp: Any, query: Array, key: Array, attn_mask: Array, scale: Any, ct: Any) -> tuple[Any, float]:
    """q k^T in the compute dtype (B, H, L, S), plus the mask when there is one (then already scaled: the factor
    left to apply is returned)."""
    s = _flash_scale(query, scale)
    scores = stacked_matmul(xp, asdtype(xp, query, ct), xp.swapaxes(asdtype(xp, key, ct), -1, -2))
    if attn_mask is None:
        return scores, s
    scores *= s
    scores += asdtype(xp, attn_mask, ct)
    return scores, 1.0


def _causal_keep(xp: Any, L: int, S: int) -> Any:
    return xp.tril(xp.ones((L, S), dtype=bool))


def _scaled_dot_product_flash_attention_for_cpu(xp: Any, query: Array, key: Array, value: Array,
                                                dropout_p: Any = 0.0, is_causal: Any = False, attn_mask: Array = None,
                                                scale: Any = None) -> Any:
    _flash_checks(query, key, value, dropout_p, attn_mask)
    ct = compute_dtype(query.dtype)
    B, H, L = query.shape[:3]
    S = key.shape[2]
    scores, s = _flash_scores(xp, query, key, attn_mask, scale, ct)
    if compiled.usable(xp, scores) and scores.size:
        rows = scores.reshape(-1, S)
        lse = loops.attention.attention_softmax(rows, L, s, bool(is_causal)).reshape(B, H, L)
        p = scores
    else:
        with np.errstate(all="ignore"):
            x = scores * s
            if is_causal:
                x = compiled.where(xp, _causal_keep(xp, L, S), x, -np.inf)
            m = x.max(axis=-1, keepdims=True) if S else xp.full(x.shape[:-1] + (1,), -np.inf, ct)
            empty = m == -np.inf                                    # every key masked: p = 0, lse = 0
            e = xp.exp(x - compiled.where(xp, empty, 0, m))
            t = e.sum(axis=-1, keepdims=True)
            p = compiled.where(xp, empty, 0, e / compiled.where(xp, empty, 1, t))
            lse = compiled.where(xp, empty, 0, m + xp.log(compiled.where(xp, empty, 1, t)))[..., 0].astype(ct)
    # PyTorch's layouts: the output is laid out as the query is (empty_like: a query that is a transposed
    # (B, L, H, E) projection gives an output whose transpose back is contiguous, so the caller's
    # ``.transpose(1, 2).contiguous()`` copies nothing), the logsumexp as (B, L, H) transposed
    out = xp.empty_like(query, dtype=ct, order="K")
    stacked_matmul(xp, p, asdtype(xp, value, ct), out=out)
    lse = xp.ascontiguousarray(lse.transpose(0, 2, 1)).transpose(0, 2, 1)
    return out.astype(query.dtype, copy=False), lse


def _scaled_dot_product_flash_attention_for_cpu_backward(xp: Any, grad_out: Array, query: Array, key: Array,
                                                         value: Array, out: Array, logsumexp: Array, dropout_p: Any,
                                                         is_causal: Any, attn_mask: Array = None,
                                                         scale: Any = None) -> Any:
    """With p recomputed from the scores and lse: dv = p^T g, dp = g v^T, ds = p (dp - sum(g * out)) * scale,
    dq = ds k, dk = ds^T q."""
    _flash_checks(query, key, value, dropout_p, attn_mask)
    ct = compute_dtype(query.dtype)
    L, S = query.shape[2], key.shape[2]
    scores, s = _flash_scores(xp, query, key, attn_mask, scale, ct)
    g, o = asdtype(xp, grad_out, ct), asdtype(xp, out, ct)
    q, k, v = (asdtype(xp, t, ct) for t in (query, key, value))
    d = (g * o).sum(axis=-1)
    full = _flash_scale(query, scale)
    dp = stacked_matmul(xp, g, xp.swapaxes(v, -1, -2))
    if compiled.usable(xp, scores, g) and scores.size:
        rows = scores.reshape(-1, S)
        loops.attention.attention_probs(rows, L, s, bool(is_causal), asdtype(xp, logsumexp, np.float32))
        p = scores
        loops.attention.attention_score_grad(rows, dp.reshape(-1, S), d, full)
        ds = dp
    else:
        with np.errstate(all="ignore"):
            p = xp.exp(scores * s - asdtype(xp, logsumexp, ct)[..., None])
            if is_causal:
                p = compiled.where(xp, _causal_keep(xp, L, S), p, 0)
            ds = p * (dp - d[..., None]) * full
    gq = stacked_matmul(xp, ds, k)
    gk = stacked_matmul(xp, xp.swapaxes(ds, -1, -2), q)
    gv = stacked_matmul(xp, xp.swapaxes(p, -1, -2), g)
    return tuple(xp.ascontiguousarray(a).astype(t.dtype, copy=False) for a, t in ((gq, query), (gk, key), (gv, value)))
