"""``ember.Tensor`` (mirrors ``torch/_tensor.py`` over ``torch._C.TensorBase``).

The class adds to ``TensorImpl`` the Python protocol (operators, indexing, conversions, ``repr``); the
bulk of its methods (``add``, ``sum``, ``view``, ...) are generated from native_functions.yaml into
``ember/_generated/tensor_methods.py`` and installed below.
"""
from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ember.c10.dtype import BF16_NP as _BF16
from ember.c10.dtype import SCALAR_TYPE_NAMES as _SCALAR_TYPE_NAMES

from ember import _python_arg_parser
from ember.aten import torch_function as _tf
from ember import _python_key
from ember.aten.dispatcher import tls as _dispatch_tls
from ember._generated import aten
from ember.aten.composite import wrapped_number
from ember.aten import wrap as _wrap
from ember.aten.math_bits import values_of as _values_of
from ember.c10 import compile_state as _cs
from ember.c10 import dtype as _dt
from ember.c10 import memory_format as _mf
from ember.c10.device import CPU, canonical
from ember.c10.tensor_impl import TensorImpl, VersionCounter, contiguous_strides, fake_array
from ember.c10.dispatch_key import (AUTOGRAD_MASK, KS_OF_DEVICE_TYPE, MATH_BITS as _MATH_BITS, not_requiring_grad,
                                   requiring_grad, SPARSE_MASK as _SPARSE_MASK, DispatchKey as _DK)
from ember.aten.sparse.tensor import LAYOUT_NAMES as _LAYOUT_NAMES, alias_parts as _sparse_alias
from ember.c10.grad_mode import state
from ember.autograd.grad_mode import no_grad as _no_grad
from ember.c10.device import device as _device
from ember.c10.storage import root_array, shared_copy, UntypedStorage

_NUMBER = (bool, int, float, complex, np.number, np.bool_)
_SPARSE_COO_BIT = 1 << _DK.SparseCPU
_SPARSE_CSR_BIT = 1 << _DK.SparseCsrCPU
_strided, _sparse_csr = _mf.strided, _mf.sparse_csr
_NUMBER_TYPES = _python_arg_parser.NUMBER_TYPES


def _binary(dunder: str, name: str, tensor_op: Callable[..., Tensor],
            scalar_op: Callable[..., Tensor]) -> Callable[[Tensor, Any], Tensor]:
    """A binary operator (Note [Tensor operators])."""
    def operator(self: Tensor, other: Any) -> Tensor:
        if not _TF_ON:
            if isinstance(other, Tensor):
                return tensor_op(self, other)
            if type(other) in _NUMBER_TYPES:
                return scalar_op(self, other)
        # Note [Keeping __torch_function__ off the path of plain tensors]; the function reported is the method
        # PyTorch reports for the operator (``a + b``: Tensor.add)
        try:
            r = _tf.dispatch(_reported(operator), (self, other), None)
        except _tf._AllNotImplemented:
            return NotImplemented       # Python then tries the reflected operator, and raises its TypeError
        if r is not _tf.NOT_HANDLED:
            return r
        if isinstance(other, Tensor):
            return tensor_op(self, other)
        if type(other) in _NUMBER_TYPES:
            return scalar_op(self, other)
        return getattr(self, name)(other)
    operator.__name__, operator.__qualname__ = dunder, f"Tensor.{dunder}"
    operator._checks_torch_function = True  # type: ignore[attr-defined]
    return operator


_TF_PLAIN = _tf._PLAIN
# what places a tensor in a graph (its node, its base, its gradient accumulator): not copied by deepcopy
_GRAPH_PLACE = frozenset({"_grad_fn", "_output_nr", "_base", "_attr_version", "_acc"})
_TF_ON = False                  # Note [Keeping __torch_function__ off the path of plain tensors]


def _switch_torch_function(on: bool) -> None:
    global _TF_ON
    _TF_ON = on


_tf.on_switch(_switch_torch_function)
# Whether a dispatch mode or a Python-key tensor has ever existed in the process (``_python_key.on_first_use``):
# until then item() and detach() skip the test for the key.
_PY_ON = False
_PY_BIT = _python_key.PYTHON_BIT


def _python_key_on() -> None:
    global _PY_ON
    _PY_ON = True


_python_key.on_first_use(_python_key_on)

_indexing_getitem: Any = None   # ember._indexing's getitem / setitem, installed when it is imported
_indexing_setitem: Any = None

# Note [The function an operator reports]: what PyTorch passes to __torch_function__ for an operator (measured on
# PyTorch 2.13): the method for most (``a + b``: Tensor.add, ``a += b``: Tensor.add_, ``1 & a``:
# Tensor.bitwise_and), the dunder itself for the rest (``a // b``: Tensor.__floordiv__).
_OPERATOR_REPORTS = {"__add__": "add", "__radd__": "add", "__sub__": "sub", "__mul__": "mul", "__rmul__": "mul",
                     "__truediv__": "div", "__mod__": "remainder", "__pow__": "pow", "__lt__": "lt", "__le__": "le",
                     "__gt__": "gt", "__ge__": "ge", "__ne__": "ne", "__matmul__": "matmul", "__neg__": "neg",
                     "__pos__": "positive", "__abs__": "abs", "__iadd__": "add_", "__isub__": "sub_",
                     "__imul__": "mul_", "__itruediv__": "div_", "__rand__": "bitwise_and", "__ror__": "bitwise_or",
                     "__rxor__": "bitwise_xor"}


def _reported(fn: Any) -> Any:
    name = _OPERATOR_REPORTS.get(fn.__name__)
    return getattr(Tensor, fn.__name__) if name is None else getattr(Tensor, name)


def _reflected(other: Any, self, rop: Any) -> Any:
    """``other <op> self`` for an operand that is neither a Tensor nor a Python number: NumPy scalars count as
    their Python value; anything else is not ours (Python then raises its TypeError)."""
    if isinstance(other, (np.number, np.bool_)):
        return rop(self, other.item())
    return NotImplemented


if TYPE_CHECKING:  # the generated methods' signatures, for type checkers (Note [Type stubs] in tools/codegen/gen.py)
    from ember._generated.tensor_methods import _TensorMethods
else:
    _TensorMethods = object


