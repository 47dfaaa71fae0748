"""The dispatcher (mirrors ``aten/src/ATen/core/dispatch/Dispatcher.h`` and ``OperatorEntry``).

Every operator overload (``aten::add.Tensor``) has an ``OperatorHandle`` with a kernel table keyed by
``DispatchKey``.  A call computes the dispatch key set (the union of the tensor arguments' keys, plus
the thread-local *included* keys, minus the *excluded* ones), picks the kernel of the highest key and
runs it.  Kernels receive the key set first so they can ``redispatch`` to the keys below their own
(an autograd kernel calls the CPU kernel that way).

Note [Kernel resolution]
For a key K the table is consulted in PyTorch's order: a kernel registered for K itself; for a
backend key, a ``CompositeExplicitAutograd`` kernel; for a per-backend autograd key (``AutogradCPU``, ...),
a kernel of the ``Autograd`` alias key (one registration serves every backend, as in PyTorch); for a
backend or autograd key, a ``CompositeImplicitAutograd`` kernel; then the global fallback for K.  A fallback may be
*fallthrough*, meaning "skip K and look at the next key down" — that is what the ``ADInplaceOrView``
and ``Autograd*`` keys do for operators that have no kernel of their own there.  The resolved kernel
is cached per key set; registering a kernel clears the cache.

A key set with ``ADInplaceOrView`` but without its backend's Autograd key comes from tensors that do not require
grad (Note [The Autograd key of a tensor that does not require grad] in ember/c10/dispatch_key.py). It resolves as
if it had the Autograd key unless the operator's autograd kernel is marked ``only_for_grad`` (it does nothing but
redispatch when no input requires grad): views still keep their base and in-place ops still check their target.
A thread that excludes an Autograd key but not ``ADInplaceOrView`` (``ExcludeDispatchKeyGuard``) includes the
``NO_IMPLIED_AUTOGRAD`` bit, so that its calls, cached under their own key sets, run no autograd kernel.

Note [Views keep their base below autograd]
PyTorch sets a view's base in its ADInplaceOrView kernel, which every call of a view op passes. ember's autograd
kernel of a view op sets it too (``_set_base_lines`` in tools/codegen/gen_autograd.py); when no input requires grad
that is all it does, so it is marked ``only_keeps_base``. The generated CPU / CUDA / Meta wrappers of view ops make
their results with ``wrap.view_keeping_base`` and are marked ``keeps_base``; for a key set whose kernel below the
autograd key is such a wrapper, the autograd key is not implied and the call goes straight to the wrapper (a frame
and a redispatch less). A view kernel above them (the Python key's, a composite, a fake mode) keeps the autograd
kernel, which sets the base on whatever comes back, as PyTorch's ADInplaceOrView kernel does.
"""
from __future__ import annotations

from typing import Any

import os
import threading

from ember.c10.device import canonical as canonical_device
from ember.c10.dispatch_key import (AUTOCAST_MASK, AUTOGRAD_KEYS, AUTOGRAD_MASK, AUTOGRAD_SHIFT, BACKEND_KEYS,
                                   BACKEND_MASK, KS_CPU, KS_OF_DEVICE_TYPE, MATH_BITS, DispatchKey, DispatchKeySet)
from ember.c10.tensor_impl import TensorImpl

FALLTHROUGH = object()

# Note [Kernel resolution]: a bit above every dispatch key, in a key set only while a thread excludes an Autograd key
# and keeps ADInplaceOrView
NO_IMPLIED_AUTOGRAD = 1 << 63
_KEY_BITS = NO_IMPLIED_AUTOGRAD - 1
_AD_INPLACE_OR_VIEW_BIT = 1 << DispatchKey.ADInplaceOrView


class BoxedFallback:
    """A fallback for every operator under one key: ``make(op)`` returns the kernel for ``op`` (PyTorch's
    boxed fallbacks receive the operator handle the same way)."""

    def __init__(self, make: Any) -> None:
        self.make = make
        self._bound: dict[Any, Any] = {}

    def bind(self, op: Any) -> Any:
        k = self._bound.get(op.qualified_name)
        if k is None:
            k = self._bound[op.qualified_name] = self.make(op)
        return k

