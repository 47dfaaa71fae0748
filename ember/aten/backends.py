"""The backends one generated kernel runs on, and the registration of the operator library's kernels.

Note [Backend kernels]
Most operators have one array kernel (``aten/kernels``) that serves every device: it receives the array module
(``xp``: NumPy or CuPy) first and computes with it. For such an operator the code generator emits **one**
wrapper, registered for CPU and CUDA alike (``ember/_generated/registrations.py``: made by a factory that every
operator of the same shape shares, from the array kernel), which

1. looks up the backend by the call's key set — ``be = BACKEND[ks & ON_CUDA]`` (a key set whose highest backend
   is CPU has no CUDA tensor in it, since CUDA ranks above CPU);
2. unwraps its tensor arguments' arrays and calls the array kernel with ``be.xp``;
3. wraps the result as a tensor of the backend (``be.ks``, ``be.device``), a view of its base, or writes it into
   ``self`` / ``out=``.

The CUDA registration passes through ``cuda_kernel``, which does what PyTorch's generated CUDA wrappers do before
the kernel: the device check (all tensor arguments on the device; 0-dim CPU tensors are scalars and are moved to
it) and the device guard (results go on the device of the first CUDA tensor, or of the ``device`` argument).
Operators marked ``device_check: NoCheck`` (``copy_``: how data crosses devices) skip both and see their arrays
as they are. The Meta kernel is not generated either: it is derived from the same array kernel by the Meta
key's boxed fallback (``aten/meta.py``), from the facts the table below records.

``register_kernels`` reads the generated table: one row per operator with its wrapper factory, keys, array kernel,
keyword-only argument names, result kind and named-tuple class.
"""
from __future__ import annotations

from typing import Any

import threading

import numpy as np

from ember.c10.device import CPU, device as _device
from ember.c10.dispatch_key import KS_CPU, KS_CUDA, DispatchKey
from ember.aten.wrap import new_tensor
from ember.c10.tensor_impl import TensorImpl

ON_CUDA = 1 << DispatchKey.CUDA
_ON_CPU = 1 << DispatchKey.CPU


class Backend:
    """What a kernel wrapper needs of the backend it runs on: the array module, and the key set and device of
    the tensors it creates."""

    __slots__ = ("xp", "ks", "device")

    def __init__(self, xp: Any, ks: int, device: Any) -> None:
        self.xp, self.ks, self.device = xp, ks, device


class _CudaBackend(threading.local):
    """CUDA: CuPy, imported on first use; ``device`` is set per call by ``cuda_kernel`` (the device guard), per
    thread."""

    ks = KS_CUDA

    def __init__(self) -> None:
        self.device = _device("cuda", 0)

    @property
    def xp(self) -> Any:
        import cupy  # type: ignore[import-not-found, unused-ignore]
        return cupy


CPU_BACKEND = Backend(np, KS_CPU, CPU)
CUDA_BACKEND = _CudaBackend()
BACKEND = {0: CPU_BACKEND, ON_CUDA: CUDA_BACKEND}


def _mismatch(t: Any) -> RuntimeError:
    return RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                        f"cuda:0 and {t._device}!")


def _to_cuda(a: Any, dev: Any) -> Any:
    """A CPU argument of a CUDA call: a 0-dim tensor (a scalar, as in PyTorch) is copied to the device; any other
    CPU tensor is PyTorch's device-mismatch error."""
    if isinstance(a, TensorImpl):
        if a._device.type != "cpu":
            return a
        if a._data.ndim:
            raise _mismatch(a)
        return new_tensor(CUDA_BACKEND.xp.asarray(a._data), KS_CUDA, dev)
    if isinstance(a, (list, tuple)) and any(isinstance(x, TensorImpl) for x in a):
        return type(a)(_to_cuda(x, dev) for x in a)
    return a


def _cuda_device_of(args: Any) -> Any:
    """The device guard's device: the first CUDA tensor argument's, else a CUDA ``device`` argument's, else cuda:0."""
    for a in args:
        if isinstance(a, TensorImpl):
            if a._device.type == "cuda":
                return a._device
        elif isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, TensorImpl) and x._device.type == "cuda":
                    return x._device
    for a in args:
        if isinstance(a, _device) and a.type == "cuda":
            return a if a.index is not None else _device("cuda", 0)
    return _device("cuda", 0)


def cuda_kernel(fn: Any, device_check: bool = True) -> Any:
    """The CUDA registration of a backend wrapper: device check and device guard, then the wrapper."""
    def kernel(ks: Any, *args: Any) -> Any:
        dev = _cuda_device_of(args)
        if device_check and ks & _ON_CPU:  # a CPU tensor among the arguments
            args = tuple(_to_cuda(a, dev) for a in args)
        CUDA_BACKEND.device = dev
        return fn(ks, *args)
    kernel.__qualname__ = kernel.__name__ = "cuda" + fn.__name__
    setattr(kernel, "__wrapped__", fn)
    if getattr(fn, "keeps_base", False):    # Note [Views keep their base below autograd] in aten/dispatcher.py
        setattr(kernel, "keeps_base", True)
    return kernel


