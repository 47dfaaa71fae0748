"""``ember.export.save`` / ``load``: PyTorch's ``.pt2`` archive (``torch/export/pt2_archive``,
``torch/_export/serde/serialize.py`` and ``schema.py``, schema version 8.20).

Note [The .pt2 archive]
A zip file (stored, not compressed) whose entries sit under one folder named after the file (``m/`` for
``m.pt2``, ``archive/`` for a file object):

* ``archive_format`` (``pt2``), ``archive_version`` (``0``), ``byteorder`` (``little``), ``.data/version``,
  ``.data/serialization_id``;
* ``models/model.json`` -- the program as JSON: the graph (``inputs``, ``outputs``, ``nodes`` -- each with its
  operator as ``torch.ops.aten.<name>.<overload>``, its arguments named by the schema and tagged by type
  (``as_tensor``, ``as_ints``, ``as_sym_int``, ...), its outputs, and ``metadata``: source line and module stack),
  ``tensor_values`` (every tensor's dtype, sizes, strides, device; a symbolic size as sympy's ``srepr`` with the
  example value as hint), ``sym_int_values``; the signature as tagged unions (``parameter``, ``buffer``,
  ``user_input``, ``buffer_mutation``, ...); the module call graph with the input / output tree specs as JSON;
  ``range_constraints`` (``max_val`` null for no bound); schema and opset versions;
* ``data/weights/weight_<n>`` and ``data/constants/tensor_<n>``: each tensor's bytes as they lie in memory,
  described by ``model_weights_config.json`` / ``model_constants_config.json`` (name -> file, whether a parameter,
  its tensor metadata);
* ``data/sample_inputs/model.pt``: the example inputs as a ``torch.save`` checkpoint.

An operator's result that is a tuple is one node whose outputs name its elements (an element no one uses is
``<node>_unused_<i>``); loading makes the ``getitem`` nodes again. Both libraries write and read the same JSON, so a
program exported and saved by one loads in the other. Symbolic sizes are parsed from their ``srepr`` by a small
reader of sympy's ``Symbol`` / ``Integer`` / ``Add`` / ``Mul`` / ``Pow`` calls (nothing is evaluated).
"""
from __future__ import annotations

import ast
import io
import json
import math
import operator
import os
import random
import zipfile
from typing import Any

import numpy as np

from ember import version as _version
from ember._creation import from_numpy
from ember._ops import OpOverload, ops
from ember._subclasses.fake_tensor import FakeTensorMode
from ember._tensor import Tensor
from ember.c10 import dtype as _dt
from ember.c10.device import device as device_of
from ember.c10.memory_format import channels_last, channels_last_3d, contiguous_format, preserve_format, strided
from ember._higher_order_ops import HIGHER_ORDER_OPS, HigherOrderOperator
from ember.export._trace import _Symbol
from ember.export.exported_program import ExportedProgram, ModuleCallEntry, ModuleCallSignature, named_placeholder
from ember.export.graph_signature import (ConstantArgument, ExportGraphSignature, InputKind, InputSpec, OutputKind,
                                          OutputSpec, SymIntArgument, TensorArgument)
from ember.fx.experimental.symbolic_shapes import SymExpr, SymInt, Symbol, ValueRanges, int_oo
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.serialization import _atomic_write, load as torch_load, save as torch_save
from ember.utils._pytree import treespec_dumps, treespec_loads

__all__ = ["save", "load"]

SCHEMA_VERSION = {"major": 8, "minor": 20}
OPSET_VERSION = {"aten": 10}

_SCALAR_TYPES = {_dt.uint8: 1, _dt.int8: 2, _dt.int16: 3, _dt.int32: 4, _dt.int64: 5, _dt.float16: 6,
                 _dt.float32: 7, _dt.float64: 8, _dt.complex64: 10, _dt.complex128: 11, _dt.bool_: 12,
                 _dt.bfloat16: 13, _dt.uint16: 28, _dt.float8_e4m3fn: 29, _dt.float8_e5m2: 30,
                 _dt.float8_e4m3fnuz: 31, _dt.float8_e5m2fnuz: 32, _dt.uint32: 34, _dt.uint64: 35}
_DTYPES = {v: k for k, v in _SCALAR_TYPES.items()}
_MEMORY_FORMATS = {contiguous_format: 1, channels_last: 2, channels_last_3d: 3, preserve_format: 4}
_LAYOUTS = {strided: 7}
_OPERATORS = {f"_operator.{f.__name__}": f for f in (operator.add, operator.sub, operator.mul, operator.floordiv,
                                                      operator.mod, operator.neg, operator.eq, operator.ne,
                                                      operator.lt, operator.le, operator.gt, operator.ge,
                                                      operator.getitem)}