_backend_fallbacks: dict[DispatchKey, object] = {
    DispatchKey.ADInplaceOrView: FALLTHROUGH,
    DispatchKey.BackendSelect: FALLTHROUGH,
    DispatchKey.Python: FALLTHROUGH,
    DispatchKey.Functionalize: FALLTHROUGH,
    DispatchKey.Conjugate: FALLTHROUGH,
    DispatchKey.Negative: FALLTHROUGH,
    DispatchKey.ZeroTensor: FALLTHROUGH,
    DispatchKey.Tracer: FALLTHROUGH,
    DispatchKey.AutocastCPU: FALLTHROUGH,
    DispatchKey.AutocastCUDA: FALLTHROUGH,
    DispatchKey.PythonTLSSnapshot: FALLTHROUGH,
    DispatchKey.PythonDispatcher: FALLTHROUGH,
}
# Until an operator has an autograd kernel, its Autograd keys fall through to the backend.
for _k in AUTOGRAD_KEYS:
    _backend_fallbacks[_k] = FALLTHROUGH


DEFAULT_KEYS = (0, ~AUTOCAST_MASK)   # a thread's (included, ~excluded) keys until it sets others
_DEFAULT_KEEP = DEFAULT_KEYS[1]
keys_set = False                    # Note [Thread-local keys nobody set]


class _LocalDispatchKeySet(threading.local):
    """Thread-local included / excluded key bits (``c10/core/impl/LocalDispatchKeySet.h``), kept as one pair
    ``keys = (included, ~excluded)`` so that a call reads the thread-local state once.

    Note [Autocast keys]
    Every CPU / CUDA tensor carries its backend's Autocast key, and every thread starts with those keys
    *excluded*, as in PyTorch: autocast is "on" for a device exactly while its key is not excluded
    (``ember.amp``'s ``set_autocast_enabled`` flips the bit), so a program that never autocasts pays nothing.

    Note [Thread-local keys nobody set]
    Reading a ``threading.local`` attribute costs a small op's call a few percent. Until some thread sets keys other
    than the default (autocast, a dispatch mode, a key guard), ``OperatorHandle.call`` applies the default without
    reading them: the setter notes in ``keys_set`` that some thread did, before the keys change (a thread's own keys
    differ from the default only after it set them itself, so the flag is up by then)."""

    def __init__(self) -> None:
        self._keys = DEFAULT_KEYS
        self.in_formula = False   # Note [Overloads PyTorch's bindings hide] in ember/_ops.py
        self.python_dispatcher = False    # Note [The Python dispatcher]

    @property
    def keys(self) -> tuple[int, int]:
        return self._keys

    @keys.setter
    def keys(self, value: tuple[int, int]) -> None:
        global keys_set
        if value != DEFAULT_KEYS:
            keys_set = True
        self._keys = value


    @property
    def included(self) -> int:
        return self.keys[0]

    @property
    def excluded(self) -> int:
        return ~self.keys[1]


tls = _LocalDispatchKeySet()

# Whether a dispatch mode or a tensor with the Python key has ever existed in this process (set by
# ember/_python_key.py): until then, the autograd engine skips the bookkeeping only the Python key reads.
python_key_used = [False]


def is_tensor_subclass_like(*tensors: Any) -> bool:
    """PyTorch's ``at::isTensorSubclassLike``: a TorchDispatchMode is active, or a tensor carries the Python key.
    Composite ops that would take a shortcut only plain tensors allow (``reshape`` returning ``_reshape_alias``,
    ``linear`` adding its bias in place) take the general path then, as PyTorch's do."""
    bits = tls.keys[0]
    for t in tensors:
        if t is not None:
            bits |= t._ks
    return bool(bits & (1 << DispatchKey.Python))


