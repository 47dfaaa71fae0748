"""``export``: a module's forward as a graph with its state lifted to inputs (``torch/export/_trace.py``,
non-strict mode).

Note [Export]
``export(mod, args, kwargs)`` runs ``mod`` once on fake tensors (Note [Fake tensors]) under a proxy mode at the
PreDispatch key (Note [Pre-dispatch] in ``ember/_python_key.py``), so the graph records the operators the Python
code called -- ``aten.linear.default``, ``aten.batch_norm.default``, ``aten.add_.Tensor`` -- before autograd
decomposes or records them: PyTorch's *training IR*. While it runs, the module's parameters, buffers and tensor
attributes are replaced by fake tensors that are the graph's first placeholders, in PyTorch's order and names
(``p_fc_weight``, ``b_bn_running_mean``, ``c_table``), followed by the user's inputs flattened (``x``, ``xs_0``,
``d_a``); a tensor the forward made from data (``torch.tensor([...])``) becomes a constant input
``c_lifted_tensor_<n>``. Numbers and strings among the inputs are specialized: their placeholders carry the example
value, and ``ExportedProgram.module()`` checks every later call against them.

What PyTorch refuses, ember refuses with the same classes: a branch on a value read from a tensor
(``if x.sum() > 0``, ``.item()``, ``.tolist()``) is ``GuardOnDataDependentSymNode`` -- ``torch.cond`` is the way to
write one (Note [Higher-order operators] in ``ember/_higher_order_ops``); an operator whose output size depends on
the data (``nonzero``) cannot be exported by ember at all, since ember has no unbacked sizes, and raises
``DynamicOutputShapeException`` naming the operator.

Note [Dynamic shapes by retracing]
PyTorch traces once with symbolic sizes. ember traces at concrete sizes (Note [Symbolic sizes in ember]), so a
dynamic dimension is found by tracing again with its size changed: once at the example sizes, three times more
per symbol (each moved alone to three other values in its range) and once per pair of symbols (both moved). Every
trace must give the same graph but for integers -- the operators' integer arguments and the sizes and strides of
every tensor; each integer that changes between the traces is fitted exactly by a polynomial with integer
coefficients in the symbols, of degree at most two in each and with products of two (``c + a*s0 + q*s0**2 +
b*s0*s1``: the strides of a ``[B, H, T, T]`` tensor need the square), and checked on every trace -- the third move
gives one check per symbol beyond what the fit needs. In the final graph such an argument is computed from
``aten.sym_size.int`` nodes on the inputs that carry the symbols (with ``operator.mul`` / ``operator.add`` nodes),
and each tensor's ``meta["val"]`` knows its symbolic sizes and strides. A symbol moved alone that makes the trace
fail or changes the graph's operators cannot be dynamic: a ``Dim.AUTO`` dimension then becomes static (first it is
tried together with the other AUTO dimensions of the same size, which a program often requires to be equal: they
become one symbol), a named ``Dim`` or ``Dim.DYNAMIC`` raises PyTorch's constraint violation. A branch on a
dynamic size that takes the same way at every traced size is not seen: the moves stay near the example (its value
plus one to three, or minus where the range ends).
"""
from __future__ import annotations

import contextlib
import inspect
import warnings
import itertools
import operator
from typing import Any, Callable

import numpy as np

from ember import backends as _backends
from ember._C import _set_grad_enabled
from ember._dynamo.exc import UserError, UserErrorType
from ember._higher_order_ops import wrap_with_set_grad_enabled
from ember._ops import ops
from ember._python_key import pre_dispatch_mode
from ember.aten.dispatcher import enable_python_dispatcher
from ember._subclasses.fake_tensor import (DataDependentOutputException, DynamicOutputShapeException,
                                           FakeTensorMode)
from ember._tensor import Tensor
from ember.export.dynamic_shapes import Dim, _DerivedDim, _DimHint, _DimHintType, dims_of_tensor, specs_per_input
from ember.export.exported_program import ExportedProgram, ModuleCallEntry, ModuleCallSignature, named_placeholder
from ember.export.graph_signature import (ConstantArgument, ExportGraphSignature, InputKind, InputSpec,
                                          OutputKind, OutputSpec, TensorArgument)
from ember.fx.experimental.proxy_tensor import ProxyTorchDispatchMode, _record_module_stack
from ember.fx.experimental.symbolic_shapes import (GuardOnDataDependentSymNode, SymExpr, SymInt, Symbol,
                                                   ValueRanges, int_oo, symbol_name)
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.nn.modules.module import Module
from ember.nn.utils.stateless import _reparametrize
from ember.utils._pytree import tree_flatten, tree_flatten_with_path, tree_unflatten

__all__ = ["export"]


