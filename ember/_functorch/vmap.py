"""``vmap``: a function of one example run on a batch of them (``torch/_functorch/vmap.py`` + the
``FuncTorchBatched`` kernels of ``aten/src/ATen/functorch``).

Note [Batched tensors]
``vmap(f)(x)`` calls ``f`` once, on a ``BatchedTensor``: a wrapper subclass (Note [The Python key]) whose size is one
example's -- the *logical* tensor ``f`` sees -- and which holds the whole batch, the *physical* tensor ``_value``, with
the batch dimension first, and the *level* of the vmap that made it (nested vmaps count up from 1). Every operator on
a batched tensor reaches ``BatchedTensor.__torch_dispatch__`` below autograd, which runs a *batching rule*: the
operator once on the physical tensors, its arguments rewritten for the extra leading dimension (a reduction's ``dim``
moves by one, a view's sizes gain the batch size, operands of a pointwise op are lined up so they broadcast as one
example's would), and the result wrapped again. With arguments batched at several levels, the highest (innermost)
level is taken off first, and the operator on the physical tensors meets the lower levels' wrappers and runs their
rules in turn. An operator without a rule runs once per example (``value[i]`` for each batched argument) and the
results are stacked -- PyTorch's *slow fallback*, with its performance warning.

Autograd sees logical tensors: it records ``f``'s operators on the wrappers (above the Python key) and runs their
derivative formulas on batched gradients, through the same rules. So ``vmap(grad(f))`` -- per-example gradients --
is ``grad`` inside ``vmap``: a parameter shared by the batch (``in_dims=None``) gets a batched gradient, one per
example, because the formula that computes it reads batched tensors. Entering and leaving a vmap
(``_add_batch_dim`` / ``_remove_batch_dim``) are differentiable (``_AddBatchDim`` / ``_RemoveBatchDim``), so a
``grad`` outside a ``vmap`` differentiates through it too.

Random operators (PyTorch's ``nondeterministic_seeded`` tag) follow ``randomness``: ``'error'`` refuses them on
batched tensors, ``'different'`` draws for the whole batch at once (each example its own numbers), ``'same'`` draws
one example's numbers and gives them to every example.
"""
from __future__ import annotations

import functools
import threading
import warnings
from typing import Any, Callable

import ember
from ember._tensor import Tensor
from ember._functorch._wrapper import WrapperTensor
from ember.autograd import forward_grad as _fw
from ember.autograd.function import Function
from ember.autograd.grad_mode import is_grad_enabled
from ember.c10.tensor_impl import fake_array
from ember.utils._python_dispatch import TorchDispatchMode
from ember.utils._pytree import _broadcast_to_and_flatten, tree_flatten, tree_map_, tree_unflatten

__all__ = ["vmap", "BatchedTensor", "is_batchedtensor"]


class _VmapState(threading.local):
    def __init__(self) -> None:
        self.levels: list[tuple[int, int, str]] = []    # (level, batch size, randomness) of the active vmaps
        self.next_level = 1


_state = _VmapState()


def _randomness(level: int) -> str:
    for lv, _size, randomness in _state.levels:
        if lv == level:
            return randomness
    return "error"          # a batched tensor that outlived its vmap (a saved tensor in a later backward)


class BatchedTensor(WrapperTensor):
    """One example's view of a batch (Note [Batched tensors]): ``_value`` holds the batch, its dimension 0 the
    batch dimension; ``_level`` is the vmap that made it."""

    _value: Tensor
    _level: int

    @staticmethod
    def __new__(cls, value: Tensor, level: int) -> Any:
        t = Tensor._make_wrapper_subclass(cls, tuple(value.shape[1:]), strides=tuple(value.stride()[1:]),
                                          dtype=value.dtype, device=value.device)
        t._value = value
        t._level = level
        return t

    @staticmethod
    def _handle(func: Any, args: Any, kwargs: Any) -> Any:
        return _dispatch(func, args, kwargs)

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        inner = repr(self._value).replace("\n", "\n    ")
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n    {inner}\n)"

    def numpy(self, *, force: bool = False) -> Any:
        raise RuntimeError(".numpy() is not supported for tensor subclasses.")

    def __bool__(self) -> bool:
        raise RuntimeError("vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
                           "flow. We don't support that yet, please shout over at "
                           "https://github.com/pytorch/functorch/issues/257 .")

    def _sum_exited_levels(self) -> Any:
        """Outside its vmap, a batched gradient of a tensor the batch shared: the sum over the batch (the engine
        calls this on the gradients it hands out)."""
        if any(lv == self._level for lv, _size, _r in _state.levels):
            return self
        v = self._value.sum(0)
        return v._sum_exited_levels() if isinstance(v, BatchedTensor) else v

    def _sync_metadata(self) -> None:
        """Sizes and strides from the physical tensor again, after an in-place view op changed it."""
        self._data = fake_array(tuple(self._value.shape[1:]), self._data.dtype, tuple(self._value.stride()[1:]))