def written_in_cpp(fn: Any) -> Any:
    """A function PyTorch writes in C++ that ember writes above the dispatcher (``torch.gradient``'s body): while it
    runs, a dispatch handler sees the Scalar overloads as themselves, as in a composite op (``composite_kernel``)."""
    from ember.aten.dispatcher import python_key_used, tls

    def call(*args: Any, **kwargs: Any) -> Any:
        if not python_key_used[0] or tls.in_formula:
            return fn(*args, **kwargs)
        tls.in_formula = True
        try:
            return fn(*args, **kwargs)
        finally:
            tls.in_formula = False
    call.__qualname__, call.__name__, call.__doc__ = fn.__qualname__, fn.__name__, fn.__doc__
    setattr(call, "__wrapped__", fn)
    return call


def composite_kernel(fn: Any) -> Any:
    """A composite op's registration: the function of ``aten/composite``, which takes no key set. PyTorch writes
    these in C++, where ``x * 2`` *is* ``mul.Scalar``: while one runs, a dispatch handler sees the Scalar overloads
    as themselves (``tls.in_formula``, Note [Overloads PyTorch's bindings hide] in ember/_ops.py). Only the Python
    key reads the flag, so until a dispatch mode or a Python-key tensor has existed a call pays one list read.
    An alias (``divide``, ``true_divide``: ``ember/aten/composite/aliases.py``) is the exception: called from its
    binding with a number it stands for PyTorch's binding call of its base on the wrapped number, so its calls are
    reported as the base's binding calls are."""
    from ember.aten.dispatcher import python_key_used, tls

    if getattr(fn, "is_alias", False):
        def alias(ks: Any, *args: Any) -> Any:
            return fn(*args)
        alias.__qualname__ = alias.__name__ = "composite_" + fn.__name__
        setattr(alias, "__wrapped__", fn)
        return alias

    def kernel(ks: Any, *args: Any) -> Any:
        if not python_key_used[0] or tls.in_formula:
            return fn(*args)
        tls.in_formula = True
        try:
            return fn(*args)
        finally:
            tls.in_formula = False
    kernel.__qualname__ = kernel.__name__ = "composite_" + fn.__name__
    setattr(kernel, "__wrapped__", fn)
    return kernel


_ARRAY_KERNELS: dict[Any, tuple[Any, tuple[str, ...], str, Any]] = {}


def array_kernel(op: Any) -> tuple[Any, tuple[str, ...], str, Any] | None:
    """The array kernel behind ``op``'s backend wrapper, the keyword-only argument names it takes, how the wrapper
    delivers its result ("new", "view", "inplace", "out", "mutating") and the named tuple of the result, if the
    operator has a generated backend wrapper (graph compilers call the kernel on arrays directly)."""
    return _ARRAY_KERNELS.get(op)


def compiled_loops_enabled() -> bool:
    """Whether numba-compiled loops are in use (numba importable, ``EMBER_COMPILED_KERNELS`` not 0): graph compilers
    generate fused loops only then."""
    from ember.aten.kernels import compiled
    return compiled.is_enabled()


def register_kernels(backend_rows: Any, composite_rows: Any, no_device_check: Any) -> None:
    """Register the generated table (Note [Backend kernels]).

    ``backend_rows``: ``(op, wrapper factory, keys, array kernel, keyword-only argument names, result kind, named
    tuple)``, the factory making the CPU / CUDA kernel from ``(array kernel, op name, named tuple)``;
    ``composite_rows``: ``(op, key, function)``; ``no_device_check``: the ops declared ``device_check: NoCheck``."""
    from ember.aten import meta
    for op, factory, keys, kernel, kwnames, kind, rt in backend_rows:
        fn = factory(kernel, op.name, rt)
        fn.__name__ = fn.__qualname__ = f"{op.name}_{op.overload_name or 'default'}"
        _ARRAY_KERNELS[op] = (kernel, kwnames, kind, rt)
        check = op not in no_device_check
        for k in keys:
            if k == "CPU":
                op.register(DispatchKey.CPU, fn)
            elif k == "CUDA":
                op.register(DispatchKey.CUDA, cuda_kernel(fn, check))
            elif k == "Meta":
                meta.derive(op, fn, kernel, kwnames, kind, rt, check)
            else:
                raise ValueError(f"{op}: no backend {k}")
    for op, key, fn in composite_rows:
        op.register(DispatchKey[key], composite_kernel(fn))
