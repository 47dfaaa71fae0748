"""``ember.nn.utils.prune`` (mirrors ``torch/nn/utils/prune.py``): pruning by masks.

Pruning ``module.weight`` moves the parameter to ``weight_orig``, adds a buffer ``weight_mask`` and makes
``weight`` a plain attribute equal to ``weight_orig * weight_mask``, recomputed by a forward pre-hook (the
pruning method itself).  Pruning the same tensor again combines the masks through a ``PruningContainer``,
the new method seeing only the entries (or channels) still alive; ``remove`` makes the pruning permanent."""
from __future__ import annotations

from typing import Any, Self

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import ember

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


class BasePruningMethod(ABC):
    _tensor_name: str

    def __call__(self, module: Any, inputs: Any) -> Any:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        """The mask for ``t``, combining with ``default_mask`` (the mask already applied)."""

    def apply_mask(self, module: Any) -> Any:
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return orig * mask

    @classmethod
    def apply(cls, module: Any, name: Any, *args: Any, importance_scores: Any = None, **kwargs: Any) -> Self:
        old_method, found, keys = None, 0, []
        for k, hook in module._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old_method = hook
                keys.append(k)
                found += 1
        if found > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                                 "Use a PruningContainer.")
        for k in keys:
            del module._forward_pre_hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old_method is not None:
            if isinstance(old_method, PruningContainer):
                old_method.add_pruning_method(method)
                method = old_method
            else:
                container = PruningContainer(old_method)
                container.add_pruning_method(method)
                method = container
        orig = getattr(module, name)
        if importance_scores is not None:
            if tuple(importance_scores.shape) != tuple(orig.shape):
                raise AssertionError(f"importance_scores should have the same shape as parameter {name} of {module}")
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ember.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            with ember.no_grad():
                mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Any, default_mask: Any = None, importance_scores: Any = None) -> Any:
        if importance_scores is not None and tuple(importance_scores.shape) != tuple(t.shape):
            raise AssertionError("importance_scores should have the same shape as tensor t")
        scores = importance_scores if importance_scores is not None else t
        default_mask = default_mask if default_mask is not None else ember.ones_like(t)
        return t * self.compute_mask(scores, default_mask=default_mask)

    def remove(self, module: Any) -> Any:
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The sequence of pruning methods applied to one tensor."""

    def __init__(self, *args: Any) -> None:
        self._pruning_methods = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method: Any) -> Any:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> Any:
        return len(self._pruning_methods)

    def __iter__(self) -> Any:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: Any) -> Any:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype).clone()
        if method.PRUNING_TYPE == "unstructured":
            slc = (default_mask == 1,)
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` '
                                     "defined.")
            n_dims = t.dim()
            dim = method.dim if method.dim >= 0 else n_dims + method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = tuple([slice(None)] * dim + [keep.nonzero().reshape(-1)])
        elif method.PRUNING_TYPE == "global":
            slc = (slice(None),) * t.dim()
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        return default_mask

    @classmethod
    def apply(cls, module: Any, name: Any) -> Self:
        return super().apply(module, name)


def _validate_amount_init(amount: Any) -> Any:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_amount(amount: Any, tensor_size: Any) -> Any:
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _n_to_prune(amount: Any, tensor_size: Any) -> Any:
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_structured(t: Any) -> Any:
    if t.dim() <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
                         f"{t.shape} with {t.dim()} dims")


class _Unstructured(BasePruningMethod):
    """Zeroes the ``amount`` entries that ``_doomed(t, k)`` (flat indices) picks."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: Any) -> None:
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        n = t.nelement()
        k = _n_to_prune(self.amount, n)
        _validate_amount(self.amount, n)
        mask = default_mask.clone()
        if k != 0:
            mask.reshape(-1)[self._doomed(t, k)] = 0
        return mask


