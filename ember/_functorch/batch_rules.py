"""Batching rules: how one operator runs on a batch of examples at once (Note [Batched tensors] in ``vmap.py``;
PyTorch's ``aten/src/ATen/functorch/BatchRules*.cpp``).

A rule is called as ``rule(func, level, size, args, kwargs)`` with the operator's arguments as the caller passed
them, some of them ``BatchedTensor``s of ``level`` (batch ``size``); it computes on the *physical* tensors (batch
dimension first) and returns the result wrapped again. Families:

- pointwise operators (PyTorch's ``pointwise`` tag in ``native_functions.yaml``): the physical operands are lined up
  so that they broadcast as the examples would -- a batched operand of fewer logical dimensions than the result gets
  size-1 dimensions after its batch dimension;
- operators with dimension arguments (reductions, softmax, cumulative ops, views): each dimension moves by one;
- views and factories of a batched tensor: the batch size joins the sizes;
- products: ``matmul`` broadcasting does the batching;
- convolutions, pooling, embeddings, NLL: the batch folded into the operator's own batch (or groups) dimension.

An operator with none falls back to one call per example (``vmap.fallback``).
"""
from __future__ import annotations

from typing import Any, Callable

import ember
from ember._tensor import Tensor
from ember._functorch.vmap import BatchedTensor, fallback
from ember.c10.tensor_impl import _wrap_dim as wrap_dim    # PyTorch's maybe_wrap_dim
from ember.utils._pytree import tree_flatten, tree_unflatten

Rule = Callable[[Any, int, int, tuple[Any, ...], dict[str, Any]], Any]


# ---------------------------------------------------------------------------------------------------------- helpers
def _b(x: Any, level: int) -> bool:
    return isinstance(x, BatchedTensor) and x._level == level


def _p(x: Any, level: int) -> Any:
    """The physical tensor of a batched argument of ``level``; anything else as it is."""
    return x._value if _b(x, level) else x


def _wrap(x: Any, level: int) -> Any:
    """Tensors (also inside tuples and lists) wrapped as batched tensors of ``level``."""
    if isinstance(x, Tensor):
        return BatchedTensor(x, level)
    if isinstance(x, (tuple, list)):
        out = [_wrap(v, level) for v in x]
        return out if isinstance(x, list) else rebuild(x, out)
    return x


def rebuild(like: tuple[Any, ...], items: list[Any]) -> tuple[Any, ...]:
    """A tuple of ``like``'s type (a named tuple or PyTorch's ``return_types``) holding ``items``."""
    if type(like) is tuple:
        return tuple(items)
    try:
        return type(like)(items)        # return_types: built from a sequence
    except TypeError:
        return type(like)(*items)       # a namedtuple


def _batched(x: Any, level: int, size: int) -> Any:
    """The physical tensor of ``x`` with the batch dimension first, an unbatched tensor expanded to the batch."""
    if _b(x, level):
        return x._value
    return x.unsqueeze(0).expand(size, *x.shape)


def _lift(v: Any, size: int, rank: int) -> Any:
    """A physical tensor (batch first) whose examples have fewer than ``rank`` dimensions, given size-1 dimensions
    after the batch so that each example broadcasts (or expands) as it would alone."""
    r = v.dim() - 1
    return v if r >= rank else v.reshape((size,) + (1,) * (rank - r) + tuple(v.shape[1:]))


