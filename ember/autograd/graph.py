"""The autograd graph (mirrors ``torch/csrc/autograd/function.h``, ``edge.h``, ``saved_variable.cpp``,
``functions/accumulate_grad.cpp``).

Every differentiable op that runs with grad enabled on an input that requires grad creates a ``Node``
(``MulBackward0``...) whose ``next_functions`` are the edges to the nodes of its inputs: their ``grad_fn``,
or the ``AccumulateGrad`` of a leaf.  A node keeps what its derivative formula needs as ``SavedVariable``s,
which remember the version counter of the tensor they saved and refuse to unpack after an in-place change.
"""
from __future__ import annotations

import itertools
import sys
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

import numpy as np

from ember.c10.grad_mode import state
from ember.c10.compile_state import state as _compile_state

from ember._generated import aten
from ember.autograd.functions_manual import strided_view_backward, zeros_of
from ember.c10.tensor_impl import TensorImpl
from ember.c10.memory_format import contiguous_format, non_overlapping_and_dense
from ember.aten.dispatcher import python_key_used, tls as _dispatch_tls
from ember.c10.dispatch_key import MATH_BITS, SPARSE_MASK, DispatchKey
from ember.c10.dtype import scalar_type_name

_PYTHON_BIT = 1 << DispatchKey.Python

if TYPE_CHECKING:  # annotations only (the frontend's class; tests/test_layering.py)
    from ember._tensor import Tensor

    Grads = list[Tensor | None]

_sequence = itertools.count()


class Edge(NamedTuple):
    """(function, input_nr): where a gradient flows next (``torch::autograd::Edge``)."""
    node: object
    input_nr: int


ERR_BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
    "you need to access saved tensors after calling backward.")


# Note [Saved tensor hooks]
# ``saved_tensors_hooks(pack, unpack)`` (torch.autograd.graph) changes what a SavedVariable keeps: while the
# context is active on this thread, saving calls ``pack(tensor)`` and keeps its result instead of the tensor, and
# unpacking for backward calls ``unpack(packed)``. Activation checkpointing packs nothing and recomputes on unpack;
# ``save_on_cpu`` packs a CPU copy. The version check still applies (the tensor's version counter is kept).
# ``_hooks_in_use`` counts the active contexts of every thread, so that saving without hooks costs one test.
_hooks_tls = threading.local()
_hooks_in_use = 0


def _hook_stack() -> list[Any]:
    st = getattr(_hooks_tls, "stack", None)
    if st is None:
        st = _hooks_tls.stack = []
    return st