def is_batchedtensor(t: Any) -> bool:
    return isinstance(t, BatchedTensor)


# ----------------------------------------------------------------------------------------------- entering and leaving
def _add_batch_dim(x: Tensor, in_dim: int, level: int) -> Tensor:
    """``x`` as a batched tensor of ``level``, its dimension ``in_dim`` the batch."""
    if x.requires_grad and is_grad_enabled() or _fw.state.on and _fw.dual(x):
        return _AddBatchDim.apply(x, in_dim, level)
    return BatchedTensor(x.movedim(in_dim, 0), level)


def _remove_batch_dim(y: Tensor, level: int, batch_size: int, out_dim: int) -> Tensor:
    """The physical tensor of ``y`` at ``level``, its batch dimension moved to ``out_dim``; an output the batch did
    not reach is expanded to it (PyTorch's ``_remove_batch_dim``)."""
    if isinstance(y, BatchedTensor) and y._level == level:
        if y.requires_grad and is_grad_enabled() or _fw.state.on and _fw.dual(y):
            return _RemoveBatchDim.apply(y, out_dim)
        return y._value.movedim(0, out_dim)
    out_dim = out_dim % (y.dim() + 1)
    return y.unsqueeze(out_dim).expand(*y.shape[:out_dim], batch_size, *y.shape[out_dim:])


class _AddBatchDim(Function):
    """Entering a vmap, differentiably: the gradient of the batched tensor is the batch's gradient."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, in_dim: int, level: int) -> Any:
        ctx.in_dim, ctx.level, ctx.size = in_dim, level, x.shape[in_dim]
        return BatchedTensor(x.movedim(in_dim, 0), level)

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        return _remove_batch_dim(g, ctx.level, ctx.size, ctx.in_dim), None, None

    @staticmethod
    def jvp(ctx: Any, x_t: Any, *_: Any) -> Any:
        """A dual input's tangent enters the vmap batched as the input is (Note [Forward-mode transforms])."""
        return BatchedTensor(x_t.movedim(ctx.in_dim, 0), ctx.level)


class _RemoveBatchDim(Function):
    """Leaving a vmap, differentiably: the batch's gradient enters the vmap's graph batched."""

    @staticmethod
    def forward(ctx: Any, y: Any, out_dim: int) -> Any:
        ctx.level, ctx.out_dim, ctx.size = y._level, out_dim, y._value.shape[0]
        return y._value.movedim(0, out_dim)

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        return BatchedTensor(g.movedim(ctx.out_dim, 0), ctx.level), None

    @staticmethod
    def jvp(ctx: Any, y_t: Any, *_: Any) -> Any:
        """A dual output's tangent leaves the vmap as the output does (expanded if the batch did not reach it)."""
        return _remove_batch_dim(y_t, ctx.level, ctx.size, ctx.out_dim)


# ------------------------------------------------------------------------------------------------------------ vmap
def _get_name(func: Any) -> str:
    return getattr(func, "__name__", None) or repr(func)


def _process_inputs(func: Any, in_dims: Any, args: tuple[Any, ...]) -> tuple[int, list[Any], list[Any], Any]:
    name = _get_name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                         f"trying to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_in_dims = _broadcast_to_and_flatten(in_dims, spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {spec}.")
    for i, (arg, d) in enumerate(zip(flat_args, flat_in_dims)):
        if not isinstance(d, int) and d is not None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                             f"in_dim must be either an integer dimension or None.")
        if isinstance(d, int) and not isinstance(arg, Tensor):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but the "
                             f"input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please use "
                             f"None as the respective in_dim")
        if d is not None and (d < -arg.dim() or d >= arg.dim()):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, but "
                             f"that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        if d is not None and d < 0:
            flat_in_dims[i] = d % arg.dim()
    sizes = [arg.size(d) for d, arg in zip(flat_in_dims, flat_args) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0], flat_in_dims, flat_args, spec


