"""Fake tensors: shapes, dtypes, strides and devices, no data (``torch/_subclasses/fake_tensor.py``).

Note [Fake tensors]
A ``FakeTensor`` is a wrapper subclass (``Tensor._make_wrapper_subclass``) that says it lives on a real device
(``cpu``, ``cuda``) but holds only metadata: its array is the metadata-only array of a meta tensor (Note [Meta
tensors] in ``ember/c10/tensor_impl.py``). Under a ``FakeTensorMode`` every operator reaches the mode through the
Python key (Note [The Python key]); the mode hands the meta twins of its fake arguments to the operator, which
runs its Meta kernel -- shapes, dtypes and PyTorch's errors, no arithmetic -- and wraps the meta results as fake
tensors on the arguments' device (or the ``device=`` argument's, for factories). An in-place op returns its fake
argument itself; a view shares its version counter. Operators whose output shape depends on the data
(``nonzero``, ``unique``, ``masked_select``) raise ``DynamicOutputShapeException``, and reading a value
(``.item()``) raises ``DataDependentOutputException``, as in PyTorch.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

from ember._tensor import Tensor
from ember.aten.torch_function import _disabled_torch_function_impl
from ember.aten.dispatcher import NotImplementedForKey
from ember.aten.wrap import new_tensor, view_of
from ember.c10.tensor_impl import fake_array
from ember.c10.device import META, canonical
from ember.c10.dispatch_key import KS_META, requiring_grad
from ember.utils._python_dispatch import TorchDispatchMode
from ember.utils._pytree import tree_flatten, tree_unflatten
from ember.c10.dtype import get_default_dtype
from ember.c10.tensor_impl import VersionCounter

__all__ = ["FakeTensor", "FakeTensorMode", "DataDependentOutputException", "DynamicOutputShapeException",
           "UnsupportedFakeTensorException"]


class UnsupportedFakeTensorException(RuntimeError):
    pass


class DataDependentOutputException(RuntimeError):
    """An operator needed a tensor's values (``.item()``, ``if x.sum() > 0``)."""

    def __init__(self, func: Any) -> None:
        super().__init__(str(func))
        self.func = func


class DynamicOutputShapeException(RuntimeError):
    """An operator's output shape depends on the values of its input (``nonzero``)."""

    def __init__(self, func: Any) -> None:
        super().__init__(str(func))
        self.func = func


# operators whose output shape is decided by the data (PyTorch tags them ``dynamic_output_shape``)
_DYNAMIC_OUTPUT_SHAPE = {"nonzero", "masked_select", "_unique2", "unique_consecutive", "unique_dim", "bincount",
                         "repeat_interleave.Tensor", "histc", "_histogramdd_bin_edges", "argwhere"}
_DATA_DEPENDENT = {"_local_scalar_dense", "equal", "allclose", "is_nonzero"}


class FakeTensor(Tensor):
    """A tensor with metadata and no data, made by a ``FakeTensorMode`` (Note [Fake tensors])."""

    fake_mode: FakeTensorMode
    fake_device: Any

    @staticmethod
    def __new__(cls, fake_mode: FakeTensorMode, elem: Any, device: Any) -> Any:
        t = Tensor._make_wrapper_subclass(cls, (), dtype=elem.dtype, device=device)
        t._data = elem._data        # the meta twin's metadata-only array: same sizes and strides
        t._vc = elem._vc
        t.fake_mode = fake_mode
        t.fake_device = t._device
        return t

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        """Outside its mode, a fake tensor still computes fake: the call goes to the mode that made it."""
        leaves, _ = tree_flatten((args, kwargs or {}))
        mode = next(t.fake_mode for t in leaves if isinstance(t, FakeTensor))
        with mode:
            return func(*args, **(kwargs or {}))

    # results are fake already (the mode makes them): no __torch_function__ conversion needed
    __torch_function__ = staticmethod(_disabled_torch_function_impl)

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        extra = ""
        if self.fake_device.type != "cpu":
            extra += f", device='{self.fake_device}'"
        size = tuple(self.shape)
        s = f"FakeTensor(...{extra}, size={size}"
        if self.dtype is not get_default_dtype():
            s += f", dtype={self.dtype}"
        return s + ")"

    def tolist(self) -> Any:
        return self.item()  # raises DataDependentOutputException, as PyTorch does

    def numpy(self, *, force: bool = False) -> Any:
        raise RuntimeError(".numpy() is not supported for tensor subclasses.")


