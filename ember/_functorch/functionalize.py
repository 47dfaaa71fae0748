"""``functionalize`` (``torch/_functorch/eager_transforms.py`` over ``FunctionalTensorWrapper``): the same function
with its mutations removed.

Note [Functionalization]
The function runs on ``FunctionalTensor``s, wrapper subclasses (like vmap's batched tensors) whose
``__torch_dispatch__`` sees every operator below autograd. Each holds a *value* (a plain tensor that no one
mutates) and shares a ``_Storage`` -- the current value of the base it is a view of, with a generation count --
with the tensors it aliases; a view also keeps the chain of view operators that makes it from the base. Then:

- an in-place or ``out=`` operator runs as its functional variant (``add_.Tensor`` -> ``add.Tensor``, found by
  matching arguments; an op that returns other tensors than those it mutates has a ``_functional`` twin that
  returns their new values after its results: ``_native_batch_norm_legit_functional``, which ``native_batch_norm``
  in training also runs as, since its schema does not declare its running statistics' update) -- one without
  such a variant (``zero_``, ``copy_``, the random fills) runs on a private copy of its target -- and its result
  becomes the mutated tensor's new value; for a view, the new value is written
  back into the base through the inverse of each view (``select`` -> ``select_scatter``, ``view`` -> a view back
  to the base's size, ``transpose`` -> the same transpose, ...), and the storage's generation goes up;
- a view operator gives a tensor on the same storage (an in-place view, ``squeeze_``, extends the tensor's own
  chain); with ``remove='mutations_and_views'`` its value comes from the
  ``*_copy`` variant (``view_copy``), so no operator of the program aliases;
- a tensor whose storage moved to a newer generation replays its view chain on the base's new value before it is
  read: every alias sees every mutation, as in the original function;
- when the function returns, an input it mutated gets its final value with one ``copy_``.

The values are the original function's; under ``make_fx`` the graph holds only functional operators (and the final
``copy_`` of mutated inputs), as PyTorch's does.
"""
from __future__ import annotations

import functools
import re
import threading
from typing import Any, Callable

import ember
from ember._tensor import Tensor
from ember._functorch._wrapper import WrapperTensor
from ember.autograd.function import Function
from ember.c10.tensor_impl import fake_array
from ember.utils._python_dispatch import TorchDispatchMode
from ember.utils._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["functionalize", "FunctionalTensor"]

_REMOVE = ("mutations", "mutations_and_views")


class _Storage:
    """The current value of a base tensor and its generation (the number of mutations it has seen)."""

    __slots__ = ("value", "generation")

    def __init__(self, value: Tensor) -> None:
        self.value = value
        self.generation = 0


class FunctionalTensor(WrapperTensor):
    """A tensor under ``functionalize`` (Note [Functionalization])."""

    _value: Tensor
    _storage: _Storage
    _views: tuple[Any, ...]     # (operator, args after self, kwargs, output index or None), base first
    _gen: int
    _copies: bool               # views by their *_copy variants (remove='mutations_and_views')

    @staticmethod
    def __new__(cls, value: Tensor, storage: _Storage, views: tuple[Any, ...], copies: bool) -> Any:
        # (the value's geometry, its storage offset too: autograd's view machinery reads a view's place from it)
        t = Tensor._make_wrapper_subclass(cls, tuple(value.shape), strides=tuple(value.stride()),
                                          storage_offset=value.storage_offset(), dtype=value.dtype,
                                          device=value.device)
        t._value, t._storage, t._views, t._gen, t._copies = value, storage, views, storage.generation, copies
        return t

    @staticmethod
    def _handle(func: Any, args: Any, kwargs: Any) -> Any:
        return _dispatch(func, args, kwargs)

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return f"FunctionalTensor({_current(self)!r})"

    def numpy(self, *, force: bool = False) -> Any:
        return _current(self).numpy(force=force)


def _current(t: FunctionalTensor) -> Tensor:
    """``t``'s value, its view chain replayed on the base's current value if the base changed since."""
    s = t._storage
    if t._gen != s.generation:
        v = s.value
        for op, a, k, idx in t._views:
            v = _view_op(op, t._copies)(v, *a, **k)
            v = v[idx] if idx is not None else v
        t._value, t._gen = v, s.generation
    return t._value


def _view_op(op: Any, copies: bool) -> Any:
    if not copies:
        return op
    packet = getattr(ember.ops.aten, op._schema.name.split("::")[-1] + "_copy", None)
    if packet is None:
        return op
    return getattr(packet, op.overloadname)