# Note [The Python dispatcher]
# PyTorch's tracers (make_fx, export) enable its "Python dispatcher", under which some CompositeImplicitAutograd
# operators run their Python decompositions instead of their C++ kernels (``dropout`` becomes ``native_dropout`` or
# a ``clone``, never the input itself). ember's composite kernels read ``python_dispatcher_enabled()`` and take that
# path while a trace runs; a plain dispatch mode sees what eager PyTorch runs.
def python_dispatcher_enabled() -> bool:
    return tls.python_dispatcher


class enable_python_dispatcher:
    """Context manager: the Python dispatcher is on for this thread (Note [The Python dispatcher])."""

    def __enter__(self) -> None:
        self.prev = tls.python_dispatcher
        tls.python_dispatcher = True

    def __exit__(self, *exc: Any) -> None:
        tls.python_dispatcher = self.prev


class NotImplementedForKey(NotImplementedError):
    pass


class OperatorHandle:
    """One operator overload: its schema and kernel table."""

    __slots__ = ("name", "overload_name", "schema", "kernels", "_cache", "_redispatch_cache", "out_arity", "namespace",
                 "tags", "__weakref__")

    def __init__(self, schema: str, out_arity: int = 0, namespace: str = "aten", tags: tuple[str, ...] = ()) -> None:
        full = schema.split("(", 1)[0]
        self.name, _, self.overload_name = full.partition(".")
        self.namespace = namespace  # "aten" for the operator library; a library's own ("torchvision") otherwise
        self.schema = schema
        self.kernels: dict[DispatchKey, object] = {}
        self._cache: dict[int, Any] = {}              # key set of a call -> kernel
        self._redispatch_cache: dict[int, Any] = {}   # key set of a redispatch -> kernel
        self.out_arity = out_arity  # trailing out= arguments (``*, Tensor(a!) out``): 0 unless an out= overload
        self.tags = tags            # native_functions.yaml's ``tags:`` (``inplace_view``)

    @property
    def qualified_name(self) -> str:
        return f"{self.namespace}::{self.name}" + (f".{self.overload_name}" if self.overload_name else "")

    def __repr__(self) -> str:
        return f"OperatorHandle({self.qualified_name})"

    # -- registration ---------------------------------------------------------------------------
    def register(self, key: DispatchKey, kernel: Any) -> None:
        self.kernels[key] = kernel
        self.clear_cache()

    def clear_cache(self) -> None:
        self._cache.clear()
        self._redispatch_cache.clear()

    def has_kernel_for(self, key: DispatchKey) -> bool:
        return key in self.kernels

    # -- lookup ------------------------------------------------------------------------------------
    def _lookup_key(self, key: DispatchKey) -> Any:
        k = self.kernels.get(key)
        if k is not None:
            return k
        if key in BACKEND_KEYS:
            k = self.kernels.get(DispatchKey.CompositeExplicitAutograd) or \
                self.kernels.get(DispatchKey.CompositeExplicitAutogradNonFunctional)
            if k is not None:
                return k
        if key in AUTOGRAD_KEYS:
            k = self.kernels.get(DispatchKey.Autograd)
            if k is not None:
                return k
        if key in BACKEND_KEYS or key in AUTOGRAD_KEYS:
            k = self.kernels.get(DispatchKey.CompositeImplicitAutograd)
            if k is not None:
                return k
        fb = _backend_fallbacks.get(key)
        if isinstance(fb, BoxedFallback):
            return fb.bind(self)
        return fb

    def resolve(self, ks: int, redispatch: bool = False) -> Any:
        """The kernel the highest key of ``ks`` runs (Note [Kernel resolution]); cached. A redispatch comes from a
        kernel that has done its key's work: the Autograd keys are never implied there (an autograd kernel that
        redispatches below its own key but above ADInplaceOrView would otherwise run again)."""
        cache = self._redispatch_cache if redispatch else self._cache
        k = cache.get(ks)
        if k is not None:
            return k
        kernel = self._kernel_of(ks & _KEY_BITS if redispatch else self._implied_keys(ks))
        if kernel is None:
            raise NotImplementedForKey(self._missing_message(ks))
        cache[ks] = kernel
        return kernel

    def _implied_keys(self, ks: int) -> int:
        """``ks``'s dispatch keys and the Autograd keys its tensors would carry in PyTorch, where the operator's
        autograd kernel does more than redispatch when nothing requires grad (Note [Kernel resolution])."""
        bits = ks & _KEY_BITS
        if bits & _AD_INPLACE_OR_VIEW_BIT and not ks & NO_IMPLIED_AUTOGRAD:
            missing = (bits & BACKEND_MASK) << AUTOGRAD_SHIFT & ~bits
            below = None
            while missing:
                key = DispatchKey(missing.bit_length() - 1)
                missing &= ~(1 << key)
                kernel = self._lookup_key(key)
                if kernel is None or kernel is FALLTHROUGH or getattr(kernel, "only_for_grad", False):
                    continue
                if getattr(kernel, "only_keeps_base", False):   # Note [Views keep their base below autograd]
                    below = self._kernel_of(ks & _KEY_BITS) if below is None else below
                    if getattr(below, "keeps_base", False):
                        continue
                bits |= 1 << key
        return bits

    def _kernel_of(self, bits: int) -> Any:
        """The kernel the highest key of ``bits`` runs, without implied keys or caching; None if there is none."""
        while bits:
            key = DispatchKey(bits.bit_length() - 1)
            kernel = self._lookup_key(key)
            if kernel is not None and kernel is not FALLTHROUGH:
                return kernel
            bits &= ~(1 << key)
        return None

    def _missing_message(self, ks: int) -> str:
        ks &= _KEY_BITS
        backend = DispatchKeySet(ks).highestPriorityTypeId().name
        for key in (DispatchKey.SparseCsrCPU, DispatchKey.SparseCPU, DispatchKey.CUDA, DispatchKey.Meta,
                    DispatchKey.CPU):
            if ks >> key & 1:
                backend = key.name
                break
        avail = ", ".join(k.name for k in sorted(self.kernels, key=int))
        return (f"Could not run '{self.qualified_name}' with arguments from the '{backend}' backend. "
                f"'{self.qualified_name}' is only available for these backends: [{avail}].")

    def call(self, ks: int, *args: Any) -> Any:
        """Dispatch: apply thread-local keys, find the kernel of the highest key, run it."""
        if keys_set:
            inc, keep = tls.keys
            ks = (ks | inc) & keep
        else:                       # Note [Thread-local keys nobody set]
            ks &= _DEFAULT_KEEP
        k = self._cache.get(ks)
        if k is None:
            k = self.resolve(ks)
        return k(ks, *args)

    def _audited_call(self, ks: int, *args: Any) -> Any:
        """``call``, first checking that each tensor argument that requires grad has its Autograd key (Note [The
        Autograd key of a tensor that does not require grad]); in place of ``call`` when the environment sets
        ``EMBER_CHECK_AUTOGRAD_KEYS=1`` (an audit for the whole test suite: a tensor without the key would lose its
        gradient silently). The same frames as ``call``, so that warnings and tracebacks point where they do."""
        for a in args:
            for t in (a if isinstance(a, (list, tuple)) else (a,)):
                if isinstance(t, TensorImpl) and t.__dict__.get("_rg") and not t._ks & AUTOGRAD_MASK:
                    raise AssertionError(f"a tensor that requires grad lacks its Autograd key: {type(t).__name__} of "
                                         f"shape {tuple(t._data.shape)}, key set {t._ks:#x}, in {self.qualified_name}")
        inc, keep = tls.keys
        ks = (ks | inc) & keep
        k = self._cache.get(ks)
        if k is None:
            k = self.resolve(ks)
        return k(ks, *args)

    def redispatch(self, ks: int, *args: Any) -> Any:
        """Run the kernel for exactly ``ks`` (the caller removed its own key and those above it)."""
        k = self._redispatch_cache.get(ks)
        if k is None:
            k = self.resolve(ks, True)
        return k(ks, *args)

    def dispatch_trace(self, ks: int) -> list[str]:
        """The keys a call with ``ks`` visits and what each does (a debugging aid for learners)."""
        inc, keep = tls.keys
        ks = (ks | inc) & keep
        steps, bits = [], self._implied_keys(ks)
        while bits:
            key = DispatchKey(bits.bit_length() - 1)
            kernel = self._lookup_key(key)
            if kernel is FALLTHROUGH or kernel is None:
                steps.append(f"{key.name}: fallthrough")
            else:
                steps.append(f"{key.name}: {getattr(kernel, '__qualname__', kernel)}")
                break
            bits &= ~(1 << key)
        return steps