def _suggest_memory_format(t: Any) -> Any:
    a = t._data
    if a.ndim not in (4, 5):
        return _mf.contiguous_format
    return _mf.suggest_memory_format(a.shape, tuple(st // a.itemsize for st in a.strides))


class Tensor(TensorImpl, _TensorMethods):
    """A multi-dimensional array with a dtype and a device; see ``ember.tensor`` to make one."""
    __module__ = "ember"      # where it is public (Note [Printed module name])

    __array_priority__ = 1000
    __slots__ = ()

    # -- construction ---------------------------------------------------------------------------
    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is not Tensor and args and isinstance(args[0], Tensor):  # subclass wrapping (Parameter)
            return args[0].as_subclass(cls)
        import ember
        if not args:
            return ember.empty(0)
        if len(args) == 1 and not isinstance(args[0], int) and not isinstance(args[0], Tensor):
            return ember.tensor(args[0], dtype=_dt.get_default_dtype())
        return ember.empty(args, **kwargs)

    # -- autograd (the state lives in the instance dict; these class values are the defaults) -------
    _rg = False          # requires grad (True for leaves that require it and for outputs with a grad_fn)
    _grad_fn: Any = None
    _grad: Tensor | None = None
    _output_nr = 0
    _base: Tensor | None = None  # the tensor this one is a view of
    _inference = False

    @property
    def requires_grad(self) -> builtins.bool:
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value: Any) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: builtins.bool = True) -> Tensor:
        """Set whether autograd records operations on this leaf tensor."""
        if builtins.bool(requires_grad) != self._rg:
            _cs.state_changing("Tensor.requires_grad_()", "A compiled region changed whether a tensor requires grad.")
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                                   "computed variable in a subgraph that doesn't require differentiation use "
                                   "var_no_grad = var.detach().")
            return self
        if requires_grad and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        if requires_grad and self._inference:
            if not state.inference:
                raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not "
                                   "allowed.")
        self.__dict__["_rg"] = builtins.bool(requires_grad)
        if requires_grad:   # Note [The Autograd key of a tensor that does not require grad] (kept when it stops)
            self._ks = requiring_grad(self._ks)
        return self

    @property
    def grad_fn(self) -> Any:
        if self._base is not None:  # a view whose base changed in place reads from the base's new history
            from ember.autograd.recording import view_history
            return view_history(self)
        return self._grad_fn

    @property
    def is_leaf(self) -> builtins.bool:
        return self._grad_fn is None

    @property
    def grad(self) -> Tensor | None:
        capture = _cs.state.capturing
        if capture is not None and "fake_mode" not in self.__dict__:   # a real tensor's .grad inside ember.compile
            return capture.read_grad(self)
        if self._grad_fn is not None and not self.__dict__.get("_retains_grad") and self._grad is None:
            import warnings
            warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
                          "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
                          "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
                          "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
                          "instead.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            allowed = self.__dict__.get("_grad_dtype", self.dtype)
            if allowed is not None and value.dtype is not allowed:
                got, want = _dt.cpp_type_name(value.dtype.name), _dt.SCALAR_TYPE_NAMES[allowed.name]
                raise RuntimeError(f"attempting to assign a gradient with dtype '{got}' to a tensor with grad_dtype "
                                   f"'{want}'. The gradient must match the tensor's grad_dtype (defaults to the "
                                   "tensor's dtype). You can set the tensor's grad_dtype attribute with a specific "
                                   "dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the "
                                   "dtypes of a tensor and its gradient may break downstream systems that assume they "
                                   "match.")
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError("assigned grad has data of a different size")
        capture = _cs.state.capturing
        if capture is not None and "fake_mode" not in self.__dict__:
            capture.write_grad(self, value)
            return
        self.__dict__["_grad"] = value

    @property
    def grad_dtype(self) -> Any:
        """The dtype ``.grad`` must have (the tensor's own by default; None allows any): autograd casts the
        gradients it accumulates into this leaf to it."""
        if self._grad_fn is not None:
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        return self.__dict__.get("_grad_dtype", self.dtype)

    @grad_dtype.setter
    def grad_dtype(self, value: Any) -> None:
        if self._grad_fn is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if value is not None and not isinstance(value, _dt.dtype):
            raise TypeError(f"grad_dtype must be a torch.dtype or None, but got {type(value).__name__}")
        self.__dict__["_grad_dtype"] = value

    @property
    def retains_grad(self) -> builtins.bool:
        return builtins.bool(self.__dict__.get("_retains_grad"))

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor during backward."""
        _cs.graph_break("Tensor.retain_grad()", "A compiled region asked to keep a non-leaf tensor's gradient.")
        if not self._rg:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self.__dict__.get("_retains_grad"):
            return
        import weakref
        self._grad_fn._retains_grad[self._output_nr] = weakref.ref(self)
        self.__dict__["_retains_grad"] = True

    def register_hook(self, hook: Any) -> Any:
        """``hook(grad)`` runs when the gradient of this tensor is computed; it may return a new gradient."""
        _cs.graph_break("Tensor.register_hook()", "A compiled region registered a gradient hook.")
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        from ember.autograd.graph import _RemovableHandle
        from ember.autograd.recording import grad_accumulator
        node = self._grad_fn if self._grad_fn is not None else grad_accumulator(self)
        hooks = node._tensor_pre_hooks.setdefault(self._output_nr if self._grad_fn is not None else 0, [])
        hooks.append(hook)
        return _RemovableHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Any) -> Any:
        """``hook(tensor)`` runs after the gradient was accumulated into ``.grad`` of this leaf."""
        _cs.graph_break("Tensor.register_post_accumulate_grad_hook()", "A compiled region registered a hook.")
        if self._grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        from ember.autograd.graph import _RemovableHandle
        from ember.autograd.recording import grad_accumulator
        acc = grad_accumulator(self)
        acc._post_acc_hooks.append(hook)
        return _RemovableHandle(acc._post_acc_hooks, hook)

    def backward(self, gradient: Any = None, retain_graph: Any = None, create_graph: Any = False,
                 inputs: Any = None) -> None:
        """Accumulate the gradient of this tensor into the ``.grad`` of the graph's leaves."""
        from ember.autograd import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> Tensor:
        """A tensor sharing data and version counter with this one, outside the graph."""
        if self._ks & _SPARSE_MASK or _PY_ON and (self._ks | _dispatch_tls.keys[0]) & _PY_BIT:
            return aten.detach(self)    # a mode or a subclass sees aten.detach; a sparse tensor's kernel shares parts
        return _wrap.view_of(self._data, self)

    # -- DLPack: other libraries read this tensor's memory without a copy (``np.from_dlpack(t)``)
    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> Any:
        if self._rg:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        if self.is_conj():
            raise BufferError("Can't export tensors with the conjugate bit set")
        return self._data.__dlpack__(**({"stream": stream} if stream is not None else {}))

    def __dlpack_device__(self) -> Any:
        return self._data.__dlpack_device__()

    # -- in-place view ops: ``self`` takes the metadata (and, in the graph, the place) of a view of itself
    def _become_view(self, view: Tensor) -> Tensor:
        from ember.autograd.grad_mode import state
        if self._rg and self._grad_fn is None and state.enabled:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        self._data = view._data
        if view._grad_fn is not None:
            self._grad_fn, self._output_nr = view._grad_fn, view._output_nr
        self._vc.version += 1
        return self

    def swapdims_(self, dim0: builtins.int, dim1: builtins.int) -> Tensor:
        return self.transpose_(dim0, dim1)

    swapaxes_ = swapdims_

    def as_strided_(self, size: Any, stride: Any, storage_offset: Any = None) -> Tensor:
        return self._become_view(self.as_strided(size, stride, storage_offset))

    def resize_(self, *sizes: Any, memory_format: Any = None) -> Tensor:
        """New sizes (contiguous strides) over the same storage when it is large enough, else over a larger copy
        of it; elements beyond the old ones are uninitialized (``resize_`` of Resize.cpp)."""
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = tuple(sizes[0])
        if self._rg:
            raise RuntimeError("cannot resize variables that require grad")
        for n in sizes:
            if n < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(sizes)}")
        numel = math.prod(sizes)
        dt = self._data.dtype
        if self._device.type == "meta":
            self._data = fake_array(sizes, dt)
        elif self._device.type != "cpu":
            raise NotImplementedError("resize_ of a CUDA tensor is not supported by ember yet")
        else:
            storage = self.untyped_storage()
            start = self.storage_offset() * dt.itemsize
            need = start + numel * dt.itemsize
            buf = storage._bytes()
            old_numel = self._data.size
            if need > buf.size:
                grown = np.empty(need, np.uint8)
                grown[:buf.size] = buf
                buf = grown
            self._data = buf[start:need].view(dt).reshape(sizes)
            if numel > old_numel:  # the new elements are uninitialized: deterministic mode fills them
                from ember.aten.context import fill_empty_deterministic
                fill_empty_deterministic(np, self._data.reshape(-1)[old_numel:])
        self._vc.version += 1
        return self

    def resize_as_(self, the_template: Tensor, memory_format: Any = None) -> Tensor:
        return self.resize_(tuple(the_template.shape))

    def detach_(self) -> Tensor:
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                               "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
                               "True, gradients are views of DDP buckets, and hence detach_() cannot be called on "
                               "these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
                               "function in torch/optim/optimizer.py as the solution.")
        d = self.__dict__
        for k in ("_grad_fn", "_rg", "_output_nr"):
            d.pop(k, None)
        return self

    @property
    def data(self) -> Tensor:
        """The same data outside autograd, with its own version counter (in-place changes through it are not
        seen by autograd's checks, as in PyTorch)."""
        t = _wrap.new_tensor(self._data, not_requiring_grad(self._ks), self._device)
        if self._ks & _SPARSE_MASK:
            _sparse_alias(t, self)
        return t

    @data.setter
    def data(self, other: Any) -> None:
        _cs.state_changing("setting Tensor.data", "A compiled region replaced a tensor's data.")
        self._data = other._data
        self._device = other._device
        if other._ks & _SPARSE_MASK:
            _sparse_alias(self, other)
        else:
            self.__dict__.pop("_sp", None)
        # its own autograd state stays: so does the Autograd key (Note [The Autograd key of a tensor that does not
        # require grad])
        self._ks = requiring_grad(other._ks) if self._ks & AUTOGRAD_MASK else other._ks

    def as_subclass(self, cls) -> Any:
        """``self`` as an instance of the Tensor subclass ``cls``: the same data, version counter and autograd
        state (the result stays attached to the graph)."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError("as_subclass(): argument 'cls' must be a subclass of torch.Tensor")
        t = object.__new__(cls)
        # both share one autograd state from now on, so both keep the Autograd key for good (Note [The Autograd key
        # of a tensor that does not require grad]): a requires_grad_() through either must reach both
        self._ks = requiring_grad(self._ks)
        # the Python key belongs to classes that define __torch_dispatch__ (a plain view of a subclass drops it)
        t._data, t._ks, t._vc, t._device = self._data, self._ks & ~_PY_BIT, self._vc, self._device
        # one tensor seen through two classes, as PyTorch's two Python objects over one TensorImpl: the autograd
        # state (grad_fn, .grad, requires_grad, hooks) is shared, so the alias stays in the graph
        t.__dict__ = self.__dict__
        if cls is not Tensor:
            _tf.note_subclass(cls)
            if _python_key.has_torch_dispatch(cls):  # its calls go to cls.__torch_dispatch__ (Note [The Python key])
                _python_key.note_used()
                t._ks = self._ks | _python_key.PYTHON_BIT
        return t

    @staticmethod
    def _make_subclass(cls: Any, data: Any, require_grad: Any = False, **kwargs: Any) -> Any:
        """A ``cls`` instance over ``data``'s storage, detached from its graph, a leaf that requires grad if
        ``require_grad`` (what ``Parameter.__new__`` is built on in PyTorch)."""
        if not isinstance(data, Tensor):
            raise TypeError(f"_make_subclass(): argument 'data' must be Tensor, not {type(data).__name__}")
        with _tf.DisableTorchFunction():     # one C++ call in PyTorch: no mode sees the steps
            t = data.detach()
            t.requires_grad_(bool(require_grad))
            return t.as_subclass(cls)

    @staticmethod
    def _make_wrapper_subclass(cls: Any, size: Any, strides: Any = None, storage_offset: Any = None,
                               memory_format: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
                               pin_memory: Any = False, requires_grad: Any = False,
                               dispatch_sizes_strides_policy: Any = None, dispatch_device: Any = False,
                               dispatch_layout: Any = False, _extra_dispatch_keys: Any = None,
                               storage_size: Any = None) -> Any:
        """A ``cls`` instance with the given metadata and no data of its own: every operator on it goes to
        ``cls.__torch_dispatch__`` through the Python key (Note [The Python key]), below autograd, which records
        the calls as for any tensor. Such a class usually holds the real tensor(s) as attributes."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError("_make_wrapper_subclass(): argument 'cls' must be a subclass of torch.Tensor")
        dt = _dt.get_default_dtype() if dtype is None else dtype
        dev = canonical(CPU if device is None else device)
        t = object.__new__(cls)
        t._data = fake_array(tuple(int(s) for s in size), dt.np,
                             None if strides is None else tuple(int(s) for s in strides), int(storage_offset or 0))
        _python_key.note_used()
        t._ks = KS_OF_DEVICE_TYPE[dev.type] | _python_key.PYTHON_BIT
        t._vc = VersionCounter()
        t._device = dev
        if requires_grad:
            t.requires_grad_(True)
        _tf.note_subclass(cls)
        return t

    __torch_dispatch__ = staticmethod(_python_key._disabled_torch_dispatch_impl)

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        """The default for subclasses: run ``func`` with subclass handling off, and return tensor results (also
        inside tuples and lists) as ``cls`` (``torch/_tensor.py``'s ``Tensor.__torch_function__``)."""
        if kwargs is None:
            kwargs = {}
        if not all(issubclass(cls, t) for t in types):
            return NotImplemented
        with _tf.DisableTorchFunctionSubclass():
            ret = func(*args, **kwargs)
            if func in _default_nowrap_functions():
                return ret
            return _convert(ret, cls)

    # -- conversion -----------------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        if self._ks & _SPARSE_MASK:
            raise TypeError(f"can't convert {_LAYOUT_NAMES[self.layout]} layout tensor to numpy. Use "
                            "Tensor.to_dense() first.")
        if self.is_quantized:
            raise TypeError(f"Got unsupported ScalarType {_SCALAR_TYPE_NAMES[self.dtype.name]}")
        if self._device.type != "cpu":
            if not force:
                raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use "
                                "Tensor.cpu() to copy the tensor to host memory first.")
            return self.cpu()._data
        if self._ks & _MATH_BITS:      # the array would hold the memory, not the values (Note [Math bits])
            if force:
                return _values_of(self)._data
            which, fix = ("conjugate", "resolve_conj") if self.is_conj() else ("negative", "resolve_neg")
            raise RuntimeError(f"Can't call numpy() on Tensor that has {which} bit set. Use tensor.{fix}().numpy() "
                               "instead.")
        return self._data

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def item(self) -> Any:
        if _PY_ON and (self._ks | _dispatch_tls.keys[0]) & _PY_BIT:  # a mode or a subclass sees the read
            return aten._local_scalar_dense(self)
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        if self._device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        if self._ks & _SPARSE_MASK:     # no kernel reads a sparse tensor's one element (PyTorch's refusal)
            return aten._local_scalar_dense(self)
        v = _values_of(self.cpu())._data.reshape(()).item()
        if type(v) is tuple:      # a quantized element (Note [Quantized dtypes]): kept off item()'s usual path
            raise RuntimeError("load_scalar: invalid type")
        if self._data.dtype == _BF16:
            return builtins.float(v)
        return v

    def tolist(self) -> Any:
        if self._device.type == "meta":
            raise RuntimeError("Tensor.tolist() is not supported for meta tensors")
        if self.is_quantized:
            raise RuntimeError("load_scalar: invalid type")
        if self._ks & _SPARSE_MASK:
            raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")
        t = self.resolve_conj().resolve_neg() if self._ks & _MATH_BITS else self   # (a mode sees the clone)
        a = t.cpu()._data
        if a.dtype == _BF16:
            a = a.astype(np.float32)
        return a.tolist()

    def __float__(self) -> builtins.float:
        return builtins.float(self._scalar("float"))

    def __int__(self) -> builtins.int:
        return builtins.int(self._scalar("int"))

    def __complex__(self) -> complex:
        return builtins.complex(self._scalar("complex"))

    def __bool__(self) -> builtins.bool:
        if self._data.size != 1:
            if self._data.size == 0:
                raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(self.item())

    def __index__(self) -> builtins.int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self.item())

    def _scalar(self, kind: Any) -> Any:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __format__(self, spec: Any) -> str:
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __len__(self) -> builtins.int:
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Any:
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self) -> builtins.int:
        return id(self)

    def __contains__(self, element: Any) -> builtins.bool:
        if isinstance(element, (Tensor, builtins.int, builtins.float, builtins.complex, builtins.bool)):
            return builtins.bool((element == self).any().item())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                           f"{type(element)}.")

    def __reversed__(self) -> Tensor:
        """The tensor flipped along its first dimension (a 0-d tensor is its own reverse)."""
        return self if self.dim() == 0 else self.flip(0)

    def __reduce_ex__(self, proto: Any) -> Any:
        if self._ks & _SPARSE_MASK:     # the layout and its parts, as a checkpoint holds them
            from ember._utils import _rebuild_sparse_tensor, _sparse_parts
            return (_rebuild_sparse_tensor, (self.layout, _sparse_parts(self)))
        return (_rebuild_from_numpy, (_values_of(self.cpu())._data.copy(), str(self._device)))

    def __deepcopy__(self, memo: Any) -> Any:
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
                               "because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        with _no_grad():
            r = self.clone()    # a leaf of its own, as PyTorch's
        # the attributes (requires_grad and .grad among them) copied; not the original's place in a graph
        r.__dict__.update({k: __import__("copy").deepcopy(v, memo) for k, v in self.__dict__.items()
                           if k not in _GRAPH_PLACE and k != "_sp"})     # (a sparse clone has its own parts)
        if r._rg:
            r._ks = requiring_grad(r._ks)   # Note [The Autograd key of a tensor that does not require grad]
        memo[id(self)] = r
        return r

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        from ember._tensor_str import tensor_repr
        return tensor_repr(self)

    def __str__(self) -> str:
        return self.__repr__()

    # -- dtype / device moves -------------------------------------------------------------------
    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """``to(dtype)``, ``to(device, dtype=None)``, ``to(other)``, plus ``non_blocking`` / ``copy``."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        fmt = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() received an invalid combination of arguments - got unexpected keyword "
                            f"{next(iter(kwargs))}")
        for a in args:
            if isinstance(a, _dt.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, (str, int, type(CPU))) and not isinstance(a, bool):
                device = a
            elif a is None:
                continue
            elif isinstance(a, builtins.bool):
                continue  # non_blocking positional
            else:
                raise TypeError(f"to() received an invalid combination of arguments - got ({type(a).__name__})")
        dev = None if device is None else canonical(device)
        same_dev = dev is None or (dev.type == self._device.type and
                                   (dev.index is None or dev.index == (self._device.index or 0)))
        same_dt = dtype is None or dtype is self.dtype
        if same_dev and same_dt and not copy and (fmt is None or fmt is _mf.preserve_format or
                                                  _suggest_memory_format(self) is fmt):
            return self     # PyTorch's to_will_alias (a format it would suggest for self: self as it is)
        import ember
        return ember.ops.aten._to_copy(self, dtype=dtype, device=None if same_dev else dev, memory_format=fmt)

    def type(self, dtype: Any = None, non_blocking: Any = False, **kwargs: Any) -> Any:
        if dtype is None:
            t = _TYPE_STRINGS.get(self.dtype.name) or f"torch.{_dt.SCALAR_TYPE_NAMES[self.dtype.name]}Tensor"
            return t.replace("torch.", "torch.cuda.") if self.is_cuda else t
        if isinstance(dtype, type) and hasattr(dtype, "is_cuda"):  # a legacy type class (ember/_tensor_types.py)
            return self.to(dtype.dtype, device="cuda" if dtype.is_cuda else "cpu", non_blocking=non_blocking)
        if isinstance(dtype, str):
            cuda = dtype.startswith("torch.cuda.")
            name = {v: k for k, v in _TYPE_STRINGS.items()}.get(dtype.replace("torch.cuda.", "torch."))
            if name is None:
                raise ValueError(f"invalid type: '{dtype}'")
            return self.to(_dt._BY_NAME[name], device="cuda" if cuda else "cpu", non_blocking=non_blocking)
        return self.to(dtype)

    def type_as(self, other: Any) -> Tensor:
        return self.to(other.dtype)

    def cpu(self, memory_format: Any = None) -> Tensor:
        return self.to("cpu", memory_format=memory_format)

    def cuda(self, device: Any = None, non_blocking: Any = False, memory_format: Any = None) -> Tensor:
        return self.to(_device("cuda", device) if isinstance(device, int) else (device or "cuda"),
                       memory_format=memory_format)

    def float(self, memory_format: Any = None) -> Tensor:  # noqa: A003
        return self.to(_dt.float32, memory_format=memory_format)

    def double(self, memory_format: Any = None) -> Tensor:
        return self.to(_dt.float64, memory_format=memory_format)

    def half(self, memory_format: Any = None) -> Tensor:
        return self.to(_dt.float16, memory_format=memory_format)

    def bfloat16(self, memory_format: Any = None) -> Tensor:
        return self.to(_dt.bfloat16, memory_format=memory_format)

    def long(self, memory_format: Any = None) -> Tensor:
        return self.to(_dt.int64, memory_format=memory_format)

    def int(self, memory_format: Any = None) -> Tensor:  # noqa: A003
        return self.to(_dt.int32, memory_format=memory_format)

    def short(self, memory_format: Any = None) -> Tensor:
        return self.to(_dt.int16, memory_format=memory_format)

    def char(self, memory_format: Any = None) -> Tensor:
        return self.to(_dt.int8, memory_format=memory_format)

    def byte(self, memory_format: Any = None) -> Tensor:
        return self.to(_dt.uint8, memory_format=memory_format)

    def bool(self, memory_format: Any = None) -> Tensor:  # noqa: A003
        return self.to(_dt.bool_, memory_format=memory_format)

    def cfloat(self) -> Tensor:
        return self.to(_dt.complex64)

    def cdouble(self) -> Tensor:
        return self.to(_dt.complex128)

    def is_floating_point(self) -> builtins.bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> builtins.bool:
        return self.dtype.is_complex

    def is_signed(self) -> builtins.bool:
        return self.dtype.is_signed

    @property
    def layout(self) -> Any:
        """``ember.strided``, or the sparse layout (Note [Sparse tensors] in ember/aten/sparse/__init__.py)."""
        return self.__dict__["_sp"].layout if self._ks & _SPARSE_MASK else _strided

    @property
    def is_sparse(self) -> builtins.bool:
        """Whether the layout is COO (``sparse_coo``)."""
        return builtins.bool(self._ks & _SPARSE_COO_BIT)

    @property
    def is_sparse_csr(self) -> builtins.bool:
        """Whether the layout is CSR (``sparse_csr``)."""
        return builtins.bool(self._ks & _SPARSE_CSR_BIT) and self.__dict__["_sp"].layout is _sparse_csr

    def to_sparse_coo(self) -> Tensor:
        """``self`` as a COO tensor (``to_sparse()``)."""
        return self.to_sparse()

    @property
    def T(self) -> Tensor:
        n = self._data.ndim
        if n != 2 and n != 0:
            import warnings
            warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
                          "deprecated and it will throw an error in a future release. Consider `x.mT` to "
                          "transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to "
                          "reverse the dimensions of a tensor.", UserWarning, stacklevel=2)
        return aten.permute(self, (1, 0) if n == 2 else tuple(range(n - 1, -1, -1)))

    @property
    def mT(self) -> Tensor:
        if self._data.ndim < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
        return aten.transpose_int(self, -2, -1)

    @property
    def H(self) -> Tensor:
        return self.T.conj() if self.is_complex() else self.T

    @property
    def mH(self) -> Tensor:
        return self.mT.conj() if self.is_complex() else self.mT

    # the parts of a complex tensor are views (of view_as_real), differentiable; assigning to one copies into it
    @property
    def real(self) -> Tensor:
        return aten.real(self)

    @real.setter
    def real(self, value: Any) -> None:
        aten.real(self).copy_(value)

    @property
    def imag(self) -> Tensor:
        return aten.imag(self)

    @imag.setter
    def imag(self, value: Any) -> None:
        aten.imag(self).copy_(value)

    def new_tensor(self, data: Any, dtype: Any = None, device: Any = None, requires_grad: Any = False) -> Tensor:
        import ember
        return ember.tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    def dim_order(self) -> Any:
        st = self.stride()
        return tuple(sorted(range(self.dim()), key=lambda i: -st[i]))

    def storage(self) -> Any:
        """The tensor's storage as a (deprecated) ``TypedStorage`` of its dtype, sharing memory."""
        from ember import storage as _storage
        _storage._warn_typed_storage_removal()
        return _storage._typed_storage_of(self)

    def _typed_storage(self) -> Any:
        from ember import storage as _storage
        return _storage._typed_storage_of(self)

    def storage_type(self) -> Any:
        from ember import storage as _storage
        _storage._warn_typed_storage_removal()
        return _storage._typed_storage_of(self)._get_legacy_storage_class()

    def const_data_ptr(self) -> builtins.int:
        return self.data_ptr()

    def is_inference(self) -> builtins.bool:
        """Made in inference mode (or a view of such a tensor): autograd will not save it, and it can be changed
        in place only inside inference mode."""
        return builtins.bool(self._inference)

    @property
    def name(self) -> None:  # the autograd name of a variable: PyTorch's is None for every Python tensor
        return None

    @property
    def volatile(self) -> builtins.bool:
        import warnings
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
        return False

    @volatile.setter
    def volatile(self, value: Any) -> None:
        import warnings
        warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                      UserWarning, stacklevel=2)

    def reinforce(self, reward: Any) -> None:
        raise RuntimeError(_REINFORCE_REMOVED)

    # -- memory: sharing, pinning, re-pointing -----------------------------------------------------------
    def is_shared(self) -> builtins.bool:
        return self.untyped_storage().is_shared()

    def share_memory_(self) -> Tensor:
        """Move the storage to shared memory (an anonymous shared mapping that processes forked afterwards see);
        a no-op when it is there already, and for CUDA tensors. Other tensors viewing the old storage keep it."""
        if self._device.type != "cpu" or self.is_shared():
            return self
        a = self._data
        root = root_array(a)
        raw = np.ascontiguousarray(root).reshape(-1).view(np.uint8)
        shared = shared_copy(raw)
        offset = self.storage_offset() * a.itemsize
        self._data = np.lib.stride_tricks.as_strided(shared[offset:].view(a.dtype) if a.size else
                                                     shared[:0].view(a.dtype), a.shape, a.strides)
        return self

    def is_pinned(self, device: Any = None) -> builtins.bool:
        """In page-locked host memory (``pin_memory``): only with an accelerator."""
        return self._device.type == "cpu" and id(root_array(self._data)) in _PINNED

    def pin_memory(self, device: Any = None) -> Tensor:
        """A copy in page-locked host memory, for fast transfers to the GPU (CuPy's pinned allocator)."""
        import ember
        if not ember.cuda.is_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if self._device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
        if self.is_pinned():
            return self
        import cupyx  # type: ignore[import-not-found, unused-ignore]
        buf = cupyx.empty_pinned(self._data.shape, self._data.dtype)
        buf[...] = self._data
        out = _wrap.new_tensor(buf, self._ks, self._device)
        import weakref
        root = root_array(buf)
        _PINNED[id(root)] = weakref.finalize(root, _PINNED.pop, id(root), None)
        return out

    def record_stream(self, stream: Any) -> None:
        """Tell the CUDA caching allocator that ``stream`` uses this tensor (CuPy's pool keeps memory alive while
        any array refers to it, so nothing to record)."""
        if self._device.type != "cuda":
            raise RuntimeError("record_stream is only supported for CUDA tensors")

    def set_(self, source: Any = None, storage_offset: builtins.int = 0, size: Any = None,
             stride: Any = None) -> Tensor:
        """Re-point this tensor: at nothing (``set_()``), at another tensor's memory and geometry (``set_(t)``), or
        at a storage with an offset, sizes and strides (in elements)."""
        if self._rg and self._grad_fn is None and state.enabled:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        from ember import storage as _storage
        dt = self._data.dtype
        if source is None:
            self._data = np.empty(0, dt)
        elif isinstance(source, Tensor):
            if source.dtype != self.dtype:
                raise RuntimeError(f"Could not set tensor of type {_dt.cpp_type_name(source.dtype.name)} to a tensor "
                                   f"of type {_dt.cpp_type_name(self.dtype.name)}")
            if source.device != self.device:
                raise RuntimeError("Attempted to call `variable.set_data(tensor)`, but `variable` and `tensor` have "
                                   "incompatible tensor type.")
            self._data = source._data
        elif isinstance(source, (UntypedStorage, _storage.TypedStorage)):
            if isinstance(source, _storage.TypedStorage):
                if source.dtype != self.dtype:
                    raise RuntimeError(f"Expected a Storage of type {self.dtype} or an UntypedStorage, but got type "
                                       f"{source.dtype} for argument 1 'storage'")
                source = source._untyped_storage
            flat = source._bytes()
            flat = flat[:flat.size - flat.size % dt.itemsize].view(dt)
            if size is None:
                size, stride = (flat.size,), (1,)
            size = tuple(size)
            stride = tuple(stride) if stride is not None else contiguous_strides(size)
            need = storage_offset + 1 + builtins.sum((n - 1) * st for n, st in zip(size, stride)) if all(size) else 0
            if need > flat.size:
                raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                                   f"{storage_offset}, and itemsize {dt.itemsize} requiring a storage size of "
                                   f"{need * dt.itemsize} are out of bounds for storage of size "
                                   f"{flat.size * dt.itemsize}")
            base = flat[storage_offset:] if flat.size else flat
            self._data = np.lib.stride_tricks.as_strided(base, size, tuple(st * dt.itemsize for st in stride))
        else:
            raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not {type(source).__name__}")
        self._vc.version += 1
        return self

    def is_set_to(self, tensor: Tensor) -> builtins.bool:
        """Same memory, offset, sizes and strides as ``tensor``."""
        return (root_array(self._data) is root_array(tensor._data) and self.data_ptr() == tensor.data_ptr()
                and tuple(self.shape) == tuple(tensor.shape) and self.stride() == tensor.stride())

    # -- the legacy constructor and the non-in-place resizes ---------------------------------------------
    def new(self, *args: Any, **kwargs: Any) -> Tensor:
        """The legacy ``x.new(...)``: an uninitialized tensor of the given sizes, or one built from data, with
        ``self``'s dtype and device."""
        import ember
        device = kwargs.pop("device", None) or self.device
        if kwargs:
            raise TypeError(f"new() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype != self.dtype:
                raise TypeError(f"expected {self.dtype} (got {args[0].dtype})")
            return args[0].detach()
        if len(args) == 1 and not isinstance(args[0], (builtins.int, ember.Size, tuple)):
            return ember.tensor(args[0], dtype=self.dtype, device=device)
        sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (ember.Size, tuple)) else args
        return ember.empty(sizes if sizes else (0,), dtype=self.dtype, device=device)

    def resize(self, *sizes: Any) -> Tensor:
        import warnings
        warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
        return _resize_keeping_numel(self, sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list))
                                     else sizes)

    def resize_as(self, tensor: Tensor) -> Tensor:
        import warnings
        warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
        return _resize_keeping_numel(self, tuple(tensor.shape))

    # -- Python callables over the elements (CPU only) ----------------------------------------------------
    def apply_(self, callable: Callable[[Any], Any]) -> Tensor:  # noqa: A002
        """Replace each element by ``callable(element)`` (slow: a Python call per element; CPU only)."""
        return self._map_elements(callable)

    def map_(self, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:  # noqa: A002
        """``self[i] = callable(self[i], tensor[i])``, ``tensor`` broadcast to ``self``'s shape."""
        return self._map_elements(callable, tensor)

    def map2_(self, x: Tensor, y: Tensor, callable: Callable[[Any, Any, Any], Any]) -> Tensor:  # noqa: A002
        return self._map_elements(callable, x, y)

    def _map_elements(self, fn: Callable[..., Any], *others: Tensor) -> Tensor:
        if self._device.type != "cpu" or any(o._device.type != "cpu" for o in others):
            raise TypeError("apply_ is only implemented on CPU tensors" if not others else
                            "map_ is only implemented on CPU tensors")
        if self._rg and self._grad_fn is None:
            if state.enabled:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        a = self._data
        srcs = [np.broadcast_to(o._data, a.shape) for o in others]
        vals = [fn(*(v.item() for v in vs)) for vs in zip(a.reshape(-1), *(s.reshape(-1) for s in srcs))] \
            if srcs else [fn(v.item()) for v in a.reshape(-1)]
        result = np.array(vals, dtype=a.dtype).reshape(a.shape) if vals else a.copy()
        return _wrap.write_inplace(self, result)

    def module_load(self, other: Tensor, assign: builtins.bool = False) -> Tensor:
        """What ``load_state_dict`` swaps in for this parameter or buffer when swapping: ``other`` detached when
        assigning, else ``self`` updated from ``other`` and detached."""
        if assign:
            return other.detach()
        return self.copy_(other).detach()

    def get_device(self) -> builtins.int:
        return -1 if self._device.type == "cpu" else (self._device.index or 0)

    def _is_view(self) -> builtins.bool:
        """Whether this tensor is a view of another (its ``_base``)."""
        return self._base is not None

    @property
    def output_nr(self) -> builtins.int:
        """Which output of its ``grad_fn`` this tensor is."""
        return self._output_nr

    def __setstate__(self, state: Any) -> None:
        pass

    # -- indexing ---------------------------------------------------------------------------------
    def __getitem__(self, index: Any) -> Tensor:
        if _TF_ON or (type(index) not in _TF_PLAIN and _tf._overrides_deep(index)):
            r = _tf.dispatch(Tensor.__getitem__, (self, index), None)
            if r is not _tf.NOT_HANDLED:
                return r
        return _indexing_getitem(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        if _TF_ON or _tf._any_foreign((index, value), None):
            r = _tf.dispatch(Tensor.__setitem__, (self, index, value), None)
            if r is not _tf.NOT_HANDLED:
                return
        _indexing_setitem(self, index, value)

    __getitem__._checks_torch_function = True  # type: ignore[attr-defined]
    __setitem__._checks_torch_function = True  # type: ignore[attr-defined]

    # -- operators ---------------------------------------------------------------------------------
    # Note [Tensor operators]: a Tensor or Python-number operand goes straight to the overload the binding
    # would pick (``a + b`` -> ``aten.add_Tensor``, ``a + 1`` -> ``aten.add_Scalar``); any other operand takes
    # the method binding, which converts what PyTorch converts (NumPy scalars, ...) and raises its errors.
    __add__ = _binary("__add__", "add", aten.add_Tensor, aten.add_Scalar)
    __radd__ = _binary("__radd__", "add", aten.add_Tensor, aten.add_Scalar)
    __sub__ = _binary("__sub__", "sub", aten.sub_Tensor, aten.sub_Scalar)
    __mul__ = _binary("__mul__", "mul", aten.mul_Tensor, aten.mul_Scalar)
    __rmul__ = _binary("__rmul__", "mul", aten.mul_Tensor, aten.mul_Scalar)
    __truediv__ = _binary("__truediv__", "div", aten.div_Tensor, aten.div_Scalar)
    __floordiv__ = _binary("__floordiv__", "floor_divide", aten.floor_divide, aten.floor_divide_Scalar)
    __mod__ = _binary("__mod__", "remainder", aten.remainder_Tensor, aten.remainder_Scalar)
    __pow__ = _binary("__pow__", "pow", aten.pow_Tensor_Tensor, aten.pow_Tensor_Scalar)
    __and__ = _binary("__and__", "bitwise_and", aten.bitwise_and_Tensor, aten.bitwise_and_Scalar)
    __rand__ = _binary("__rand__", "bitwise_and", aten.bitwise_and_Tensor, aten.bitwise_and_Scalar)
    __or__ = _binary("__or__", "bitwise_or", aten.bitwise_or_Tensor, aten.bitwise_or_Scalar)
    __ror__ = _binary("__ror__", "bitwise_or", aten.bitwise_or_Tensor, aten.bitwise_or_Scalar)
    __xor__ = _binary("__xor__", "bitwise_xor", aten.bitwise_xor_Tensor, aten.bitwise_xor_Scalar)
    __rxor__ = _binary("__rxor__", "bitwise_xor", aten.bitwise_xor_Tensor, aten.bitwise_xor_Scalar)
    __lshift__ = _binary("__lshift__", "bitwise_left_shift", aten.bitwise_left_shift_Tensor,
                         aten.bitwise_left_shift_Tensor_Scalar)
    __rshift__ = _binary("__rshift__", "bitwise_right_shift", aten.bitwise_right_shift_Tensor,
                         aten.bitwise_right_shift_Tensor_Scalar)
    __lt__ = _binary("__lt__", "lt", aten.lt_Tensor, aten.lt_Scalar)
    __le__ = _binary("__le__", "le", aten.le_Tensor, aten.le_Scalar)
    __gt__ = _binary("__gt__", "gt", aten.gt_Tensor, aten.gt_Scalar)
    __ge__ = _binary("__ge__", "ge", aten.ge_Tensor, aten.ge_Scalar)

    def __iadd__(self, other: Any) -> Tensor:
        return self.add_(other)

    def __rsub__(self, other: Any) -> Tensor:
        if type(other) in _NUMBER_TYPES:
            return aten.rsub_Scalar(self, other)
        return _reflected(other, self, Tensor.__rsub__)

    def __isub__(self, other: Any) -> Tensor:
        return self.sub_(other)

    def __imul__(self, other: Any) -> Tensor:
        return self.mul_(other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return self.reciprocal() * other

    def __itruediv__(self, other: Any) -> Tensor:
        return self.div_(other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return aten.floor_divide(wrapped_number(other, self), self)

    def __ifloordiv__(self, other: Any) -> Tensor:
        return self.floor_divide_(other)

    def __rmod__(self, other: Any) -> Tensor:
        if type(other) in _NUMBER_TYPES:
            return aten.remainder_Scalar_Tensor(other, self)
        return _reflected(other, self, Tensor.__rmod__)

    def __imod__(self, other: Any) -> Tensor:
        return self.remainder_(other)

    def __rpow__(self, other: Any) -> Tensor:
        if type(other) in _NUMBER_TYPES:
            return aten.pow_Scalar(other, self)
        return _reflected(other, self, Tensor.__rpow__)

    def __ipow__(self, other: Any) -> Tensor:
        return self.pow_(other)

    def __matmul__(self, other: Any) -> Tensor:
        if not isinstance(other, Tensor):
            return NotImplemented
        return aten.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        if isinstance(other, Tensor):   # called directly (Python calls it only for a non-Tensor ``other``)
            return aten.matmul(other, self)
        return NotImplemented           # PyTorch's matmul takes tensors only

    def __neg__(self) -> Tensor:
        return aten.neg(self)

    def __pos__(self) -> Tensor:
        return aten.positive(self)

    def __abs__(self) -> Tensor:
        return aten.abs(self)

    def __invert__(self) -> Tensor:
        return aten.bitwise_not(self)

    def __iand__(self, other: Any) -> Tensor:
        return self.bitwise_and_(other)

    def __ior__(self, other: Any) -> Tensor:
        return self.bitwise_or_(other)

    def __ixor__(self, other: Any) -> Tensor:
        return self.bitwise_xor_(other)

    def __eq__(self, other: Any) -> Any:
        if isinstance(other, Tensor):
            return aten.eq_Tensor(self, other)
        if not isinstance(other, _NUMBER):
            return False
        return self.eq(other)

    def __ne__(self, other: Any) -> Any:
        if isinstance(other, Tensor):
            return aten.ne_Tensor(self, other)
        if not isinstance(other, _NUMBER):
            return True
        return self.ne(other)

    # -- reductions with named-tuple / flexible signatures --------------------------------------------
    def unique(self, sorted: Any = True, return_inverse: Any = False, return_counts: Any = False,  # noqa: A002
               dim: Any = None) -> Any:
        import ember
        return ember.unique(self, sorted, return_inverse, return_counts, dim)

    def unique_consecutive(self, return_inverse: Any = False, return_counts: Any = False, dim: Any = None) -> Any:
        import ember
        return ember.unique_consecutive(self, return_inverse, return_counts, dim)

    def nonzero(self, *, as_tuple: Any = False) -> Any:
        import ember
        return ember.nonzero(self, as_tuple=as_tuple)

    def norm(self, p: Any = 'fro', dim: Any = None, keepdim: Any = False, dtype: Any = None) -> Any:
        import ember
        return ember.norm(self, p, dim, keepdim, dtype=dtype)

    def eig(self, eigenvectors: Any = False) -> Any:
        from ember._removed_linalg import eig
        return eig(self, eigenvectors)

    def symeig(self, eigenvectors: Any = False, upper: Any = True) -> Any:
        from ember._removed_linalg import symeig
        return symeig(self, eigenvectors, upper)

    def solve(self, other: Any) -> Any:
        from ember._removed_linalg import solve
        return solve(self, other)

    def lstsq(self, other: Any) -> Any:
        from ember._removed_linalg import lstsq
        return lstsq(self, other)

    def lu(self, pivot: Any = True, get_infos: Any = False) -> Any:
        """(LU, pivots), and info with ``get_infos`` (plain tuples; no deprecation warning, as in PyTorch)."""
        import ember
        LU, pivots, infos = ember._lu_with_info(self, pivot=pivot, check_errors=not get_infos)
        return (LU, pivots, infos) if get_infos else (LU, pivots)

    def split(self, split_size: Any, dim: Any = 0) -> Any:
        import ember
        return ember.split(self, split_size, dim)

    def size(self, dim: Any = None) -> Any:
        return TensorImpl.size(self, dim)


def _rebuild_from_numpy(arr: Any, device: Any) -> Tensor:
    import ember
    if arr.dtype.metadata and "quantizer" in arr.dtype.metadata:   # a quantized tensor (Note [Quantized dtypes])
        from ember.aten.composite.quantize import wrap_quantized
        return wrap_quantized(arr)  # type: ignore[no-any-return]
    return ember.from_numpy(arr).to(device)


_TYPE_STRINGS = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor", "float16": "torch.HalfTensor",
                 "bfloat16": "torch.BFloat16Tensor", "int64": "torch.LongTensor", "int32": "torch.IntTensor",
                 "int16": "torch.ShortTensor", "int8": "torch.CharTensor", "uint8": "torch.ByteTensor",
                 "bool": "torch.BoolTensor", "complex64": "torch.ComplexFloatTensor",
                 "complex128": "torch.ComplexDoubleTensor"}

_wrap.set_tensor_class(Tensor)  # Note [The Python tensor class]


def _convert(ret: Any, cls: Any) -> Any:
    if cls is Tensor:
        return ret
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        ret = ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        ret = type(ret)(*items) if hasattr(ret, "_fields") else type(ret)(items)
    return ret


def _default_nowrap_functions() -> set[Any]:
    """Functions whose results the default ``__torch_function__`` returns as they are (PyTorch's
    ``get_default_nowrap_functions``; its getters of ``_base`` and ``_grad`` have no counterpart: those are plain
    attributes in ember)."""
    return {Tensor.grad.__get__}


# Python-written methods that are not public API or that PyTorch does not intercept (__iter__: its dim and unbind
# calls are)
_NOT_OVERRIDABLE = {"__iter__", "__hash__", "__new__", "as_subclass", "_make_subclass", "_make_wrapper_subclass",
                    "__torch_function__", "__torch_dispatch__",
                    "_become_view", "_scalar", "__setstate__", "_map_elements", "__init_subclass__",
                    "__class_getitem__"}


def _overridable_method(fn: Any) -> Any:
    """A Python-written Tensor method that takes part in ``__torch_function__`` (the generated ones check in
    their binding): a flag test on plain calls (Note [Keeping __torch_function__ off the path of plain tensors])."""
    reported = fn.__name__ in _OPERATOR_REPORTS

    plain, foreign = _tf._PLAIN, _tf._overrides_deep

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _TF_ON:
            for a in args:
                if type(a) not in plain and foreign(a):
                    break
            else:
                if not kwargs or not _tf._any_foreign((), kwargs):
                    return fn(self, *args, **kwargs)
        r = _tf.dispatch(_reported(method) if reported else method, (self,) + args, kwargs)
        return fn(self, *args, **kwargs) if r is _tf.NOT_HANDLED else r
    method.__name__, method.__qualname__, method.__doc__ = fn.__name__, f"Tensor.{fn.__name__}", fn.__doc__
    method.__wrapped__ = fn  # type: ignore[attr-defined]
    return method


def _overridable_property(prop: property) -> property:
    """A Tensor property whose getter takes part in ``__torch_function__`` (reported as the property's
    ``__get__``, as PyTorch does); setters are not intercepted."""
    def fget(self: Any) -> Any:
        if _TF_ON:
            r = _tf.dispatch(new.__get__, (self,), None)
            if r is not _tf.NOT_HANDLED:
                return r
        return prop.fget(self)  # type: ignore[misc]
    new = property(fget, prop.fset, prop.fdel, prop.__doc__)
    return new


# Note [Wrappers installed on first use]
# The shape queries -- TensorImpl's dim(), numel(), stride(), ..., Tensor.size() and every property (shape,
# dtype, device, grad, requires_grad, T, ...) -- are read on nearly every op's path, inside ember as much as in
# user code, and take no argument that could override __torch_function__. A wrapper frame on them costs every
# program (measured: F.linear 10.7 -> 13.4 µs, cross_entropy 67 -> 73 µs), so they stay the plain methods and
# properties until a torch function mode or an overriding subclass first turns the protocol on; then their
# wrappers are installed for the rest of the process (``torch_function.on_first_use``) and pass the calls to
# __torch_function__ as PyTorch does.
_IMPL_METHODS = ("dim", "numel", "element_size", "stride", "storage_offset", "untyped_storage", "data_ptr",
                 "is_contiguous")


def _install_overridable_methods() -> None:
    for name, fn in list(Tensor.__dict__.items()):
        if callable(fn) and not isinstance(fn, (type, staticmethod, classmethod, property)) and \
                getattr(fn, "__module__", None) == __name__ and name not in _NOT_OVERRIDABLE and \
                name != "size" and not getattr(fn, "_checks_torch_function", False):
            setattr(Tensor, name, _overridable_method(fn))
    Tensor.__rdiv__ = Tensor.__rtruediv__  # type: ignore[attr-defined]  # PyTorch's name for it
    Tensor.__rdiv__.__name__ = "__rdiv__"


def _install_shape_query_wrappers() -> None:
    """Note [Wrappers installed on first use]."""
    for cls in (TensorImpl, Tensor):
        for name, prop in list(vars(cls).items()):
            if isinstance(prop, property) and prop.fget is not None and name != "data" and \
                    not name.startswith("_"):
                setattr(Tensor, name, _overridable_property(prop))
    for name in _IMPL_METHODS:
        setattr(Tensor, name, _overridable_method(getattr(TensorImpl, name)))
    Tensor.size = _overridable_method(Tensor.__dict__["size"])  # type: ignore[method-assign]


def install_methods() -> None:
    """The methods of ``Tensor`` (Note [Initialization] in ember/_initialize.py): those written here, wrapped for
    ``__torch_function__``; the generated bindings of the rest; the shape queries' wrappers, on first use."""
    from ember._generated import tensor_methods
    _install_overridable_methods()
    for name in tensor_methods.__all__:
        if name not in Tensor.__dict__:
            setattr(Tensor, name, getattr(tensor_methods, name))
    _tf.on_first_use(_install_shape_query_wrappers)
    _tf._PLAIN.add(Tensor)




_PINNED: dict[builtins.int, Any] = {}  # id of a pinned root array -> its finalizer

_REINFORCE_REMOVED = """reinforce() was removed.
Use torch.distributions instead.
See https://pytorch.org/docs/main/distributions.html

Instead of:

probs = policy_network(state)
action = probs.multinomial()
next_state, reward = env.step(action)
action.reinforce(reward)
action.backward()

Use:

probs = policy_network(state)
# NOTE: categorical is equivalent to what used to be called multinomial
m = torch.distributions.Categorical(probs)
action = m.sample()
next_state, reward = env.step(action)
loss = -m.log_prob(action) * reward
loss.backward()
"""


def _resize_keeping_numel(t: Tensor, sizes: Any) -> Tensor:
    """The deprecated non-in-place ``resize``: a reshape of a contiguous copy, the element count kept."""
    sizes = tuple(sizes)
    n = math.prod(sizes)
    if n != t.numel():
        raise RuntimeError(f"requested resize to {'x'.join(str(s) for s in sizes)} ({n} elements in total), but the "
                           f"given tensor has a size of {'x'.join(str(s) for s in t.shape)} ({t.numel()} elements). "
                           "autograd's resize can only change the shape of a given tensor, while preserving the "
                           "number of elements. ")
    return t.contiguous().view(sizes)
