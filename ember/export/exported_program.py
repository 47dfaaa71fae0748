"""``ExportedProgram``: an exported graph with its state and signature (``torch/export/exported_program.py``).

Note [Running an exported program]
The graph takes the state as inputs (Note [Export]), so it is not called directly: ``module()`` gives a
``GraphModule`` that holds the parameters and buffers at their paths (``fc.weight``), reads them with ``get_attr``,
takes the user's inputs in their original structure (``fx_pytree.tree_flatten_spec``), first checks them against
the export's assumptions (``_guards_fn``: static sizes, the ranges of dynamic ones, sizes that must be equal, the
values of specialized numbers -- PyTorch's "Guard failed: ..." errors) and, where ``run_decompositions`` turned a
mutation into an output, copies that output back into its buffer or input with ``copy_``.

``run_decompositions()`` traces the program once more, below autograd, under ``functionalize`` and the core ATen
decomposition table (Note [make_fx], Note [Functionalization]): composite operators become core ones
(``linear`` -> ``permute`` + ``addmm``) and every mutation of an input becomes an output, listed in the signature as
``BUFFER_MUTATION`` / ``PARAMETER_MUTATION`` / ``USER_INPUT_MUTATION`` before the user's outputs.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterator, NamedTuple

from ember._decomp import core_aten_decompositions
from ember._ops import ops
from ember._tensor import Tensor
from ember.export.graph_signature import (ConstantArgument, ExportGraphSignature, InputKind, OutputKind,
                                          OutputSpec, TensorArgument)
from ember.fx.experimental.symbolic_shapes import int_oo
from ember.fx.graph import Graph, _PyTreeCodeGen, _PyTreeInfo
from ember.fx.graph_module import GraphModule
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

__all__ = ["ExportedProgram", "ModuleCallEntry", "ModuleCallSignature", "default_decompositions"]


@dataclasses.dataclass
class ModuleCallSignature:
    inputs: list[Any]
    outputs: list[Any]
    in_spec: Any
    out_spec: Any
    forward_arg_names: list[str] | None = None


@dataclasses.dataclass
class ModuleCallEntry:
    fqn: str
    signature: ModuleCallSignature | None = None


class CallSpec(NamedTuple):
    in_spec: Any
    out_spec: Any


def default_decompositions() -> dict[Any, Callable[..., Any]]:
    """The table ``run_decompositions()`` uses: PyTorch's core ATen decompositions."""
    return core_aten_decompositions()


