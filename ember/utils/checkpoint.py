"""Activation checkpointing (``torch/utils/checkpoint.py``): run part of a model without keeping the tensors its
backward needs, and run that part again during backward to get them back. Memory for compute.

Two ways, as in PyTorch:

* ``use_reentrant=True``: ``CheckpointFunction``, a custom autograd ``Function`` whose forward runs the function
  under ``no_grad`` and whose backward recomputes it with grad enabled and calls ``autograd.backward`` on the
  recomputed graph (a backward inside the backward: "reentrant"). Needs an input that requires grad; refuses
  ``autograd.grad`` and ``backward(inputs=...)``.
* ``use_reentrant=False``: the forward runs normally, inside ``saved_tensors_hooks`` (Note [Saved tensor hooks] in
  ``ember/autograd/graph.py``) whose pack hook keeps a placeholder instead of each saved tensor. The first unpack in
  a backward call recomputes the function under hooks that collect the recomputed saved tensors, in the order the
  forward saved them, stopping as soon as all are there; each placeholder then unpacks to its tensor. Works with
  ``autograd.grad``, keyword arguments, inputs that do not require grad, and ``retain_graph`` (each backward call
  recomputes again).

Both restore the CPU generator's state for the recomputation (``preserve_rng_state``), so dropout draws the same
mask twice.
"""
from __future__ import annotations

import contextlib
import warnings
import weakref
from typing import Any, Callable, Iterable

import ember
from ember.autograd import engine
from ember.autograd.function import Function
from ember.autograd.graph import saved_tensors_hooks

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "detach_variable",
           "check_backward_validity", "noop_context_fn", "set_checkpoint_early_stop"]

_DEBUG_TIP = ("Tip: the recomputation must run the same ops, saving tensors of the same shapes, dtypes and devices, "
              "as the forward did: no branch on data or global state that changed in between.")


class CheckpointError(RuntimeError):
    """A recomputation that does not match the forward it replays."""


def noop_context_fn() -> tuple[Any, Any]:
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: Any) -> tuple[Any, ...]:
    """Each tensor of ``inputs`` detached, keeping its ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, ember.Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, ember.Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


_early_stop = [True]


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool) -> Any:
    """Whether non-reentrant recomputation stops once every saved tensor is recomputed (default True)."""
    prev = _early_stop[0]
    _early_stop[0] = enable
    try:
        yield
    finally:
        _early_stop[0] = prev


# ---- use_reentrant=True
class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx: Any, run_function: Callable[..., Any], preserve_rng_state: bool, *args: Any) -> Any:
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = ember.get_rng_state()
        ctx.inputs, ctx.tensor_indices, tensors = [], [], []
        for i, arg in enumerate(args):
            if isinstance(arg, ember.Tensor):
                tensors.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensors)
        with ember.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        if not engine.is_checkpoint_valid():
            raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                               "passing an `inputs` parameter to .backward(). To resolve this error, you can either "
                               "set use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with ember.random.fork_rng(enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                ember.set_rng_state(ctx.fwd_cpu_state)
            detached = detach_variable(tuple(inputs))
            with ember.enable_grad():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, ember.Tensor):
            outputs = (outputs,)
        with_grad = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, ember.Tensor) and o.requires_grad]
        if not with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        ember.autograd.backward([o for o, _ in with_grad], [g for _, g in with_grad])
        return (None, None) + tuple(x.grad if isinstance(x, ember.Tensor) else None for x in detached)


# ---- use_reentrant=False
class _Holder:
    """What the forward saves in place of a tensor: a key into the recomputed tensors of a backward call."""
    __slots__ = ("__weakref__",)


class _StopRecomputation(Exception):
    pass


def _metadata(x: Any) -> dict[str, Any]:
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


class _Frame:
    """One checkpointed call: the placeholders its forward saved (weakly: a freed graph frees them), their
    metadata, and per backward call the recomputed tensor of each placeholder still to be unpacked."""

    def __init__(self, recompute: Callable[[], Any], check_metadata: bool) -> None:
        self.recompute = recompute
        self.check_metadata = check_metadata
        self.holders: list[weakref.ref[_Holder]] = []
        self.metadata: list[dict[str, Any]] = []
        self.recomputed: dict[int, weakref.WeakKeyDictionary[_Holder, Any]] = {}

    def pack(self, x: Any) -> _Holder:
        h = _Holder()
        self.holders.append(weakref.ref(h))
        self.metadata.append(_metadata(x))
        return h

    def unpack(self, h: _Holder) -> Any:
        task = engine.current_graph_task_id()
        if task not in self.recomputed:
            self._recompute(task)
        got = self.recomputed[task]
        if h not in got:
            raise CheckpointError("torch.utils.checkpoint: Unpack is being triggered for a tensor that was already "
                                  "unpacked once. If you are calling ctx.saved_tensors in backward, make sure to do "
                                  "so only once. Otherwise please open an issue with details on your use case.")
        return got.pop(h)

    def _recompute(self, task: int) -> None:
        found: list[Any] = []
        n = len(self.holders)
        early = _early_stop[0]

        def pack(x: Any) -> Any:
            x = x.detach() if x.requires_grad else x
            found.append(x)
            if early and len(found) == n:
                raise _StopRecomputation
            return x

        try:
            with saved_tensors_hooks(pack, lambda x: x):
                self.recompute()
        except _StopRecomputation:
            pass
        if len(found) != n:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the original forward and "
                f"recomputation.\nNumber of tensors saved during forward: {n}\n"
                f"Number of tensors saved during recomputation: {len(found)}.\n{_DEBUG_TIP}")
        if self.check_metadata:
            bad = [(i, m, _metadata(x)) for i, (m, x) in enumerate(zip(self.metadata, found)) if m != _metadata(x)]
            if bad:
                lines = "".join(f"tensor at position {i}:\nsaved metadata: {m}\nrecomputed metadata: {r}\n"
                                for i, m, r in bad)
                raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                                      f"different metadata than during the forward pass.\n{lines}.\n{_DEBUG_TIP}")
        got: weakref.WeakKeyDictionary[_Holder, Any] = weakref.WeakKeyDictionary()
        for ref, x in zip(self.holders, found):
            h = ref()
            if h is not None:
                got[h] = x
        self.recomputed[task] = got


def _checkpoint_without_reentrant(function: Callable[..., Any], preserve: bool, context_fn: Callable[[], Any],
                                  determinism_check: str, args: Any, kwargs: Any) -> Any:
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got " + str(determinism_check))
    fwd_state = ember.get_rng_state() if preserve else None
    forward_ctx, recompute_ctx = context_fn()

    def recompute() -> None:
        with ember.random.fork_rng(enabled=preserve):
            if preserve:
                ember.set_rng_state(fwd_state)
            with ember.enable_grad(), recompute_ctx:
                function(*args, **kwargs)

    frame = _Frame(recompute, determinism_check == "default")
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_ctx:
        return function(*args, **kwargs)


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], Any] = noop_context_fn, determinism_check: str = "default",
               debug: bool = False, early_stop: bool = True, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` without keeping its activations for backward: they are recomputed when
    backward needs them (see the module's docstring for the two ways)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch "
            "2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    with set_checkpoint_early_stop(early_stop and _early_stop[0]):
        return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, args, kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any, use_reentrant: bool | None = None,  # noqa: A002
                          **kwargs: Any) -> Any:
    """A sequence of modules (or functions) in ``segments`` chunks, each but the last checkpointed."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
            "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
            "use_reentrant=False is recommended, but if you need to preserve the current default behavior, you can "
            "pass use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    if isinstance(functions, ember.nn.Sequential):
        functions = list(functions.children())
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