class SavedVariable:
    """A tensor saved for backward, with the version it had when saved."""

    __slots__ = ("tensor", "version", "is_output", "released", "_packed", "_unpack_hook", "_vc", "_detached")

    def __init__(self, tensor: Tensor | None, is_output: bool = False) -> None:
        self.tensor = tensor
        self.released = False
        self.is_output = is_output
        self._unpack_hook: Callable[[Any], Any] | None = None
        self._detached: Tensor | None = None
        if tensor is None:
            self.version = 0
            return
        if is_output and python_key_used[0] and tensor._grad_fn is not None and \
                (tensor._ks | _dispatch_tls.keys[0]) & _PYTHON_BIT:
            # Note [Saved outputs under the Python key]: PyTorch saves an output that has a history as
            # ``aten.detach(result)`` and unpacks it with another ``detach``; a dispatch mode (make_fx) sees both,
            # so ember makes the same calls when the Python key is in play (the original stays saved too, for
            # create_graph's double backward)
            self._detached = aten.detach(tensor)
        if getattr(tensor, "_inference", False):
            raise RuntimeError("Inference tensors cannot be saved for backward. Please do not use Tensors created in "
                               "inference mode in computation tracked by autograd. To work around this, you can make a "
                               "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead "
                               "of `torch.inference_mode()`.")
        self.version = tensor._vc.version
        if _hooks_in_use and "_wrapped_number" not in tensor.__dict__:   # (a wrapped number is not the user's)
            st = _hook_stack()
            if st:
                pack, unpack = st[-1]
                self._vc = tensor._vc
                self.tensor = None
                self._packed = pack(tensor)
                self._unpack_hook = unpack

    def unpack(self, node: Node | None = None) -> Tensor | None:
        if self.released:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        if self._unpack_hook is not None:
            return self._unpack_hooked(node)
        t = self.tensor
        if t is None:
            return None
        if t._vc.version != self.version:
            self._modified(t, t._vc.version, node)
        if self._detached is not None and not state.enabled and "_fwg" not in t.__dict__:
            return aten.detach(self._detached)   # (a dual output stays itself: it keeps its tangent)
        return t

    def _unpack_hooked(self, node: Node | None) -> Tensor | None:
        assert self._unpack_hook is not None
        t: Tensor = self._unpack_hook(self._packed)
        if not isinstance(t, TensorImpl):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                            f"{type(t).__name__}")
        if self._vc.version != self.version:
            self._modified(t, self._vc.version, node)
        return t

    def _modified(self, t: Tensor, now: int, node: Node | None) -> None:
        owner = ""
        if node is not None:
            out = getattr(t, "_output_nr", 0)
            owner = f", which is output {out} of {t.grad_fn.name()}" if t.grad_fn is not None else ""
        shape = "[" + ", ".join(str(s) for s in t.shape) + "]"
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[{_type_str(t)} {shape}]{owner}, is at version {now}; expected version {self.version} "
            "instead. Hint: enable anomaly detection to find the operation that failed to compute its "
            "gradient, with torch.autograd.set_detect_anomaly(True).")

    # -- torch._C._autograd.SavedTensor -------------------------------------------------------------------
    def register_hooks(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]) -> None:
        """Pack the saved tensor now with ``pack_hook``; ``unpack_hook`` gives it back when backward needs it."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("expected both pack_hook and unpack_hook to be callables")
        if self._unpack_hook is not None:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been set. Hint: "
                               "only one pair of hooks is allowed at a time.")
        if self.released:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        t = self.tensor
        if t is None:
            raise RuntimeError("None is forbidden")
        self._vc = t._vc
        self._packed = pack_hook(t)
        self._unpack_hook = unpack_hook
        self.tensor = None

    @property
    def unpack_hook(self) -> Callable[[Any], Tensor] | None:
        return self._unpack_hook

    @property
    def data(self) -> Tensor | None:
        t = self.unpack()
        return None if t is None else t.detach()

    def release(self) -> None:
        self.tensor = None
        self._detached = None
        if self._unpack_hook is not None:
            self._packed = None
        self.released = True


def _type_str(t: Tensor) -> str:
    return f"torch.{scalar_type_name(t.dtype)}Tensor"


class Node:
    """A function of the backward graph (``torch::autograd::Node``)."""

    _saved_names: tuple[str, ...] = ()
    _num_outputs = 1  # nodes recorded by ops with several outputs set their own

    def __init__(self) -> None:
        self._next: tuple[Edge | None, ...] = ()
        self._pre_hooks: list[Callable[..., Any]] = []
        self._hooks: list[Callable[..., Any]] = []
        self._tensor_pre_hooks: dict[int, list[Callable[..., Any]]] = {}  # output_nr -> [hook]
        self._retains_grad: dict[int, Any] = {}  # output_nr -> weakref to the tensor that retains its grad
        self.sequence_nr = next(_sequence)
        self.metadata: dict[Any, Any] = {}
        self._input_meta: tuple[Any, ...] = ()  # per output: (shape, dtype, device)
        self._released = False
        self._anomaly_trace: str | None = None

    # -- graph structure ------------------------------------------------------------------------
    @property
    def next_functions(self) -> tuple[tuple[object, int], ...]:
        return tuple((e.node, e.input_nr) if e is not None else (None, 0) for e in self._next)

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:  # noqa: D105
        return f"<{self.name()} object at {hex(id(self))}>"

    # -- hooks --------------------------------------------------------------------------------------
    def register_hook(self, fn: Callable[..., Any]) -> _RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` after the node ran; may return replacement grad_inputs."""
        self._hooks.append(fn)
        return _RemovableHandle(self._hooks, fn)

    def register_prehook(self, fn: Callable[..., Any]) -> _RemovableHandle:
        """``fn(grad_outputs)`` before the node runs; may return replacement grad_outputs."""
        self._pre_hooks.append(fn)
        return _RemovableHandle(self._pre_hooks, fn)

    # -- evaluation ---------------------------------------------------------------------------------
    def apply(self, grads: Grads) -> Grads:
        raise NotImplementedError

    def release_variables(self) -> None:
        for name in self._saved_names:
            sv = getattr(self, name, None)
            if isinstance(sv, SavedVariable):
                sv.release()
            elif isinstance(sv, list):
                for s in sv:
                    s.release()
        self._released = True

    def __getattr__(self, name: str) -> Any:
        """PyTorch's views of what a node saved: ``_saved_<arg>`` (the unpacked tensor, or the argument's value) and
        ``_raw_saved_<arg>`` (the ``SavedTensor``, whose hooks can be set)."""
        if name.startswith("_raw_saved_"):
            key = name[len("_raw_saved_"):] + "_"
            if key in type(self)._saved_names:
                return self.__dict__[key]
        elif name.startswith("_saved_"):
            arg = name[len("_saved_"):]
            if arg + "_" in type(self)._saved_names:
                sv = self.__dict__[arg + "_"]
                return [s.unpack() for s in sv] if isinstance(sv, list) else sv.unpack()
            if arg in self.__dict__:
                return self.__dict__[arg]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _saved(self, name: str) -> Any:
        sv = getattr(self, name)
        if isinstance(sv, list):
            return [s.unpack(self) for s in sv]
        return sv.unpack(self)

    def __call__(self, *grads: Tensor | None) -> Grads:
        return self.apply(list(grads))