class ExportedProgram:
    """A program ``export`` captured (Note [Export], Note [Running an exported program])."""

    def __init__(self, root: Any, graph: Graph, graph_signature: ExportGraphSignature, state_dict: dict[str, Any],
                 range_constraints: dict[Any, Any], module_call_graph: list[ModuleCallEntry],
                 example_inputs: Any = None, constants: dict[str, Any] | None = None, *,
                 verifiers: Any = None) -> None:
        self._graph_module = root if isinstance(root, GraphModule) else GraphModule(root, graph)
        self._graph_signature = graph_signature
        self._state_dict = state_dict
        self._range_constraints = range_constraints
        self._module_call_graph = module_call_graph
        self._example_inputs = example_inputs
        self._constants = constants or {}
        self._symbols: list[Any] = []
        self._input_guard_names: list[str] = []
        self._dialect = "TRAINING"

    # -- what it holds --------------------------------------------------------------------------------------------
    @property
    def graph_module(self) -> GraphModule:
        return self._graph_module

    @property
    def graph(self) -> Graph:
        return self._graph_module.graph

    @property
    def graph_signature(self) -> ExportGraphSignature:
        return self._graph_signature

    @property
    def state_dict(self) -> dict[str, Any]:
        return self._state_dict

    @property
    def constants(self) -> dict[str, Any]:
        return self._constants

    @property
    def tensor_constants(self) -> dict[str, Any]:
        return self._constants

    @property
    def range_constraints(self) -> dict[Any, Any]:
        return self._range_constraints

    @property
    def module_call_graph(self) -> list[ModuleCallEntry]:
        return self._module_call_graph

    @property
    def example_inputs(self) -> Any:
        return self._example_inputs

    @property
    def call_spec(self) -> CallSpec:
        sig = self._module_call_graph[0].signature if self._module_call_graph else None
        return CallSpec(sig.in_spec if sig else None, sig.out_spec if sig else None)

    @property
    def dialect(self) -> str:
        return self._dialect

    @property
    def verifiers(self) -> list[Any]:
        return []

    def parameters(self) -> Iterator[Any]:
        for _, p in self.named_parameters():
            yield p

    def named_parameters(self) -> Iterator[tuple[str, Any]]:
        for name in self._graph_signature.parameters:
            yield name, self._state_dict[name]

    def buffers(self) -> Iterator[Any]:
        for _, b in self.named_buffers():
            yield b

    def named_buffers(self) -> Iterator[tuple[str, Any]]:
        non_persistent = set(self._graph_signature.non_persistent_buffers)
        for name in self._graph_signature.buffers:
            yield name, (self._constants[name] if name in non_persistent else self._state_dict[name])

    def _state_of(self, spec: Any) -> Any:
        if spec.kind == InputKind.PARAMETER:
            return self._state_dict[spec.target]
        if spec.kind == InputKind.BUFFER:
            return self._state_dict[spec.target] if spec.persistent else self._constants[spec.target]
        return self._constants[spec.target]

    # -- running it -----------------------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Unable to call ExportedProgram directly. You should use `exported_program.module()` "
                           "instead.")

    def module(self, check_guards: bool = True) -> GraphModule:
        """A module that runs the program on the user's inputs (Note [Running an exported program])."""
        root = Module()
        graph = Graph()
        env: dict[Any, Any] = {}
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        specs = list(zip(placeholders, self._graph_signature.input_specs))
        for node, spec in specs:
            if spec.kind == InputKind.USER_INPUT:
                env[node] = named_placeholder(graph, node.name)
                env[node].meta.update(node.meta)
        if check_guards:
            _install(root, "_guards_fn", _GuardsFn(self))
            graph.call_module("_guards_fn", tuple(env[n] for n, s in specs if s.kind == InputKind.USER_INPUT))
        for node, spec in specs:
            if spec.kind == InputKind.USER_INPUT:
                continue
            value = self._state_of(spec)
            path = str(spec.target)
            if spec.kind == InputKind.PARAMETER:
                _install(root, path, value if isinstance(value, Parameter) else Parameter(value))
            elif spec.kind == InputKind.BUFFER:
                _install_buffer(root, path, value, bool(spec.persistent))
            else:
                _install(root, path, value)
            env[node] = graph.get_attr(path)
            env[node].meta.update(node.meta)
        out_node = None
        for node in self.graph.nodes:
            if node.op == "output":
                out_node = node
            elif node.op != "placeholder":
                if node.op == "get_attr":       # the graph of a higher-order operator (``true_graph_0``)
                    _install(root, node.target, getattr(self._graph_module, node.target))
                env[node] = graph.node_copy(node, lambda n: env[n])
        outs = out_node.args[0] if out_node is not None else ()
        # a mutation the decomposed program returns is copied back into its buffer, parameter or input
        written = {(s.kind, s.target if s.kind != InputKind.USER_INPUT else s.arg.name): n for n, s in specs}
        user_outs: list[Any] = []
        for ospec, value in zip(self._graph_signature.output_specs, outs):
            if ospec.kind == OutputKind.USER_OUTPUT:
                user_outs.append(env[value] if hasattr(value, "op") else value)
            else:
                target = written[(_MUTATED_INPUT[ospec.kind], ospec.target)]
                graph.call_function(ops.aten.copy_.default, (env[target], env[value]))
        graph.output(tuple(user_outs))
        sig = self._module_call_graph[0].signature if self._module_call_graph else None
        if sig is not None:
            graph._codegen = _PyTreeCodeGen(_PyTreeInfo(list(sig.forward_arg_names or []), sig.in_spec,
                                                        sig.out_spec))
        return GraphModule(root, graph)

    # -- transforming it --------------------------------------------------------------------------------------------
    def run_decompositions(self, decomp_table: dict[Any, Callable[..., Any]] | None = None,
                           decompose_custom_triton_ops: bool = False) -> ExportedProgram:
        """The same program in core ATen operators, without mutations (Note [Running an exported program])."""
        from ember.export._decompose import decompose
        return decompose(self, default_decompositions() if decomp_table is None else decomp_table)

    def validate(self) -> None:
        specs = self._graph_signature.input_specs
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(specs) != len(placeholders):
            raise RuntimeError(f"The graph has {len(placeholders)} placeholders but its signature {len(specs)} inputs")

    # -- reading it -------------------------------------------------------------------------------------------------
    def __str__(self) -> str:
        graph_module = self._graph_module.print_readable(print_output=False).replace("\n", "\n    ")
        graph_signature = str(self._graph_signature).replace("\n", "\n    ")
        return (f"ExportedProgram:\n    {graph_module}\nGraph signature: {graph_signature}\n"
                f"Range constraints: {self._range_constraints}\n")

    def __repr__(self) -> str:
        return str(self)


def named_placeholder(graph: Graph, name: str) -> Any:
    """A placeholder named exactly ``name``: an exported graph's input names are its signature's, even where fx
    would add a suffix (``input`` shadows a builtin; PyTorch's export renames such placeholders back too)."""
    node = graph.placeholder(name)
    if node.name != name:
        node.name = name
        graph._graph_namespace._used_names.add(name)
    return node


_MUTATED_INPUT = {OutputKind.BUFFER_MUTATION: InputKind.BUFFER, OutputKind.PARAMETER_MUTATION: InputKind.PARAMETER,
                  OutputKind.USER_INPUT_MUTATION: InputKind.USER_INPUT}


