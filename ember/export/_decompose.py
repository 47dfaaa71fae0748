"""``ExportedProgram.run_decompositions`` (Note [Running an exported program] in ``exported_program.py``)."""
from __future__ import annotations

import copy
from typing import Any, Callable

from ember._functorch.functionalize import functionalize
from ember._ops import ops
from ember.aten.dispatcher import enable_python_dispatcher
from ember._subclasses.fake_tensor import FakeTensorMode
from ember._tensor import Tensor
from ember.export._trace import _apply_symbols, _DynamicTrace, _Inputs, _subgraphs, _Trace
from ember.export.exported_program import ExportedProgram, _output_specs_with_mutations, named_placeholder
from ember.export.graph_signature import ConstantArgument, ExportGraphSignature, InputKind, OutputSpec, TensorArgument
from ember.fx.experimental.proxy_tensor import ProxyTorchDispatchMode, current_stack_trace
from ember.fx.graph import Graph
from ember.nn.modules.module import Module


def _run_graph(owner: Any, graph: Graph, mode: ProxyTorchDispatchMode) -> Callable[..., Any]:
    """The graph as a function of its placeholders; each node's ops are recorded with its source line and module
    stack."""
    nodes = list(graph.nodes)

    def run(*inputs: Any) -> Any:
        env: dict[Any, Any] = {}
        it = iter(inputs)

        def load(a: Any) -> Any:
            if hasattr(a, "op") and hasattr(a, "users"):
                return env[a]
            if isinstance(a, (list, tuple)):
                return type(a)(load(x) for x in a)
            if isinstance(a, dict):
                return {k: load(v) for k, v in a.items()}
            return a
        for node in nodes:
            if node.op == "placeholder":
                env[node] = next(it)
            elif node.op == "call_function":
                current_stack_trace[0] = node.meta.get("stack_trace")
                mode.module_stack = node.meta.get("nn_module_stack")
                try:
                    env[node] = node.target(*load(node.args), **load(node.kwargs))
                finally:
                    current_stack_trace[0] = None
                    mode.module_stack = None
            elif node.op == "get_attr":
                env[node] = getattr(owner, node.target)
            elif node.op == "output":
                return load(node.args[0])
            else:
                raise RuntimeError(f"run_decompositions: unexpected {node.op} node {node.name} in an exported graph")
        return None
    return run


def _trace_decomposed(ep: ExportedProgram, table: dict[Any, Callable[..., Any]],
                      sizes: dict[int, tuple[int, ...]] | None) -> _Trace:
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    graph = Graph()
    mode = ProxyTorchDispatchMode(graph, Module(), table, tracing_mode="fake", record_stack_traces=True)
    mode.user_stack_traces = False      # a node's source line is the one of the exported node it comes from
    specs = ep.graph_signature.input_specs
    values: list[Any] = []
    user_placeholders: list[Any] = []
    user_index = 0
    for node, spec in zip([n for n in ep.graph.nodes if n.op == "placeholder"], specs):
        val = node.meta.get("val")
        ph = named_placeholder(graph, node.name)
        if isinstance(val, Tensor):
            shape = (sizes or {}).get(user_index) if spec.kind == InputKind.USER_INPUT else None
            val = fake_mode.fake_with_sizes(val, shape if shape is not None else tuple(val.shape),
                                            requires_grad=False)
            ph.meta["val"] = val
            mode.track(val, ph)
        else:
            val = spec.arg.value if isinstance(spec.arg, ConstantArgument) else val
        if spec.kind == InputKind.USER_INPUT:
            user_index += 1
            user_placeholders.append(ph)
        values.append(val)
    run = functionalize(_run_graph(ep.graph_module, ep.graph, mode), remove="mutations")
    with fake_mode, enable_python_dispatcher(), mode:
        outs = run(*values)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    # the final copy_ of each mutated input becomes an output (Note [Running an exported program])
    placeholders = {n for n in graph.nodes if n.op == "placeholder"}
    mutated: list[tuple[Any, Any]] = []
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is ops.aten.copy_.default and node.args[0] in placeholders \
                and not node.users:
            mutated.append((node.args[0], node.args[1]))
            graph.erase_node(node)
    order = [n for n in graph.nodes if n.op == "placeholder"]
    mutated.sort(key=lambda m: order.index(m[0]))
    user_out: list[Any] = []
    user_specs: list[OutputSpec] = []
    for ospec, o in zip(ep.graph_signature.output_specs, outs):
        if isinstance(o, Tensor):
            node = mode.node_of(o)
            user_out.append(node)
            user_specs.append(OutputSpec(ospec.kind, TensorArgument(node.name), ospec.target))
        else:
            user_out.append(o)
            user_specs.append(OutputSpec(ospec.kind, ConstantArgument("", o), ospec.target))
    graph.output(tuple([v for _, v in mutated] + user_out))
    graph.eliminate_dead_code()
    output_specs = _output_specs_with_mutations(ep, [(p.name, v) for p, v in mutated], user_specs)
    return _subgraphs(_Trace(graph, list(specs), output_specs, None, {}, user_placeholders), mode)


def decompose(ep: ExportedProgram, table: dict[Any, Callable[..., Any]]) -> ExportedProgram:
    """``ep`` traced again in the table's operators, functional (Note [Running an exported program])."""
    symbols = list(ep._symbols)
    if symbols:
        inputs = _Inputs.__new__(_Inputs)
        user = [n for n, s in zip([n for n in ep.graph.nodes if n.op == "placeholder"], ep.graph_signature.input_specs)
                if s.kind == InputKind.USER_INPUT]
        inputs.leaves = [n.meta.get("val") for n in user]
        inputs.names = [n.name for n in user]
        inputs.sources = list(ep._input_guard_names)
        inputs.guard_names = list(ep._input_guard_names)
        dyn = _DynamicTrace(lambda sizes: _trace_decomposed(ep, table, sizes), inputs, [_copy(s) for s in symbols])
        trace, base_point, exprs = dyn.run()
        if len(dyn.symbols) != len(symbols):
            raise RuntimeError("run_decompositions: the decomposed program is not dynamic in the sizes the exported "
                               "one is")
        _apply_symbols(trace, dyn.symbols, exprs, base_point)
    else:
        trace = _trace_decomposed(ep, table, None)
    out = ExportedProgram(trace.graph_module(), trace.graph,
                          ExportGraphSignature(trace.input_specs, trace.output_specs), ep.state_dict,
                          ep.range_constraints, ep.module_call_graph, ep.example_inputs, ep.constants)
    out._symbols = symbols
    out._input_guard_names = ep._input_guard_names
    out._dialect = "ATEN"
    return out


def _copy(sym: Any) -> Any:
    c = copy.copy(sym)
    c.places = list(sym.places)
    return c