# -- symbolic expressions --------------------------------------------------------------------------------------------
def _srepr(expr: SymExpr) -> str:
    """sympy's ``srepr`` of a polynomial with integer coefficients."""
    def sym(name: str) -> str:
        return f"Symbol('{name}', positive=True, integer=True)"

    def term(mono: tuple[str, ...], c: int) -> str:
        if not mono:
            return f"Integer({c})"
        factors = []
        for s in sorted(set(mono)):
            k = mono.count(s)
            factors.append(sym(s) if k == 1 else f"Pow({sym(s)}, Integer({k}))")
        if c != 1:
            factors.insert(0, f"Integer({c})")
        return factors[0] if len(factors) == 1 else f"Mul({', '.join(factors)})"
    terms = [term(m, c) for m, c in sorted(expr.terms.items(), key=lambda kv: (not kv[0], kv[0]))]
    if not terms:
        return "Integer(0)"
    return terms[0] if len(terms) == 1 else f"Add({', '.join(terms)})"


def _parse_expr(text: str) -> SymExpr:
    """A ``srepr`` (or a plain ``s0 + 2*s1``) as a SymExpr, read without evaluating anything."""
    def walk(n: ast.AST) -> SymExpr:
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return SymExpr.of(n.value)
        if isinstance(n, ast.Name):
            return SymExpr.of(Symbol(n.id))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -walk(n.operand)
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub, ast.Mult, ast.Pow)):
            a = walk(n.left)
            if isinstance(n.op, ast.Pow):
                return _power(a, walk(n.right))
            b = walk(n.right)
            return a + b if isinstance(n.op, ast.Add) else a - b if isinstance(n.op, ast.Sub) else a * b
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            f, args = n.func.id, n.args
            if f == "Symbol" and args and isinstance(args[0], ast.Constant):
                return SymExpr.of(Symbol(str(args[0].value)))
            if f == "Integer" and len(args) == 1:
                return walk(args[0])
            if f in ("Add", "Mul") and args:
                out = walk(args[0])
                for arg in args[1:]:
                    out = out + walk(arg) if f == "Add" else out * walk(arg)
                return out
            if f == "Pow" and len(args) == 2:
                return _power(walk(args[0]), walk(args[1]))
        raise ValueError(f"ember cannot read the symbolic expression {text!r} (only polynomials with integer "
                         "coefficients)")
    return walk(ast.parse(text, mode="eval").body)


def _power(base: SymExpr, exp: SymExpr) -> SymExpr:
    if not exp.is_constant() or exp.constant() < 0:
        raise ValueError("ember reads only non-negative integer powers of sizes")
    out = SymExpr.of(1)
    for _ in range(exp.constant()):
        out = out * base
    return out


def _sym_int(v: Any) -> dict[str, Any]:
    if isinstance(v, SymInt):
        return {"as_expr": {"expr_str": _srepr(v.expr), "hint": {"as_int": int(v.hint)}}}
    return {"as_int": int(v)}


def _load_sym_int(d: dict[str, Any]) -> Any:
    if "as_int" in d:
        return d["as_int"]
    e = d["as_expr"]
    expr = _parse_expr(e["expr_str"])
    hint = (e.get("hint") or {}).get("as_int")
    if expr.is_constant():
        return expr.constant()
    return SymInt(expr, int(hint) if hint is not None else 0)


# -- tensors ----------------------------------------------------------------------------------------------------------
def _device(d: Any) -> dict[str, Any]:
    return {"type": d.type, "index": d.index}


def _tensor_meta(t: Any) -> dict[str, Any]:
    sizes = getattr(t, "_sym_sizes", None) or tuple(t.shape)
    strides = getattr(t, "_sym_strides", None) or tuple(t.stride())
    if t.dtype not in _SCALAR_TYPES:
        raise RuntimeError(f"ember.export.save: the dtype {t.dtype} has no number in the .pt2 schema")
    return {"dtype": _SCALAR_TYPES[t.dtype], "sizes": [_sym_int(s) for s in sizes],
            "requires_grad": bool(t.requires_grad), "device": _device(t.device),
            "strides": [_sym_int(s) for s in strides], "storage_offset": {"as_int": int(t.storage_offset())},
            "layout": _LAYOUTS.get(t.layout, 7)}


def _float(v: float) -> Any:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def _load_float(v: Any) -> float:
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[v] if isinstance(v, str) else float(v)


# -- the graph -------------------------------------------------------------------------------------------------------
def _is_node(x: Any) -> bool:
    return hasattr(x, "op") and hasattr(x, "users")


def _target_name(t: Any) -> str:
    if isinstance(t, OpOverload):
        return f"torch.ops.{t}"
    if isinstance(t, HigherOrderOperator):
        return f"torch.ops.higher_order.{t.name()}"
    for name, f in _OPERATORS.items():
        if t is f:
            return name
    raise RuntimeError(f"ember.export.save cannot write a call of {t!r}: only ATen operators and integer "
                       "arithmetic on sizes are part of the .pt2 schema")