class _RemovableHandle:
    _ids = itertools.count()

    def __init__(self, container: list[Any], item: object) -> None:
        self._container = container
        self._item = item
        self.id = next(self._ids)

    def remove(self) -> None:
        try:
            self._container.remove(self._item)
        except ValueError:
            pass

    def __enter__(self) -> _RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()



class FormulaNode(Node):
    """The base of the nodes ``derivatives.yaml`` generates (``ember/_generated/autograd.py``): their ``apply``
    runs a formula PyTorch writes in C++, where ``grad / n`` is ``div.Scalar`` (the engine tells a dispatch mode so:
    Note [Overloads PyTorch's bindings hide] in ember/_ops.py)."""


class AccumulateGrad(Node):
    """The node of a leaf: adds the incoming gradient to ``variable.grad``."""

    def __init__(self, variable: Tensor) -> None:
        super().__init__()
        self._variable = weakref.ref(variable)
        self._post_acc_hooks: list[Callable[[Tensor], None]] = []
        self.sequence_nr = 2 ** 62  # leaves run as soon as they are ready (PyTorch: UINT64_MAX)

    @property
    def variable(self) -> Tensor | None:
        return self._variable()

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"  # PyTorch's C++ name; the repr keeps the class name

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"

    def apply(self, grads: Grads) -> Grads:
        """PyTorch's ``accumulate_grad``: without create_graph the leaf gets a detached gradient it owns
        (so later in-place accumulation and ``grad.zero_()`` touch nothing else); with create_graph the
        sum stays in the graph."""
        var = self._variable()
        g = grads[0]
        if var is None or g is None:
            return []
        wanted = var.__dict__.get("_grad_dtype", _PARAM_DTYPE)  # Tensor.grad_dtype: None accepts any dtype
        if wanted is _PARAM_DTYPE:
            if g._data.dtype != var._data.dtype:
                g = g.to(var.dtype)
        elif wanted is not None and g.dtype != wanted:
            g = g.to(wanted)
        capture = _compile_state.capturing
        if capture is not None:     # a backward inside ember.compile: the sum becomes the graph's (Note [Backward
            capture.accumulate_grad(var, g, self)     # inside a capture] in ember/_dynamo/capture.py)
            return []
        old = var.grad
        if (g._ks | (0 if old is None else old._ks)) & SPARSE_MASK:
            var._grad = _accumulate_sparse(old, g)
        elif not state.enabled:  # grad mode is off here already: the in-place sum records nothing
            if old is None:
                # PyTorch steals a gradient nothing else holds (no copy): one whose memory is its own, laid out
                # as the leaf, referenced only by the engine's buffer and this frame; any other is copied. A
                # kernel's result may be a view (a reshape) of an array only that view holds: its memory is its own
                # (a reshape of a kernel's result: a view tensor whose base tensor only it holds, counts too; a
                # conjugate or negative view does not: the leaf gets the values)
                refs = 2 if g is grads[0] else 1
                if sys.getrefcount(g) <= refs + 1 and (g._ks & _PYTHON_BIT or (  # a subclass: its own memory
                        not g._ks & MATH_BITS and _owns_memory(g._data, g.__dict__.get("_base"))
                        and g._data.flags.c_contiguous and var._data.flags.c_contiguous)):
                    var._grad = g.detach()
                else:
                    var._grad = _clone_obey_contract(g.detach(), var)
            else:
                aten.add__Tensor(old, g)      # the internal op API: Tensor.add_ would parse its arguments again
        else:
            var._grad = _clone_obey_contract(g, var) if old is None else old + g
        for h in self._post_acc_hooks:
            h(var)
        return []


