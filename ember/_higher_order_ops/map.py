"""``torch._higher_order_ops.map.map``: a function applied to each slice of its inputs along their first dimension
(Note [Higher-order operators] in ``ember/_higher_order_ops/__init__.py``)."""
from __future__ import annotations

import builtins
from typing import Any, Callable

from ember._higher_order_ops import map_impl
from ember._tensor import Tensor
from ember.utils._pytree import tree_flatten, tree_unflatten

__all__ = ["map"]


def map(f: Callable[..., Any], xs: Any, *args: Any) -> Any:  # noqa: A001 - PyTorch's name
    """``f(x, *args)`` for each ``x`` along the first dimension of ``xs`` (a tensor or a pytree of tensors), the
    results stacked: one ``map_impl`` node in a traced graph."""
    leaves, spec = tree_flatten(xs)
    if not leaves or not builtins.all(isinstance(t, Tensor) for t in leaves):
        raise RuntimeError(f"Mapped xs can only consist of tensors. Got xs {xs}.")
    sizes = {int(t.shape[0]) if t.dim() else -1 for t in leaves}
    if len(sizes) != 1:
        raise RuntimeError("Leading dimensions of mapped xs must be consistent. Got shapes "
                           f"{[t.shape for t in leaves]}.")
    if sizes == {0} or sizes == {-1}:
        raise RuntimeError(f"Leading dimensions of mapped xs cannot be 0. Got shapes {[t.shape for t in leaves]}.")
    out_spec: list[Any] = []

    def body(*flat: Any) -> Any:
        out = f(tree_unflatten(list(flat[:len(leaves)]), spec), *flat[len(leaves):])
        out_leaves, s = tree_flatten(out)
        out_spec[:] = [s]
        return tuple(out_leaves)
    outs = map_impl(body, leaves, list(args))
    return tree_unflatten(list(outs), out_spec[0])
