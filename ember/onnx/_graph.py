"""The ATen graph of a model to an ONNX ``ModelProto`` (Note [ONNX export] in ``_exporter.py``)."""
from __future__ import annotations

import inspect
import operator
from typing import Any

import numpy as np

import ember
from ember._ops import ops
from ember.export.graph_signature import InputKind, OutputKind
from ember.fx.experimental.proxy_tensor import make_fx
from ember.onnx._custom import custom_translation
from ember.onnx.errors import OnnxExporterError, UnsupportedOperatorError

ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "int16": 5, "int32": 6, "int64": 7, "bool": 9, "float16": 10,
              "float64": 11, "bfloat16": 16}


class Dyn:
    """An integer the model computed from dynamic sizes: ``coef * S1 * S2...`` (kind "mul") or ``S + coef``
    (kind "add"); ``value`` is what it was in the example run."""

    def __init__(self, kind: str, coef: int, syms: tuple[str, ...], value: int) -> None:
        self.kind, self.coef, self.syms, self.value = kind, coef, syms, value

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"Dyn({self.kind}, {self.coef}, {self.syms})"


class SymValue(Dyn):
    """An integer an exported program computes at run time (``sym_size`` and arithmetic on it): the ONNX value
    (an int64 tensor of shape [1]) that holds it, and its value in the example."""

    def __init__(self, onnx_value: str, value: int) -> None:
        super().__init__("value", 1, (), value)
        self.onnx_value = onnx_value


def where(node: Any) -> str:
    """The model's source line that called ``node`` (innermost frame of its recorded stack)."""
    trace = node.meta.get("stack_trace") or ""
    lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip().startswith("File ")]
    return lines[-1] if lines else "an unknown line"


def op_name(target: Any) -> str:
    schema = getattr(target, "_schema", None)
    if schema is None:
        return getattr(target, "__name__", str(target))
    return str(schema.name) + (f".{schema.overload_name}" if schema.overload_name else "")


class Context:
    """What a translation builds with: ONNX nodes, constants, shape arithmetic for dynamic integers."""

    def __init__(self, opset: int, graph_inputs: list[str], sym_sources: dict[str, tuple[str, int]]) -> None:
        self.opset = opset
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._names: set[str] = set(graph_inputs)
        self._counter = 0
        self.sym_sources = sym_sources            # symbol -> (graph input, axis)
        self._sym_values: dict[str, str] = {}
        self.node: Any = None                     # the ATen node being translated
        self.values: dict[Any, Any] = {}          # ATen node -> its ONNX value(s)

    def fresh(self, hint: str) -> str:
        hint = hint.replace(".", "_").replace("::", "_")
        name = hint
        while name in self._names:
            self._counter += 1
            name = f"{hint}_{self._counter}"
        self._names.add(name)
        return name

    def add(self, op_type: str, inputs: list[str], outputs: int = 1, name_hint: str | None = None,
            **attrs: Any) -> Any:
        """An ONNX node; its output name (a list of them if ``outputs`` > 1)."""
        import onnx
        hint = name_hint or (self.node.name if self.node is not None else op_type.lower())
        outs = [self.fresh(hint if i == 0 else f"{hint}_{i}") for i in range(outputs)]
        self.nodes.append(onnx.helper.make_node(op_type, inputs, outs, name=self.fresh(f"node_{op_type}"),
                                                **{k: v for k, v in attrs.items() if v is not None}))
        return outs[0] if outputs == 1 else outs

    def const(self, value: Any, dtype: Any = None, hint: str = "const") -> str:
        """A constant tensor as an initializer."""
        from onnx import numpy_helper
        arr = np.asarray(value, dtype=dtype)
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(arr, name))
        return name

    def sym(self, s: str) -> str:
        """A dynamic size as an int64 tensor of shape [1], read from the graph input that carries it."""
        if s not in self._sym_values:
            inp, axis = self.sym_sources[s]
            shape = self.add("Shape", [inp], name_hint=f"shape_{inp}")
            self._sym_values[s] = self.add("Gather", [shape, self.const([axis], np.int64, "axis")], axis=0,
                                           name_hint=f"size_{s}")
        return self._sym_values[s]

    def value_of(self, fx_node: Any) -> str:
        """The ONNX value an earlier ATen node became."""
        return self.values[fx_node]  # type: ignore[no-any-return]

    def dim_of(self, value: str, axis: int) -> str:
        """Size ``axis`` of a value at run time, as an int64 tensor of shape [1]."""
        shape = self.add("Shape", [value], name_hint="shape")
        return self.add("Gather", [shape, self.const([axis], np.int64, "axis")], axis=0, name_hint="size")

    def scalar(self, v: Any) -> str:
        """One integer (recorded or dynamic) as a 0-d int64 tensor."""
        if not isinstance(v, Dyn):
            return self.const(np.asarray(int(v), np.int64), hint="int")
        return self.add("Squeeze", [self.int_tensor(v), self.const([0], np.int64, "axes")], name_hint="int")

    def int_tensor(self, v: Any) -> str:
        """One integer (recorded or dynamic) as an int64 tensor of shape [1]."""
        if not isinstance(v, Dyn):
            return self.const([int(v)], np.int64, "int")
        if isinstance(v, SymValue):
            return v.onnx_value
        if v.kind == "add":
            return self.add("Add", [self.sym(v.syms[0]), self.const([v.coef], np.int64, "int")],
                            name_hint="dim")
        out = self.sym(v.syms[0])
        for s in v.syms[1:]:
            out = self.add("Mul", [out, self.sym(s)], name_hint="dim")
        if v.coef != 1:
            out = self.add("Mul", [out, self.const([v.coef], np.int64, "int")], name_hint="dim")
        return out

    def ints(self, values: Any) -> str:
        """A list of integers (some dynamic) as a 1-d int64 tensor."""
        values = list(values)
        if not any(isinstance(v, Dyn) for v in values):
            return self.const([int(v) for v in values], np.int64, "ints")
        return self.add("Concat", [self.int_tensor(v) for v in values], axis=0, name_hint="shape")