def _accumulate_sparse(old: Tensor | None, g: Tensor) -> Tensor:
    """PyTorch's accumulate_grad when a sparse gradient is involved (Note [Sparse tensors] in
    ember/aten/sparse/__init__.py): the first gradient is a copy; a sparse gradient into a dense one is added in place
    (without grad mode); a dense one into a sparse one makes the sum dense; two sparse ones join their indices (no
    coalescing: the optimizers coalesce)."""
    if old is None:
        return g.clone()
    if old._ks & SPARSE_MASK and not g._ks & SPARSE_MASK:
        return g + old
    if state.enabled:
        return old + g
    aten.add__Tensor(old, g)
    return old


def _owns_memory(a: Any, base_tensor: Any = None) -> bool:
    """Whether no other array shares the memory of the array ``a``: it has no base, or its base is a NumPy
    array that only ``a`` refers to (one reference from ``a.base``, one from the call), or only ``a`` and the
    data of ``base_tensor`` -- the tensor ``a``'s tensor is a view of -- when nothing but that view holds it."""
    base = a.base
    if base is None:
        return True
    if type(base) is not np.ndarray:
        return False
    held = base_tensor is not None and base_tensor._data is base and sys.getrefcount(base_tensor) <= 3 \
        and base_tensor.__dict__.get("_base") is None
    return sys.getrefcount(base) <= (4 if held else 3)


_PARAM_DTYPE = object()  # no grad_dtype set: the gradient takes the leaf's own dtype


def _clone_obey_contract(g: Tensor, var: Tensor) -> Tensor:
    """A leaf's first gradient, owned by it and laid out by PyTorch's gradient layout contract: with the strides of
    a non-overlapping, dense parameter, row-major otherwise (``autograd.enforce_grad_layout_policy(False)`` keeps
    the gradient's own layout). A row-major parameter's gradient is a row-major copy; only a parameter laid out
    otherwise (permuted, transposed, channels-last) takes the strided copy."""
    if not state.grad_layout_enforced:
        return g.clone()                                    # preserve_format: the gradient's own layout
    if var._data.flags.c_contiguous or var.is_contiguous():
        return g.clone(memory_format=contiguous_format)
    sizes, strides = tuple(var.shape), tuple(var.stride())
    if non_overlapping_and_dense(sizes, strides):
        if tuple(g.stride()) == strides:
            return g.clone()                                # already the parameter's strides
        from ember._generated import aten
        return aten.empty_strided(sizes, strides, dtype=g.dtype, device=g.device).copy_(g)
    return g.clone(memory_format=contiguous_format)


class GraphRoot(Node):
    def __init__(self, grads: Grads) -> None:
        super().__init__()
        self.grads = grads

    def apply(self, grads: Grads) -> Grads:
        return list(self.grads)


class NotImplementedBackward(Node):
    """Attached where an op has no derivative formula; raises when backward reaches it."""

    def __init__(self, opname: str) -> None:
        super().__init__()
        self.opname = opname    # qualified: "aten::nonzero", "torchvision::nms"

    def name(self) -> str:
        return "NotImplemented"

    def apply(self, grads: Grads) -> Grads:
        # PyTorch's autograd_not_implemented_fallback names the operator without its overload
        raise RuntimeError(f"derivative for {self.opname.split('.')[0]} is not implemented")