def _meta_twin(t: Any) -> Any:
    """A meta tensor over the fake tensor's metadata-only array (sharing its version counter)."""
    m = view_of(t._data, t)
    m._ks = KS_META
    m._device = META
    return m


class _FakeDispatch(threading.local):
    def __init__(self) -> None:
        self.depth = 0


_fake_dispatch = _FakeDispatch()


def in_fake_dispatch() -> bool:
    """Whether an operator is running on fake tensors' metadata now (a library's fake function tells a
    FakeTensorMode trace from a plain meta-tensor call by this: ``ember.library.get_ctx``)."""
    return _fake_dispatch.depth > 0


class FakeTensorMode(TorchDispatchMode):
    """While active, factories make fake tensors and every operator on fake tensors computes only metadata."""

    def __init__(self, *, allow_fallback_kernels: bool = True, allow_non_fake_inputs: bool = False,
                 shape_env: Any = None, static_shapes: Any = None, export: bool = False) -> None:
        super().__init__()
        if shape_env is not None:
            raise NotImplementedError("FakeTensorMode: symbolic shapes (shape_env) are not supported by ember")
        self.allow_non_fake_inputs = allow_non_fake_inputs
        self.allow_fallback_kernels = allow_fallback_kernels
        self.static_shapes = True if static_shapes is None else static_shapes
        self.shape_env = None
        self._memo: dict[int, tuple[Any, FakeTensor]] = {}   # id(real) -> (weak reference to it, its fake)

    def __repr__(self) -> str:
        return f"<FakeTensorMode object at {hex(id(self))}>"

    # -- real -> fake
    def from_tensor(self, t: Any, *, static_shapes: Any = None, source: Any = None, symbolic_context: Any = None,
                    trace: bool = True) -> FakeTensor:
        """The fake twin of a real tensor (the same one each time): its sizes, strides, dtype, device and
        requires_grad, none of its data."""
        if isinstance(t, FakeTensor):
            if t.fake_mode is not self:
                raise AssertionError("Mixing fake modes NYI")
            return t
        hit = self._memo.get(id(t))
        if hit is not None and hit[0]() is t:
            return hit[1]
        meta = view_of(fake_array(tuple(t.shape), t._data.dtype, t.stride()), t)
        meta._ks, meta._device = KS_META, META
        meta._vc = VersionCounter()
        f = FakeTensor(self, meta, t.device)
        if t.requires_grad:
            f.__dict__["_rg"] = True    # not requires_grad_(): a capture in progress must not see a user's call
            f._ks = requiring_grad(f._ks)
        key = id(t)
        self._memo[key] = (weakref.ref(t, lambda _r: self._memo.pop(key, None)), f)
        return f

    def fake_with_sizes(self, t: Any, sizes: tuple[int, ...], requires_grad: bool | None = None) -> FakeTensor:
        """A fake tensor like ``t`` -- dtype, device, requires_grad (unless given), the order of its strides -- but
        of ``sizes`` (an export traces its program again at other sizes of the dynamic dimensions)."""
        nd = t.dim()
        inner_first = sorted(range(nd), key=lambda d: (t.stride(d), -d))
        strides = [0] * nd
        step = 1
        for d in inner_first:
            strides[d] = step
            step *= max(int(sizes[d]), 1)
        return self.fake_tensor(tuple(sizes), tuple(strides), t.dtype, t.device,
                                t.requires_grad if requires_grad is None else requires_grad)

    def fake_tensor(self, sizes: tuple[int, ...], strides: tuple[int, ...], dtype: Any, device: Any,
                    requires_grad: bool = False) -> FakeTensor:
        """A fake tensor of these sizes, strides, dtype and device (a graph read from a file describes its
        tensors so)."""
        meta = new_tensor(fake_array(sizes, dtype.np, strides), KS_META, META)
        f = FakeTensor(self, meta, canonical(device))
        if requires_grad:
            f.__dict__["_rg"] = True
            f._ks = requiring_grad(f._ks)
        return f

    # -- every operator
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func.__name__.split(".")[0]
        if name in _DATA_DEPENDENT:
            raise DataDependentOutputException(func)
        if name in _DYNAMIC_OUTPUT_SHAPE or func.__name__ in _DYNAMIC_OUTPUT_SHAPE:
            raise DynamicOutputShapeException(func)
        if func.__name__ == "index.Tensor" and any(
                isinstance(i, Tensor) and i.dtype.name in ("bool", "uint8") for i in (args[1] or ())):
            raise DynamicOutputShapeException(func)     # a boolean mask selects as many elements as are true
        leaves, spec = tree_flatten((args, kwargs))
        device = None
        fakes: dict[int, Any] = {}
        new_leaves = []
        for x in leaves:
            if isinstance(x, Tensor):
                if not isinstance(x, FakeTensor) or x.fake_mode is not self:
                    if isinstance(x, FakeTensor) or not self.allow_non_fake_inputs:
                        raise AssertionError(
                            "Please convert all Tensors to FakeTensors first or instantiate FakeTensorMode with "
                            f"'allow_non_fake_inputs'. Found in {func}(*{args!r}, **{kwargs!r})")
                    x = self.from_tensor(x)
                device = device or x.fake_device
                m = _meta_twin(x)
                fakes[id(m)] = x
                new_leaves.append(m)
            else:
                new_leaves.append(x)
        margs, mkwargs = tree_unflatten(new_leaves, spec)
        if "device" in mkwargs:  # a factory: the result lives on the device asked for
            if mkwargs["device"] is not None:
                device = canonical(mkwargs["device"])
            mkwargs["device"] = META
        elif not fakes and func._schema.returns and any(a.name == "device" for a in func._schema.arguments):
            mkwargs["device"] = META
        if device is None:
            device = canonical("cpu")
        _fake_dispatch.depth += 1
        try:
            out = func(*margs, **mkwargs)
        except NotImplementedForKey:
            if not self.allow_fallback_kernels:
                raise
            return self._run_fallback_kernel(func, leaves, spec, fakes, device)
        finally:
            _fake_dispatch.depth -= 1
        for m in new_leaves:  # an op that changed a fake argument's metadata (resize_, set_)
            f = fakes.get(id(m))
            if f is not None and m._data is not f._data:
                f._data = m._data
        return self._wrap(out, fakes, device)

    def _run_fallback_kernel(self, func: Any, leaves: list[Any], spec: Any, fakes: dict[int, Any],
                             device: Any) -> Any:
        """An operator without a Meta kernel runs its real kernel on zero-filled tensors of the fake arguments'
        metadata (PyTorch's fallback kernels, ``allow_fallback_kernels``), and its results become fake tensors."""
        from ember._generated import aten
        real_of: dict[int, Any] = {}
        new_leaves = []
        for x in leaves:
            if isinstance(x, FakeTensor):
                r = aten.zeros(tuple(x.shape), dtype=x.dtype)
                real_of[id(r)] = x
                new_leaves.append(r)
            else:
                new_leaves.append(x)
        args, kwargs = tree_unflatten(new_leaves, spec)
        out = func(*args, **kwargs)

        def to_fake(o: Any) -> Any:
            if isinstance(o, Tensor):
                f = real_of.get(id(o))
                if f is not None:
                    return f
                meta = view_of(fake_array(tuple(o.shape), o._data.dtype, o.stride()), o)
                meta._ks, meta._device = KS_META, META
                return FakeTensor(self, meta, device)
            if isinstance(o, (list, tuple)):
                r = [to_fake(v) for v in o]
                return type(o)(r) if type(o) in (list, tuple) else type(o)(*r)
            return o
        return to_fake(out)

    def _wrap(self, out: Any, fakes: dict[int, Any], device: Any) -> Any:
        if isinstance(out, Tensor):
            f = fakes.get(id(out))
            if f is not None:       # in-place / out= ops return their argument
                return f
            return FakeTensor(self, out, device)
        if isinstance(out, (list, tuple)):
            r = [self._wrap(o, fakes, device) for o in out]
            return type(out)(r) if type(out) in (list, tuple) else type(out)(*r)
        return out