def _count_tensors(value: Any) -> int:
    found: list[Any] = []
    _flat_tensors(value, found)
    return len(found)


def _flat_tensors(value: Any, out: list[Any]) -> None:
    if isinstance(value, ember.Tensor):
        out.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _flat_tensors(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _flat_tensors(v, out)


def _trace(model: Any, args: list[Any], kwargs: dict[str, Any], inputs: list[Any]) -> Any:
    """The ATen graph of ``model(*args, **kwargs)`` with the tensors of ``inputs`` (in place of the argument
    tensors, in order) as its placeholders."""

    def fn(*ts: Any) -> Any:
        it = iter(ts)

        def put(v: Any) -> Any:
            if isinstance(v, ember.Tensor):
                return next(it)
            if isinstance(v, (tuple, list)):
                return type(v)(put(x) for x in v)
            if isinstance(v, dict):
                return {k: put(x) for k, x in v.items()}
            return v
        call_args, call_kwargs = put(list(args)), put(dict(kwargs))
        return model(*call_args, **call_kwargs)

    with ember.no_grad():
        gm = make_fx(fn, record_stack_traces=True)(*inputs)
    gm.graph.eliminate_dead_code()     # values made and never read (batch norm's empty reserve): no ONNX nodes
    gm.recompile()
    return gm


def _grown(t: Any, axes: list[int]) -> Any:
    """``t`` one longer along each of ``axes``, the new slice a copy of the last (so indices stay valid)."""
    for a in axes:
        t = ember.cat([t, t.narrow(a, t.shape[a] - 1, 1)], a)
    return t


def _ints_of(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], int]]:
    out: list[tuple[tuple[Any, ...], int]] = []
    if isinstance(value, bool):
        return out
    if isinstance(value, int):
        return [(path, value)]
    if isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            out += _ints_of(v, path + (i,))
    elif isinstance(value, dict):
        for k, v in value.items():
            out += _ints_of(v, path + (k,))
    return out


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    items = list(value)
    items[head] = _replace(items[head], rest, new)
    return type(value)(items) if isinstance(value, tuple) else items


