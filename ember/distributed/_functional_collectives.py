"""``torch.distributed._functional_collectives``: collectives that return a new tensor instead of writing into
their argument (the form compiled graphs and tensor-parallel code use). In ember each completes before it
returns, so ``wait_tensor`` has nothing left to wait for and hands its argument back."""
from __future__ import annotations

from typing import Any

import ember
from ember.distributed import distributed_c10d as c10d

__all__ = ["all_gather_tensor", "all_reduce", "all_to_all_single", "all_to_all_single_autograd", "broadcast",
           "reduce_scatter_tensor", "wait_tensor"]

_OPS = {"sum": c10d.ReduceOp.SUM, "avg": c10d.ReduceOp.AVG, "product": c10d.ReduceOp.PRODUCT,
        "min": c10d.ReduceOp.MIN, "max": c10d.ReduceOp.MAX, "band": c10d.ReduceOp.BAND,
        "bor": c10d.ReduceOp.BOR, "bxor": c10d.ReduceOp.BXOR}


def _group(group: Any) -> Any:
    """A process group from what the functional API accepts: a group, or a list of global ranks."""
    if isinstance(group, c10d.ProcessGroup):
        return group
    if isinstance(group, (list, tuple)) and all(isinstance(r, int) for r in group):
        for pg in c10d._World.groups:
            if pg._ranks == sorted(group):
                return pg
        raise ValueError(f"no process group holds exactly the ranks {list(group)}: make it with new_group first")
    if group is None:
        return c10d._get_default_group()
    from ember.distributed._not_yet import refuse
    refuse(f"a functional collective over {type(group).__name__}")


def _op(reduce_op: str) -> Any:
    try:
        return _OPS[reduce_op.lower()]
    except KeyError:
        raise ValueError(f"Unrecognized reduce_op: {reduce_op!r}") from None


def wait_tensor(tensor: Any) -> Any:
    """The result of a functional collective, complete (it already is)."""
    return tensor


def all_reduce(self: Any, reduceOp: str, group: Any, tag: str = "") -> Any:
    out = self.detach().clone()
    c10d.all_reduce(out, op=_op(reduceOp), group=_group(group))
    return out


def broadcast(self: Any, src: int, group: Any, tag: str = "") -> Any:
    out = self.detach().clone()
    c10d.broadcast(out, src=src, group=_group(group))
    return out


def all_gather_tensor(self: Any, gather_dim: int, group: Any, tag: str = "") -> Any:
    """Every rank's ``self`` concatenated along ``gather_dim``."""
    pg = _group(group)
    n = pg.size()
    x = self.detach().contiguous()
    out = ember.empty((n * x.shape[0],) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    c10d.all_gather_single(out, x, group=pg)
    if gather_dim % max(x.dim(), 1) != 0:
        out = ember.cat(ember.chunk(out, n, 0), dim=gather_dim)
    return out


def reduce_scatter_tensor(self: Any, reduceOp: str, scatter_dim: int, group: Any, tag: str = "") -> Any:
    """``self`` reduced over the group, and this rank's part of it along ``scatter_dim``."""
    pg = _group(group)
    n = pg.size()
    if self.shape[scatter_dim] % n:
        raise ValueError(f"input dimension {scatter_dim} ({self.shape[scatter_dim]}) must be a multiple of the group "
                         f"size {n}")
    x = ember.cat(ember.chunk(self.detach(), n, scatter_dim), 0) if scatter_dim % self.dim() else self.detach()
    x = x.contiguous()
    out = ember.empty((x.shape[0] // n,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    c10d.reduce_scatter_single(out, x, op=_op(reduceOp), group=pg)
    if scatter_dim % self.dim():
        shape = list(self.shape)
        shape[scatter_dim] //= n
        out = out.reshape(shape)
    return out


def all_to_all_single(self: Any, output_split_sizes: list[int] | None, input_split_sizes: list[int] | None,
                      group: Any, tag: str = "") -> Any:
    """Part i of ``self`` (along dim 0) to rank i; what arrives, concatenated."""
    pg = _group(group)
    x = self.detach().contiguous()
    rows = sum(output_split_sizes) if output_split_sizes else x.shape[0]
    out = ember.empty((rows,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    c10d.all_to_all_single(out, x, output_split_sizes, input_split_sizes, group=pg)
    return out


class _AllToAllSingle(ember.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any, output_split_sizes: Any, input_split_sizes: Any, group: Any) -> Any:
        ctx.splits = (output_split_sizes, input_split_sizes)
        ctx.group = group
        return all_to_all_single(x, output_split_sizes, input_split_sizes, group)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        out_splits, in_splits = ctx.splits  # the gradient travels back: the splits swap
        return all_to_all_single(grad.contiguous(), in_splits, out_splits, ctx.group), None, None, None


def all_to_all_single_autograd(self: Any, output_split_sizes: list[int] | None,
                               input_split_sizes: list[int] | None, group: Any, tag: str = "") -> Any:
    """``all_to_all_single`` that backward differentiates (the gradient goes back the way the rows came)."""
    return _AllToAllSingle.apply(self, output_split_sizes, input_split_sizes, group)