class _GraphWriter:
    def __init__(self, graph: Graph, owner: Any) -> None:
        self.graph = graph
        self.owner = owner          # the GraphModule holding the branches of higher-order operators
        self.tensor_values: dict[str, Any] = {}
        self.sym_int_values: dict[str, Any] = {}

    def value(self, node: Any) -> None:
        val = node.meta.get("val")
        if isinstance(val, Tensor):
            self.tensor_values[node.name] = _tensor_meta(val)
        elif isinstance(val, SymInt):
            self.sym_int_values[node.name] = _sym_int(val)

    def arg(self, a: Any, type_text: str = "") -> dict[str, Any]:
        if _is_node(a) and a.op == "get_attr":
            sub = getattr(self.owner, a.target)
            return {"as_graph": {"name": a.target, "graph": _GraphWriter(sub.graph, sub).write()}}
        if _is_node(a):
            val = a.meta.get("val")
            if isinstance(val, (SymInt, int)) and not isinstance(val, bool):
                return {"as_sym_int": {"as_name": a.name}}
            return {"as_tensor": {"name": a.name}}
        if a is None or isinstance(a, (bool, int, float, str)):
            return _constant_value(a)
        if isinstance(a, _dt.dtype):
            return {"as_scalar_type": _SCALAR_TYPES[a]}
        if a in _MEMORY_FORMATS:
            return {"as_memory_format": _MEMORY_FORMATS[a]}
        if a is strided:
            return {"as_layout": 7}
        if isinstance(a, device_of):
            return {"as_device": _device(a)}
        if isinstance(a, (list, tuple)):
            items = list(a)
            if type_text.startswith("Tensor?[]") or (any(x is None for x in items) and any(_is_node(x) for x in items)):
                return {"as_optional_tensors": [{"as_none": True} if x is None else {"as_tensor": {"name": x.name}}
                                                for x in items]}
            if any(_is_node(x) for x in items):
                if all(isinstance(x.meta.get("val"), Tensor) for x in items if _is_node(x)) and \
                        all(_is_node(x) for x in items):
                    return {"as_tensors": [{"name": x.name} for x in items]}
                return {"as_sym_ints": [{"as_name": x.name} if _is_node(x) else {"as_int": int(x)} for x in items]}
            if type_text.startswith("Tensor"):
                return {"as_tensors": []}
            if all(isinstance(x, bool) for x in items) and (items or type_text.startswith("bool")):
                return {"as_bools": items}
            if all(isinstance(x, int) and not isinstance(x, bool) for x in items):
                return {"as_ints": items}
            if all(isinstance(x, (int, float)) for x in items):
                return {"as_floats": [_float(float(x)) for x in items]}
            if all(isinstance(x, str) for x in items):
                return {"as_strings": items}
        raise RuntimeError(f"ember.export.save cannot write the argument {a!r}")

    def node(self, node: Any) -> dict[str, Any]:
        target = node.target
        inputs: list[dict[str, Any]] = []
        if isinstance(target, OpOverload):
            schema = target._schema.arguments
            for i, a in enumerate(node.args):
                inputs.append({"name": schema[i].name, "arg": self.arg(a, schema[i].type_text), "kind": 1})
            by_name = {s.name: s for s in schema}
            for k, v in node.kwargs.items():
                inputs.append({"name": k, "arg": self.arg(v, by_name[k].type_text if k in by_name else ""), "kind": 2})
            outputs = self.outputs(node, target)
        elif isinstance(target, HigherOrderOperator):
            inputs = [{"name": "", "arg": self.arg(a), "kind": 1} for a in node.args]
            getitems = {u.args[1]: u for u in node.users if u.target is operator.getitem}
            val = node.meta.get("val") or ()
            outputs = []
            for i in range(len(val)):
                g = getitems.get(i)
                if g is not None:
                    self.value(g)
                out_name = g.name if g is not None else f"{node.name}_unused_{i}"
                if g is None and isinstance(val[i], Tensor):
                    self.tensor_values[out_name] = _tensor_meta(val[i])
                outputs.append({"as_tensor": {"name": out_name}})
        else:
            for name, a in zip("ab", node.args):
                inputs.append({"name": name, "arg": self.arg(a), "kind": 1})
            self.value(node)
            outputs = [{"as_sym_int": {"as_name": node.name}}]
        meta: dict[str, str] = {}
        if node.meta.get("stack_trace"):
            meta["stack_trace"] = node.meta["stack_trace"]
        stack = node.meta.get("nn_module_stack")
        if stack:
            meta["nn_module_stack"] = ";".join(f"{k},{path},{_qualname(ty)}" for k, (path, ty) in stack.items())
        return {"target": _target_name(target), "inputs": inputs, "outputs": outputs, "metadata": meta,
                "is_hop_single_tensor_return": False if isinstance(target, HigherOrderOperator) else None,
                "name": node.name}

    def outputs(self, node: Any, target: OpOverload) -> list[dict[str, Any]]:
        returns = target._schema.returns
        val = node.meta.get("val")
        getitems = {u.args[1]: u for u in node.users if u.target is operator.getitem}
        for u in getitems.values():
            self.value(u)
        if len(returns) == 1 and returns[0].type_text.startswith("Tensor") and "[]" in returns[0].type_text:
            n = len(val) if isinstance(val, (list, tuple)) else len(getitems)
            return [{"as_tensors": [{"name": getitems[i].name if i in getitems else f"{node.name}_unused_{i}"}
                                    for i in range(n)]}]
        if len(returns) == 1:
            self.value(node)
            if returns[0].type_text.startswith("SymInt") or returns[0].type_text == "int":
                return [{"as_sym_int": {"as_name": node.name}}]
            if not returns[0].type_text.startswith("Tensor"):
                return [{"as_none": True}]
            return [{"as_tensor": {"name": node.name}}]
        if not returns:
            return []
        out = []
        for i, r in enumerate(returns):
            name = getitems[i].name if i in getitems else f"{node.name}_unused_{i}"
            if name not in self.tensor_values and isinstance(val, (list, tuple)) and isinstance(val[i], Tensor):
                self.tensor_values[name] = _tensor_meta(val[i])
            out.append({"as_tensor": {"name": name}})
        return out

    def write(self) -> dict[str, Any]:
        graph_inputs: list[dict[str, Any]] = []
        nodes: list[dict[str, Any]] = []
        out_node = None
        for node in self.graph.nodes:
            if node.op == "placeholder":
                val = node.meta.get("val")
                if isinstance(val, Tensor):
                    self.value(node)
                    graph_inputs.append({"as_tensor": {"name": node.name}})
                else:
                    graph_inputs.append(self.arg(val))
            elif node.op == "call_function":
                if node.target is operator.getitem and _is_node(node.args[0]) and \
                        isinstance(node.args[0].target, (OpOverload, HigherOrderOperator)):
                    continue
                nodes.append(self.node(node))
            elif node.op == "output":
                out_node = node
            elif node.op == "get_attr" and isinstance(getattr(self.owner, node.target, None), GraphModule):
                continue        # a branch: written where its operator reads it
            else:
                raise RuntimeError(f"ember.export.save: unexpected {node.op} node {node.name}")
        outs = out_node.args[0] if out_node is not None else ()
        single = not isinstance(outs, (tuple, list))     # a higher-order operator's graph returning one tensor
        return {"inputs": graph_inputs, "outputs": [self.arg(o) for o in ([outs] if single else outs)],
                "nodes": nodes, "tensor_values": self.tensor_values, "sym_int_values": self.sym_int_values,
                "sym_bool_values": {}, "is_single_tensor_return": single, "custom_obj_values": {},
                "sym_float_values": {}}