# -- the state a module lifts ----------------------------------------------------------------------------------------
def _module_state(mod: Module) -> tuple[dict[str, Any], dict[str, tuple[Any, bool]], dict[str, Any]]:
    """The module's parameters, buffers (with persistence) and other tensor attributes, by path; a tied tensor under
    each of its names, as PyTorch lifts it (the graph reads it through the last)."""
    params = dict(mod.named_parameters(remove_duplicate=False))
    buffers: dict[str, tuple[Any, bool]] = {}
    for prefix, m in mod.named_modules(remove_duplicate=False):
        for name, b in m._buffers.items():
            if b is None:
                continue
            path = f"{prefix}.{name}" if prefix else name
            buffers[path] = (b, name not in m._non_persistent_buffers_set)
    state_ids = {id(t) for t in params.values()} | {id(b) for b, _ in buffers.values()}
    constants: dict[str, Any] = {}
    for prefix, m in mod.named_modules(remove_duplicate=False):
        for name, v in vars(m).items():
            if isinstance(v, Tensor) and id(v) not in state_ids and not name.startswith("__"):
                state_ids.add(id(v))
                constants[f"{prefix}.{name}" if prefix else name] = v
    return params, buffers, constants


@contextlib.contextmanager
def _constants_replaced(mod: Module, fakes: dict[str, Any]) -> Any:
    saved = []
    try:
        for path, f in fakes.items():
            owner_path, _, leaf = path.rpartition(".")
            owner = mod.get_submodule(owner_path) if owner_path else mod
            saved.append((owner, leaf, owner.__dict__[leaf]))
            owner.__dict__[leaf] = f
        yield
    finally:
        for owner, leaf, v in saved:
            owner.__dict__[leaf] = v


def _key_name(k: Any) -> str:
    for attr in ("key", "idx", "name"):
        if hasattr(k, attr):
            return str(getattr(k, attr))
    return str(k)


def _key_source(k: Any) -> str:
    if hasattr(k, "key"):
        return f"[{k.key!r}]"
    if hasattr(k, "idx"):
        return f"[{k.idx}]"
    if hasattr(k, "name"):
        return f".{k.name}"
    return f"[{k!r}]"