def _owner(root: Module, path: str) -> tuple[Module, str]:
    """The module at ``path``'s prefix (plain Modules made for missing parents) and the last name."""
    *owners, leaf = path.split(".")
    m = root
    for o in owners:
        if not hasattr(m, o):
            m.add_module(o, Module())
        m = getattr(m, o)
    return m, leaf


def _install(root: Module, path: str, value: Any) -> None:
    m, leaf = _owner(root, path)
    if isinstance(value, Module):
        m.add_module(leaf, value)
    elif isinstance(value, Parameter):
        m.register_parameter(leaf, value)
    else:
        setattr(m, leaf, value)


def _install_buffer(root: Module, path: str, value: Any, persistent: bool) -> None:
    m, leaf = _owner(root, path)
    m.register_buffer(leaf, value, persistent=persistent)


class _GuardsFn(Module):
    """Checks the inputs of ``ExportedProgram.module()`` against what the export assumed (PyTorch's
    ``_guards_fn``): static sizes, dynamic sizes within their ranges and equal where one symbol stands for them,
    and specialized numbers."""

    def __init__(self, ep: ExportedProgram) -> None:
        super().__init__()
        specs = [s for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
        names = ep._input_guard_names or [s.arg.name for s in specs]
        placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
        dynamic: dict[tuple[int, int], Any] = {}
        for sym in ep._symbols:
            for i, d, coef, offset in sym.places:
                dynamic[(i, d)] = (sym, coef, offset)
        self._checks: list[tuple[int, str, Any]] = []
        for i, (spec, name) in enumerate(zip(specs, names)):
            if isinstance(spec.arg, ConstantArgument):
                self._checks.append((i, "value", (name, spec.arg.value)))
                continue
            val = placeholders[spec.arg.name].meta.get("val")
            if isinstance(val, Tensor):
                for d, size in enumerate(val.shape):
                    if (i, d) not in dynamic:
                        self._checks.append((i, "size", (name, d, int(size))))
                self._checks.append((i, "ndim", (name, val.dim())))
        firsts: dict[str, tuple[int, str, int, int, int]] = {}     # symbol -> the first place it is read
        for (i, d), (sym, coef, offset) in sorted(dynamic.items()):
            name = names[i]
            self._checks.append((i, "range", (name, d, sym, coef, offset)))
            if sym.name in firsts:
                self._checks.append((i, "same", (name, d, coef, offset, firsts[sym.name])))
            else:
                firsts[sym.name] = (i, name, d, coef, offset)

    def forward(self, *inputs: Any) -> None:
        for i, kind, data in self._checks:
            x = inputs[i]
            if kind == "value":
                name, value = data
                if x != value:
                    raise AssertionError(f"Guard failed: {name} == {value!r}")
            elif kind == "ndim":
                name, nd = data
                if not isinstance(x, Tensor) or x.dim() != nd:
                    raise AssertionError(f"Guard failed: {name}.dim() == {nd}")
            elif kind == "size":
                name, d, size = data
                if x.dim() > d and x.size(d) != size:
                    raise AssertionError(f"Guard failed: {name}.size()[{d}] == {size}")
            elif kind == "range":
                name, d, sym, coef, offset = data
                v = x.size(d)
                lo = coef * sym.lo + offset
                if v < lo:
                    raise AssertionError(f"Guard failed: {name}.size()[{d}] >= {lo}")
                if sym.hi is not int_oo and v > coef * sym.hi + offset:
                    raise AssertionError(f"Guard failed: {name}.size()[{d}] <= {coef * sym.hi + offset}")
                if (v - offset) % coef:
                    raise AssertionError(f"Guard failed: Eq(Mod({name}.size()[{d}] - {offset}, {coef}), 0)")
            elif kind == "same":
                name, d, coef, offset, (j, first, fd, fcoef, foffset) = data
                root = (inputs[j].size(fd) - foffset) // fcoef
                if x.size(d) != coef * root + offset:
                    raise AssertionError(f"Guard failed: {name}.size()[{d}] == {first}.size()[{fd}]")


def _output_specs_with_mutations(ep: ExportedProgram, mutated: list[tuple[Any, Any]],
                                 user_specs: list[OutputSpec]) -> list[OutputSpec]:
    specs: list[OutputSpec] = []
    by_name = {s.arg.name: s for s in ep.graph_signature.input_specs}
    for placeholder, value in mutated:
        spec = by_name[placeholder]
        kind = {InputKind.BUFFER: OutputKind.BUFFER_MUTATION, InputKind.PARAMETER: OutputKind.PARAMETER_MUTATION,
                InputKind.USER_INPUT: OutputKind.USER_INPUT_MUTATION}.get(spec.kind)
        if kind is None:
            raise RuntimeError(f"The exported program mutates the constant {spec.target!r}, which it may not")
        target = spec.target if kind != OutputKind.USER_INPUT_MUTATION else spec.arg.name
        specs.append(OutputSpec(kind, TensorArgument(value.name), target))
    return specs + user_specs