def _unwrap(x: Any) -> Any:
    if isinstance(x, FunctionalTensor):
        return _current(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(y) for y in x)
    return x


def _functional_variant(op: Any) -> Any:
    """The out-of-place overload computing what the in-place / ``out=`` overload ``op`` writes."""
    schema = op._schema
    name = schema.name.split("::")[-1]
    base = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    want = [(a.name, _ALIAS.sub("", a.type_text)) for a in schema.arguments if not a.is_out]
    packet = getattr(ember.ops.aten, base, None)
    if packet is not None:
        for ov in packet.overloads():
            cand = getattr(packet, ov)
            cs = cand._schema
            if any(a.alias_info is not None and a.alias_info.is_write for a in cs.arguments):
                continue
            if [(a.name, _ALIAS.sub("", a.type_text)) for a in cs.arguments] == want:
                return cand
    # an op whose results are not the tensors it mutates (``_native_batch_norm_legit``) has a ``_functional``
    # twin returning its results and then the new value of each mutated argument
    packet = getattr(ember.ops.aten, name + "_functional", None)
    if packet is not None:
        cand = getattr(packet, op.overloadname, None)
        if cand is not None and [(a.name, _ALIAS.sub("", a.type_text)) for a in cand._schema.arguments] == want:
            return cand
    return None


_ALIAS = re.compile(r"\([a-z]!?\)")


class _State(threading.local):
    def __init__(self) -> None:
        self.handling = False     # inside _dispatch: the ops on values run as they are


_state = _State()


class _MakeFunctional(TorchDispatchMode):
    """Active while a functionalized function runs: a tensor made there without a functional argument (a factory,
    ``torch.empty`` for an ``out=``) becomes a functional tensor too, as PyTorch's Functionalize key makes it."""

    def __init__(self, copies: bool) -> None:
        super().__init__()
        self.copies = copies

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if _state.handling:
            return func(*args, **kwargs)
        if any(isinstance(t, FunctionalTensor) for t in tree_flatten((args, kwargs))[0]):
            return NotImplemented
        out = func(*args, **kwargs)
        if any(a.alias_info is not None for a in func._schema.arguments if a.type_text.startswith("Tensor")):
            return out      # (an op on a tensor from outside, in place or a view of it: as it is)
        return tree_map(lambda r: _fresh(r, self.copies) if isinstance(r, Tensor) else r, out)


def _dispatch(func: Any, args: Any, kwargs: Any) -> Any:
    prev, _state.handling = _state.handling, True
    try:
        return _dispatch_inner(func, args, kwargs)
    finally:
        _state.handling = prev


def _batch_norm_update(args: Any, kwargs: Any) -> Any:
    """``native_batch_norm`` in training with running statistics updates them, though its schema (as PyTorch's)
    does not say so: it runs as ``_native_batch_norm_legit_functional``, whose last two results are the new
    statistics."""
    a = dict(zip([arg.name for arg in ember.ops.aten.native_batch_norm.default._schema.arguments], args))
    a.update(kwargs)
    if not a.get("training") or not isinstance(a.get("running_mean"), FunctionalTensor) or \
            not isinstance(a.get("running_var"), FunctionalTensor):
        return None
    out = ember.ops.aten._native_batch_norm_legit_functional.default(
        *[_unwrap(a[n]) for n in ("input", "weight", "bias", "running_mean", "running_var")], True, a["momentum"],
        a["eps"])
    copies = isinstance(a["input"], FunctionalTensor) and a["input"]._copies
    _write(a["running_mean"], out[3])
    _write(a["running_var"], out[4])
    return tuple(_fresh(r, copies) for r in out[:3])