class _Inputs:
    """The user's inputs flattened as ``tree_flatten((args, kwargs))`` does: each leaf with its placeholder name
    (``xs_0``), its source (``L['xs'][0]``) and the name guards use (``xs[0]``)."""

    def __init__(self, mod: Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            params = [p for p in inspect.signature(mod.forward).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            params = []
        self.arg_names = [params[i].name if i < len(params) else f"args_{i}" for i in range(len(args))] + \
            list(kwargs)
        self.leaves, self.in_spec = tree_flatten((tuple(args), dict(kwargs)))
        self.names: list[str] = []
        self.sources: list[str] = []
        self.guard_names: list[str] = []
        for name, value in zip(self.arg_names, list(args) + list(kwargs.values())):
            for path, _ in tree_flatten_with_path(value)[0]:
                self.names.append("_".join([name] + [_key_name(k) for k in path]))
                tail = "".join(_key_source(k) for k in path)
                self.sources.append(f"L[{name!r}]{tail}")
                self.guard_names.append(name + tail)


# -- one trace --------------------------------------------------------------------------------------------------------
class _Trace:
    """The graph of one run of the module at given sizes of its tensor inputs, and what each placeholder is."""

    def __init__(self, graph: Graph, input_specs: list[InputSpec], output_specs: list[OutputSpec], out_spec: Any,
                 lifted: dict[str, Any], user_placeholders: list[Any]) -> None:
        self.graph = graph
        self.input_specs = input_specs
        self.output_specs = output_specs
        self.out_spec = out_spec
        self.lifted = lifted                      # c_lifted_tensor_<n> targets -> their tensors
        self.user_placeholders = user_placeholders
        self.root = Module()                      # holds the graphs of higher-order operators (``true_graph_0``)

    def graph_module(self) -> GraphModule:
        return GraphModule(self.root, self.graph)


def _subgraphs(trace: _Trace, mode: ProxyTorchDispatchMode) -> _Trace:
    for name, value in mode.constants.items():
        if isinstance(value, GraphModule):
            trace.root.add_module(name, value)
    return trace


def _trace(mod: Module, inputs: _Inputs, sizes: dict[int, tuple[int, ...]] | None = None) -> _Trace:
    params, buffers, constants = _module_state(mod)
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    graph = Graph()
    root = Module()
    mode = ProxyTorchDispatchMode(graph, root, tracing_mode="fake", pre_dispatch=True, record_grad_mode=True,
                                  record_stack_traces=True)
    input_specs: list[InputSpec] = []

    def placeholder(name: str, value: Any) -> Any:
        node = named_placeholder(graph, name)
        if isinstance(value, Tensor):
            node.meta["val"] = value
            mode.track(value, node)
        return node

    fake_params = {k: fake_mode.from_tensor(v) for k, v in params.items()}
    fake_buffers = {k: fake_mode.from_tensor(b) for k, (b, _) in buffers.items()}
    fake_constants = {k: fake_mode.from_tensor(v) for k, v in constants.items()}
    for path, f in fake_params.items():
        placeholder("p_" + path.replace(".", "_"), f)
        input_specs.append(InputSpec(InputKind.PARAMETER, TensorArgument("p_" + path.replace(".", "_")), path))
    for path, f in fake_buffers.items():
        placeholder("b_" + path.replace(".", "_"), f)
        input_specs.append(InputSpec(InputKind.BUFFER, TensorArgument("b_" + path.replace(".", "_")), path,
                                     persistent=buffers[path][1]))
    for path, f in fake_constants.items():
        placeholder("c_" + path.replace(".", "_"), f)
        input_specs.append(InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument("c_" + path.replace(".", "_")), path))
    user_leaves: list[Any] = []
    user_placeholders: list[Any] = []
    for i, (leaf, name) in enumerate(zip(inputs.leaves, inputs.names)):
        if isinstance(leaf, Tensor):
            shape = (sizes or {}).get(i)
            leaf = fake_mode.fake_with_sizes(leaf, shape) if shape is not None else fake_mode.from_tensor(leaf)
            user_placeholders.append(placeholder(name, leaf))
            input_specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(name), None))
        else:
            user_placeholders.append(placeholder(name, leaf))
            input_specs.append(InputSpec(InputKind.USER_INPUT, ConstantArgument(name, leaf), None))
        user_leaves.append(leaf)
    args, kwargs = tree_unflatten(user_leaves, inputs.in_spec)
    handles = _record_module_stack(mod, mode)
    cudnn = _backends.cudnn
    cudnn_enabled, cudnn.enabled = cudnn.enabled, False      # as PyTorch's export traces
    try:
        with _reparametrize(mod, {**fake_params, **fake_buffers}, tie_weights=True, strict=False), \
                _constants_replaced(mod, fake_constants), fake_mode, enable_python_dispatcher(), \
                pre_dispatch_mode(mode):
            out = mod(*args, **kwargs)
    except DataDependentOutputException as e:
        raise GuardOnDataDependentSymNode(
            f"Could not guard on data-dependent expression: {e.func} read a value from a tensor while exporting "
            "(a Python branch, .item() or .tolist() on a tensor). Consider writing the branch with torch.cond, or "
            "compute it outside the exported program.") from None
    finally:
        cudnn.enabled = cudnn_enabled
        for h in handles:
            h.remove()
    mode.sync_grad_mode()
    flat_out, out_spec = tree_flatten(out)
    outputs: list[Any] = []
    output_specs: list[OutputSpec] = []
    for o in flat_out:
        if isinstance(o, Tensor):
            node = mode.node_of(o)
            outputs.append(node)
            output_specs.append(OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(node.name), None))
        else:
            outputs.append(o)
            output_specs.append(OutputSpec(OutputKind.USER_OUTPUT, ConstantArgument("", o), None))
    graph.output(tuple(outputs))
    lifted = _lift_constants(graph, mode, input_specs, output_specs)
    _wrap_grad_regions(graph, mode)
    return _subgraphs(_Trace(graph, input_specs, output_specs, out_spec, lifted, user_placeholders), mode)


def _wrap_grad_regions(graph: Graph, mode: ProxyTorchDispatchMode) -> None:
    """Note [Grad-mode regions]: the nodes between ``_set_grad_enabled(False)`` and the switch back, as PyTorch's
    export keeps them -- a graph of their own (``submod_1``, ``submod_3``, ... as PyTorch's sequential split names
    them) run by one ``wrap_with_set_grad_enabled(False, submod_1, *inputs)`` node; its inputs are the values the
    region reads from before it, in the order of first use, its outputs the ones read after it, in the order of
    first use there."""
    nodes = list(graph.nodes)
    switches = [i for i, n in enumerate(nodes) if n.op == "call_function" and n.target is _set_grad_enabled]
    # (False switch, the switch that ends its region): back in grad mode is the program's own mode
    regions = [(a, b) for a, b in zip(switches, switches[1:] + [len(nodes) - 1]) if not nodes[a].args[0]]
    k = 1
    for a, b in regions:
        region = [n for n in nodes[a + 1:b] if n.op != "output"]
        inside = set(region)
        inputs: list[Any] = []
        for n in region:
            for i in n._input_nodes:
                if i not in inside and i not in inputs:
                    inputs.append(i)
        position = {n: j for j, n in enumerate(nodes)}
        outs = sorted((n for n in region if any(u not in inside for u in n.users)),
                      key=lambda n: min(position[u] for u in n.users if u not in inside))
        sub = Graph()
        env: dict[Any, Any] = {}
        for i in inputs:
            ph = named_placeholder(sub, i.name)
            ph.meta.update(i.meta)
            env[i] = ph
        for n in region:
            env[n] = sub.node_copy(n, lambda x: env[x])
        sub.output(tuple(env[n] for n in outs))
        name = f"submod_{k}"
        k += 2
        mode.constants[name] = GraphModule(Module(), sub)
        with graph.inserting_before(nodes[a]):
            attr = graph.get_attr(name)
            call = graph.call_function(wrap_with_set_grad_enabled, (False, attr) + tuple(inputs))
            call.meta["val"] = tuple(n.meta.get("val") for n in outs)
            getitems = []
            for j, n in enumerate(outs):
                g = graph.call_function(operator.getitem, (call, j))
                g.meta.update(n.meta)
                n.replace_all_uses_with(g, lambda u: u not in inside)
                getitems.append((g, n.name))
        for n in reversed(region):
            graph.erase_node(n)
        for g, n_name in getitems:      # each output keeps the name of the value it is (``relu``), as PyTorch's
            g.name = n_name
        graph.erase_node(nodes[a])
        if nodes[b].op == "call_function":
            graph.erase_node(nodes[b])