if os.environ.get("EMBER_CHECK_AUTOGRAD_KEYS") == "1":
    OperatorHandle.call = OperatorHandle._audited_call     # type: ignore[method-assign]


# Note [Dispatch key set of a call]
# (``DispatchKeyExtractor``) A call's key set is the union of its tensor arguments' key sets (``Tensor?``
# arguments that are None and empty ``Tensor[]`` lists add nothing); an op without tensor arguments (a
# factory) takes the key set of its ``device`` argument, or CPU's.  The generated internal op API and the
# Python bindings both compute it with these helpers.
def ks_opt(t: Any) -> int:
    return 0 if t is None else t._ks


def ks_out(t: Any) -> int:
    """An ``out=`` tensor's share of the call's key set: its math bits (Note [Math bits]), so that a conjugate view
    passed as ``out`` is written through its bit."""
    return t._ks & MATH_BITS if isinstance(t, TensorImpl) else 0


def ks_list(ts: Any) -> int:
    ks = 0
    for t in ts:
        if t is not None:
            ks |= t._ks
    return ks or KS_CPU


def ks_device(d: Any) -> int:
    return KS_OF_DEVICE_TYPE[canonical_device(d).type]


def keys_below(key: DispatchKey) -> int:
    """Mask of the keys strictly below ``key`` (for redispatch)."""
    return (1 << key) - 1


