"""FX graph mode quantization (mirrors ``torch/ao/quantization/quantize_fx.py``): the eager workflow without editing
the model -- ``prepare_fx`` traces it with ``ember.fx``, fuses Conv+BN(+ReLU) / Linear+ReLU from the graph and
inserts observers; ``convert_fx`` turns the observed graph into quantized modules and ops.

Note [FX graph mode quantization]
After tracing and fusion, each node is one of:

- a *weighted* layer (a module some static mapping converts: Linear, Conv2d, their fused forms): its input must be
  quantized and its output is observed;
- a *binary* op (``+``, ``ember.add``): both inputs quantized, output observed, converted to ``_quantized_add``;
- a *same-qparams* op (ReLU, max / adaptive average pooling, flatten, reshape / view, dropout, ...): quantized iff
  its input is, in the input's parameters, so no observer;
- anything else stays float.

An observer goes after every value a quantized node needs and nothing provides (a graph input, a float op's output)
and after every weighted / binary node. ``convert_fx`` replaces an observer after a float value by
``quantize_per_tensor`` with its parameters, gives the observer after a weighted layer to the layer (``from_float``
reads it) and removes it, and puts ``dequantize`` wherever a quantized value meets a float consumer (the output
included). Nodes whose qconfig is None stay float.
"""
from __future__ import annotations

from typing import Any

import copy
import operator

import ember
from ember import fx, nn
from ember.nn import functional as F
from ember.ao.quantization.fuser_method_mappings import get_fuser_method
from ember.ao.quantization.qconfig_mapping import QConfigMapping
from ember.ao.quantization.quantization_mappings import (get_default_qat_module_mappings,
                                                         get_default_static_quant_module_mappings)

__all__ = ["fuse_fx", "prepare_fx", "prepare_qat_fx", "convert_fx"]

_SAME_QPARAMS_MODULES = (nn.ReLU, nn.MaxPool2d, nn.AdaptiveAvgPool2d, nn.Flatten, nn.Dropout, nn.Identity)
_SAME_QPARAMS_FUNCTIONS = {F.relu, ember.relu, ember.flatten, ember.reshape, F.max_pool2d, F.adaptive_avg_pool2d,
                           F.dropout, ember.transpose, ember.permute, ember.squeeze, ember.unsqueeze}
_SAME_QPARAMS_METHODS = {"relu", "reshape", "view", "flatten", "contiguous", "transpose", "permute", "squeeze",
                         "unsqueeze"}
_ADD = {operator.add, ember.add}
_FUSABLE = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear, nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.ReLU)


def _is_relu(gm: Any, n: Any) -> bool:
    return (n.op == "call_module" and type(gm.get_submodule(n.target)) is nn.ReLU) or \
        (n.op == "call_function" and n.target in (F.relu, ember.relu))     # x.relu() is not fused, as in PyTorch


def _chain(gm: Any, start: Any) -> list[Any]:
    """The longest fusable run of modules starting at ``start`` (each link the only user of the one before)."""
    chain = [start]
    while len(chain) < 3:
        users = list(chain[-1].users)
        if len(users) != 1:
            break
        nxt = users[0]
        if _is_relu(gm, nxt) or (nxt.op == "call_module" and type(gm.get_submodule(nxt.target)) in _FUSABLE):
            chain.append(nxt)
        else:
            break
    return chain


def _fuse(gm: Any, is_qat: bool) -> Any:
    """Fuse the graph's Conv+BN(+ReLU), Conv+ReLU, Linear+ReLU, Linear+BN, BN+ReLU runs (the fused module takes the
    first module's name; functional ReLUs count)."""
    for node in list(gm.graph.nodes):
        if node.op != "call_module" or node.graph is None:
            continue
        first = gm.get_submodule(node.target)
        if type(first) not in _FUSABLE or type(first) is nn.ReLU:
            continue
        chain = _chain(gm, node)
        while len(chain) > 1:
            mods = [gm.get_submodule(n.target) if n.op == "call_module" else nn.ReLU() for n in chain]
            for m in mods[1:]:
                m.training = mods[0].training
            try:
                fuser = get_fuser_method(tuple(type(m) for m in mods))
            except AssertionError:
                chain = chain[:-1]
                continue
            gm.set_submodule(node.target, fuser(is_qat, *mods))
            chain[-1].replace_all_uses_with(node)
            for n in reversed(chain[1:]):
                gm.graph.erase_node(n)
            break
    gm.recompile()
    return gm


