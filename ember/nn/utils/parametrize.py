"""``ember.nn.utils.parametrize`` (mirrors ``torch/nn/utils/parametrize.py``): a tensor of a module computed
from other tensors by modules ("parametrizations").

``register_parametrization(m, "weight", P)`` moves ``m.weight`` to ``m.parametrizations.weight.original``
(the same Parameter object, its value replaced by ``P.right_inverse(weight)`` when ``P`` defines it) and
turns ``m.weight`` into a property computing ``P(original)``; ``m``'s class becomes a subclass named
``Parametrized<Class>`` that holds the property, as in PyTorch, so state_dict keys and repr match."""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

from contextlib import contextmanager

import ember
from ember.nn.modules.container import ModuleDict, ModuleList
from ember.nn.parameter import Parameter


if TYPE_CHECKING:
    from ember._tensor import Tensor

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached() -> Any:
    """Within this context, each parametrized tensor is computed once and reused."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Any, name: Any, X: Any) -> Any:
    if isinstance(X, Parameter):
        module.register_parameter(name, X)
    else:
        module.register_buffer(name, X)


def _maybe_set(dest: Any, src: Tensor) -> Any:
    with ember.no_grad():
        if tuple(dest.shape) == tuple(src.shape) and dest.dtype == src.dtype:
            dest.copy_(src)
        else:
            dest.data = src.detach().clone()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original tensor(s) they start from."""

    def __init__(self, modules: Any, original: Any, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = tuple(original.shape), original.dtype
        with ember.no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, ember.Tensor) and not isinstance(new, (list, tuple)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, ember.Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, ember.Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                     f"Got element {i} of the sequence with type {type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali.detach().clone(), original.requires_grad)
                else:
                    originali = originali.detach().clone().requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            z = self()
            if not isinstance(z, ember.Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {z.dtype}")
            if tuple(z.shape) != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized shape: {ember.Size(original_shape)}\n"
                                 f"parametrized shape: {z.shape}")

    def right_inverse(self, value: Tensor) -> Any:
        """Sets the original tensor(s) so that the parametrized tensor becomes ``value``."""
        with ember.no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement "
                                       "right_inverse.")
            if self.is_tensor:
                if not isinstance(value, ember.Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                _maybe_set(self.original, value)
            else:
                if not isinstance(value, (list, tuple)) or len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}.")
                for i, tensor in enumerate(value):
                    _maybe_set(getattr(self, f"original{i}"), tensor)

    def forward(self) -> Any:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for curr in list(self)[1:]:
            x = curr(x)
        return x


def _inject_new_class(module: Any) -> Any:
    cls = module.__class__

    def default_deepcopy(self, memo: Any) -> Any:
        obj = memo.get(id(self), None)
        if obj is not None:
            return obj
        import copy
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        replica.__dict__ = copy.deepcopy(self.__dict__, memo)
        return replica

    def getstate(self) -> Any:
        raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                           "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                           "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")

    dct = {"__getstate__": getstate}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module: Any, tensor_name: Any) -> Any:
    def get_parametrized(self) -> Any:
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(module), tensor_name)
            if key not in _cache:
                _cache[key] = parametrization()
            return _cache[key]
        return parametrization()

    def set_original(self, value: Tensor) -> Any:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module: Any, tensor_name: Any = None) -> Any:
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def register_parametrization(module: Any, tensor_name: Any, parametrization: Any, *, unsafe: bool = False) -> Any:
    """Makes ``module.<tensor_name>`` the output of ``parametrization`` applied to the original tensor."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, ember.Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
            if X.dtype != Y.dtype or tuple(X.shape) != tuple(Y.shape):
                raise ValueError("Registering a parametrization may not change the shape or dtype of the tensor, "
                                 "unless the `unsafe` flag is enabled.")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name "
                         f"'{tensor_name}'")
    return module


def remove_parametrizations(module: Any, tensor_name: Any, leave_parametrized: bool = True) -> Any:
    """Undoes :func:`register_parametrization`: ``tensor_name`` becomes a plain parameter (or buffer) again,
    holding the parametrized value (``leave_parametrized``) or the original one."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with ember.no_grad():
                t = getattr(module, tensor_name)
            _maybe_set(original, t.detach())
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
                             "in terms of a sequence of tensors.")
        with ember.no_grad():
            t = getattr(module, tensor_name)
        if parametrizations.original0.requires_grad:
            original = Parameter(t.detach().clone(), True)
        else:
            original = t.detach().clone()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Any) -> Any:
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Any, to_module: Any, tensor_name: Any = None) -> Any:
    """Copies the parametrizations (and their originals) of ``from_module`` onto ``to_module``."""
    if is_parametrized(from_module):
        names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations)
        for name in names:
            if not hasattr(to_module, name):
                setattr(to_module, name, Parameter(getattr(from_module, name)))
            for p in from_module.parametrizations[name]:
                register_parametrization(to_module, name, p)
            with ember.no_grad():
                src = from_module.parametrizations[name]
                dst = to_module.parametrizations[name]
                if src.is_tensor:
                    _maybe_set(dst.original, src.original)
                else:
                    for i in range(src.ntensors):
                        _maybe_set(getattr(dst, f"original{i}"), getattr(src, f"original{i}"))
    return to_module