def _lift_constants(graph: Graph, mode: ProxyTorchDispatchMode, input_specs: list[InputSpec],
                    output_specs: list[OutputSpec]) -> dict[str, Any]:
    """Tensors the forward made from data (recorded as ``get_attr`` constants) become constant inputs, after the
    module's own constants and before the user's inputs (PyTorch's ``c_lifted_tensor_<n>``)."""
    lifted: dict[str, Any] = {}
    first_user = next((n for n, s in zip(graph.nodes, input_specs) if s.kind == InputKind.USER_INPUT), None)
    at = sum(1 for s in input_specs if s.kind != InputKind.USER_INPUT)
    for node in [n for n in graph.nodes if n.op == "get_attr" and isinstance(mode.constants[n.target], Tensor)]:
        target = f"lifted_tensor_{len(lifted)}"
        value = mode.constants[node.target]
        lifted[target] = value
        if first_user is not None:
            with graph.inserting_before(first_user):
                ph = named_placeholder(graph, "c_" + target)
        else:
            with graph.inserting_before(next(n for n in graph.nodes if n.op != "placeholder")):
                ph = named_placeholder(graph, "c_" + target)
        ph.meta["val"] = node.meta.get("val")
        node.replace_all_uses_with(ph)
        graph.erase_node(node)
        input_specs.insert(at, InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(ph.name), target))
        at += 1
    out_node = next(n for n in graph.nodes if n.op == "output")
    for spec, arg in zip(output_specs, out_node.args[0]):
        if isinstance(spec.arg, TensorArgument):
            spec.arg = TensorArgument(arg.name)
    return lifted


# -- dynamic shapes ---------------------------------------------------------------------------------------------------
class _Symbol:
    """One dynamic size: the input dimensions it is read from (``coef * s + offset`` for derived Dims), its
    range, and what kind of spec asked for it."""

    def __init__(self, name: str, value: int, lo: int, hi: Any, named: Dim | None, hint: _DimHint | None) -> None:
        self.name = name
        self.value = value
        self.lo, self.hi = lo, hi
        self.named = named
        self.hint = hint
        self.places: list[tuple[int, int, int, int]] = []     # (input leaf, dim, coef, offset)

    @property
    def must_be_dynamic(self) -> bool:
        return self.named is not None or (self.hint is not None and self.hint.type == _DimHintType.DYNAMIC)

    def moves(self) -> list[int]:
        """Three other values of the symbol within its range, near the example's value."""
        lo = max(self.lo, 2)
        up = [v for v in (self.value + 1, self.value + 2, self.value + 3) if self.hi is int_oo or v <= self.hi]
        down = [v for v in (self.value - 1, self.value - 2, self.value - 3) if v >= lo]
        return (up + down)[:3]