def _bind(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments by schema name, defaults filled in (a number where the schema has a Tensor -- the
    dispatcher's wrapped numbers -- is bound by position)."""
    bound = func.try_bind(args, kwargs)
    if bound is not None:
        return dict(bound)
    out = {a.name: a.default_value for a in func._schema.arguments if a.has_default_value}
    out.update(zip([a.name for a in func._schema.arguments], args))
    out.update(kwargs)
    return out


def _call(func: Any, bound: dict[str, Any]) -> Any:
    return func(**bound)


def check_inplace(func: Any, level: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """For an operator that writes its first argument: that argument (returned by the rule after the write), after
    PyTorch's check that no other argument is batched where it is not; None for other operators."""
    schema_args = func._schema.arguments
    if not schema_args or schema_args[0].alias_info is None or not schema_args[0].alias_info.is_write:
        return None
    bound = _bind(func, args, kwargs)
    first = schema_args[0].name
    target = bound[first]
    if not _b(target, level):
        for name, v in bound.items():
            if name != first and _b(v, level):
                raise RuntimeError(
                    "vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a Tensor "
                    "`other` in extra_args that has more elements than `self`. This happened due to `other` being "
                    "vmapped over but `self` not being vmapped over in a vmap. Please try to use out-of-place "
                    "operators instead of inplace arithmetic. If said operator is being called inside the PyTorch "
                    "framework, please file a bug report instead.")
    return target


# --------------------------------------------------------------------------------------------------------- pointwise
def pointwise(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Operands lined up to broadcast as one example's: a batched operand of logical rank r < R (the largest rank
    among the operands) gets R - r size-1 dimensions after its batch dimension."""
    target = check_inplace(func, level, args, kwargs)
    flat, spec = tree_flatten((args, kwargs))
    tensors = [x for x in flat if isinstance(x, Tensor)]
    rank = max(x.dim() for x in tensors)
    new = [_lift(x._value, size, rank) if _b(x, level) else x for x in flat]
    if target is None and rank > 0 and any(_b(x, level) and x.dim() == 0 for x in tensors) and \
            len({x.dtype for x in tensors}) > 1:
        new = _promote_as_examples(func, flat, new, spec, level)
    a, k = tree_unflatten(new, spec)
    out = func(*a, **k)
    return target if target is not None else _wrap(out, level)


def _promote_as_examples(func: Any, flat: list[Any], new: list[Any], spec: Any, level: int) -> list[Any]:
    """A batched operand that is a scalar for each example takes part in type promotion as a scalar tensor does
    (its dtype yields to a dimensioned operand's of the same category); once physical it has a dimension, so it is
    cast to the result type the examples would get first (found by running the operator on meta stand-ins)."""
    meta = [ember.empty(tuple(x.shape), dtype=x.dtype, device="meta") if isinstance(x, Tensor) else x for x in flat]
    a, k = tree_unflatten(meta, spec)
    want = func(*a, **k)
    if not isinstance(want, Tensor):
        return new
    out = []
    for x, v in zip(flat, new):
        if _b(x, level) and x.dim() == 0 and v.dtype != want.dtype and \
                v.dtype.is_floating_point == want.dtype.is_floating_point and \
                v.dtype.is_complex == want.dtype.is_complex:
            v = v.to(want.dtype)
        out.append(v)
    return out


def unary(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """An operator of one tensor whose result keeps its shape or is a new tensor like it (``clone``, ``_to_copy``,
    ``zeros_like``, ``fill_``): run on the physical tensor."""
    target = check_inplace(func, level, args, kwargs)
    flat, spec = tree_flatten((args, kwargs))
    a, k = tree_unflatten([_p(x, level) for x in flat], spec)
    out = func(*a, **k)
    return target if target is not None else _wrap(out, level)


def new_factory(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``x.new_zeros(sizes)`` and kin: one new tensor per example (PyTorch's rule makes the result batched)."""
    bound = _bind(func, args, kwargs)
    bound["self"] = _p(bound["self"], level)
    bound["size"] = [size] + list(bound["size"])
    return _wrap(_call(func, bound), level)


# ---------------------------------------------------------------------------------------------------------- dims
def _dims(v: Any, rank: int) -> Any:
    if isinstance(v, (list, tuple)):
        return [wrap_dim(int(d), rank) + 1 for d in v]
    return wrap_dim(int(v), rank) + 1


def dim_rule(*names: str, all_if_none: bool = False) -> Rule:
    """Each of ``names`` is a dimension (or list of them) of the first tensor argument: moved by one. With
    ``all_if_none``, a None or empty list means every dimension (a full reduction). Every tensor argument is
    expanded to the batch (softmax's backward reads its output beside the gradient, a gather its index)."""
    def rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        target = check_inplace(func, level, args, kwargs)
        bound = _bind(func, args, kwargs)
        first = next(v for v in bound.values() if isinstance(v, Tensor))
        rank = first.dim()
        for name in names:
            v = bound.get(name)
            if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
                if all_if_none:
                    bound[name] = list(range(1, rank + 1))
                continue
            bound[name] = _dims(v, rank)
        for name, v in list(bound.items()):
            if isinstance(v, Tensor):
                bound[name] = _batched(v, level, size)
            elif isinstance(v, (list, tuple)) and v and all(isinstance(t, Tensor) for t in v):
                bound[name] = [_batched(t, level, size) for t in v]
        out = _call(func, bound)
        return target if target is not None else _wrap(out, level)
    return rule


def _full_reduction(op: Callable[..., Any]) -> Rule:
    """``x.sum()`` and kin (no dim argument): the reduction over every logical dimension of the physical tensor; a
    scalar example is its own reduction."""
    def rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        bound = _bind(func, args, kwargs)
        v = bound.pop("self")._value
        return _wrap(op(v, v.dim() - 1, **bound), level)
    return rule


def _over_all_dims(name: str) -> Callable[..., Any]:
    """``sum`` / ``mean`` of each example: over the physical tensor's dims after the batch's (a scalar example is
    its own sum)."""
    def op(v: Any, rank: int, dtype: Any = None) -> Any:
        if rank == 0:
            return v.to(dtype) if dtype is not None else v.clone()
        return getattr(v, name)(dim=list(range(1, rank + 1)), dtype=dtype)
    return op


def _flat_reduce(name: str) -> Callable[..., Any]:
    def op(v: Any, rank: int, **kw: Any) -> Any:
        return getattr(v.reshape(v.shape[0], -1), name)(1, **kw)
    return op


def arg_reduction(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``argmax`` / ``argmin``: with ``dim=None`` the index into each example's flattened tensor."""
    bound = _bind(func, args, kwargs)
    v = bound["self"]._value
    rank = v.dim() - 1
    if bound.get("dim") is None:
        out = func(v.reshape(v.shape[0], -1), 1, False)
        if bound.get("keepdim"):
            out = out.reshape((v.shape[0],) + (1,) * rank)
        return _wrap(out, level)
    return _wrap(func(v, wrap_dim(bound["dim"], rank) + 1, bound.get("keepdim", False)), level)


# ---------------------------------------------------------------------------------------------------------- views
def view_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``view`` / ``reshape`` / ``_unsafe_view``: the batch size in front of the new sizes."""
    bound = _bind(func, args, kwargs)
    key = "size" if "size" in bound else "shape"
    bound["self"] = bound["self"]._value
    bound[key] = [size] + [int(s) for s in bound[key]]
    return _wrap(_call(func, bound), level)


def expand_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(func, args, kwargs)
    v = bound["self"]._value
    sizes = [int(s) for s in bound["size"]]
    r = v.dim() - 1
    if len(sizes) < r:
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(v.shape[1:])}}}, size={sizes}): the number of sizes "
                           f"provided ({len(sizes)}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({r})")
    return _wrap(_lift(v, size, len(sizes)).expand(size, *sizes), level)


def permute_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(func, args, kwargs)
    v = bound["self"]._value
    r = v.dim() - 1
    dims = [wrap_dim(int(d), r) + 1 for d in bound["dims"]]
    if len(dims) != r:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {r} is not equal to "
                           f"len(dims) = {len(dims)}")
    return _wrap(v.permute(0, *dims), level)


def t_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    v = _bind(func, args, kwargs)["self"]._value
    r = v.dim() - 1
    if r > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {r}D")
    return _wrap(v.transpose(1, 2) if r == 2 else v.view(v.shape), level)


def _squeeze_dims(v: Any, d: Any) -> list[int]:
    """The physical dims ``squeeze`` removes: ``d`` (a dim or list, moved by one), or every size-1 dim of the
    examples when None."""
    r = v.dim() - 1
    if d is None:
        return [i + 1 for i in range(r) if v.shape[i + 1] == 1]
    return [wrap_dim(int(x), r) + 1 for x in (d if isinstance(d, (list, tuple)) else [d])]


def squeeze_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(func, args, kwargs)
    v = bound["self"]._value
    dims = _squeeze_dims(v, bound.get("dim"))
    return _wrap(v.squeeze(dims) if dims else v.view(v.shape), level)


def unsqueeze_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(func, args, kwargs)
    v = bound["self"]._value
    return _wrap(v.unsqueeze(wrap_dim(int(bound["dim"]), v.dim()) + 1), level)


def inplace_view_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``squeeze_`` / ``unsqueeze_`` / ``transpose_`` / ``t_`` of a batched tensor: the physical tensor changes
    in place, dims moved by one, and the wrapper takes its new sizes."""
    bound = _bind(func, args, kwargs)
    x = bound["self"]
    v = x._value
    r = x.dim()
    name = func.handle.name
    if name == "unsqueeze_":
        v.unsqueeze_(wrap_dim(int(bound["dim"]), r + 1) + 1)
    elif name == "transpose_":
        v.transpose_(wrap_dim(int(bound["dim0"]), r) + 1, wrap_dim(int(bound["dim1"]), r) + 1)
    elif name == "t_":
        if r > 2:
            raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {r}D")
        if r == 2:
            v.transpose_(1, 2)
    else:                                                           # squeeze_
        dims = _squeeze_dims(v, bound.get("dim"))
        if dims:
            v.squeeze_(dims)
    x._sync_metadata()
    return x


def conj_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``conj`` of a batched tensor: the physical conjugate, materialized (the wrapper carries no conjugate bit)."""
    return _wrap(_bind(func, args, kwargs)["self"]._value.conj_physical(), level)


def as_strided_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``as_strided`` of each example, its storage offset counted from the example's first element (as PyTorch's
    rule reads it): one physical ``as_strided`` with the batch stride in front."""
    bound = _bind(func, args, kwargs)
    v = bound["self"]._value
    offset = bound.get("storage_offset")
    bound["self"] = v
    bound["size"] = [size] + [int(n) for n in bound["size"]]
    bound["stride"] = [v.stride(0)] + [int(n) for n in bound["stride"]]
    bound["storage_offset"] = v.storage_offset() + (int(offset) if offset is not None else 0)
    return _wrap(_call(func, bound), level)


def cat_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``cat`` / ``stack``: every operand expanded to the batch; the dimension moves by one (PyTorch's legacy rule
    of ``cat``: a 1-D empty operand is skipped)."""
    bound = _bind(func, args, kwargs)
    ts = list(bound["tensors"])
    kept = [t for t in ts if not (t.dim() == 1 and t.shape[0] == 0)] if func.handle.name == "cat" else ts
    ref = max(kept or ts, key=lambda t: t.dim())
    rank = ref.dim() + (1 if func.handle.name == "stack" else 0)
    bound["tensors"] = [_batched(t, level, size) for t in (kept or ts)]
    bound["dim"] = wrap_dim(int(bound.get("dim", 0)), rank) + 1
    return _wrap(_call(func, bound), level)


def index_select_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(func, args, kwargs)
    if _b(bound["index"], level):
        return fallback(func, level, size, args, kwargs)
    x = bound["self"]
    return _wrap(func(x._value, wrap_dim(int(bound["dim"]), x.dim()) + 1, bound["index"]), level)


def index_add_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``index_add`` with a shared index: every example adds its source rows into its own copy of ``self``."""
    bound = _bind(func, args, kwargs)
    target = check_inplace(func, level, args, kwargs)
    x = bound["self"]
    if _b(bound["index"], level):      # example b's indices offset by b * n into one table of B * n rows
        if bound["index"].dim() != 1:
            return fallback(func, level, size, args, kwargs)
        d = wrap_dim(int(bound["dim"]), x.dim()) + 1
        xv = _batched(x, level, size).movedim(d, 1)
        src = _batched(bound["source"], level, size).movedim(d, 1)
        n, k = xv.shape[1], src.shape[1]
        idx = bound["index"]._value + ember.arange(size, dtype=bound["index"].dtype).unsqueeze(1) * n
        out = func(xv.reshape((size * n,) + tuple(xv.shape[2:])), 0, idx.reshape(-1),
                   src.reshape((size * k,) + tuple(src.shape[2:])), alpha=bound.get("alpha", 1))
        out = out.reshape(xv.shape).movedim(1, d)
        if target is not None:
            target._value.copy_(out)
            return target
        return BatchedTensor(out, level)
    bound["dim"] = wrap_dim(int(bound["dim"]), x.dim()) + 1
    bound["self"] = x._value if target is not None else _batched(x, level, size)
    bound["source"] = _batched(bound["source"], level, size)
    out = _call(func, bound)
    return target if target is not None else BatchedTensor(out, level)


# -------------------------------------------------------------------------------------------------------- products
def _mm(a: Any, b: Any, level: int) -> Any:
    return ember.matmul(_p(a, level), _p(b, level))


def mm_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``mm`` / ``bmm``: ``matmul`` broadcasts an unbatched operand over the batch."""
    bound = _bind(func, args, kwargs)
    a, b = bound["self"], bound["mat2"]
    if a.dim() != (2 if func.handle.name == "mm" else 3) or b.dim() != a.dim():
        return fallback(func, level, size, args, kwargs)   # (the operator's own shape error)
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                           f"{b.shape[0]}x{b.shape[1]})")
    return _wrap(_mm(a, b, level), level)


def addmm_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``beta * self + alpha * (mat1 @ mat2)`` (``addmm`` / ``baddbmm``), ``self`` lined up as a pointwise operand."""
    bound = _bind(func, args, kwargs)
    a, b, c = bound["mat1" if "mat1" in bound else "batch1"], bound["mat2" if "mat2" in bound else "batch2"], \
        bound["self"]
    prod = _mm(a, b, level)
    alpha, beta = bound.get("alpha", 1), bound.get("beta", 1)
    if alpha != 1:
        prod = prod * alpha
    if beta != 0:
        cv = _lift(c._value, size, a.dim()) if _b(c, level) else c
        prod = prod + (cv if beta == 1 else cv * beta)
    return _wrap(prod, level)


def mv_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(func, args, kwargs)
    return _wrap(ember.matmul(_p(bound["self"], level), _p(bound["vec"], level).unsqueeze(-1)).squeeze(-1), level)


def dot_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(func, args, kwargs)
    a, b = bound["self"], bound["tensor"]
    if a.dim() != 1 or b.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors")
    return _wrap((_batched(a, level, size) * _batched(b, level, size)).sum(-1), level)


# ------------------------------------------------------------------------------------------- convolution and pooling
def _fold(v: Any, logical_rank: int, full_rank: int) -> tuple[Any, Callable[[Any], Any]]:
    """A physical tensor as the operator's own batch: (B, N, ...) -> (B*N, ...) when each example has the batch
    dimension already, (B, ...) as it is when it has not (``conv2d`` of one (C, H, W) image); and the inverse."""
    size = v.shape[0]
    if logical_rank == full_rank:
        n = v.shape[1]
        return v.reshape((size * n,) + tuple(v.shape[2:])), lambda y: y.reshape((size, n) + tuple(y.shape[1:]))
    return v, lambda y: y


def convolution_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A batched input and a shared weight: the batch joins the images. A batched weight (an ensemble): the batch
    becomes groups -- input (N, B*C, ...), weight (B*O, C/g, ...), groups B*g."""
    bound = _bind(func, args, kwargs)
    x, w, bias = bound["input"], bound["weight"], bound["bias"]
    if not _b(w, level) and not _b(bias, level):
        v, back = _fold(x._value, x.dim(), w.dim())
        bound["input"] = v
        return _wrap(back(_call(func, bound)), level)
    if x.dim() != w.dim():
        return fallback(func, level, size, args, kwargs)
    xv = _batched(x, level, size)                       # (B, N, C, ...)
    wv = _batched(w, level, size)                       # (B, O, C/g, ...) (transposed: (B, C, O/g, ...))
    n = xv.shape[1]
    g = int(bound["groups"])
    bound["input"] = xv.movedim(0, 1).reshape((n, size * xv.shape[2]) + tuple(xv.shape[3:]))
    bound["weight"] = wv.reshape((size * wv.shape[1],) + tuple(wv.shape[2:]))
    if bias is not None:
        bound["bias"] = _batched(bias, level, size).reshape(-1)
    bound["groups"] = g * size
    y = _call(func, bound)                              # (N, B*O, ...)
    return _wrap(y.reshape((n, size, y.shape[1] // size) + tuple(y.shape[2:])).movedim(1, 0), level)


def convolution_backward_rule(func: Any, level: int, size: int, args: tuple[Any, ...],
                              kwargs: dict[str, Any]) -> Any:
    """Every operand expanded to the batch and the batch made groups (as ``convolution_rule``), so the weight's
    gradient is one per example; then each result reshaped back."""
    bound = _bind(func, args, kwargs)
    go, x, w = bound["grad_output"], bound["input"], bound["weight"]
    if x.dim() != w.dim() or go.dim() != x.dim():
        return fallback(func, level, size, args, kwargs)
    gv, xv, wv = (_batched(t, level, size) for t in (go, x, w))
    n, g = xv.shape[1], int(bound["groups"])
    bound["grad_output"] = gv.movedim(0, 1).reshape((n, size * gv.shape[2]) + tuple(gv.shape[3:]))
    bound["input"] = xv.movedim(0, 1).reshape((n, size * xv.shape[2]) + tuple(xv.shape[3:]))
    bound["weight"] = wv.reshape((size * wv.shape[1],) + tuple(wv.shape[2:]))
    if bound.get("bias_sizes") is not None:
        bound["bias_sizes"] = [size * int(s) for s in bound["bias_sizes"]]
    bound["groups"] = g * size
    gi, gw, gb = _call(func, bound)
    mask = list(bound["output_mask"])        # (an output not asked for comes back as the kernel made it)
    return (
        BatchedTensor(gi.reshape((n, size, gi.shape[1] // size) + tuple(gi.shape[2:])).movedim(1, 0), level)
        if mask[0] else gi,
        BatchedTensor(gw.reshape((size, gw.shape[0] // size) + tuple(gw.shape[1:])), level) if mask[1] else gw,
        BatchedTensor(gb.reshape(size, -1), level) if mask[2] else gb,
    )


def fold_rule(full_rank_of: Callable[[dict[str, Any]], int]) -> Rule:
    """Operators over the trailing dims of images (pooling and its backward): every tensor operand expanded to
    the batch and folded into the images' batch dimension; results unfolded."""
    def rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        bound = _bind(func, args, kwargs)
        full = full_rank_of(bound)
        back: Callable[[Any], Any] = lambda y: y  # noqa: E731
        for name, v in list(bound.items()):
            if isinstance(v, Tensor):
                bound[name], back = _fold(_batched(v, level, size), v.dim(), full)
        out = _call(func, bound)
        if isinstance(out, tuple):
            return tuple(BatchedTensor(back(o), level) for o in out)
        return BatchedTensor(back(out), level)
    return rule


# ------------------------------------------------------------------------------------------------- losses, embedding
def _nll_rows(bound: dict[str, Any], level: int, size: int) -> tuple[Any, Any, Any, Any, int]:
    """The physical input and target, and both as one (rows, classes) / (rows,) problem for every example."""
    x, t = bound["self"], bound["target"]
    xv, tv = _batched(x, level, size), _batched(t, level, size)
    c = xv.shape[-1] if x.dim() > 0 else 1
    x2 = xv.reshape(-1, c) if x.dim() > 1 else xv.reshape(size, c)
    return xv, tv, x2, tv.reshape(-1), c


def nll_loss_forward_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Per example: the unreduced losses of all examples at once, then each example's own sum or weighted mean;
    ``total_weight`` is each example's."""
    bound = _bind(func, args, kwargs)
    weight = bound["weight"]
    if _b(weight, level):
        return fallback(func, level, size, args, kwargs)
    xv, tv, x2, t2, c = _nll_rows(bound, level, size)
    reduction, ignore = int(bound["reduction"]), int(bound["ignore_index"])
    losses = func(x2, t2, weight, 0, ignore)[0].reshape(size, -1)
    safe = t2.clamp(0, c - 1)
    w = (weight[safe] if weight is not None else ember.ones_like(t2, dtype=xv.dtype)).reshape(size, -1)
    w = w * (tv.reshape(size, -1) != ignore)
    total = w.sum(1)
    if reduction == 0:
        return _wrap(losses.reshape(tv.shape), level), BatchedTensor(total.new_zeros(size), level)
    out = losses.sum(1) if reduction == 2 else losses.sum(1) / total
    return BatchedTensor(out, level), BatchedTensor(total, level)


def nll_loss_backward_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(func, args, kwargs)
    g, weight = bound["grad_output"], bound["weight"]
    if _b(weight, level):
        return fallback(func, level, size, args, kwargs)
    xv, tv, x2, t2, c = _nll_rows(bound, level, size)
    reduction = int(bound["reduction"])
    gv = _batched(g, level, size)
    if reduction == 0:
        per = gv.reshape(-1)
    else:
        per = gv.reshape(size, 1)
        if reduction == 1:
            per = per / _batched(bound["total_weight"], level, size).reshape(size, 1)
        per = per.expand(size, t2.shape[0] // size).reshape(-1)
    gi = func(per, x2, t2, weight, 0, int(bound["ignore_index"]), per.new_ones(()))
    return BatchedTensor(gi.reshape(xv.shape), level)


def embedding_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(func, args, kwargs)
    if _b(bound["weight"], level):
        return fallback(func, level, size, args, kwargs)
    bound["indices"] = bound["indices"]._value
    return _wrap(_call(func, bound), level)


def embedding_dense_backward_rule(func: Any, level: int, size: int, args: tuple[Any, ...],
                                  kwargs: dict[str, Any]) -> Any:
    """One weight gradient per example: example b's indices offset by b * num_weights, one call over a table of
    B * num_weights rows."""
    bound = _bind(func, args, kwargs)
    gv, iv = _batched(bound["grad_output"], level, size), _batched(bound["indices"], level, size)
    n = int(bound["num_weights"])
    shift = ember.arange(size, device=iv.device, dtype=iv.dtype).reshape((size,) + (1,) * (iv.dim() - 1)) * n
    pad = int(bound["padding_idx"])
    if pad >= 0:        # the padding row gets no gradient: its uses contribute zeros
        gv = gv * (iv != pad).unsqueeze(-1).to(gv.dtype)
    bound.update(grad_output=gv, indices=iv + shift, num_weights=size * n, padding_idx=-1)
    out = _call(func, bound)
    return BatchedTensor(out.reshape(size, n, out.shape[-1]), level)


def batch_norm_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``native_batch_norm``: statistics of each example's own batch. With running statistics the batch does not
    share, training is refused as PyTorch refuses it (they would be updated once per example); evaluation folds
    the examples into the images; training without them puts each example's channels in a group of their own."""
    bound = _bind(func, args, kwargs)
    x, w, b, rm, rv = (bound[k] for k in ("input", "weight", "bias", "running_mean", "running_var"))
    if bound["training"] and _b(x, level) and any(t is not None and not _b(t, level) for t in (rm, rv)):
        raise RuntimeError("Batch norm got a batched tensor as input while the running_mean or running_var, which "
                           "will be updated in place, were not batched.\nIf you are using a module and do not need "
                           "eval mode, please set `track_running_stats` to be False.If you are using a prebuilt "
                           "module and do not need eval mode, please see the functorch website for resources on how "
                           "to patch your module to work with vmap")
    if not _b(x, level) or any(_b(t, level) for t in (w, b, rm, rv)):
        return fallback(func, level, size, args, kwargs)
    v = x._value                                        # (B, N, C, ...)
    if not bound["training"]:
        bound["input"] = v.reshape((size * v.shape[1],) + tuple(v.shape[2:]))
        out, mean, rstd = _call(func, bound)
        return BatchedTensor(out.reshape(v.shape), level), BatchedTensor(mean, level), BatchedTensor(rstd, level)
    n, c = v.shape[1], v.shape[2]
    bound["input"] = v.movedim(0, 1).reshape((n, size * c) + tuple(v.shape[3:]))
    if w is not None:
        bound["weight"] = w.repeat(size)
    if b is not None:
        bound["bias"] = b.repeat(size)
    out, mean, rstd = _call(func, bound)
    out = out.reshape((n, size, c) + tuple(v.shape[3:])).movedim(1, 0)
    return BatchedTensor(out, level), BatchedTensor(mean.reshape(size, c), level), \
        BatchedTensor(rstd.reshape(size, c), level)


def layer_norm_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``native_layer_norm`` normalizes trailing dimensions: with a shared weight and bias the physical input is
    one more leading dimension."""
    bound = _bind(func, args, kwargs)
    if _b(bound["weight"], level) or _b(bound["bias"], level) or not _b(bound["input"], level):
        return fallback(func, level, size, args, kwargs)
    bound["input"] = bound["input"]._value
    return _wrap(_call(func, bound), level)


def layer_norm_backward_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The input's gradient row by row as one call; the weight's and bias's summed over each example's own rows."""
    bound = _bind(func, args, kwargs)
    if _b(bound["weight"], level) or _b(bound["bias"], level):
        return fallback(func, level, size, args, kwargs)
    go, x = _batched(bound["grad_out"], level, size), _batched(bound["input"], level, size)
    mean, rstd = _batched(bound["mean"], level, size), _batched(bound["rstd"], level, size)
    mask = list(bound["output_mask"])
    k = len(bound["normalized_shape"])
    lead = list(range(1, x.dim() - k))
    gi = gw = gb = None
    if mask[0]:
        gi = func(go, x, bound["normalized_shape"], mean, rstd, bound["weight"], bound["bias"],
                  [True, False, False])[0]
    if mask[1] and bound["weight"] is not None:
        xhat = (x - mean) * rstd
        gw = (go * xhat).sum(lead) if lead else go * xhat
    if mask[2] and bound["bias"] is not None:
        gb = go.sum(lead) if lead else go.clone()
    return tuple(None if t is None else BatchedTensor(t, level) for t in (gi, gw, gb))


def mse_loss_backward_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(func, args, kwargs)
    x, t = _batched(bound["self"], level, size), _batched(bound["target"], level, size)
    g = _batched(bound["grad_output"], level, size)
    reduction = int(bound["reduction"])
    if reduction != 0:
        n = x[0].numel() if reduction == 1 else 1
        g = (g / n if n != 1 else g).reshape((size,) + (1,) * (x.dim() - 1)).expand_as(x)
    return BatchedTensor(func(g, x, t, 0), level)


# ------------------------------------------------------------------------------------------------------ randomness
def refuse_random() -> None:
    raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the 'same' "
                       "or 'different' randomness flags on vmap or perform the randomness operation out of vmap")


def random_op(func: Any, level: int, size: int, randomness: str, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Any:
    """A random operator on a batched tensor under ``randomness`` (Note [Batched tensors])."""
    if randomness == "error":
        refuse_random()
    flat, spec = tree_flatten((args, kwargs))
    if randomness == "different":
        target = check_inplace(func, level, args, kwargs)
        if target is not None and not _b(target, level):
            raise RuntimeError("vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will "
                               "appear like same randomness. If this is necessary for your usage, please file an "
                               "issue with functorch.")
        return pointwise(func, level, size, args, kwargs) if len([x for x in flat if isinstance(x, Tensor)]) > 1 \
            else unary(func, level, size, args, kwargs)
    # 'same': one example's numbers, given to every example -- for operators whose numbers do not depend on the
    # batched tensor's values (fills, ``*_like``); dropout draws one mask for all
    name = func.__name__ if func.__name__ in _SAME_BY_SHAPE else func.handle.name
    if name == "native_dropout":
        return _dropout_same(func, level, size, args, kwargs)
    if name not in _SAME_BY_SHAPE:
        _refuse_same(func)
    target = check_inplace(func, level, args, kwargs)
    one = [x._value[0] if _b(x, level) else x for x in flat]
    a, k = tree_unflatten(one, spec)
    out = func(*a, **k)
    if target is not None:
        target._value.copy_(out.unsqueeze(0).expand_as(target._value))
        return target
    return BatchedTensor(out.unsqueeze(0).expand(size, *out.shape).clone(), level)


_SAME_BY_SHAPE = {"rand_like", "randn_like", "randint_like", "bernoulli_.float", "normal_", "uniform_", "random_",
                  "exponential_", "geometric_", "log_normal_", "cauchy_"}


def _dropout_same(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(func, args, kwargs)
    x = bound["input"]
    _, mask = func(ember.ones(tuple(x.shape), dtype=x.dtype, device=x.device), bound["p"], bound["train"])
    p = float(bound["p"])
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    out = _batched(x, level, size) * mask * scale if bound["train"] is not False else _batched(x, level, size)
    return BatchedTensor(out, level), BatchedTensor(mask.unsqueeze(0).expand(size, *mask.shape), level)


def _refuse_same(func: Any) -> None:
    raise RuntimeError(f"vmap: randomness='same' for {func.name()} with batched arguments other than the tensor it "
                       f"fills is not supported by ember; use randomness='different' or draw the numbers outside "
                       f"vmap")


# ------------------------------------------------------------------------------------- more families and decompositions
def leading_batch(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Operators that already run over any leading batch dimensions (the linear algebra of matrices in the last
    two): every tensor operand expanded to the batch, one call."""
    flat, spec = tree_flatten((args, kwargs))
    ranks = {x.dim() for x in flat if isinstance(x, Tensor) and (x.is_floating_point() or x.is_complex())}
    if len(ranks) > 1:
        return fallback(func, level, size, args, kwargs)     # operands of several ranks broadcast their batches
    a, k = tree_unflatten([_batched(x, level, size) if isinstance(x, Tensor) else x for x in flat], spec)
    return _wrap(func(*a, **k), level)


def linalg_check_errors(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The ``info`` of a batch of examples is checked as a batch of matrices' is."""
    bound = _bind(func, args, kwargs)
    bound["info"] = _batched(bound["info"], level, size)
    bound["is_matrix"] = False
    return _call(func, bound)


def decomposition(fn: Callable[..., Any]) -> Rule:
    """A rule written in other operators on the batched tensors themselves (their rules do the batching)."""
    def rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return fn(**_bind(func, args, kwargs))
    return rule


def loss_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Elementwise losses: the unreduced losses as a pointwise operator, then each example's own mean or sum."""
    bound = _bind(func, args, kwargs)
    reduction = int(bound["reduction"])
    bound["reduction"] = 0
    out = pointwise(func, level, size, (), bound)
    return out if reduction == 0 else out.mean() if reduction == 1 else out.sum()


def roll_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(func, args, kwargs)
    v = bound["self"]._value
    dims = list(bound["dims"])
    if not dims:                    # each example rolled as one flat row
        return _wrap(v.reshape(size, -1).roll(list(bound["shifts"]), [1]).reshape(v.shape), level)
    bound["self"], bound["dims"] = v, [wrap_dim(int(d), v.dim() - 1) + 1 for d in dims]
    return _wrap(_call(func, bound), level)


def repeat_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(func, args, kwargs)
    v = bound["self"]._value
    reps = [int(r) for r in bound["repeats"]]
    if len(reps) < v.dim() - 1:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    return _wrap(_lift(v, size, len(reps)).repeat([1] + reps), level)


def diag_embed_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``diag_embed``'s dims name dimensions of the result, one more than the input has."""
    bound = _bind(func, args, kwargs)
    v = bound["self"]._value
    r = v.dim()                     # the result's logical rank: the input's + 1
    return _wrap(func(v, bound["offset"], wrap_dim(int(bound["dim1"]), r) + 1, wrap_dim(int(bound["dim2"]), r) + 1),
                 level)


def group_norm_rule(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``native_group_norm`` normalizes each image's groups: the examples join the images."""
    bound = _bind(func, args, kwargs)
    x = bound["input"]
    if _b(bound["weight"], level) or _b(bound["bias"], level) or not _b(x, level):
        return fallback(func, level, size, args, kwargs)
    v = x._value
    n = int(bound["N"])
    bound["input"], bound["N"] = v.reshape((size * n,) + tuple(v.shape[2:])), size * n
    out, mean, rstd = _call(func, bound)
    return (BatchedTensor(out.reshape(v.shape), level), BatchedTensor(mean.reshape(size, n, -1), level),
            BatchedTensor(rstd.reshape(size, n, -1), level))


def _full_norm(v: Any, rank: int, p: Any = 2) -> Any:
    return v.reshape(v.shape[0], -1).norm(p, 1) if rank else v.abs() if p != 0 else (v != 0).to(v.dtype)


def _flat_median(v: Any, rank: int) -> Any:
    return v.reshape(v.shape[0], -1).median(1).values


def _flat_nanmedian(v: Any, rank: int) -> Any:
    return v.reshape(v.shape[0], -1).nanmedian(1).values


_MORE_RULES: dict[str, Rule] = {
    "view_as_real": unary, "view_as_complex": unary, "tril": unary, "triu": unary, "constant_pad_nd": unary,
    "pixel_shuffle": unary, "pixel_unshuffle": unary, "fill.Scalar": unary, "alias_copy": unary,
    "hardswish": unary, "log_sigmoid_forward": unary,
    "complex": pointwise, "floor_divide": pointwise, "rsub.Tensor": pointwise, "masked_fill_.Scalar": pointwise,
    "masked_fill.Scalar": pointwise,
    "_fft_c2c": dim_rule("dim"), "_fft_r2c": dim_rule("dim"), "_fft_c2r": dim_rule("dim"),
    "unsafe_split.Tensor": dim_rule("dim"), "unsafe_split_with_sizes": dim_rule("dim"), "unsafe_chunk": dim_rule("dim"),
    "norm.ScalarOpt_dim": dim_rule("dim", all_if_none=True), "norm.Scalar": _full_reduction(_full_norm),
    "nansum": dim_rule("dim", all_if_none=True), "count_nonzero.dim_IntList": dim_rule("dim", all_if_none=True),
    "cummax": dim_rule("dim"), "cummin": dim_rule("dim"), "kthvalue": dim_rule("dim"), "median.dim": dim_rule("dim"),
    "nanmedian.dim": dim_rule("dim"), "mode": dim_rule("dim"), "median.default": _full_reduction(_flat_median),
    "nanmedian.default": _full_reduction(_flat_nanmedian), "glu": dim_rule("dim"), "_safe_softmax": dim_rule("dim"),
    "rot90": dim_rule("dims"), "unfold": dim_rule("dimension"), "unfold_copy": dim_rule("dimension"),
    "scatter.src": dim_rule("dim"), "scatter.value": dim_rule("dim"), "scatter_add": dim_rule("dim"),
    "scatter_reduce.two": dim_rule("dim"), "slice_scatter": dim_rule("dim"), "select_scatter": dim_rule("dim"),
    "diagonal_scatter": dim_rule("dim1", "dim2"),
    "diagonal_copy": dim_rule("dim1", "dim2"), "select_copy.int": dim_rule("dim"), "slice_copy.Tensor": dim_rule("dim"),
    "narrow_copy": dim_rule("dim"), "transpose_copy.int": dim_rule("dim0", "dim1"), "unbind_copy.int": dim_rule("dim"),
    "split_copy.Tensor": dim_rule("dim"), "split_with_sizes_copy": dim_rule("dim"), "expand_copy": expand_rule,
    "permute_copy": permute_rule, "squeeze_copy": squeeze_rule, "squeeze_copy.dim": squeeze_rule,
    "squeeze_copy.dims": squeeze_rule, "t_copy": t_rule, "unsqueeze_copy": unsqueeze_rule,
    "roll": roll_rule, "repeat": repeat_rule, "diag_embed": diag_embed_rule, "native_group_norm": group_norm_rule,
    "_linalg_check_errors": linalg_check_errors,
    "smooth_l1_loss": loss_rule, "huber_loss": loss_rule, "soft_margin_loss": loss_rule,
    "binary_cross_entropy": loss_rule, "binary_cross_entropy_with_logits": loss_rule,
    "trace": decomposition(lambda self: self.diagonal(0, 0, 1).sum()),
    "dist": decomposition(lambda self, other, p=2: ember.linalg.vector_norm(self - other, p)),
    "addr": decomposition(lambda self, vec1, vec2, beta=1, alpha=1:
                          (self * beta if beta != 0 else ember.zeros_like(self)) + ember.outer(vec1, vec2) * alpha),
    "addmv": decomposition(lambda self, mat, vec, beta=1, alpha=1:
                           (self * beta if beta != 0 else ember.zeros_like(self)) + ember.mv(mat, vec) * alpha),
    "outer": decomposition(lambda self, vec2: self.unsqueeze(-1) * vec2),
    "polar": decomposition(lambda abs, angle: ember.complex(abs * angle.cos(), abs * angle.sin())),  # noqa: A006
}
for _name in ("_linalg_svd", "linalg_inv_ex", "_linalg_solve_ex", "linalg_lu_factor_ex", "linalg_ldl_factor_ex",
              "linalg_matrix_exp", "_linalg_slogdet", "linalg_qr", "linalg_lu_solve", "linalg_eig", "_linalg_det",
              "linalg_cholesky_ex", "linalg_solve_triangular", "linalg_lu", "linalg_householder_product",
              "_linalg_eigh", "linalg_ldl_solve", "geqrf", "ormqr", "triangular_solve", "cholesky_solve",
              "linalg_eigvals", "linalg_eigvalsh", "_linalg_eigvals", "linalg_pinv.atol_rtol_tensor"):
    _MORE_RULES[_name] = leading_batch
for _name, _rank in (("max_pool2d_with_indices", 4), ("max_pool2d_with_indices_backward", 4), ("avg_pool2d", 4),
                     ("avg_pool2d_backward", 4), ("_adaptive_avg_pool2d", 4), ("_adaptive_avg_pool2d_backward", 4),
                     ("adaptive_max_pool2d", 4), ("avg_pool3d", 5), ("max_pool3d_with_indices", 5),
                     ("_adaptive_avg_pool3d", 5), ("adaptive_max_pool3d", 5), ("reflection_pad1d", 3),
                     ("reflection_pad2d", 4), ("replication_pad1d", 3), ("replication_pad2d", 4),
                     ("upsample_nearest1d", 3), ("_upsample_nearest_exact1d", 3), ("upsample_nearest2d", 4),
                     ("_upsample_nearest_exact2d", 4), ("upsample_nearest3d", 5), ("_upsample_nearest_exact3d", 5),
                     ("upsample_linear1d", 3), ("upsample_bilinear2d", 4), ("upsample_bicubic2d", 4),
                     ("_upsample_bilinear2d_aa", 4), ("_upsample_bicubic2d_aa", 4), ("_upsample_lanczos2d_aa", 4),
                     ("upsample_trilinear3d", 5), ("im2col", 4), ("col2im", 3), ("grid_sampler_2d", 4),
                     ):
    _MORE_RULES[_name] = fold_rule(lambda b, r=_rank: r)
for _name in ("channel_shuffle", "native_channel_shuffle"):     # (N, C, *): the examples join the images
    _MORE_RULES[_name] = fold_rule(lambda b: b["self"].dim())


# ------------------------------------------------------------------------------------------------------ the table
def _data_dependent(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    raise RuntimeError("vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. "
                       "We don't support that yet, please shout over at "
                       "https://github.com/pytorch/functorch/issues/257 .")


def _item(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    raise RuntimeError("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling "
                       ".item() on a Tensor, please try to rewrite what you're doing with other operations. If error "
                       "is occurring somewhere inside PyTorch internals, please file a bug report.")


_RULES: dict[str, Rule] = {
    "_local_scalar_dense": _item, "is_nonzero": _data_dependent, "equal": _data_dependent,
    "copy_": pointwise, "clone": unary, "_to_copy": unary, "detach": unary, "alias": unary, "lift_fresh": unary,
    "zeros_like": unary, "ones_like": unary, "empty_like": unary, "full_like": unary, "fill_.Scalar": unary,
    "zero_": unary, "contiguous": unary, "_conj": conj_rule, "resolve_conj": unary, "resolve_neg": unary,
    "new_zeros": new_factory, "new_ones": new_factory, "new_empty": new_factory, "new_full": new_factory,
    "view": view_rule, "_unsafe_view": view_rule, "reshape": view_rule, "view_copy": view_rule,
    "expand": expand_rule, "permute": permute_rule, "t": t_rule, "squeeze": squeeze_rule,
    "unsqueeze": unsqueeze_rule, "cat": cat_rule, "stack": cat_rule, "as_strided": as_strided_rule,
    "as_strided_copy": as_strided_rule,
    "squeeze_": inplace_view_rule, "unsqueeze_": inplace_view_rule, "transpose_": inplace_view_rule,
    "t_": inplace_view_rule,
    "transpose.int": dim_rule("dim0", "dim1"), "select.int": dim_rule("dim"), "slice.Tensor": dim_rule("dim"),
    "narrow": dim_rule("dim"), "unbind.int": dim_rule("dim"), "split.Tensor": dim_rule("dim"),
    "split_with_sizes": dim_rule("dim"), "chunk": dim_rule("dim"), "diagonal": dim_rule("dim1", "dim2"),
    "movedim.int": dim_rule("source", "destination"), "flip": dim_rule("dims"),
    "sum.default": _full_reduction(_over_all_dims("sum")), "mean.default": _full_reduction(_over_all_dims("mean")),
    "sum.dim_IntList": dim_rule("dim", all_if_none=True), "mean.dim": dim_rule("dim", all_if_none=True),
    "prod.default": _full_reduction(_flat_reduce("prod")), "prod.dim_int": dim_rule("dim"),
    "amax": dim_rule("dim", all_if_none=True), "amin": dim_rule("dim", all_if_none=True),
    "max.default": _full_reduction(_flat_reduce("amax")), "min.default": _full_reduction(_flat_reduce("amin")),
    "max.dim": dim_rule("dim"), "min.dim": dim_rule("dim"), "argmax": arg_reduction, "argmin": arg_reduction,
    "all.default": _full_reduction(_flat_reduce("all")), "any.default": _full_reduction(_flat_reduce("any")),
    "all.dim": dim_rule("dim"), "any.dim": dim_rule("dim"), "all.dims": dim_rule("dim", all_if_none=True),
    "any.dims": dim_rule("dim", all_if_none=True),
    "var.correction": dim_rule("dim", all_if_none=True), "std.correction": dim_rule("dim", all_if_none=True),
    "var_mean.correction": dim_rule("dim", all_if_none=True), "std_mean.correction": dim_rule("dim", all_if_none=True),
    "logsumexp": dim_rule("dim", all_if_none=True), "linalg_vector_norm": dim_rule("dim", all_if_none=True),
    "cumsum": dim_rule("dim"), "cumprod": dim_rule("dim"), "logcumsumexp": dim_rule("dim"),
    "_softmax": dim_rule("dim"), "_log_softmax": dim_rule("dim"),
    "_softmax_backward_data": dim_rule("dim"), "_log_softmax_backward_data": dim_rule("dim"),
    "sort.default": dim_rule("dim"), "sort.stable": dim_rule("dim"), "topk": dim_rule("dim"),
    "gather": dim_rule("dim"), "index_select": index_select_rule, "index_add": index_add_rule,
    "index_add_": index_add_rule,
    "mm": mm_rule, "bmm": mm_rule, "addmm": addmm_rule, "baddbmm": addmm_rule, "mv": mv_rule, "dot": dot_rule,
    "convolution": convolution_rule, "convolution_backward": convolution_backward_rule,
    "nll_loss_forward": nll_loss_forward_rule, "nll_loss_backward": nll_loss_backward_rule,
    "embedding": embedding_rule, "embedding_dense_backward": embedding_dense_backward_rule,
    "native_batch_norm": batch_norm_rule, "_native_batch_norm_legit.default": batch_norm_rule,
    "native_layer_norm": layer_norm_rule,
    "native_layer_norm_backward": layer_norm_backward_rule,
    "mse_loss": loss_rule, "mse_loss_backward": mse_loss_backward_rule,
}

_RULES.update(_MORE_RULES)
_cache: dict[Any, Rule | None] = {}


def rule_for(func: Any) -> Rule | None:
    """The batching rule of an operator overload: by its full name, its operator name, or its family."""
    try:
        return _cache[func]
    except KeyError:
        pass
    rule = _RULES.get(func.__name__) or _RULES.get(func.handle.name)
    if rule is None and "pointwise" in func.tags:
        rule = pointwise
    _cache[func] = rule
    return rule