def _qualname(ty: Any) -> str:
    if isinstance(ty, str):
        return ty
    module = getattr(ty, "__module__", "") or ""
    if module.startswith("ember"):
        module = "torch" + module[len("ember"):]
    return f"{module}.{ty.__qualname__}"


# -- the signature ---------------------------------------------------------------------------------------------------
def _constant_value(v: Any) -> dict[str, Any]:
    """A specialized input or a constant output (``ConstantValue``)."""
    if v is None:
        return {"as_none": True}
    if isinstance(v, bool):
        return {"as_bool": v}
    if isinstance(v, int):
        return {"as_int": v}
    if isinstance(v, float):
        return {"as_float": _float(v)}
    return {"as_string": v}


def _input_spec(s: InputSpec) -> dict[str, Any]:
    arg = s.arg
    if s.kind == InputKind.PARAMETER:
        return {"parameter": {"arg": {"name": arg.name}, "parameter_name": s.target}}
    if s.kind == InputKind.BUFFER:
        return {"buffer": {"arg": {"name": arg.name}, "buffer_name": s.target, "persistent": s.persistent}}
    if s.kind == InputKind.CONSTANT_TENSOR:
        return {"tensor_constant": {"arg": {"name": arg.name}, "tensor_constant_name": s.target}}
    if isinstance(arg, ConstantArgument):
        return {"constant_input": {"name": arg.name, "value": _constant_value(arg.value)}}
    key = "as_sym_int" if isinstance(arg, SymIntArgument) else "as_tensor"
    return {"user_input": {"arg": {key: {"as_name": arg.name} if key == "as_sym_int" else {"name": arg.name}}}}


_OUTPUT_KEYS = {OutputKind.BUFFER_MUTATION: ("buffer_mutation", "buffer_name"),
                OutputKind.PARAMETER_MUTATION: ("parameter_mutation", "parameter_name"),
                OutputKind.USER_INPUT_MUTATION: ("user_input_mutation", "user_input_name"),
                OutputKind.GRADIENT_TO_PARAMETER: ("gradient_to_parameter", "parameter_name"),
                OutputKind.GRADIENT_TO_USER_INPUT: ("gradient_to_user_input", "user_input_name")}


def _output_spec(s: OutputSpec) -> dict[str, Any]:
    if s.kind == OutputKind.USER_OUTPUT:
        if isinstance(s.arg, ConstantArgument):
            arg = _constant_value(s.arg.value)
        else:
            arg = {"as_tensor": {"name": s.arg.name}}
        return {"user_output": {"arg": arg}}
    if s.kind == OutputKind.LOSS_OUTPUT:
        return {"loss_output": {"arg": {"name": s.arg.name}}}
    key, field = _OUTPUT_KEYS[s.kind]
    return {key: {"arg": {"name": s.arg.name}, field: s.target}}