def _symbols(mod: Module, inputs: _Inputs, args: tuple[Any, ...], kwargs: dict[str, Any],
             dynamic_shapes: Any) -> list[_Symbol]:
    specs = specs_per_input(mod.forward, args, kwargs, dynamic_shapes)
    by_arg: dict[str, Any] = {}
    for name, value in zip(inputs.arg_names, list(args) + list(kwargs.values())):
        by_arg[name] = value
    taken: set[int] = set()
    symbols: list[_Symbol] = []
    named: dict[int, _Symbol] = {}
    leaf_index = {id(leaf): i for i, leaf in enumerate(inputs.leaves) if isinstance(leaf, Tensor)}
    for name in inputs.arg_names:
        spec = specs.get(name)
        if spec is None:
            continue
        for path, spec_leaf in _spec_leaves(by_arg[name], spec, name):
            t, where = path
            i = leaf_index[id(t)]
            for d, s in dims_of_tensor(spec_leaf, t.dim(), where).items():
                value = int(t.shape[d])
                if isinstance(s, _DimHint):
                    if value in (0, 1):
                        if s.type == _DimHintType.DYNAMIC:
                            raise UserError(UserErrorType.CONSTRAINT_VIOLATION,
                                            f"Received user-specified dim hint Dim.DYNAMIC(min={s.min}, max={s.max}), "
                                            f"but export 0/1 specialized due to hint of {value} for dimension "
                                            f"{inputs.guard_names[i]}.size()[{d}].")
                        continue
                    sym = _Symbol(symbol_name(f"{inputs.sources[i]}.size()[{d}]", taken), value,
                                  s.min if s.min is not None else 2, s.max if s.max is not None else int_oo, None, s)
                    sym.places.append((i, d, 1, 0))
                    symbols.append(sym)
                    continue
                root = s.root if isinstance(s, _DerivedDim) else s
                coef, offset = (s.a, s.b) if isinstance(s, _DerivedDim) else (1, 0)
                if (value - offset) % coef:
                    raise UserError(UserErrorType.CONSTRAINT_VIOLATION,
                                    f"Expected shape[{d}] = {value} of input {inputs.guard_names[i]} to be of the "
                                    f"form {s.__name__}, where {root.__name__} is an integer")
                root_value = (value - offset) // coef
                found = named.get(id(root))
                if found is None:
                    if root_value in (0, 1):
                        raise UserError(UserErrorType.CONSTRAINT_VIOLATION,
                                        f"Constraints violated ({root.__name__})! {root.__name__} was given the "
                                        f"example value {root_value}, which export specializes (0 and 1 are "
                                        "static): use an example of at least 2.")
                    lo = root.min
                    if not (lo <= root_value and (root.max is int_oo or root_value <= root.max)):
                        raise UserError(UserErrorType.CONSTRAINT_VIOLATION,
                                        f"Expected input {inputs.guard_names[i]}.shape[{d}] = {value} to be of the "
                                        f"form {s.__name__}, where {root.__name__} is an integer in the range "
                                        f"[{root.min}, {root.max!r}]")
                    found = named[id(root)] = _Symbol(symbol_name(f"{inputs.sources[i]}.size()[{d}]", taken),
                                                      root_value, lo, root.max, root, None)
                    symbols.append(found)
                elif found.value != root_value:
                    raise UserError(UserErrorType.CONSTRAINT_VIOLATION,
                                    f"Expected input {inputs.guard_names[i]}.shape[{d}] to be equal to "
                                    f"{coef * found.value + offset}, where {root.__name__} = {found.value}, but "
                                    f"got {value}")
                found.places.append((i, d, coef, offset))
    return symbols


def _spec_leaves(value: Any, spec: Any, where: str) -> list[tuple[tuple[Any, str], Any]]:
    """Pairs (tensor, its place) with its spec, walking ``value`` and ``spec`` together."""
    if isinstance(value, Tensor):
        return [((value, where), spec)]
    if spec is None:
        return []
    out: list[tuple[tuple[Any, str], Any]] = []
    if isinstance(value, (list, tuple)) and isinstance(spec, (list, tuple)) and len(spec) == len(value):
        for k, (v, s) in enumerate(zip(value, spec)):
            out += _spec_leaves(v, s, f"{where}[{k}]")
        return out
    if isinstance(value, dict) and isinstance(spec, dict):
        for k, s in spec.items():
            if k in value:
                out += _spec_leaves(value[k], s, f"{where}[{k!r}]")
        return out
    raise UserError(UserErrorType.INVALID_INPUT, f"The dynamic_shapes spec {spec!r} at {where} does not match the "
                                                 f"structure of the input {type(value).__name__}")


def _sizes_at(inputs: _Inputs, symbols: list[_Symbol], values: dict[str, int]) -> dict[int, tuple[int, ...]]:
    sizes: dict[int, list[int]] = {}
    for sym in symbols:
        v = values.get(sym.name, sym.value)
        for i, d, coef, offset in sym.places:
            shape = sizes.setdefault(i, list(inputs.leaves[i].shape))
            shape[d] = coef * v + offset
    return {i: tuple(s) for i, s in sizes.items()}


def _skeleton(trace: _Trace) -> tuple[list[Any], list[list[int]]]:
    """A trace's graph without its integer arguments (to compare graphs), and those integers in order."""
    shape: list[Any] = []
    ints: list[list[int]] = []
    for node in trace.graph.nodes:
        found: list[int] = []

        def strip(a: Any) -> Any:
            if isinstance(a, bool):
                return a
            if isinstance(a, int):
                found.append(a)
                return int
            if isinstance(a, float):
                return ("float", a)
            if isinstance(a, (list, tuple)):
                return type(a)(strip(x) for x in a)
            if isinstance(a, dict):
                return {k: strip(v) for k, v in a.items()}
            if hasattr(a, "name") and hasattr(a, "op"):
                return ("node", a.name)
            return a
        shape.append((node.op, str(node.target), node.name, strip(node.args), strip(node.kwargs)))
        ints.append(found)
        val = node.meta.get("val")
        if isinstance(val, Tensor):
            ints[-1] = ints[-1] + list(val.shape) + list(val.stride())
        shape[-1] = shape[-1] + ((len(val.shape),) if isinstance(val, Tensor) else (),)
        branch = getattr(trace.root, str(node.target), None) if node.op == "get_attr" else None
        if isinstance(branch, GraphModule):
            # a torch.cond branch: its integers are not rewritten, so they must not change with the dynamic sizes
            # (a branch that uses them makes the symbol static, or a named Dim raise)
            inner = _Trace(branch.graph, [], [], None, {}, [])
            sub_shape, sub_ints = _skeleton(inner)
            shape[-1] = shape[-1] + (tuple(sub_shape), tuple(tuple(i) for i in sub_ints))
    return shape, ints