class RandomUnstructured(_Unstructured):
    def _doomed(self, t: Any, k: Any) -> Any:
        return ember.topk(ember.rand_like(t).reshape(-1), k=k).indices

    @classmethod
    def apply(cls, module: Any, name: Any, amount: Any) -> Self:
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    def _doomed(self, t: Any, k: Any) -> Any:
        return ember.topk(t.abs().reshape(-1), k=k, largest=False).indices

    @classmethod
    def apply(cls, module: Any, name: Any, amount: Any, importance_scores: Any = None) -> Self:
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channel_mask(t: Any, dim: Any, keep_indices: Any) -> Any:
    mask = ember.zeros_like(t)
    slc = [slice(None)] * t.dim()
    slc[dim] = keep_indices
    mask[tuple(slc)] = 1
    return mask


class RandomStructured(BasePruningMethod):
    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, dim: Any = -1) -> None:
        _validate_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        _validate_structured(t)
        size = t.shape[self.dim]
        k = _n_to_prune(self.amount, size)
        _validate_amount(self.amount, size)
        if k == 0:
            return default_mask
        prob = ember.rand(size)
        threshold = ember.kthvalue(prob, k=k).values
        keep = (prob > threshold).nonzero().reshape(-1)
        return _channel_mask(t, self.dim, keep) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module: Any, name: Any, amount: Any, dim: Any = -1) -> Self:
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, n: Any, dim: Any = -1) -> None:
        _validate_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        _validate_structured(t)
        size = t.shape[self.dim]
        k = _n_to_prune(self.amount, size)
        keep_n = size - k
        _validate_amount(self.amount, size)
        dim = self.dim if self.dim >= 0 else t.dim() + self.dim
        dims = [d for d in range(t.dim()) if d != dim]
        norm = ember.linalg.vector_norm(t, ord=2 if self.n == "fro" else self.n, dim=dims)
        if k == 0:
            return default_mask
        keep = ember.topk(norm, k=keep_n, largest=True).indices
        return _channel_mask(t, dim, keep) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module: Any, name: Any, amount: Any, n: Any, dim: Any, importance_scores: Any = None) -> Self:
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    PRUNING_TYPE = "global"

    def __init__(self, mask: Any) -> None:
        self.mask = mask

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise AssertionError("mask and default_mask must have the same shape")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Any, name: Any, mask: Any) -> Self:
        return super().apply(module, name, mask=mask)


def identity(module: Any, name: Any) -> Any:
    Identity.apply(module, name)
    return module


def random_unstructured(module: Any, name: Any, amount: Any) -> Any:
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Any, name: Any, amount: Any, importance_scores: Any = None) -> Any:
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Any, name: Any, amount: Any, dim: Any) -> Any:
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Any, name: Any, amount: Any, n: Any, dim: Any, importance_scores: Any = None) -> Any:
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Any, name: Any, mask: Any) -> Any:
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters: Any, pruning_method: Any, importance_scores: Any = None, **kwargs: Any) -> Any:
    """Prunes the given ``(module, name)`` tensors together, choosing which entries to remove over all of them."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    with ember.no_grad():
        scores = ember.cat([importance_scores.get((m, n), getattr(m, n)).reshape(-1) for m, n in parameters])
        default_mask = ember.cat([getattr(m, n + "_mask", ember.ones_like(getattr(m, n))).reshape(-1)
                                  for m, n in parameters])
        container = PruningContainer()
        container._tensor_name = "temp"
        method = pruning_method(**kwargs)
        method._tensor_name = "temp"
        if method.PRUNING_TYPE != "unstructured":
            raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                            f"{pruning_method} of type {method.PRUNING_TYPE}")
        container.add_pruning_method(method)
        final_mask = container.compute_mask(scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        k = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + k].reshape(param.shape))
        pointer += k


def remove(module: Any, name: Any) -> Any:
    """Makes the pruning of ``module.<name>`` permanent: ``name`` becomes a parameter holding ``orig * mask``."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Any) -> Any:
    for _, submodule in module.named_modules():
        for hook in submodule._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False