def fuse_fx(model: Any, fuse_custom_config: Any = None, backend_config: Any = None) -> Any:
    """Trace ``model`` and fuse its Conv+BN(+ReLU) / Linear+ReLU runs (evaluation mode: batch norm folded)."""
    gm = fx.symbolic_trace(copy.deepcopy(model))
    return _fuse(gm, is_qat=False)


def _qconfig_of(gm: Any, node: Any, mapping: QConfigMapping) -> Any:
    if node.op == "call_module":
        return mapping.qconfig_for(node.target, type(gm.get_submodule(node.target)))
    if node.op in ("call_function", "call_method"):
        return mapping.qconfig_for(None, node.target)
    return None


def _kind(gm: Any, node: Any, static: dict[Any, Any]) -> str:
    if node.op == "call_module":
        mod = gm.get_submodule(node.target)
        if type(mod) in static and not isinstance(mod, _SAME_QPARAMS_MODULES):
            return "weighted"
        if isinstance(mod, _SAME_QPARAMS_MODULES):
            return "same"
    if node.op == "call_function":
        if node.target in _ADD and len(node.args) == 2 and all(isinstance(a, fx.Node) for a in node.args):
            return "binary"
        if node.target in _SAME_QPARAMS_FUNCTIONS:
            return "same"
    if node.op == "call_method" and node.target in _SAME_QPARAMS_METHODS:
        return "same"
    return "float"


def _prepare(model: Any, qconfig_mapping: Any, is_qat: bool) -> Any:
    if isinstance(qconfig_mapping, dict):        # the older dict form: {"": qconfig, "object_type": [...]}
        m = QConfigMapping().set_global(qconfig_mapping.get(""))
        for t, q in qconfig_mapping.get("object_type", []):
            m.set_object_type(t, q)
        for name, q in qconfig_mapping.get("module_name", []):
            m.set_module_name(name, q)
        qconfig_mapping = m
    gm = _fuse(fx.symbolic_trace(copy.deepcopy(model)), is_qat)
    static = get_default_static_quant_module_mappings()
    if is_qat:                                   # fake-quantized weights for training
        qat = get_default_qat_module_mappings()
        for node in gm.graph.nodes:
            if node.op == "call_module":
                mod = gm.get_submodule(node.target)
                qconfig = _qconfig_of(gm, node, qconfig_mapping)
                if type(mod) in qat and qconfig is not None:
                    for sub in mod.modules():
                        sub.qconfig = qconfig
                    gm.set_submodule(node.target, qat[type(mod)].from_float(mod))
    observed: dict[Any, Any] = {}                # value node -> its observer node
    quantized: set[Any] = set()
    counter = [0]

    def observe(value: Any, qconfig: Any) -> Any:
        if value in observed:
            return observed[value]
        name = f"activation_post_process_{counter[0]}"
        counter[0] += 1
        gm.add_module(name, qconfig.activation())
        with gm.graph.inserting_after(value):
            obs = gm.graph.call_module(name, (value,))
        for user in list(value.users):
            if user is not obs:
                user.replace_input_with(value, obs)
        observed[value] = obs
        quantized.add(obs)
        return obs

    for node in list(gm.graph.nodes):
        if node.op in ("placeholder", "output", "get_attr") or node in observed.values():
            continue
        kind = _kind(gm, node, static)
        qconfig = _qconfig_of(gm, node, qconfig_mapping)
        if kind == "same":
            if isinstance(node.args[0], fx.Node) and node.args[0] in quantized:
                quantized.add(node)
            continue
        if kind == "float" or qconfig is None:
            continue
        for arg in (node.args[:1] if kind == "weighted" else node.args):
            if isinstance(arg, fx.Node) and arg not in quantized:
                observe(arg, qconfig)
        if node.op == "call_module":
            for sub in gm.get_submodule(node.target).modules():     # a fused module's parts too
                sub.qconfig = qconfig
        node.meta["quantize_kind"] = kind
        observe(node, qconfig)
    gm.recompile()
    gm.meta_quantized = True
    return gm