def _load_input_spec(d: dict[str, Any]) -> InputSpec:
    (kind, body), = d.items()
    if kind == "parameter":
        return InputSpec(InputKind.PARAMETER, TensorArgument(body["arg"]["name"]), body["parameter_name"])
    if kind == "buffer":
        return InputSpec(InputKind.BUFFER, TensorArgument(body["arg"]["name"]), body["buffer_name"],
                         persistent=body["persistent"])
    if kind == "tensor_constant":
        return InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(body["arg"]["name"]), body["tensor_constant_name"])
    if kind == "constant_input":
        return InputSpec(InputKind.USER_INPUT, ConstantArgument(body["name"], _constant(body["value"])), None)
    if kind == "user_input":
        arg = body["arg"]
        if "as_tensor" in arg:
            return InputSpec(InputKind.USER_INPUT, TensorArgument(arg["as_tensor"]["name"]), None)
        if "as_sym_int" in arg:
            return InputSpec(InputKind.USER_INPUT, SymIntArgument(arg["as_sym_int"]["as_name"]), None)
    raise RuntimeError(f"ember.export.load: an input spec ember does not know: {kind}")


def _constant(v: dict[str, Any]) -> Any:
    (k, x), = v.items()
    return None if k == "as_none" else _load_float(x) if k == "as_float" else x


def _load_output_spec(d: dict[str, Any]) -> OutputSpec:
    (kind, body), = d.items()
    if kind == "user_output":
        arg = body["arg"]
        if "as_tensor" in arg:
            return OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(arg["as_tensor"]["name"]), None)
        if "as_sym_int" in arg:
            return OutputSpec(OutputKind.USER_OUTPUT, SymIntArgument(arg["as_sym_int"]["as_name"]), None)
        return OutputSpec(OutputKind.USER_OUTPUT, ConstantArgument("", _constant(arg)), None)
    if kind == "loss_output":
        return OutputSpec(OutputKind.LOSS_OUTPUT, TensorArgument(body["arg"]["name"]), None)
    for ok, (key, field) in _OUTPUT_KEYS.items():
        if key == kind:
            return OutputSpec(ok, TensorArgument(body["arg"]["name"]), body[field])
    raise RuntimeError(f"ember.export.load: an output spec ember does not know: {kind}")


# -- the archive -----------------------------------------------------------------------------------------------------
def _tensor_bytes(t: Any) -> bytes:
    arr = t.detach().cpu().contiguous().numpy()
    return bytes(np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())


def _payload(tensors: dict[str, Any], folder: str, prefix: str, z: zipfile.ZipFile,
             root: str) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for i, (name, t) in enumerate(tensors.items()):
        path = f"{prefix}{i}"
        z.writestr(f"{root}/data/{folder}/{path}", _tensor_bytes(t))
        meta = _tensor_meta(t.contiguous())
        config[name] = {"path_name": path, "is_param": isinstance(t, Parameter), "use_pickle": False,
                        "tensor_meta": meta}
    return {"config": config}


def save(ep: ExportedProgram, f: Any, *, extra_files: dict[str, Any] | None = None, opset_version: Any = None,
         pickle_protocol: int = 2) -> None:
    """Write ``ep`` as a ``.pt2`` archive that ``torch.export.load`` reads (Note [The .pt2 archive]); a path is
    written atomically."""
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"The 'ep' parameter must be an instance of 'ExportedProgram', got '{type(ep).__name__}' "
                        "instead.")
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        root = os.path.splitext(os.path.basename(path))[0] or "archive"
        _atomic_write(path, lambda fh: _write(ep, fh, root, extra_files))
    else:
        _write(ep, f, "archive", extra_files)


def _write(ep: ExportedProgram, fh: Any, root: str, extra_files: dict[str, Any] | None) -> None:
    graph = _GraphWriter(ep.graph, ep.graph_module).write()
    sig = ep.module_call_graph
    call_graph = []
    for entry in sig:
        s = entry.signature
        call_graph.append({"fqn": entry.fqn, "signature": None if s is None else {
            "inputs": [], "outputs": [], "in_spec": treespec_dumps(s.in_spec), "out_spec": treespec_dumps(s.out_spec),
            "forward_arg_names": s.forward_arg_names}})
    model = {
        "graph_module": {
            "graph": graph,
            "signature": {"input_specs": [_input_spec(s) for s in ep.graph_signature.input_specs],
                          "output_specs": [_output_spec(s) for s in ep.graph_signature.output_specs]},
            "module_call_graph": call_graph, "metadata": {}, "treespec_namedtuple_fields": {}},
        "opset_version": OPSET_VERSION,
        "range_constraints": {str(k): {"min_val": v.lower, "max_val": None if v.upper is int_oo else v.upper}
                              for k, v in ep.range_constraints.items()},
        "schema_version": SCHEMA_VERSION,
        "verifiers": [ep.dialect],
        "torch_version": _version.__version__,
        "guards_code": [],
    }
    samples = io.BytesIO()
    torch_save(ep.example_inputs if ep.example_inputs is not None else ((), {}), samples)
    weights = {name: t for name, t in ep.state_dict.items()}
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as z:
        weights_config = _payload(weights, "weights", "weight_", z, root)
        z.writestr(f"{root}/data/weights/model_weights_config.json", json.dumps(weights_config))
        constants_config = _payload(dict(ep.constants), "constants", "tensor_", z, root)
        z.writestr(f"{root}/data/constants/model_constants_config.json", json.dumps(constants_config))
        z.writestr(f"{root}/models/model.json", json.dumps(model))
        z.writestr(f"{root}/data/sample_inputs/model.pt", samples.getvalue())
        for name, content in (extra_files or {}).items():
            z.writestr(f"{root}/extra/{name}", content)
        z.writestr(f"{root}/archive_format", "pt2")
        z.writestr(f"{root}/archive_version", "0")
        z.writestr(f"{root}/.data/version", "6\n")
        z.writestr(f"{root}/byteorder", "little")
        z.writestr(f"{root}/.data/serialization_id", "".join(random.choice("0123456789") for _ in range(40)))


