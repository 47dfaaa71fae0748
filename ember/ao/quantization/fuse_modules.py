"""``fuse_modules`` (mirrors ``torch/ao/quantization/fuse_modules.py``): replace listed sequences of submodules
(by name) with their fusion, the rest of each sequence with ``Identity``."""
from __future__ import annotations

from typing import Any

import copy

from ember import nn
from ember.ao.quantization.fuser_method_mappings import get_fuser_method

__all__ = ["fuse_known_modules", "fuse_modules", "fuse_modules_qat"]


def _get_module(model: Any, key: str) -> Any:
    for s in key.split("."):
        model = getattr(model, s)
    return model


def _set_module(model: Any, key: str, module: Any) -> None:
    tokens = key.split(".")
    for s in tokens[:-1]:
        model = getattr(model, s)
    setattr(model, tokens[-1], module)


def fuse_known_modules(mod_list: list[Any], is_qat: bool, additional_fuser_method_mapping: Any = None) -> list[Any]:
    types = tuple(type(m) for m in mod_list)
    fuser_method = get_fuser_method(types, additional_fuser_method_mapping)
    fused = fuser_method(is_qat, *mod_list)
    for hook in mod_list[0]._forward_pre_hooks.values():
        fused.register_forward_pre_hook(hook)
    mod_list[0]._forward_pre_hooks.clear()
    for hook in mod_list[-1]._forward_hooks.values():
        fused.register_forward_hook(hook)
    mod_list[-1]._forward_hooks.clear()
    new_mod: list[Any] = [fused]
    for _ in mod_list[1:]:
        identity = nn.Identity()
        identity.training = mod_list[0].training
        new_mod.append(identity)
    return new_mod


def _fuse_helper(model: Any, names: list[str], is_qat: bool, fuser_func: Any, custom: Any) -> None:
    extra = (custom or {}).get("additional_fuser_method_mapping", {})
    new = fuser_func([_get_module(model, n) for n in names], is_qat, extra)
    for n, m in zip(names, new):
        _set_module(model, n, m)


def _fuse_modules(model: Any, modules_to_fuse: Any, is_qat: bool, inplace: bool = False,
                  fuser_func: Any = fuse_known_modules, fuse_custom_config_dict: Any = None) -> Any:
    if not inplace:
        model = copy.deepcopy(model)
    if all(isinstance(m, str) for m in modules_to_fuse):
        _fuse_helper(model, modules_to_fuse, is_qat, fuser_func, fuse_custom_config_dict)
    else:
        for names in modules_to_fuse:
            _fuse_helper(model, names, is_qat, fuser_func, fuse_custom_config_dict)
    return model


def fuse_modules(model: Any, modules_to_fuse: Any, inplace: bool = False, fuser_func: Any = fuse_known_modules,
                 fuse_custom_config_dict: Any = None) -> Any:
    """Fuse ``[["conv1", "bn1", "relu1"], ["fc", "relu"]]`` (names of submodules, in order) for post-training
    quantization: Conv+BN(+ReLU), Conv+ReLU, Linear+ReLU, Linear+BN, BN+ReLU; the model must be in eval mode for
    batch norm folding.

    Example::

        >>> model.eval()
        >>> fused = ember.ao.quantization.fuse_modules(model, [["conv", "bn", "relu"]])
    """
    return _fuse_modules(model, modules_to_fuse, False, inplace, fuser_func, fuse_custom_config_dict)


def fuse_modules_qat(model: Any, modules_to_fuse: Any, inplace: bool = False, fuser_func: Any = fuse_known_modules,
                     fuse_custom_config_dict: Any = None) -> Any:
    return _fuse_modules(model, modules_to_fuse, True, inplace, fuser_func, fuse_custom_config_dict)