def prepare_fx(model: Any, qconfig_mapping: Any, example_inputs: Any = None, prepare_custom_config: Any = None,
               _equalization_config: Any = None, backend_config: Any = None) -> Any:
    """Trace, fuse and observe ``model`` (in evaluation mode) for post-training static quantization (Note [FX graph
    mode quantization]); run calibration data through the result, then ``convert_fx`` it.

    Example::

        >>> from ember.ao.quantization import get_default_qconfig_mapping
        >>> prepared = prepare_fx(model.eval(), get_default_qconfig_mapping("x86"), (example,))
        >>> prepared(calibration_batch)
        >>> quantized = convert_fx(prepared)
    """
    if model.training:
        raise AssertionError("prepare_fx only works for models in eval mode")
    return _prepare(model, qconfig_mapping, is_qat=False)


def prepare_qat_fx(model: Any, qconfig_mapping: Any, example_inputs: Any = None, prepare_custom_config: Any = None,
                   backend_config: Any = None) -> Any:
    """``prepare_fx`` for quantization-aware training (fused modules kept, weights fake-quantized)."""
    return _prepare(model, qconfig_mapping, is_qat=True)


def convert_fx(graph_module: Any, convert_custom_config: Any = None, _remove_qconfig: bool = True,
               qconfig_mapping: Any = None, backend_config: Any = None) -> Any:
    """The quantized model of an observed one (Note [FX graph mode quantization])."""
    gm = copy.deepcopy(graph_module)
    static = get_default_static_quant_module_mappings()
    graph = gm.graph
    quantized: set[Any] = set()
    for node in list(graph.nodes):
        if node.op == "call_module" and node.target.startswith("activation_post_process_"):
            obs = gm.get_submodule(node.target)
            value = node.args[0]
            if value.meta.get("quantize_kind") == "weighted":
                mod = gm.get_submodule(value.target)
                mod.activation_post_process = obs
                gm.set_submodule(value.target, static[type(mod)].from_float(mod))
                node.replace_all_uses_with(value)
                quantized.add(value)
            elif value.meta.get("quantize_kind") == "binary":
                scale, zero_point = obs.calculate_qparams()
                value.target = ember._quantized_add
                value.args = (*value.args, float(scale), int(zero_point))
                node.replace_all_uses_with(value)
                quantized.add(value)
            else:                                    # a float value that quantized nodes need
                scale, zero_point = obs.calculate_qparams()
                with graph.inserting_after(node):
                    q = graph.call_function(ember.quantize_per_tensor, (value, float(scale), int(zero_point),
                                                                        obs.dtype))
                node.replace_all_uses_with(q)
                quantized.add(q)
            graph.erase_node(node)
            delattr(gm, node.target)
            continue
        if _kind(gm, node, static) == "same" and isinstance(node.args[0], fx.Node) and node.args[0] in quantized:
            quantized.add(node)
    # a quantized value used by a float consumer (or returned) is dequantized first, once per value
    dequantized: dict[Any, Any] = {}
    for node in list(graph.nodes):
        if node in quantized or node.op == "placeholder":
            continue
        for arg in list(node.all_input_nodes):
            if arg in quantized:
                if arg not in dequantized:
                    with graph.inserting_after(arg):
                        dequantized[arg] = graph.call_method("dequantize", (arg,))
                node.replace_input_with(arg, dequantized[arg])
    for mod in gm.modules():
        if hasattr(mod, "qconfig"):
            del mod.qconfig
    graph.lint()
    gm.recompile()
    return gm