def load(f: Any, *, extra_files: dict[str, Any] | None = None, expected_opset_version: Any = None) -> ExportedProgram:
    """Read an ``ExportedProgram`` from a ``.pt2`` archive written by ``torch.export.save`` or ``ember.export.save``
    (Note [The .pt2 archive])."""
    with zipfile.ZipFile(f) as z:
        names = z.namelist()
        roots = [n[:-len("archive_format")] for n in names if n.endswith("archive_format")]
        if not roots:
            raise RuntimeError("Invalid .pt2 archive: it has no archive_format record")
        root = roots[0]
        if z.read(root + "archive_format") != b"pt2":
            raise RuntimeError("Invalid .pt2 archive: its archive_format is not pt2")
        version = z.read(root + "archive_version").decode() if root + "archive_version" in names else "0"
        if version != "0":
            raise ValueError(f"Saved archive version {version} does not match our current archive version 0.")
        models = [n for n in names if n.startswith(root + "models/") and n.endswith(".json")]
        if not models:
            raise RuntimeError("Invalid .pt2 archive: it holds no exported program (models/*.json)")
        model_name = models[0][len(root + "models/"):-len(".json")]
        model = json.loads(z.read(models[0]))
        major = model.get("schema_version", {}).get("major")
        if major != SCHEMA_VERSION["major"]:
            raise RuntimeError(f"Serialized schema version {model.get('schema_version')} does not match our current "
                               f"schema version {SCHEMA_VERSION}.")
        state_dict = _load_payload(z, root, "weights", "model_weights_config.json", names, model_name)
        constants = _load_payload(z, root, "constants", "model_constants_config.json", names, model_name)
        sample_path = f"{root}data/sample_inputs/{model_name}.pt"
        example = None
        if sample_path in names:
            example = torch_load(io.BytesIO(z.read(sample_path)), weights_only=True)  # type: ignore[no-untyped-call]
        if extra_files is not None:
            for key in list(extra_files):
                path = f"{root}extra/{key}"
                extra_files[key] = z.read(path).decode() if path in names else extra_files[key]
    return _GraphReader(model, state_dict, constants, example).read()


def _load_payload(z: zipfile.ZipFile, root: str, folder: str, config_name: str, names: list[str],
                  model_name: str) -> dict[str, Any]:
    path = f"{root}data/{folder}/{config_name}"
    if path not in names:
        path = f"{root}data/{folder}/{config_name.replace('model', model_name, 1)}"
        if path not in names:
            return {}
    config = json.loads(z.read(path))["config"]
    out: dict[str, Any] = {}
    for name, payload in config.items():
        raw = z.read(f"{root}data/{folder}/{payload['path_name']}")
        if payload.get("use_pickle"):
            t = torch_load(io.BytesIO(raw), weights_only=True)  # type: ignore[no-untyped-call]
        else:
            t = _tensor_from_bytes(raw, payload["tensor_meta"])
        out[name] = Parameter(t, requires_grad=payload["tensor_meta"].get("requires_grad", True)) \
            if payload.get("is_param") else t
    return out


def _tensor_from_bytes(raw: bytes, meta: dict[str, Any]) -> Any:
    dtype = _DTYPES[meta["dtype"]]
    npdt = dtype.np.newbyteorder("<")
    sizes = [_hint(s) for s in meta["sizes"]]
    strides = [_hint(s) for s in meta["strides"]]
    offset = _hint(meta["storage_offset"])
    storage = np.frombuffer(raw, dtype=npdt) if raw else np.zeros(0, npdt)
    if math.prod(sizes) == 0:
        arr = np.zeros(sizes, dtype=dtype.np)
    else:
        isz = storage.itemsize
        arr = np.lib.stride_tricks.as_strided(storage[offset:], shape=sizes, strides=[s * isz for s in strides])
        arr = np.array(arr, dtype=dtype.np)
    t = from_numpy(arr)
    device = meta.get("device", {}).get("type", "cpu")
    return t if device == "cpu" else t.to(device)


