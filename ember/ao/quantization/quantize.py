"""Eager-mode quantization (mirrors ``torch/ao/quantization/quantize.py``).

Note [Eager-mode quantization]
Post-training static quantization is four steps over a float model the user marked up with ``QuantStub`` /
``DeQuantStub`` and a ``qconfig``: ``fuse_modules`` (Conv+BN+ReLU ...), ``prepare`` (each leaf a mapping knows gets
the qconfig and an ``activation_post_process`` observer, run by a forward hook), calibration (the user runs data
through it), ``convert`` (each observed module is swapped for its quantized class's ``from_float``, which reads
the observers). ``quantize_dynamic`` needs no calibration: it swaps Linear / LSTM / GRU for dynamically quantized
ones whose weights are quantized at once. The module walk, hooks and mappings are PyTorch's, so the same programs
produce the same module trees, names and state_dict keys.
"""
from __future__ import annotations

from typing import Any

import copy
import functools
import inspect
import itertools
import warnings

import ember
from ember import nn
import ember.ao.nn.quantized as nnq
from ember.ao.nn.intrinsic import _FusedModule
from ember.ao.quantization.observer import _is_activation_post_process
from ember.ao.quantization.qconfig import default_dynamic_qconfig, float16_dynamic_qconfig
from ember.ao.quantization.quantization_mappings import (get_default_dynamic_quant_module_mappings,
                                                         get_default_qat_module_mappings,
                                                         get_default_qconfig_propagation_list,
                                                         get_default_static_quant_module_mappings)
from ember.ao.quantization.stubs import DeQuantStub, QuantWrapper

__all__ = ["propagate_qconfig_", "add_quant_dequant", "prepare", "quantize", "quantize_dynamic", "convert",
           "swap_module", "prepare_qat", "quantize_qat"]

DEPRECATION_WARNING = ("torch.ao.quantization is deprecated and will be removed in 2.10. \nFor migrations of users: "
                       "\n1. Eager mode quantization (torch.ao.quantization.quantize, "
                       "torch.ao.quantization.quantize_dynamic), please migrate to use torchao eager mode quantize_ "
                       "API instead")


def _deprecated(fn: Any) -> Any:
    """PyTorch 2.13 marks the eager-mode entry points deprecated (a DeprecationWarning at each call)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(DEPRECATION_WARNING, DeprecationWarning, stacklevel=2)
        return fn(*args, **kwargs)
    return wrapper


def _propagate_qconfig_helper(module: Any, qconfig_dict: Any, qconfig_parent: Any = None, prefix: str = "") -> None:
    qconfig = qconfig_dict.get(type(module), qconfig_parent)
    qconfig = qconfig_dict.get(prefix, qconfig)
    qconfig = getattr(module, "qconfig", qconfig)
    module.qconfig = qconfig
    for name, child in module.named_children():
        _propagate_qconfig_helper(child, qconfig_dict, qconfig, prefix + "." + name if prefix else name)


def propagate_qconfig_(module: Any, qconfig_dict: Any = None, prepare_custom_config_dict: Any = None) -> None:
    """Give every submodule a ``qconfig``: its own, else its type's or name's entry of ``qconfig_dict``, else its
    parent's."""
    _propagate_qconfig_helper(module, qconfig_dict or {})


def _observer_forward_hook(self: Any, input: Any, output: Any) -> Any:  # noqa: A002
    return self.activation_post_process(output)


def _observer_forward_pre_hook(self: Any, input: Any) -> Any:  # noqa: A002
    return self.activation_post_process(input[0])


def _has_no_children(module: Any) -> bool:
    return len(module._modules) == 0


def _add_observer_(module: Any, qconfig_propagation_list: Any = None, non_leaf_module_list: Any = None) -> None:
    if qconfig_propagation_list is None:
        qconfig_propagation_list = get_default_qconfig_propagation_list()

    def needs_observation(m: Any) -> bool:
        return getattr(m, "qconfig", None) is not None

    def insert(m: Any) -> None:
        if needs_observation(m) and not isinstance(m, DeQuantStub):
            m.add_module("activation_post_process", m.qconfig.activation())
            m.register_forward_hook(_observer_forward_hook, prepend=True)

    for _, child in module.named_children():
        if type(child) is nn.Dropout:
            continue
        if isinstance(child, (nnq.FloatFunctional, nnq.QFunctional)):
            if needs_observation(child):
                child.activation_post_process = child.qconfig.activation()
        elif isinstance(child, _FusedModule):
            insert(child)
        elif non_leaf_module_list is not None and type(child) in non_leaf_module_list:
            insert(child)
        else:
            _add_observer_(child, qconfig_propagation_list, non_leaf_module_list)
    if _has_no_children(module) and not isinstance(module, nn.Sequential) and type(module) in qconfig_propagation_list:
        insert(module)


def add_quant_dequant(module: Any) -> Any:
    """Wrap every leaf with a qconfig in a ``QuantWrapper``."""
    if _has_no_children(module) and getattr(module, "qconfig", None):
        return QuantWrapper(module)
    for name, child in module.named_children():
        module._modules[name] = add_quant_dequant(child)
    return module


@_deprecated
def prepare(model: Any, inplace: bool = False, allow_list: Any = None, observer_non_leaf_module_list: Any = None,
            prepare_custom_config_dict: Any = None) -> Any:
    """Attach observers (Note [Eager-mode quantization]); then run calibration data through the model."""
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_dict=None)
    if not any(getattr(m, "qconfig", None) for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct configuration through "
                      "`qconfig_dict` or by assigning the `.qconfig` attribute directly on submodules", stacklevel=2)
    _add_observer_(model, allow_list if allow_list is not None else get_default_qconfig_propagation_list(),
                   observer_non_leaf_module_list)
    return model