def _fit(points: list[dict[str, int]], ys: list[int], monomials: list[tuple[str, ...]]) -> SymExpr | None:
    """The integer polynomial over ``monomials`` through every (point, y), if there is one."""
    if len(set(ys)) == 1:
        return SymExpr.of(ys[0])
    a = np.array([[float(np.prod([p[s] for s in m])) for m in monomials] for p in points])
    coef = np.linalg.lstsq(a, np.array(ys, dtype=float), rcond=None)[0]
    rounded = [int(round(c)) for c in coef]
    expr = SymExpr(dict(zip(monomials, rounded)))
    if all(expr.subs(p) == y for p, y in zip(points, ys)):
        return expr
    return None


class _DynamicTrace:
    """The traces of a program at the sizes Note [Dynamic shapes by retracing] asks for, and what they say."""

    def __init__(self, trace: Callable[[dict[int, tuple[int, ...]]], _Trace], inputs: _Inputs,
                 symbols: list[_Symbol]) -> None:
        self.trace, self.inputs = trace, inputs
        self.symbols = symbols
        self.failure: Exception | None = None     # why the last trace at moved sizes failed

    def _trace_at(self, values: dict[str, int]) -> _Trace | None:
        """The trace at these sizes, or None when the program fails there (the one fallback of the export: the
        symbol cannot be dynamic; the error is kept and is the cause of a named Dim's constraint violation)."""
        try:
            self.failure = None
            return self.trace(_sizes_at(self.inputs, self.symbols, values))
        except (GuardOnDataDependentSymNode, DynamicOutputShapeException):
            raise
        except Exception as e:      # noqa: BLE001 - any error the program raises at these sizes
            self.failure = e
            return None

    def run(self) -> tuple[_Trace, dict[str, int], list[list[SymExpr | None]]]:
        base = self.trace(_sizes_at(self.inputs, self.symbols, {}))
        skeleton, base_ints = _skeleton(base)
        while True:
            traces = self._moves(skeleton)
            if traces is not None:
                break
        points = [p for p, _ in traces]
        ints = [base_ints] + [_skeleton(t)[1] for _, t in traces]
        names = [s.name for s in self.symbols]
        monomials: list[tuple[str, ...]] = [()] + [(n,) for n in names] + [(n, n) for n in names] + \
            [tuple(sorted(c)) for c in itertools.combinations(names, 2)]
        base_point = {s.name: s.value for s in self.symbols}
        all_points = [base_point] + points
        exprs: list[list[SymExpr | None]] = []
        for k in range(len(base_ints)):
            row: list[SymExpr | None] = []
            for j in range(len(base_ints[k])):
                row.append(_fit(all_points, [it[k][j] for it in ints], monomials))
            exprs.append(row)
        return base, base_point, exprs

    def _moves(self, skeleton: list[Any]) -> list[tuple[dict[str, int], _Trace]] | None:
        """A trace per move; None after a symbol was made static or merged (the caller starts over)."""
        out: list[tuple[dict[str, int], _Trace]] = []
        base = {s.name: s.value for s in self.symbols}
        for sym in list(self.symbols):
            moves = sym.moves()
            if len(moves) < 3:
                self._not_dynamic(sym, "its range leaves no other values to trace at")
                return None
            for v in moves:
                t = self._trace_at({**base, sym.name: v})
                if t is None or _skeleton(t)[0] != skeleton:
                    failure = self.failure
                    if self._merge(sym, skeleton):
                        return None
                    self._not_dynamic(sym, "the program does not run, or runs other operators (or a torch.cond "
                                           "branch uses the size), at other values of it (traced with "
                                           f"{sym.name} = {v})", failure)
                    return None
                out.append(({**base, sym.name: v}, t))
        for a, b in itertools.combinations(self.symbols, 2):
            point = {**base, a.name: a.moves()[0], b.name: b.moves()[0]}
            t = self._trace_at(point)
            if t is None or _skeleton(t)[0] != skeleton:
                raise UserError(UserErrorType.CONSTRAINT_VIOLATION,
                                f"Constraints violated ({a.name}, {b.name})! The program runs at other values of "
                                f"{a.name} and of {b.name} alone but not when both change: ember cannot express the "
                                "relation between them.")
            out.append((point, t))
        return out

    def _merge(self, sym: _Symbol, skeleton: list[Any]) -> bool:
        """Make ``sym`` one symbol with the AUTO symbols of the same example value it must move with."""
        if sym.named is not None or sym.hint is None:
            return False
        partners = [s for s in self.symbols if s is not sym and s.value == sym.value and s.named is None and
                    s.hint is not None]
        base = {s.name: s.value for s in self.symbols}
        for size in range(1, len(partners) + 1):
            for group in itertools.combinations(partners, size):
                if sym.hint.type == _DimHintType.AUTO and any(s.hint.type != _DimHintType.AUTO for s in group
                                                               if s.hint is not None):
                    continue
                moved = {**base, sym.name: sym.moves()[0], **{s.name: sym.moves()[0] for s in group}}
                t = self._trace_at(moved)
                if t is not None and _skeleton(t)[0] == skeleton:
                    for s in group:
                        sym.places += s.places
                        sym.lo, sym.hi = max(sym.lo, s.lo), min(sym.hi, s.hi) if s.hi is not int_oo else sym.hi
                        self.symbols.remove(s)
                    return True
        return False

    def _not_dynamic(self, sym: _Symbol, why: str, failure: Exception | None = None) -> None:
        if sym.must_be_dynamic:
            label = sym.named.__name__ if sym.named is not None else f"Dim.DYNAMIC ({sym.name})"
            i, d, _, _ = sym.places[0]
            failed = f" ({type(failure).__name__}: {failure})" if failure is not None else ""
            raise UserError(UserErrorType.CONSTRAINT_VIOLATION,
                            f"Constraints violated ({label})! Not all values of {label} = "
                            f"{self.inputs.sources[i]}.size()[{d}] in the specified range are valid because "
                            f"{label} was inferred to be a constant ({sym.value}): {why}{failed}. Suggested fix: "
                            f"use Dim.AUTO or a static size for {self.inputs.guard_names[i]}.shape[{d}].") \
                from failure
        self.symbols.remove(sym)