def _hint(s: dict[str, Any]) -> int:
    v = _load_sym_int(s)
    return int(v.hint) if isinstance(v, SymInt) else int(v)


class _GraphReader:
    def __init__(self, model: dict[str, Any], state_dict: dict[str, Any], constants: dict[str, Any],
                 example: Any) -> None:
        self.model = model
        self.state_dict = state_dict
        self.constants = constants
        self.example = example
        self.graph = Graph()
        self.env: dict[str, Any] = {}
        self.fake_mode = FakeTensorMode()
        self.g: dict[str, Any] = model["graph_module"]["graph"]     # the graph being read (a branch's, inside one)
        self.root = Module()                                         # the branches' GraphModules

    def meta_val(self, name: str) -> Any:
        g = self.g
        if name in g["tensor_values"]:
            m = g["tensor_values"][name]
            sizes = [_load_sym_int(s) for s in m["sizes"]]
            strides = [_load_sym_int(s) for s in m["strides"]]
            dev = m.get("device") or {"type": "cpu"}
            device = device_of(dev["type"], dev["index"]) if dev.get("index") is not None else \
                device_of(dev["type"])
            fake = self.fake_mode.fake_tensor(tuple(int(s) for s in sizes), tuple(int(s) for s in strides),
                                              _DTYPES[m["dtype"]], device, m["requires_grad"])
            if any(isinstance(s, SymInt) for s in sizes):
                setattr(fake, "_sym_sizes", tuple(sizes))
            if any(isinstance(s, SymInt) for s in strides):
                setattr(fake, "_sym_strides", tuple(strides))
            return fake
        if name in g["sym_int_values"]:
            return _load_sym_int(g["sym_int_values"][name])
        return None

    def arg(self, a: dict[str, Any]) -> Any:
        (k, v), = a.items()
        if k == "as_none":
            return None
        if k == "as_tensor":
            return self.env[v["name"]]
        if k == "as_tensors":
            return [self.env[x["name"]] for x in v]
        if k == "as_optional_tensors":
            return [None if "as_none" in x else self.env[x["as_tensor"]["name"]] for x in v]
        if k == "as_optional_tensor":
            return None if "as_none" in v else self.env[v["as_tensor"]["name"]]
        if k == "as_sym_int":
            return self.env[v["as_name"]] if "as_name" in v else v["as_int"]
        if k == "as_sym_ints":
            return [self.env[x["as_name"]] if "as_name" in x else x["as_int"] for x in v]
        if k == "as_float":
            return _load_float(v)
        if k == "as_floats":
            return [_load_float(x) for x in v]
        if k == "as_scalar_type":
            return _DTYPES[v]
        if k == "as_memory_format":
            return {m: f for f, m in _MEMORY_FORMATS.items()}[v]
        if k == "as_layout":
            return strided
        if k == "as_device":
            return device_of(v["type"], v["index"]) if v.get("index") is not None else device_of(v["type"])
        if k in ("as_int", "as_ints", "as_bool", "as_bools", "as_string", "as_strings"):
            return v
        if k == "as_graph":
            return self.subgraph(v["name"], v["graph"])
        raise RuntimeError(f"ember.export.load: an argument kind ember does not read: {k}")

    def subgraph(self, name: str, g: dict[str, Any]) -> Any:
        """A higher-order operator's branch: its GraphModule on the root, and a ``get_attr`` node for it."""
        saved = self.graph, self.env, self.g
        self.graph, self.env, self.g = Graph(), {}, g
        try:
            for a in g["inputs"]:
                inp = a["as_tensor"]["name"]
                ph = named_placeholder(self.graph, inp)
                ph.meta["val"] = self.meta_val(inp)
                self.env[inp] = ph
            for n in g["nodes"]:
                self.node(n)
            outs = tuple(self.arg(o) for o in g["outputs"])
            self.graph.output(outs[0] if g.get("is_single_tensor_return") and len(outs) == 1 else outs)
            gm = GraphModule(Module(), self.graph)
        finally:
            self.graph, self.env, self.g = saved
        self.root.add_module(name, gm)
        return self.graph.get_attr(name)

    def target(self, name: str) -> Any:
        if name in _OPERATORS:
            return _OPERATORS[name]
        if name.startswith("torch.ops.higher_order.") and name.rsplit(".", 1)[1] in HIGHER_ORDER_OPS:
            return HIGHER_ORDER_OPS[name.rsplit(".", 1)[1]]
        if name.startswith("torch.ops.aten."):
            _, _, _, op, overload = name.split(".")
            packet = getattr(ops.aten, op, None)
            if packet is not None and hasattr(packet, overload):
                return getattr(packet, overload)
        raise RuntimeError(f"ember.export.load: the program calls {name}, which ember does not have")

    def read(self) -> ExportedProgram:
        gm_json = self.model["graph_module"]
        g = gm_json["graph"]
        input_specs = [_load_input_spec(s) for s in gm_json["signature"]["input_specs"]]
        for a, spec in zip(g["inputs"], input_specs):
            name = spec.arg.name
            ph = named_placeholder(self.graph, name)
            ph.meta["val"] = self.meta_val(name) if "as_tensor" in a else self.arg(a)
            self.env[name] = ph
        for n in g["nodes"]:
            self.node(n)
        outs = tuple(self.arg(o) for o in g["outputs"])
        self.graph.output(outs)
        output_specs = [_load_output_spec(s) for s in gm_json["signature"]["output_specs"]]
        signature = ExportGraphSignature(input_specs, output_specs)
        call_graph = []
        for e in gm_json["module_call_graph"]:
            s = e.get("signature")
            call_graph.append(ModuleCallEntry(e["fqn"], None if s is None else ModuleCallSignature(
                [], [], treespec_loads(s["in_spec"]), treespec_loads(s["out_spec"]), s.get("forward_arg_names"))))
        ranges = {Symbol(k): ValueRanges(v["min_val"], int_oo if v["max_val"] is None else v["max_val"])
                  for k, v in self.model["range_constraints"].items()}
        state_dict = {s.target: self.state_dict[s.target] for s in input_specs
                      if s.kind in (InputKind.PARAMETER, InputKind.BUFFER) and s.persistent is not False
                      and s.target in self.state_dict}
        constants = {s.target: self.constants.get(s.target, self.state_dict.get(s.target)) for s in input_specs
                     if s.target is not None and s.target not in state_dict}
        ep = ExportedProgram(GraphModule(self.root, self.graph), self.graph, signature, state_dict, ranges, call_graph,
                             self.example, constants)
        ep._dialect = (self.model.get("verifiers") or ["TRAINING"])[0]
        ep._symbols = self.symbols(input_specs, ranges)
        return ep

    def node(self, n: dict[str, Any]) -> None:
        target = self.target(n["target"])
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for a in n["inputs"]:
            value = self.arg(a["arg"])
            if a.get("kind") == 2:
                kwargs[a["name"]] = value
            else:
                args.append(value)
        outputs = n["outputs"]
        name = n.get("name")
        single = len(outputs) == 1 and ("as_tensor" in outputs[0] or "as_sym_int" in outputs[0]) and \
            not isinstance(target, HigherOrderOperator)
        if single:
            out = outputs[0]
            name = out["as_tensor"]["name"] if "as_tensor" in out else out["as_sym_int"]["as_name"]
        node = self.graph.create_node("call_function", target, tuple(args), kwargs, name=name)
        meta = n.get("metadata") or {}
        if "stack_trace" in meta:
            node.meta["stack_trace"] = meta["stack_trace"]
        if meta.get("nn_module_stack"):
            stack = {}
            for entry in meta["nn_module_stack"].split(";"):
                key, path, ty = (entry.split(",", 2) + ["", ""])[:3]
                stack[key] = (path, ty)
            node.meta["nn_module_stack"] = stack
        if single:
            node.meta["val"] = self.meta_val(str(name))
            self.env[str(name)] = node
            return
        elements = outputs[0]["as_tensors"] if len(outputs) == 1 and "as_tensors" in outputs[0] else \
            [o.get("as_tensor") for o in outputs]
        vals: list[Any] = []
        for i, el in enumerate(elements):
            if el is None:
                vals.append(None)
                continue
            el_name = str(el["name"])
            val = self.meta_val(el_name)
            vals.append(val)
            if "_unused_" in el_name and not any(el_name == o.get("as_tensor", {}).get("name")
                                                  for o in self.model["graph_module"]["graph"]["outputs"]):
                continue
            g = self.graph.create_node("call_function", operator.getitem, (node, i), name=el_name)
            g.meta["val"] = val
            if "stack_trace" in node.meta:
                g.meta["stack_trace"] = node.meta["stack_trace"]
            self.env[el_name] = g
        node.meta["val"] = tuple(vals)

    def symbols(self, input_specs: list[InputSpec], ranges: dict[Any, ValueRanges]) -> list[_Symbol]:
        """The dynamic dimensions of the user's inputs, for ``module()``'s guards."""
        by_name: dict[str, _Symbol] = {}
        index = 0
        for spec in input_specs:
            if spec.kind != InputKind.USER_INPUT:
                continue
            ph = self.env.get(spec.arg.name)
            val = ph.meta.get("val") if ph is not None else None
            for d, s in enumerate(getattr(val, "_sym_sizes", None) or ()):
                if not isinstance(s, SymInt) or len(s.expr.free_symbols) != 1:
                    continue
                (sym_name,) = s.expr.free_symbols
                coef = s.expr.terms.get((sym_name,), 0)
                if coef <= 0 or any(len(m) > 1 for m in s.expr.terms):
                    continue
                offset = s.expr.constant()
                vr = ranges.get(Symbol(sym_name), ValueRanges(2, int_oo))
                sym = by_name.get(sym_name)
                if sym is None:
                    sym = by_name[sym_name] = _Symbol(sym_name, (int(s.hint) - offset) // coef, vr.lower, vr.upper,
                                                      None, None)
                sym.places.append((index, d, coef, offset))
            index += 1
        return list(by_name.values())