def _remove_activation_post_process(module: Any) -> None:
    if hasattr(module, "activation_post_process") and _is_activation_post_process(module.activation_post_process):
        delattr(module, "activation_post_process")
    for hooks, fn in ((module._forward_pre_hooks, _observer_forward_pre_hook),
                      (module._forward_hooks, _observer_forward_hook)):
        for handle_id in [h for h, f in hooks.items() if f is fn]:
            hooks.pop(handle_id)


def _remove_qconfig(module: Any) -> None:
    for child in module.children():
        _remove_qconfig(child)
    if hasattr(module, "qconfig"):
        del module.qconfig
    _remove_activation_post_process(module)


@_deprecated
def quantize(model: Any, run_fn: Any, run_args: Any, mapping: Any = None, inplace: bool = False) -> Any:
    """``prepare``, ``run_fn(model, *run_args)`` (calibration), ``convert``."""
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        prepare(model, inplace=True)
        run_fn(model, *run_args)
        convert(model, mapping, inplace=True)
    return model


@_deprecated
def quantize_dynamic(model: Any, qconfig_spec: Any = None, dtype: Any = ember.qint8, mapping: Any = None,
                     inplace: bool = False) -> Any:
    """Swap ``nn.Linear`` / ``nn.LSTM`` / ``nn.GRU`` (or the types / names in ``qconfig_spec``) for dynamically
    quantized versions: int8 weights now, activations quantized on the fly at each call.

    Example::

        >>> qmodel = ember.ao.quantization.quantize_dynamic(model, {ember.nn.Linear}, dtype=ember.qint8)
    """
    if qconfig_spec is None:
        if dtype is ember.qint8:
            qconfig_spec = {nn.Linear: default_dynamic_qconfig, nn.LSTM: default_dynamic_qconfig,
                            nn.GRU: default_dynamic_qconfig}
        elif dtype is ember.float16:
            qconfig_spec = {nn.Linear: float16_dynamic_qconfig}
        else:
            raise ValueError(f"Don't know how to quantize with default settings for {dtype}. Provide full qconfig "
                             "please")
    elif isinstance(qconfig_spec, set):
        if dtype is ember.qint8:
            default = default_dynamic_qconfig
        elif dtype is ember.float16:
            default = float16_dynamic_qconfig
        else:
            raise RuntimeError("Unknown dtype specified for quantize_dynamic: ", str(dtype))
        qconfig_spec = dict(zip(qconfig_spec, itertools.repeat(default)))
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    _convert(model, mapping, inplace=True)
    _remove_qconfig(model)
    return model


@_deprecated
def prepare_qat(model: Any, mapping: Any = None, inplace: bool = False) -> Any:
    """Quantization-aware training's ``prepare``: each layer a QAT mapping knows becomes its fake-quantized
    version, with observers on its output."""
    if not model.training:
        raise AssertionError("prepare_qat only works on models in training mode")
    if mapping is None:
        mapping = get_default_qat_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_dict=None)
    _convert(model, mapping=mapping, inplace=True)
    _add_observer_(model, get_default_qconfig_propagation_list(), set(mapping.values()))
    return model


@_deprecated
def quantize_qat(model: Any, run_fn: Any, run_args: Any, inplace: bool = False) -> Any:
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        prepare_qat(model, inplace=True)
        run_fn(model, *run_args)
        convert(model, inplace=True)
    return model


@_deprecated
def convert(module: Any, mapping: Any = None, inplace: bool = False, remove_qconfig: bool = True,
            is_reference: bool = False, convert_custom_config_dict: Any = None,
            use_precomputed_fake_quant: bool = False) -> Any:
    """Swap every observed module for its quantized class (``from_float`` reads the observers)."""
    if is_reference:
        raise NotImplementedError("convert(is_reference=True): reference quantized modules are not in ember yet")
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping, inplace=True, use_precomputed_fake_quant=use_precomputed_fake_quant)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def _convert(module: Any, mapping: Any = None, inplace: bool = False, use_precomputed_fake_quant: bool = False) -> Any:
    if mapping is None:
        mapping = get_default_static_quant_module_mappings()
    if not inplace:
        module = copy.deepcopy(module)
    reassign = {}
    for name, mod in module.named_children():
        if not isinstance(mod, _FusedModule):
            _convert(mod, mapping, True, use_precomputed_fake_quant)
        reassign[name] = swap_module(mod, mapping, {}, use_precomputed_fake_quant)
    for key, value in reassign.items():
        module._modules[key] = value
    return module


def swap_module(mod: Any, mapping: Any, custom_module_class_mapping: Any,
                use_precomputed_fake_quant: bool = False) -> Any:
    """``mapping[type(mod)].from_float(mod)`` when ``mod`` has a qconfig and a mapping entry, keeping its other
    hooks; otherwise ``mod``."""
    if getattr(mod, "qconfig", None) is None or type(mod) not in mapping:
        return mod
    qmod = mapping[type(mod)]
    if "use_precomputed_fake_quant" in inspect.signature(qmod.from_float).parameters:
        new_mod = qmod.from_float(mod, use_precomputed_fake_quant=use_precomputed_fake_quant)
    else:
        new_mod = qmod.from_float(mod)
    for hook in mod._forward_pre_hooks.values():
        new_mod.register_forward_pre_hook(hook)
    for hook in mod._forward_hooks.values():
        if hook is not _observer_forward_hook:
            new_mod.register_forward_hook(hook)
    return new_mod