def _dynamic_ints(base: Any, others: dict[str, Any], sizes: dict[str, int]) -> dict[int, list[tuple[Any, ...]]]:
    """For each node (by position), the (slot, path, ``Dyn``) of its integers that depend on dynamic sizes (Note
    [ONNX export])."""
    base_nodes = list(base.graph.nodes)
    result: dict[int, list[tuple[Any, ...]]] = {}
    for sym, g in others.items():
        nodes = list(g.graph.nodes)
        if len(nodes) != len(base_nodes) or any(a.op != b.op or a.target != b.target
                                                for a, b in zip(base_nodes, nodes)):
            raise OnnxExporterError(f"dynamic_axes: the model runs different operators when the size '{sym}' "
                                    "changes, so it cannot be exported with that axis dynamic")
    for i, node in enumerate(base_nodes):
        if node.op != "call_function":
            continue
        for slot in ("args", "kwargs"):
            base_ints = _ints_of(getattr(node, slot))
            other_ints = {sym: dict(_ints_of(getattr(list(g.graph.nodes)[i], slot))) for sym, g in others.items()}
            for path, v0 in base_ints:
                changed = [s for s in others if other_ints[s].get(path, v0) != v0]
                if not changed:
                    continue
                dyn = _solve(v0, {s: other_ints[s][path] for s in changed}, sizes)
                if dyn is None:
                    raise OnnxExporterError(
                        f"dynamic_axes: {op_name(node.target)} at {where(node)} uses the integer {v0}, which changes "
                        f"with the dynamic sizes {changed} in a way the exporter cannot express")
                result.setdefault(i, []).append((slot, path, dyn))
    return result