def _unwrap_outputs(func: Any, outputs: Any, out_dims: Any, level: int, batch_size: int) -> Any:
    name = _get_name(func)
    flat, spec = tree_flatten(outputs)

    def incompatible() -> None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs "
                         f"has structure {spec}.")
    if isinstance(outputs, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            flat_out: Any = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_out = list(out_dims)
        else:
            incompatible()
    else:
        flat_out = _broadcast_to_and_flatten(out_dims, spec)
        if flat_out is None:
            incompatible()
    result = []
    for out, d in zip(flat, flat_out):
        if d is None:
            if isinstance(out, BatchedTensor) and out._level == level:
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            result.append(out)
            continue
        if not isinstance(out, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(out)}. Did you "
                             f"mean to set out_dim= to None for output?")
        result.append(_remove_batch_dim(out, level, batch_size, d))
    return tree_unflatten(result, spec)


def _check_out_dims(func: Any, out_dims: Any) -> None:
    def check(x: Any) -> None:
        if not (x is None or isinstance(x, int)):
            raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or "
                             f"a python collection of ints representing where in the outputs the vmapped dimension "
                             f"should appear.")
    if not isinstance(out_dims, int):
        tree_map_(check, out_dims)


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: Any = None) -> Callable[..., Any]:
    """``torch.func.vmap``: ``func`` mapped over dimension ``in_dims`` of its inputs (Note [Batched tensors])."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        _check_out_dims(func, out_dims)
        batch_size, flat_in_dims, flat_args, spec = _process_inputs(func, in_dims, args)
        if chunk_size is not None and chunk_size < batch_size:
            return _chunked(func, flat_in_dims, flat_args, spec, kwargs, out_dims, randomness, batch_size,
                            chunk_size)
        return _flat_vmap(func, batch_size, flat_in_dims, flat_args, spec, out_dims, randomness, kwargs)
    return wrapped


def _flat_vmap(func: Any, batch_size: int, flat_in_dims: list[Any], flat_args: list[Any], spec: Any, out_dims: Any,
               randomness: str, kwargs: dict[str, Any]) -> Any:
    level = _state.next_level
    _state.next_level += 1
    _state.levels.append((level, batch_size, randomness))
    try:
        batched = [a if d is None or a is None else _add_batch_dim(a, d, level)
                   for d, a in zip(flat_in_dims, flat_args)]
        with _VmapRandomness(level, batch_size, randomness):
            outputs = func(*tree_unflatten(batched, spec), **kwargs)
        return _unwrap_outputs(func, outputs, out_dims, level, batch_size)
    finally:
        _state.levels.pop()     # (levels are not reused: a graph built under this vmap may outlive it)


def _chunked(func: Any, flat_in_dims: list[Any], flat_args: list[Any], spec: Any, kwargs: dict[str, Any],
             out_dims: Any, randomness: str, batch_size: int, chunk_size: int) -> Any:
    """vmap over ``chunk_size`` examples at a time; the chunks' outputs concatenated along their out_dims."""
    pieces = []
    for start in range(0, batch_size, chunk_size):
        n = min(chunk_size, batch_size - start)
        chunk_args = [a if d is None else a.narrow(d, start, n) for d, a in zip(flat_in_dims, flat_args)]
        pieces.append(_flat_vmap(func, n, flat_in_dims, chunk_args, spec, out_dims, randomness, kwargs))
    flat0, out_spec = tree_flatten(pieces[0])
    flat_pieces = [tree_flatten(p)[0] for p in pieces]
    if isinstance(pieces[0], Tensor):
        flat_out = [out_dims if isinstance(out_dims, int) or out_dims is None else out_dims[0]]
    else:
        flat_out = _broadcast_to_and_flatten(out_dims, out_spec) or []
    merged = []
    for i, d in enumerate(flat_out):
        if d is None:
            merged.append(flat0[i])
        else:
            merged.append(ember.cat([p[i] for p in flat_pieces], dim=d))
    return tree_unflatten(merged, out_spec)


