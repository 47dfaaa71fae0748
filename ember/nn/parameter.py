"""``nn.Parameter`` and ``nn.Buffer`` (mirrors ``torch/nn/parameter.py``)."""
from __future__ import annotations

from typing import Any

from collections import OrderedDict

from ember._tensor import Tensor
from ember.aten.torch_function import _disabled_torch_function_impl


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any = None) -> Any:
    return Parameter(data, requires_grad)


class _ParameterMeta(type):
    """``isinstance(t, Parameter)`` is also true of a tensor subclass instance made a parameter (``_is_param``)."""

    def __instancecheck__(self, instance: Any) -> bool:
        if self is Parameter and isinstance(instance, Tensor) and instance.__dict__.get("_is_param", False):
            return True
        return super().__instancecheck__(instance)


class Parameter(Tensor, metaclass=_ParameterMeta):
    """A Tensor that a ``Module`` registers as one of its parameters when assigned as an attribute.

    ``Parameter(data)`` shares ``data``'s storage (and version counter, like ``detach()``) and is a leaf
    that requires grad unless ``requires_grad=False``. For data of another tensor subclass (a fake tensor, a
    wrapper subclass) the result keeps that class and is marked a parameter instead, as in PyTorch."""

    __torch_function__ = staticmethod(_disabled_torch_function_impl)  # a Parameter is a plain tensor to it

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Any:
        import ember
        if data is None:
            data = ember.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        if type(data) is Tensor or type(data) is Parameter or cls is not Parameter:
            return Tensor._make_subclass(cls, data, requires_grad)
        t = data.detach().requires_grad_(requires_grad)
        t.__dict__["_is_param"] = True
        return t

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: Any) -> Any:
        if id(self) in memo:
            return memo[id(self)]
        r = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = r
        return r

    def __reduce_ex__(self, proto: Any) -> Any:
        return (_rebuild_parameter, (self.data, self.requires_grad, OrderedDict()))


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a ``Module`` attribute
    (``persistent=False`` leaves it out of the ``state_dict``)."""

    __torch_function__ = staticmethod(_disabled_torch_function_impl)

    def __new__(cls, data: Any = None, *, persistent: bool = True) -> Any:
        import ember
        if data is None:
            data = ember.empty(0)
        t = data.detach().as_subclass(cls)
        t.__dict__["persistent"] = persistent
        return t



class UninitializedTensorMixin:
    """A parameter or buffer of a lazy module whose shape is not known yet (``torch/nn/parameter.py``): it holds
    no data; ``materialize(shape)`` turns it into an ordinary Parameter / Tensor of that shape (uninitialized
    memory, which the module's ``reset_parameters`` then fills)."""

    cls_to_become: Any = None

    # what may be called on one before it is materialized (PyTorch's list); anything else raises
    _allowed_names = ("__hash__", "size", "copy_", "is_complex", "is_floating_point", "half", "float", "double",
                      "char", "short", "int", "long", "cuda", "cpu", "to", "get_device")

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        # a method-wrapper is a property's __get__: attributes may be read
        if any(func is getattr(Tensor, n) for n in cls._allowed_names) or type(func).__name__ == "method-wrapper":
            return super().__torch_function__(func, types, args, kwargs or {})  # type: ignore[misc]
        raise ValueError(
            f"Attempted to use an uninitialized parameter in {func}. This error happens when you are using a "
            f"`LazyModule` or explicitly manipulating `torch.nn.parameter.{cls.__name__}` objects. When using "
            "LazyModules Call `forward` with a dummy batch to initialize the parameters before calling torch "
            "functions")

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        import ember
        if device is None:
            device = self._device
        if dtype is None:
            dtype = self.dtype
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.data = ember.empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually happens "
                           "in `load_state_dict` when trying to load an uninitialized parameter into an initialized "
                           "one. Call `forward` to initialize the parameters before accessing their attributes.")

    def size(self, dim: Any = None) -> Any:
        return self.shape

    def numel(self) -> Any:
        raise RuntimeError("Can't call numel() on uninitialized parameters (the shape is not known yet). Call "
                           "`forward` to initialize the parameters before accessing their attributes.")

    def share_memory_(self) -> Any:
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize "
                           "the parameters before calling `module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto: Any) -> Any:
        return (self.__class__, (self.requires_grad,))


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an uninitialized parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter of a lazy module before its first forward (``LazyLinear.weight``)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> Any:
        import ember
        return Tensor._make_subclass(cls, ember.empty(0, device=device, dtype=dtype), requires_grad)

    def __deepcopy__(self, memo: Any) -> Any:
        if id(self) in memo:
            return memo[id(self)]
        r = type(self)(self.requires_grad, self._device, self.dtype)
        memo[id(self)] = r
        return r


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of a lazy module before its first forward (``LazyBatchNorm1d.running_mean``)."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                persistent: bool = True) -> Any:
        import ember
        t = ember.empty(0, device=device, dtype=dtype).as_subclass(cls)
        t.__dict__["persistent"] = persistent
        return t

    def __deepcopy__(self, memo: Any) -> Any:
        if id(self) in memo:
            return memo[id(self)]
        r = type(self)(False, self._device, self.dtype)
        memo[id(self)] = r
        return r