class Dispatcher:
    """The operator registry: ``Dispatcher.find("aten::add.Tensor")``."""

    ops: dict[str, OperatorHandle] = {}

    @classmethod
    def define(cls, schema: str, out_arity: int = 0, namespace: str = "aten",
               tags: tuple[str, ...] = ()) -> OperatorHandle:
        h = OperatorHandle(schema, out_arity, namespace, tags)
        key = h.qualified_name
        if key in cls.ops:
            raise RuntimeError(f"operator {key} defined twice")
        cls.ops[key] = h
        return h

    @classmethod
    def undefine(cls, h: OperatorHandle) -> None:
        """Remove an operator a library defined (``Library._destroy``)."""
        cls.ops.pop(h.qualified_name, None)

    @classmethod
    def find(cls, name: str) -> OperatorHandle:
        if "::" not in name:
            name = "aten::" + name
        try:
            return cls.ops[name]
        except KeyError:
            raise RuntimeError(f"No such operator {name}") from None


def register_fallback(key: DispatchKey, kernel: Any) -> None:
    _backend_fallbacks[key] = kernel
    for h in Dispatcher.ops.values():
        h.clear_cache()


class ExcludeDispatchKeyGuard:
    """Context manager: exclude keys from dispatch on this thread (``c10::impl::ExcludeDispatchKeyGuard``)."""

    def __init__(self, keys: DispatchKeySet | DispatchKey) -> None:
        self.bits = keys.repr_ if isinstance(keys, DispatchKeySet) else 1 << keys

    def __enter__(self) -> Any:
        self.prev = inc, keep = tls.keys
        if self.bits & AUTOGRAD_MASK and not self.bits & _AD_INPLACE_OR_VIEW_BIT:   # Note [Kernel resolution]
            inc |= NO_IMPLIED_AUTOGRAD
        tls.keys = (inc, keep & ~self.bits)

    def __exit__(self, *exc: Any) -> Any:
        tls.keys = self.prev


class IncludeDispatchKeyGuard:
    def __init__(self, keys: DispatchKeySet | DispatchKey) -> None:
        self.bits = keys.repr_ if isinstance(keys, DispatchKeySet) else 1 << keys

    def __enter__(self) -> Any:
        self.prev = inc, keep = tls.keys
        tls.keys = (inc | self.bits, keep)

    def __exit__(self, *exc: Any) -> Any:
        tls.keys = self.prev
