"""The chunked path of ``F.linear_cross_entropy``: cross entropy of ``input @ linear_weight.T (+ bias)`` computed
a batch chunk at a time, so only a (chunk x classes) block of logits exists at once.

For ``mean`` / ``sum`` the forward also computes the gradients (softmax minus the one-hot target, weighted) chunk
by chunk, and backward scales them by the incoming gradient (released after one backward unless
``allow_retain_graph``); for ``none`` backward recomputes each chunk's softmax. Accumulation runs in the options'
``acc_dtype`` and results are rounded to the input's dtype once."""
from __future__ import annotations

from typing import Any

import ember
from ember.autograd import Function

_TWICE = ("linear_cross_entropy chunked backward called twice; retain_graph=True / double backward are not "
          "supported.")


def _weights(target: Any, weight: Any, ignore_index: int, num_classes: int, dtype: Any) -> tuple[Any, Any]:
    """(the target with ignored entries made valid, each row's class weight: 0 where ignored)."""
    ignored = target == ignore_index
    safe = ember.where(ignored, ember.zeros_like(target), target) if ignore_index < 0 or \
        ignore_index >= num_classes else target
    w = (~ignored).to(dtype) if weight is None else ember.where(
        ignored, ember.zeros((), dtype=dtype), weight.to(dtype).index_select(0, safe))
    return safe, w


def _chunks(n: int, size: int) -> Any:
    return ((s, min(size, n - s)) for s in range(0, n, size))


class _ChunkedReduced(Function):
    @staticmethod
    def forward(ctx: Any, input: Any, linear_weight: Any, target: Any, linear_bias: Any, weight: Any,  # noqa: A002
                reduction: str, ignore_index: int, chunk: int, acc: Any, allow_retain_graph: bool) -> Any:
        n, num_classes = input.shape[0], linear_weight.shape[0]
        safe, w = _weights(target, weight, ignore_index, num_classes, acc)
        denom = w.sum() if reduction == "mean" else None
        W = linear_weight.to(acc)
        b = None if linear_bias is None else linear_bias.to(acc)
        loss = ember.zeros((), dtype=acc)
        gi = ember.empty(input.shape, dtype=acc)
        gw = ember.zeros(W.shape, dtype=acc)
        gb = None if b is None else ember.zeros(b.shape, dtype=acc)
        for s, m in _chunks(n, chunk):
            x = input[s:s + m].to(acc)
            logits = x @ W.t() if b is None else ember.addmm(b, x, W.t())
            lse = logits.logsumexp(1)
            t, wt = safe[s:s + m], w[s:s + m]
            loss = loss + (wt * (lse - logits.gather(1, t.unsqueeze(1)).squeeze(1))).sum()
            g = logits.sub_(lse.unsqueeze(1)).exp_()  # softmax, in the logits' memory
            g.scatter_add_(1, t.unsqueeze(1), -ember.ones((m, 1), dtype=acc))
            g.mul_(wt.unsqueeze(1))
            gi[s:s + m] = g @ W
            gw.add_(g.t() @ x)
            if gb is not None:
                gb.add_(g.sum(0))
        if denom is not None:
            scale = 1.0 / denom
            loss, gi, gw = loss * scale, gi * scale, gw * scale
            gb = None if gb is None else gb * scale
        ctx.grads = [gi.to(input.dtype), gw.to(linear_weight.dtype),
                     None if gb is None else gb.to(linear_bias.dtype)]
        ctx.allow_retain_graph = allow_retain_graph
        return loss.to(input.dtype)

    @staticmethod
    def backward(ctx: Any, grad_output: Any) -> Any:
        grads = ctx.grads
        if grads is None:
            raise RuntimeError(_TWICE)
        if not ctx.allow_retain_graph:
            ctx.grads = None
        gi, gw, gb = (None if g is None else g * grad_output for g in grads)
        return gi, gw, None, gb, None, None, None, None, None, None


class _ChunkedNone(Function):
    @staticmethod
    def forward(ctx: Any, input: Any, linear_weight: Any, target: Any, linear_bias: Any, weight: Any,  # noqa: A002
                ignore_index: int, chunk: int, acc: Any) -> Any:
        n, num_classes = input.shape[0], linear_weight.shape[0]
        safe, w = _weights(target, weight, ignore_index, num_classes, acc)
        W = linear_weight.to(acc)
        b = None if linear_bias is None else linear_bias.to(acc)
        out = ember.empty((n,), dtype=acc)
        for s, m in _chunks(n, chunk):
            x = input[s:s + m].to(acc)
            logits = x @ W.t() if b is None else ember.addmm(b, x, W.t())
            out[s:s + m] = w[s:s + m] * (logits.logsumexp(1) - logits.gather(1, safe[s:s + m].unsqueeze(1)).squeeze(1))
        ctx.save_for_backward(input, linear_weight, linear_bias)
        ctx.safe, ctx.w, ctx.chunk, ctx.acc = safe, w, chunk, acc
        return out.to(input.dtype)

    @staticmethod
    def backward(ctx: Any, grad_output: Any) -> Any:
        input, linear_weight, linear_bias = ctx.saved_tensors
        acc = ctx.acc
        W = linear_weight.to(acc)
        b = None if linear_bias is None else linear_bias.to(acc)
        gi = ember.empty(input.shape, dtype=acc)
        gw = ember.zeros(W.shape, dtype=acc)
        gb = None if b is None else ember.zeros(b.shape, dtype=acc)
        scale = ctx.w * grad_output.to(acc)
        for s, m in _chunks(input.shape[0], ctx.chunk):
            x = input[s:s + m].to(acc)
            logits = x @ W.t() if b is None else ember.addmm(b, x, W.t())
            g = logits.softmax(1)
            g.scatter_add_(1, ctx.safe[s:s + m].unsqueeze(1), -ember.ones((m, 1), dtype=acc))
            g.mul_(scale[s:s + m].unsqueeze(1))
            gi[s:s + m] = g @ W
            gw.add_(g.t() @ x)
            if gb is not None:
                gb.add_(g.sum(0))
        return (gi.to(input.dtype), gw.to(linear_weight.dtype), None,
                None if gb is None else gb.to(linear_bias.dtype), None, None, None, None)


def chunked(input: Any, linear_weight: Any, target: Any, linear_bias: Any, weight: Any,  # noqa: A002
            reduction: str, ignore_index: int, options: Any) -> Any:
    if reduction == "none":
        return _ChunkedNone.apply(input, linear_weight, target, linear_bias, weight, ignore_index,
                                  options.batch_chunk_size, options.acc_dtype)
    return _ChunkedReduced.apply(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
                                 options.batch_chunk_size, options.acc_dtype, options.allow_retain_graph)