class CopySlices(Node):
    """An in-place op on a view, seen from the base (``torch/csrc/autograd/functions/tensor.cpp``).

    The base's gradient is copied into a buffer with the base's geometry; the part the view covers goes
    through the in-place op's node ``fn`` and is written back; ``fn``'s other inputs get their gradients
    as usual.  Geometry is (sizes, strides, storage offset), so any strided view works.
    """

    def __init__(self, base: Tensor, view: Tensor, fn: Node) -> None:
        super().__init__()
        self.base_geometry = (tuple(base.shape), base.stride(), base.storage_offset())
        self.view_geometry = (tuple(view.shape), view.stride(), view.storage_offset())
        self.fn = fn
        self.sequence_nr = fn.sequence_nr
        self._input_meta = ((base._data.shape, base.dtype),) + tuple(fn._input_meta[1:])

    def name(self) -> str:
        return "CopySlices"

    def apply(self, grads: Grads) -> Grads:
        grad = grads[0]
        assert grad is not None
        bs, bst, boff = self.base_geometry
        vs, vst, voff = self.view_geometry
        lo = min([boff, voff])
        span = max(boff + 1 + sum((s - 1) * st for s, st in zip(bs, bst)),
                   voff + 1 + sum((s - 1) * st for s, st in zip(vs, vst))) - lo if all(bs) else 1
        storage = zeros_of(max(span, 1), grad)
        base_view = storage.as_strided(bs, bst, boff - lo)
        base_view.copy_(grad)
        view_slice = storage.as_strided(vs, vst, voff - lo)
        res = self.fn.apply([view_slice.clone()])
        if res and res[0] is not None:
            view_slice.copy_(res[0])
        else:
            view_slice.zero_()
        return [base_view.clone()] + list(res[1:])

    def release_variables(self) -> None:
        self.fn.release_variables()
        self._released = True


class AsStridedBackward0(Node):
    """The history of a view after an in-place op rebased its base: the view is a strided window of
    the base's new value."""

    def __init__(self, base: Tensor, view: Tensor) -> None:
        super().__init__()
        self.base_geometry = (tuple(base.shape), base.stride(), base.storage_offset())
        self.view_geometry = (tuple(view.shape), view.stride(), view.storage_offset())
        self._input_meta = ((base._data.shape, base.dtype),)

    def apply(self, grads: Grads) -> Grads:
        bs, bst, boff = self.base_geometry
        vs, vst, voff = self.view_geometry
        grad = grads[0]
        assert grad is not None
        return [strided_view_backward(grad, bs, bst, boff, vs, vst, voff)]


# -- saved tensor hooks (Note [Saved tensor hooks]) ------------------------------------------------------------
class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Context manager: tensors saved for backward inside it are stored as ``pack_hook(tensor)`` and given back
    as ``unpack_hook(packed)`` when backward needs them (``torch.autograd.graph.saved_tensors_hooks``)."""

    def __init__(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        global _hooks_in_use
        disabled = getattr(_hooks_tls, "disabled", None)
        if disabled is not None:
            raise RuntimeError(disabled)
        _hook_stack().append((self.pack_hook, self.unpack_hook))
        _hooks_in_use += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        global _hooks_in_use
        _hook_stack().pop()
        _hooks_in_use -= 1


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    """Saved tensors are kept on the CPU and moved back to their device for backward (trades device memory for
    copies); ``pin_memory`` asks for pinned host memory (a no-op without a GPU)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack(t: Tensor) -> tuple[Any, Tensor]:
            return t.device, t.cpu()

        def unpack(packed: tuple[Any, Tensor]) -> Tensor:
            device, t = packed
            return t.to(device, non_blocking=pin_memory)
        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Context manager inside which entering ``saved_tensors_hooks`` raises ``RuntimeError(error_message)``
    (for code whose correctness needs the tensors themselves to be saved)."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        self._prev = getattr(_hooks_tls, "disabled", None)
        _hooks_tls.disabled = self.error_message

    def __exit__(self, *exc: Any) -> None:
        _hooks_tls.disabled = self._prev


SavedTensor = SavedVariable  # PyTorch's name for it (torch._C._autograd.SavedTensor)