def _apply_symbols(trace: _Trace, symbols: list[_Symbol], exprs: list[list[SymExpr | None]],
                   base_point: dict[str, int]) -> None:
    """Rewrite the base trace's integer arguments that depend on the symbols as ``sym_size`` arithmetic, and give
    the tensors' ``meta["val"]`` their symbolic sizes."""
    graph = trace.graph
    nodes = list(graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    after = placeholders[-1] if placeholders else None
    sym_nodes: dict[str, Any] = {}
    cache: dict[SymExpr, Any] = {}

    def symbol_node(sym: _Symbol) -> Any:
        node = sym_nodes.get(sym.name)
        if node is None:
            i, d, coef, offset = sym.places[0]
            with graph.inserting_after(after if not sym_nodes else list(sym_nodes.values())[-1]):
                node = graph.create_node("call_function", ops.aten.sym_size.int, (trace.user_placeholders[i], d),
                                         name="sym_size_int")
            node.meta["val"] = SymInt(SymExpr({(sym.name,): coef, (): offset}), coef * sym.value + offset)
            if coef != 1 or offset:
                with graph.inserting_after(node):
                    shifted = graph.call_function(operator.sub, (node, offset)) if offset else node
                with graph.inserting_after(shifted):
                    node = graph.call_function(operator.floordiv, (shifted, coef)) if coef != 1 else shifted
                shifted.meta["val"] = SymInt(SymExpr({(sym.name,): coef}), coef * sym.value)
                node.meta["val"] = SymInt(SymExpr({(sym.name,): 1}), sym.value)
            sym_nodes[sym.name] = node
        return node

    by_name = {s.name: s for s in symbols}

    def expr_node(expr: SymExpr, before: Any) -> Any:
        hit = cache.get(expr)
        if hit is not None:
            return hit

        def emit(op: Any, a: Any, b: Any) -> Any:
            node = graph.call_function(op, (a, b))
            node.meta["val"] = op(a.meta["val"] if hasattr(a, "meta") else a, b.meta["val"] if hasattr(b, "meta")
                                  else b)
            return node
        total: Any = None
        with graph.inserting_before(before):
            for mono, c in sorted(expr.terms.items(), key=lambda kv: (not kv[0], kv[0])):
                if not mono:
                    total = emit(operator.add, total, c) if total is not None else c
                    continue
                term: Any = symbol_node(by_name[mono[0]])
                for s in mono[1:]:
                    term = emit(operator.mul, term, symbol_node(by_name[s]))
                if c != 1:
                    term = emit(operator.mul, c, term)
                total = term if total is None else emit(operator.add, total, term)
        cache[expr] = total
        return total

    for node, row in zip(nodes, exprs):
        val = node.meta.get("val")
        nd = len(val.shape) if isinstance(val, Tensor) else 0
        arg_exprs = row[:len(row) - 2 * nd]
        shape_exprs = row[len(row) - 2 * nd:len(row) - nd]
        stride_exprs = row[len(row) - nd:]
        if any(e is None for e in row):
            bad = next(k for k, e in enumerate(row) if e is None)
            raise UserError(UserErrorType.CONSTRAINT_VIOLATION,
                            f"Could not express integer {bad} of node {node.name} ({node.target}) as a polynomial of "
                            "the dynamic sizes "
                            f"{', '.join(s.name for s in symbols)}: ember cannot export this program with these "
                            "dynamic shapes.")
        if isinstance(val, Tensor):
            for attr, meta_exprs in (("_sym_sizes", shape_exprs), ("_sym_strides", stride_exprs)):
                symbolic = _symbolic(meta_exprs, base_point)
                if symbolic is not None:
                    setattr(val, attr, symbolic)
        if not any(not e.is_constant() for e in arg_exprs):    # type: ignore[union-attr]
            continue
        it = iter(arg_exprs)

        def put(a: Any) -> Any:
            if isinstance(a, bool):
                return a
            if isinstance(a, int):
                e = next(it)
                return a if e is None or e.is_constant() else expr_node(e, node)
            if isinstance(a, (list, tuple)):
                return type(a)(put(x) for x in a)
            if isinstance(a, dict):
                return {k: put(v) for k, v in a.items()}
            return a
        node.args = put(node.args)
        node.kwargs = put(node.kwargs)


def _symbolic(exprs: list[SymExpr | None], point: dict[str, int]) -> tuple[Any, ...] | None:
    """Sizes (or strides) as ints and SymInts; None when none of them is symbolic."""
    if all(e is None or e.is_constant() for e in exprs):
        return None
    return tuple(e.constant() if e.is_constant() else SymInt(e, e.subs(point)) for e in exprs)  # type: ignore


def _range_constraints(symbols: list[_Symbol]) -> dict[Any, ValueRanges]:
    return {Symbol(s.name): ValueRanges(s.lo, s.hi) for s in symbols}


# -- export -----------------------------------------------------------------------------------------------------------
def export(mod: Any, args: Any, kwargs: dict[str, Any] | None = None, *, dynamic_shapes: Any = None,
           strict: bool = False, preserve_module_call_signature: tuple[str, ...] = (),
           prefer_deferred_runtime_asserts_over_guards: bool = False) -> Any:
    """``mod``'s forward on ``args`` / ``kwargs`` as an ``ExportedProgram`` (Note [Export]); ``dynamic_shapes``
    marks sizes that may change (``Dim``, Note [Dynamic shapes by retracing])."""
    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got {type(mod)}.")
    if not isinstance(args, tuple):
        raise UserError(UserErrorType.INVALID_INPUT,
                        f"Expecting `args` to be a tuple of example positional inputs, got {type(args)}")
    if preserve_module_call_signature:
        raise NotImplementedError("export(preserve_module_call_signature=...) is not supported by ember yet "
                                  "(unflatten works without it: a submodule's call takes the values that flow in)")
    if strict:
        warnings.warn("ember.export traces every program as strict=False does: ember has no bytecode tracer, so "
                      "Python side effects strict mode would refuse are not refused", UserWarning, stacklevel=2)
    kwargs = dict(kwargs or {})
    inputs = _Inputs(mod, args, kwargs)
    symbols = _symbols(mod, inputs, args, kwargs, dynamic_shapes)
    if symbols:
        dyn = _DynamicTrace(lambda sizes: _trace(mod, inputs, sizes), inputs, symbols)
        trace, base_point, exprs = dyn.run()
        if dyn.symbols:
            _apply_symbols(trace, dyn.symbols, exprs, base_point)
        symbols = dyn.symbols
    else:
        trace = _trace(mod, inputs)
    params, buffers, constants = _module_state(mod)
    state_dict: dict[str, Any] = dict(params)
    constants_out: dict[str, Any] = {}
    for path, (b, persistent) in buffers.items():
        (state_dict if persistent else constants_out)[path] = b
    constants_out.update(constants)
    constants_out.update(trace.lifted)
    gm = trace.graph_module()
    signature = ExportGraphSignature(trace.input_specs, trace.output_specs)
    call = ModuleCallSignature(inputs=[], outputs=[], in_spec=inputs.in_spec, out_spec=trace.out_spec,
                               forward_arg_names=inputs.arg_names)
    module_call_graph = [ModuleCallEntry("", call)] + [ModuleCallEntry(name, None) for name, _ in
                                                       mod.named_modules() if name]
    ep = ExportedProgram(gm, trace.graph, signature, state_dict, _range_constraints(symbols), module_call_graph,
                         example_inputs=(args, kwargs), constants=constants_out)
    ep._symbols = symbols
    ep._input_guard_names = inputs.guard_names
    return ep

