"""The legacy, hook-based weight normalization (``torch/nn/utils/weight_norm.py``): ``weight`` is replaced by
the parameters ``weight_g`` (its norm over every dim but ``dim``) and ``weight_v`` (its direction), and a forward
pre-hook recomputes ``weight = weight_v * weight_g / ||weight_v||`` before each call. (The parametrization-based
``nn.utils.parametrizations.weight_norm`` is the newer form of the same thing.)"""
from __future__ import annotations

from typing import Any

import ember
from ember.nn.utils.parametrizations import _norm_except_dim

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    name: str
    dim: int

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Any) -> Any:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    @staticmethod
    def apply(module: Any, name: str, dim: int) -> WeightNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, ember.nn.UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure to "
                             "run the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", ember.nn.Parameter(_norm_except_dim(weight, fn.dim).data))
        module.register_parameter(name + "_v", ember.nn.Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Any) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, ember.nn.Parameter(weight.data))

    def __call__(self, module: Any, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Any, name: str = "weight", dim: int = 0) -> Any:
    """Reparametrize ``module.<name>`` as magnitude ``<name>_g`` times direction ``<name>_v`` (``dim=None``: one
    magnitude for the whole tensor)."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Any, name: str = "weight") -> Any:
    """Undo ``weight_norm``: ``<name>`` becomes a plain parameter again, with its current value."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