class _VmapRandomness(TorchDispatchMode):
    """While a vmap's function runs: the random operators none of whose arguments the vmap batches (``randn(3)``,
    dropout of a tensor from outside) follow its ``randomness`` too -- refused under ``'error'``, drawn once per
    example under ``'different'`` (a batched result), drawn once under ``'same'``. Every other operator passes on."""

    def __init__(self, level: int, size: int, randomness: str) -> None:
        super().__init__()
        self.level, self.size, self.randomness = level, size, randomness

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if "nondeterministic_seeded" not in func.tags:
            return func(*args, **kwargs)
        flat, _ = tree_flatten((args, kwargs))
        if any(isinstance(a, BatchedTensor) and a._level == self.level for a in flat):
            return func(*args, **kwargs)        # the batched tensor's rule decides (batch_rules.random_op)
        if self.randomness == "error":
            batch_rules.refuse_random()
        if self.randomness == "same":
            return func(*args, **kwargs)
        if batch_rules.check_inplace(func, self.level, args, kwargs) is not None:
            raise RuntimeError("vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will "
                               "appear like same randomness. If this is necessary for your usage, please file an "
                               "issue with functorch.")
        bound = batch_rules._bind(func, args, kwargs)
        if func.handle.name == "randperm":
            return BatchedTensor(ember.stack([func(**bound) for _ in range(self.size)]), self.level)
        if "size" in bound:                     # a factory: one draw per example
            bound["size"] = [self.size] + [int(n) for n in bound["size"]]
        else:                                   # unbatched tensor arguments: each example draws for its own copy
            for name, v in list(bound.items()):
                if isinstance(v, Tensor):
                    bound[name] = v.unsqueeze(0).expand(self.size, *v.shape)
        out = func(**bound)
        return batch_rules._wrap(out, self.level)


# --------------------------------------------------------------------------------------------------- dispatching
def _dispatch(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    flat, _ = tree_flatten((args, kwargs))
    level = max(a._level for a in flat if isinstance(a, BatchedTensor))
    size = next(a._value.shape[0] for a in flat if isinstance(a, BatchedTensor) and a._level == level)
    if "nondeterministic_seeded" in func.tags:
        return batch_rules.random_op(func, level, size, _randomness(level), args, kwargs)
    rule = batch_rules.rule_for(func)
    if rule is None:
        return fallback(func, level, size, args, kwargs)
    return rule(func, level, size, args, kwargs)


def fallback(func: Any, level: int, size: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The operator once per example, the results stacked (PyTorch's slow fallback: it warns)."""
    name = func.name()
    warnings.warn(f"There is a performance drop because we have not yet implemented the batching rule for {name}. "
                  f"Please file us an issue on GitHub so that we can prioritize its implementation.", UserWarning,
                  stacklevel=2)
    flat, spec = tree_flatten((args, kwargs))
    batched = [isinstance(a, BatchedTensor) and a._level == level for a in flat]
    mutated = batch_rules.check_inplace(func, level, args, kwargs)
    results = []
    for i in range(size):
        a, k = tree_unflatten([x._value[i] if b else x for x, b in zip(flat, batched)], spec)
        results.append(func(*a, **k))
    if mutated is not None:
        return mutated
    first = results[0]
    if isinstance(first, Tensor):
        return BatchedTensor(ember.stack(results), level)
    if isinstance(first, (tuple, list)):
        outs = [BatchedTensor(ember.stack([r[j] for r in results]), level) if isinstance(first[j], Tensor) else
                _same_for_all([r[j] for r in results], func) for j in range(len(first))]
        return outs if isinstance(first, list) else batch_rules.rebuild(first, outs)
    return _same_for_all(results, func)


def _same_for_all(values: list[Any], func: Any) -> Any:
    """A result that is not a tensor (a number, a flag) is one value for the whole batch only if every example got
    it; a value that depends on the example cannot be batched (``allclose``, a count)."""
    if any(v != values[0] for v in values[1:]):
        raise RuntimeError(f"vmap over {func.name()} isn't supported: it returns a {type(values[0]).__name__} that "
                           f"differs between the examples of the batch")
    return values[0]


from ember._functorch import batch_rules  # noqa: E402  (its rules call back into this module's fallback)