def _solve(v0: int, changed: dict[str, int], sizes: dict[str, int]) -> Dyn | None:
    """``v0`` as ``c * S...`` or ``S + c`` from its values with each changed size one larger."""
    if all(vk * sizes[s] == v0 * (sizes[s] + 1) for s, vk in changed.items()):
        prod = 1
        for s in changed:
            prod *= sizes[s]
        if v0 % prod == 0:
            return Dyn("mul", v0 // prod, tuple(changed), v0)
    if len(changed) == 1:
        (s, vk), = changed.items()
        if vk - v0 == 1:
            return Dyn("add", v0 - sizes[s], (s,), v0)
    return None


def build(model: Any, args: list[Any], kwargs: dict[str, Any], *, opset: int, input_names: list[str],
          output_names: list[str], dynamic_axes: dict[str, Any], export_params: bool,
          keep_initializers_as_inputs: bool, do_constant_folding: bool = True) -> Any:
    import onnx

    inputs: list[Any] = []
    _flat_tensors(list(args), inputs)
    _flat_tensors(dict(kwargs), inputs)
    try:
        params = [p.name for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    # default names: a tensor argument's parameter name, a keyword tensor's keyword, else input_<i>
    default_names = [params[i] if i < len(params) and isinstance(a, ember.Tensor) else f"input_{i}"
                     for i, a in enumerate(args) for _ in range(_count_tensors(a))]
    default_names += [k if isinstance(v, ember.Tensor) else f"input_{len(default_names)}"
                      for k, v in kwargs.items() for _ in range(_count_tensors(v))]
    names = (list(input_names) + default_names[len(input_names):])[:len(inputs)]

    # dynamic axes: symbol -> [(input index, axis)], and the name of each output axis
    axes_of: dict[str, dict[int, str]] = {}
    for key, spec in dynamic_axes.items():
        axes_of[key] = dict(spec) if isinstance(spec, dict) else {int(a): f"{key}_dynamic_axes_{j + 1}"
                                                                   for j, a in enumerate(spec)}
    unknown = [k for k in axes_of if k not in names and k not in output_names]
    if unknown:
        raise OnnxExporterError(f"dynamic_axes names {unknown} are neither input nor output names (inputs: {names}, "
                                f"outputs: {output_names})")
    sym_inputs: dict[str, list[tuple[int, int]]] = {}
    for i, n in enumerate(names):
        for axis, sym in axes_of.get(n, {}).items():
            sym_inputs.setdefault(sym, []).append((i, axis % inputs[i].dim()))
    sizes = {s: int(inputs[i].shape[a]) for s, places in sym_inputs.items() for i, a in places[:1]}

    base = _trace(model, args, kwargs, inputs)
    others = {}
    for sym, places in sym_inputs.items():
        grown = list(inputs)
        for i, a in places:
            grown[i] = _grown(grown[i], [a])
        others[sym] = _trace(model, args, kwargs, grown)
    dyn = _dynamic_ints(base, others, sizes)

    sym_sources = {s: (names[places[0][0]], places[0][1]) for s, places in sym_inputs.items()}
    ctx = Context(opset, names, sym_sources)
    values = ctx.values
    param_names = {}
    for n, p in list(model.named_parameters()) + list(model.named_buffers()):
        param_names.setdefault(id(p), n)
    graph_inputs, param_inputs, used = [], [], set()
    placeholders = [n for n in base.graph.nodes if n.op == "placeholder"]
    for node, name, t in zip(placeholders, names, inputs):
        values[node] = name
        shape = [axes_of.get(name, {}).get(a, d) if a in axes_of.get(name, {}) else int(d)
                 for a, d in enumerate(t.shape)]
        graph_inputs.append(onnx.helper.make_tensor_value_info(name, _onnx_type(t.dtype), shape))
    for i, node in enumerate(base.graph.nodes):
        if node.op == "get_attr":
            t = getattr(base, node.target)
            pname = param_names.get(id(t))
            name = pname if pname is not None else node.target
            if name not in used:
                used.add(name)
                arr = t.detach().cpu().numpy()
                if pname is not None and not export_params:
                    param_inputs.append(onnx.helper.make_tensor_value_info(name, _onnx_type(t.dtype), list(t.shape)))
                else:
                    from onnx import numpy_helper
                    ctx.initializers.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
                    ctx._names.add(name)
                    if keep_initializers_as_inputs:
                        param_inputs.append(onnx.helper.make_tensor_value_info(name, _onnx_type(t.dtype),
                                                                               list(t.shape)))
            values[node] = name
        elif node.op == "call_function":
            call_args, call_kwargs = _with_values(node, values, dyn, i)
            _translate(ctx, node, call_args, call_kwargs)
        elif node.op == "output":
            outs: list[Any] = []
            _flat_nodes(node.args[0], outs)
            other_outs = {sym: [] for sym in others}     # type: dict[str, list[Any]]
            for sym, g in others.items():
                _flat_nodes(list(g.graph.nodes)[-1].args[0], other_outs[sym])
            out_names = list(output_names) + [f"output_{j}" for j in range(len(output_names), len(outs))]
            graph_outputs = []
            for j, (o, oname) in enumerate(zip(outs, out_names)):
                val = o.meta.get("val") if isinstance(o, ember.fx.Node) else None
                src = values[o] if isinstance(o, ember.fx.Node) else ctx.const(np.asarray(o))
                ctx.nodes.append(onnx.helper.make_node("Identity", [src], [oname], name=ctx.fresh(f"out_{j}")))
                out_axes = dict(axes_of.get(oname, {}))
                shape = None
                if val is not None:      # a size that moves with a dynamic input size is symbolic
                    for a, d in enumerate(val.shape):
                        moved = [sym for sym in others if isinstance(other_outs[sym][j], ember.fx.Node)
                                 and other_outs[sym][j].meta["val"].shape[a] != d]
                        if moved and a not in out_axes:
                            out_axes[a] = moved[0] if len(moved) == 1 and \
                                other_outs[moved[0]][j].meta["val"].shape[a] == d + 1 else f"{oname}_dim_{a}"
                    shape = [out_axes.get(a, int(d)) for a, d in enumerate(val.shape)]
                graph_outputs.append(onnx.helper.make_tensor_value_info(
                    oname, _onnx_type(val.dtype) if val is not None else 1, shape))
    return _model(ctx, graph_inputs, param_inputs, graph_outputs, opset, do_constant_folding)


def _translate(ctx: Context, node: Any, call_args: list[Any], call_kwargs: dict[str, Any]) -> None:
    """One call_function node as ONNX nodes (its value into ``ctx.values``)."""
    from ember.onnx._translations import TRANSLATIONS
    values = ctx.values
    if node.target is operator.getitem:
        values[node] = values[node.args[0]][node.args[1]]
        return
    key = op_name(node.target)
    fn = custom_translation(key.split(".")[0], ctx.opset) or TRANSLATIONS.get(key) or \
        TRANSLATIONS.get(key.split(".")[0])
    inplace = fn is None and key.split(".")[0].endswith("_") and not key.split(".")[0].endswith("__")
    if inplace:     # silu_(x): the graph reads the result from then on; ONNX computes it out of place
        fn = TRANSLATIONS.get(key.split(".")[0][:-1])
    if fn is None:
        raise UnsupportedOperatorError(key, ctx.opset, where=where(node))
    ctx.node = node
    values[node] = fn(ctx, node, *call_args, **call_kwargs)
    if inplace and isinstance(node.args[0], ember.fx.Node):
        values[node.args[0]] = values[node]


_SYM_OPS = {operator.add: "Add", operator.sub: "Sub", operator.mul: "Mul", operator.floordiv: "Div"}


def build_program(ep: Any, *, opset: int, input_names: list[str], output_names: list[str], export_params: bool,
                  keep_initializers_as_inputs: bool, do_constant_folding: bool = True) -> Any:
    """An ``ExportedProgram`` (state lifted to inputs, dynamic sizes as ``sym_size`` nodes) as an ONNX model: its
    parameters, buffers and constants become initializers named by their module paths, its user inputs graph
    inputs whose dynamic dimensions are named by their ``Dim`` (or symbol), a ``sym_size`` node ``Shape`` +
    ``Gather``, and arithmetic on sizes int64 ``Add`` / ``Sub`` / ``Mul`` / ``Div`` (Note [ONNX export])."""
    import onnx
    from onnx import numpy_helper

    specs = ep.graph_signature.input_specs
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    user = [(n, s) for n, s in zip(placeholders, specs) if s.kind == InputKind.USER_INPUT]
    tensor_user = [(n, s) for n, s in user if isinstance(n.meta.get("val"), ember.Tensor)]
    names = (list(input_names) + [n.name for n, _ in tensor_user][len(input_names):])[:len(tensor_user)]
    dim_names = {}
    for sym in ep._symbols:
        dim_names[sym.name] = sym.named.__name__ if sym.named is not None else sym.name
    ctx = Context(opset, names, {})
    values = ctx.values
    graph_inputs, param_inputs = [], []
    for (node, _), name in zip(tensor_user, names):
        val = node.meta["val"]
        sym_sizes = getattr(val, "_sym_sizes", None) or tuple(val.shape)
        shape = [dim_names.get(str(d), str(d)) if not isinstance(d, int) else int(d) for d in sym_sizes]
        graph_inputs.append(onnx.helper.make_tensor_value_info(name, _onnx_type(val.dtype), shape))
        values[node] = name
    for node, s in user:
        if node not in values:
            values[node] = node.meta.get("val")      # a specialized number
    for node, s in zip(placeholders, specs):
        if s.kind == InputKind.USER_INPUT:
            continue
        t = ep._state_of(s)
        name = str(s.target)
        if s.kind in (InputKind.PARAMETER, InputKind.BUFFER) and not export_params:
            param_inputs.append(onnx.helper.make_tensor_value_info(name, _onnx_type(t.dtype), list(t.shape)))
        else:
            ctx.initializers.append(numpy_helper.from_array(np.ascontiguousarray(t.detach().cpu().numpy()), name))
            if keep_initializers_as_inputs:
                param_inputs.append(onnx.helper.make_tensor_value_info(name, _onnx_type(t.dtype), list(t.shape)))
        ctx._names.add(name)
        values[node] = name
    graph_outputs = []
    for node in ep.graph.nodes:
        if node.op == "call_function":
            call_args, call_kwargs = _with_values(node, values, {}, 0)
            if node.target is ops.aten.sym_size.int:
                ctx.node = node
                shape = ctx.add("Shape", [call_args[0]], name_hint=f"shape_{node.name}")
                axis = call_args[1] % node.args[0].meta["val"].dim()
                values[node] = SymValue(ctx.add("Gather", [shape, ctx.const([axis], np.int64, "axis")], axis=0,
                                                name_hint=node.name), int(node.meta["val"]))
            elif node.target in _SYM_OPS:
                ctx.node = node
                a, b = (ctx.int_tensor(v) for v in call_args)
                values[node] = SymValue(ctx.add(_SYM_OPS[node.target], [a, b], name_hint=node.name),
                                        int(node.meta["val"]))
            else:
                _translate(ctx, node, call_args, call_kwargs)
        elif node.op == "output":
            outs = [o for o, s in zip(node.args[0], ep.graph_signature.output_specs)
                    if s.kind == OutputKind.USER_OUTPUT]
            out_names = list(output_names) + [f"output_{j}" for j in range(len(output_names), len(outs))]
            for j, (o, oname) in enumerate(zip(outs, out_names)):
                val = o.meta.get("val") if isinstance(o, ember.fx.Node) else None
                src = values[o] if isinstance(o, ember.fx.Node) else ctx.const(np.asarray(o))
                ctx.nodes.append(onnx.helper.make_node("Identity", [src], [oname], name=ctx.fresh(f"out_{j}")))
                shape = None
                if isinstance(val, ember.Tensor):
                    sizes = getattr(val, "_sym_sizes", None) or tuple(val.shape)
                    shape = [int(d) if isinstance(d, int) else dim_names.get(str(d), str(d)) for d in sizes]
                graph_outputs.append(onnx.helper.make_tensor_value_info(
                    oname, _onnx_type(val.dtype) if val is not None else 1, shape))
    return _model(ctx, graph_inputs, param_inputs, graph_outputs, opset, do_constant_folding)


def _model(ctx: Context, graph_inputs: list[Any], param_inputs: list[Any], graph_outputs: list[Any], opset: int,
           do_constant_folding: bool) -> Any:
    import onnx

    nodes, initializers = ctx.nodes, ctx.initializers
    if do_constant_folding:
        nodes, initializers = _fold_constants(nodes, initializers, {i.name for i in param_inputs})
    nodes, initializers = _live(nodes, initializers, [o.name for o in graph_outputs],
                                {i.name for i in param_inputs})
    graph = onnx.helper.make_graph(nodes, "main_graph", graph_inputs + param_inputs, graph_outputs,
                                   initializer=initializers)
    model_proto = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                         producer_name="ember", producer_version=ember.__version__)
    model_proto.ir_version = min(model_proto.ir_version, 10)
    return model_proto


def _fold_constants(nodes: list[Any], initializers: list[Any], graph_inputs: set[str]) -> tuple[list[Any],
                                                                                                  list[Any]]:
    """``do_constant_folding``: a node whose inputs are all initializers (a weight's transpose, a shape built
    from constants) is evaluated now (onnx's reference evaluator) and replaced by initializers of its results."""
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator
    known = {t.name: numpy_helper.to_array(t) for t in initializers if t.name not in graph_inputs}
    kept, added = [], []
    for n in nodes:
        ins = [i for i in n.input if i]
        if not ins or not all(i in known for i in ins) or n.op_type in ("Shape", "RandomNormal", "RandomUniform"):
            kept.append(n)
            continue
        model = helper.make_model(helper.make_graph(
            [n], "fold", [helper.make_tensor_value_info(i, helper.np_dtype_to_tensor_dtype(known[i].dtype), None)
                          for i in ins], [helper.make_tensor_value_info(o, 0, None) for o in n.output]),
            opset_imports=[helper.make_opsetid("", 18)])
        try:
            results = ReferenceEvaluator(model).run(None, {i: known[i] for i in ins})
        except Exception:       # noqa: BLE001 - a node the reference evaluator cannot run stays a node
            kept.append(n)
            continue
        for o, r in zip(n.output, results):
            known[o] = np.asarray(r)
            added.append(numpy_helper.from_array(np.asarray(r), o))
    return kept, list(initializers) + added


def _live(nodes: list[Any], initializers: list[Any], outputs: list[str], keep: set[str]) -> tuple[list[Any],
                                                                                                  list[Any]]:
    """The nodes that the outputs need and the initializers those nodes read (or that must stay graph inputs)."""
    needed = set(outputs)
    live = []
    for n in reversed(nodes):
        if any(o in needed for o in n.output):
            live.append(n)
            needed.update(i for i in n.input if i)
    return list(reversed(live)), [t for t in initializers if t.name in needed or t.name in keep]


def _flat_nodes(value: Any, out: list[Any]) -> None:
    if isinstance(value, (tuple, list)):
        for v in value:
            _flat_nodes(v, out)
    elif value is not None:
        out.append(value)


def _with_values(node: Any, values: dict[Any, Any], dyn: dict[int, list[tuple[Any, ...]]],
                 index: int) -> tuple[list[Any], dict[str, Any]]:
    """The node's arguments with nodes replaced by their ONNX values and dynamic integers by ``Dyn``."""
    args: Any = list(node.args)
    kwargs: Any = dict(node.kwargs)
    for slot, path, d in dyn.get(index, ()):
        if slot == "args":
            args = _replace(args, path, d)
        else:
            kwargs = _replace(kwargs, path, d)

    def sub(v: Any) -> Any:
        if isinstance(v, ember.fx.Node):
            return values[v]
        if isinstance(v, (tuple, list)):
            return type(v)(sub(x) for x in v)
        return v
    return [sub(a) for a in args], {k: sub(v) for k, v in kwargs.items()}


def _onnx_type(dtype: Any) -> int:
    name = dtype.name
    if name not in ONNX_TYPES:
        raise OnnxExporterError(f"ONNX export: tensors of dtype {dtype} are not supported")
    return ONNX_TYPES[name]