def _dispatch_inner(func: Any, args: Any, kwargs: Any) -> Any:
    schema = func._schema
    if func is ember.ops.aten.native_batch_norm.default:
        r = _batch_norm_update(args, kwargs)
        if r is not None:
            return r
    copies = any(isinstance(a, FunctionalTensor) and a._copies for a in tree_flatten((args, kwargs))[0])
    mutated = [a for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    vals, kvals = _unwrap(tuple(args)), {k: _unwrap(v) for k, v in kwargs.items()}
    if mutated:
        names = [a.name for a in schema.arguments]
        if "inplace_view" in func.tags:
            return _inplace_view(func, args, kwargs, copies)
        functional = _functional_variant(func)
        if functional is None:    # (zero_, copy_, the random fills: the op on a private copy of its target)
            cloned = [v.clone() if a in mutated else v for a, v in zip(schema.arguments, vals)]
            out = func(*cloned, **kvals)
        else:
            fargs = [v for a, v in zip(schema.arguments, vals) if not a.is_out]
            fkw = {k: v for k, v in kvals.items() if k not in {a.name for a in mutated if a.is_out}}
            out = functional(*fargs, **fkw)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if functional is not None and len(functional._schema.returns) == len(schema.returns) + len(mutated):
            results, new_values = outs[:len(schema.returns)], outs[len(schema.returns):]
            for a, new in zip(mutated, new_values):
                pos = names.index(a.name)
                _write(args[pos] if pos < len(args) else kwargs[a.name], new)
            return tree_map(lambda r: _fresh(r, copies) if isinstance(r, Tensor) else r, tuple(results))
        targets = []
        for a, new in zip(mutated, outs):
            pos = names.index(a.name)
            t = args[pos] if pos < len(args) else kwargs[a.name]
            _write(t, new)
            targets.append(t)
        return targets[0] if len(targets) == 1 and not isinstance(out, (tuple, list)) else tuple(targets)
    ret = schema.returns[0] if schema.returns else None
    if ret is not None and ret.alias_info is not None and not ret.alias_info.is_write and \
            isinstance(args[0], FunctionalTensor):   # a view op
        src, rest = args[0], tuple(args[1:])
        if ret.type_text.startswith("Tensor[]") or ret.type_text.startswith("Tensor(a)[]"):
            rest = tuple(_unwrap(rest))
            pieces = _view_op(func, copies)(_current(src), *rest, **kvals)
            return [FunctionalTensor(p, src._storage, src._views + ((func, rest, kvals, i),), copies)
                    for i, p in enumerate(pieces)]
        return _view_of(src, func, rest, kwargs, None, copies)
    result = func(*vals, **kvals)
    return tree_map(lambda r: _fresh(r, copies) if isinstance(r, Tensor) else r, result)


def _inplace_view(func: Any, args: Any, kwargs: Any, copies: bool) -> Any:
    """``t.squeeze_()`` and the like: ``t`` becomes that view of what it was (its view chain grows by the
    out-of-place view; its sizes and strides follow)."""
    t = args[0]
    op = _functional_variant(func)
    v = _view_of(t, op, tuple(args[1:]), kwargs, None, copies)
    t._value, t._views, t._gen = v._value, v._views, v._gen
    t._data = fake_array(tuple(v._value.shape), t._data.dtype, tuple(v._value.stride()), v._value.storage_offset())
    return t


def _fresh(value: Tensor, copies: bool) -> FunctionalTensor:
    return FunctionalTensor(value, _Storage(value), (), copies)


def _view_of(src: FunctionalTensor, op: Any, rest: tuple[Any, ...], kwargs: Any, idx: Any,
             copies: bool) -> FunctionalTensor:
    rest = _unwrap(rest)
    v = _view_op(op, copies)(_current(src), *rest, **kwargs)
    v = v[idx] if idx is not None else v
    return FunctionalTensor(v, src._storage, src._views + ((op, rest, kwargs, idx),), copies)


def _write(t: FunctionalTensor, new: Tensor) -> None:
    """``t`` takes the value ``new``; through the inverses of its view chain, so does its base."""
    s = t._storage
    if t._views:
        chain = [s.value]
        for op, a, k, idx in t._views[:-1]:
            v = _view_op(op, t._copies)(chain[-1], *a, **k)
            chain.append(v[idx] if idx is not None else v)
        for (op, a, k, idx), parent in zip(reversed(t._views), reversed(chain)):
            new = _inverse(op, a, k, idx, parent, new, t._copies)
    s.value = new
    s.generation += 1
    _current(t)


def _inverse(op: Any, a: tuple[Any, ...], k: Any, idx: Any, parent: Tensor, new: Tensor, copies: bool) -> Tensor:
    """The base ``parent`` with its view ``op(parent, *a)`` replaced by ``new`` (PyTorch's view inverses; the
    ``*_copy`` views under ``remove='mutations_and_views'``)."""
    aten = _CopyViews() if copies else ember.ops.aten
    name = op._schema.name.split("::")[-1]
    overload = op.overloadname
    if name in ("view", "_unsafe_view", "_reshape_alias", "reshape") or name.startswith("squeeze") or \
            name == "unsqueeze" or name == "expand" and tuple(new.shape) == tuple(parent.shape):
        if overload == "dtype":
            return aten.view.dtype(new, parent.dtype)
        return aten.view.default(new, list(parent.shape))
    if name in ("alias", "detach", "lift_fresh"):
        return new
    if name == "select":
        return aten.select_scatter.default(parent, new, *a, **k)
    if name == "slice":
        return aten.slice_scatter.default(parent, new, *a, **k)
    if name == "diagonal":
        return aten.diagonal_scatter.default(parent, new, *a, **k)
    if name == "as_strided":
        return aten.as_strided_scatter.default(parent, new, *a, **k)
    if name == "t":
        return aten.t.default(new)
    if name == "transpose":
        return aten.transpose.int(new, *a, **k)
    if name == "permute":
        dims = [d % new.dim() for d in (a[0] if a else k["dims"])]
        inv = [0] * len(dims)
        for i, d in enumerate(dims):
            inv[d] = i
        return aten.permute.default(new, inv)
    if name in ("split", "split_with_sizes", "unbind", "chunk"):   # (multi-output views: idx is set)
        pieces = list(_view_op(op, copies)(parent, *a, **k))
        pieces[idx] = new
        if name == "unbind":
            return aten.stack.default(pieces, a[0] if a else k.get("dim", 0))
        return aten.cat.default(pieces, a[1] if len(a) > 1 else k.get("dim", 0))
    # any other view: through its strides over a contiguous copy of the base (read off the view of a meta copy)
    base = parent.contiguous()
    view = op(ember.empty_like(base, device="meta"), *a, **k)
    view = view[idx] if idx is not None else view
    return ember.ops.aten.as_strided_scatter.default(base, new, list(view.shape), list(view.stride()),
                                                     view.storage_offset())


class _CopyViews:
    """``ember.ops.aten`` with each view packet replaced by its ``*_copy`` (``aten.view`` -> ``aten.view_copy``)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(ember.ops.aten, name + "_copy", None) or getattr(ember.ops.aten, name)


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    """``torch.func.functionalize``: ``func`` with every in-place and ``out=`` operator replaced by its
    out-of-place equivalent (and, with ``remove='mutations_and_views'``, every view by its ``*_copy``); an input
    ``func`` mutates gets the final value at the end (Note [Functionalization])."""
    if remove not in _REMOVE:
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                           "removed from the program, and replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all aliasing operators {view} "
                           "will be replaced with their non-aliasing counterparts, {view}_copy.\n")
    copies = remove == "mutations_and_views"

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        flat, spec = tree_flatten((args, kwargs))
        wrappers = [_wrap(x, copies) if isinstance(x, Tensor) and not isinstance(x, FunctionalTensor) else x
                    for x in flat]
        a, k = tree_unflatten(wrappers, spec)
        with _MakeFunctional(copies):
            out = func(*a, **k)
        for orig, w in zip(flat, wrappers):
            if isinstance(w, FunctionalTensor) and w is not orig and w._storage.generation:
                new = w._storage.value
                with ember.no_grad():
                    if tuple(new.shape) != tuple(orig.shape):   # (an input resized by an out= op)
                        orig.resize_(tuple(new.shape))
                    orig.copy_(new)
        return tree_map(lambda t: _unwrap_output(t) if isinstance(t, FunctionalTensor) else t, out)
    return wrapped


def _wrap(x: Tensor, copies: bool) -> FunctionalTensor:
    if x.requires_grad and ember.is_grad_enabled():
        return _Wrap.apply(x, copies)
    return _fresh(x, copies)


def _unwrap_output(t: FunctionalTensor) -> Tensor:
    if t.requires_grad and ember.is_grad_enabled():
        return _Unwrap.apply(t)
    return _current(t)


class _Wrap(Function):
    """Entering functionalize, differentiably: the wrapper's gradient is the input's."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, copies: bool) -> Any:
        return _fresh(x.detach(), copies)

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        return (_current(g) if isinstance(g, FunctionalTensor) else g), None


class _Unwrap(Function):
    """Leaving functionalize, differentiably: the output's gradient enters as a wrapper of its own."""

    @staticmethod
    def forward(ctx: Any, t: Any) -> Any:
        ctx.copies = t._copies
        return _current(t)

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        return _fresh(g, ctx.copies)
