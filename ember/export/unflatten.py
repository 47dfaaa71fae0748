"""``torch.export.unflatten``: an exported program as a module tree like the one it was exported from
(``torch/export/unflatten.py``).

Note [Unflatten]
Every node of an exported graph remembers the modules whose ``forward`` was running when it was recorded
(``meta["nn_module_stack"]``, outermost first). ``unflatten`` walks the graph of ``ExportedProgram.module()`` in
order and keeps a stack of open *frames*, one per module call: a node whose stack goes deeper opens the calls it
enters, one whose stack is shorter closes the calls it left. A frame has its own graph and its own
``InterpreterModule`` at the module's path (``a``, ``a.fc``); its parent records one ``call_module`` node for it.
A value a frame reads from outside becomes a placeholder of its graph and an argument of its call; a parameter or
buffer under the module's path is read with a ``get_attr`` relative to it (``fc.weight``) and lives on that module;
a value the frame made that a later node outside uses is an output (one output is returned as it is, several as a
tuple read with ``getitem``). A module called twice reuses its first call's module when both calls recorded the
same operators (PyTorch's deduplication); calls that differ are refused. The result runs as the exported program
does, with the same guards and input / output structure.
"""
from __future__ import annotations

import operator
from typing import Any

from ember.export.exported_program import ExportedProgram, _install, _install_buffer
from ember.export.graph_signature import InputKind
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.interpreter import Interpreter
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.utils._pytree import tree_flatten, tree_unflatten

__all__ = ["unflatten", "UnflattenedModule", "InterpreterModule", "FlatArgsAdapter"]


class FlatArgsAdapter:
    """Adapts the flat inputs of a call to the exported signature (PyTorch's hook for changed signatures); ember
    accepts only inputs of the exported structure, so an adapter is not called."""


class InterpreterModule(Module):
    """One module of an unflattened program: its graph, run node by node (``graph_module`` is its code)."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph

    def forward(self, *args: Any) -> Any:
        return Interpreter(self, graph=self.graph).run(*args)

    @property
    def graph_module(self) -> GraphModule:
        return GraphModule(self, self.graph)


class _Frame:
    def __init__(self, key: str, path: str, module: InterpreterModule, parent: _Frame | None) -> None:
        self.key, self.path, self.module, self.parent = key, path, module, parent
        self.graph = module.graph
        self.env: dict[Any, Any] = {}        # flat node -> its value in this frame's graph
        self.inputs: list[Any] = []          # flat nodes that are this frame's placeholders, in order
        self.defined: list[Any] = []         # flat nodes this frame (or a frame inside it) computes
        self.call: Any = None                # the call_module node in the parent
        self.chain: tuple[str, ...] = () if parent is None else parent.chain + (key,)


class _Builder:
    def __init__(self, ep: ExportedProgram) -> None:
        self.flat = ep.module(check_guards=False)
        self.ep = ep
        self.state: dict[str, tuple[Any, str, bool]] = {}      # fqn -> (tensor, kind, persistent)
        for spec in ep.graph_signature.input_specs:
            if spec.kind != InputKind.USER_INPUT and spec.target is not None:
                kind = "param" if spec.kind == InputKind.PARAMETER else \
                    "buffer" if spec.kind == InputKind.BUFFER else "constant"
                self.state[spec.target] = (ep._state_of(spec), kind, spec.persistent is not False)
        self.chains: dict[Any, tuple[str, ...]] = {}
        self.paths: dict[str, str] = {}
        for node in self.flat.graph.nodes:
            stack = node.meta.get("nn_module_stack") or {}
            self.chains[node] = tuple(stack)
            for key, (path, _) in stack.items():
                self.paths[key] = path
        self.modules: dict[str, InterpreterModule] = {}       # path -> the module of its first call

    def local(self, frame: _Frame, n: Any) -> Any:
        """``n`` (a flat node) as a value of ``frame``'s graph: computed there, a relative ``get_attr``, or a new
        placeholder fed by the parent."""
        if n in frame.env:
            return frame.env[n]
        if n.op == "get_attr":
            target = str(n.target)
            prefix = frame.path + "." if frame.path else ""
            value = getattr(self.flat, target) if target not in self.state else None
            if target in self.state and (not prefix or target.startswith(prefix)):
                rel = target[len(prefix):]
                tensor, kind, persistent = self.state[target]
                if kind == "param":
                    _install(frame.module, rel, tensor if isinstance(tensor, Parameter) else Parameter(tensor))
                elif kind == "buffer":
                    _install_buffer(frame.module, rel, tensor, persistent)
                else:
                    _install(frame.module, rel, tensor)
                frame.env[n] = self._first(frame.graph, lambda: frame.graph.get_attr(rel))
                return frame.env[n]
            if isinstance(value, GraphModule):        # a higher-order operator's graph: wherever it is used
                _install(frame.module, target, value)
                frame.env[n] = self._first(frame.graph, lambda: frame.graph.get_attr(target))
                return frame.env[n]
        assert frame.parent is not None, f"unflatten: {n.name} has no value at the top level"
        ph = self._first(frame.graph, lambda: frame.graph.placeholder(n.name), placeholder=True)
        ph.meta.update(n.meta)
        frame.env[n] = ph
        frame.inputs.append(n)
        return ph

    @staticmethod
    def _first(graph: Graph, make: Any, placeholder: bool = False) -> Any:
        """A node made before the graph's computing nodes (placeholders first, then the attributes)."""
        nodes = list(graph.nodes)
        at = next((x for x in nodes if x.op != "placeholder" and (placeholder or x.op != "get_attr")), None)
        if at is None:
            return make()
        with graph.inserting_before(at):
            return make()

    def in_frame(self, node: Any, frame: _Frame) -> bool:
        chain = self.chains.get(node, ())
        return chain[:len(frame.chain)] == frame.chain

    def open(self, parent: _Frame, key: str) -> _Frame:
        path = self.paths[key]
        frame = _Frame(key, path, InterpreterModule(Graph()), parent)
        frame.call = parent.graph.call_module("__pending__", ())
        return frame

    def close(self, frame: _Frame) -> None:
        parent = frame.parent
        assert parent is not None
        outs = [n for n in frame.defined if any(not self.in_frame(u, frame) for u in n.users)]
        values = [frame.env[n] for n in outs]
        frame.graph.output(values[0] if len(values) == 1 else tuple(values))
        for node in reversed(list(frame.graph.nodes)):      # elements of a result only the caller could read
            if node.target is operator.getitem and not node.users:
                frame.graph.erase_node(node)
        module = self._place(frame)
        rel = frame.path[len(parent.path) + 1:] if parent.path else frame.path
        if not _has(parent.module, rel):
            _install(parent.module, rel, module)
        call = frame.call
        call.target = rel
        call.args = tuple(self.local(parent, n) for n in frame.inputs)
        call.name = parent.graph._graph_namespace.create_name(rel.replace(".", "_"), None)
        if len(outs) == 1:
            parent.env[outs[0]] = call
        else:
            with parent.graph.inserting_after(call):
                at = call
                for i, n in enumerate(outs):
                    with parent.graph.inserting_after(at):
                        g = parent.graph.call_function(operator.getitem, (call, i))
                    g.meta.update(n.meta)
                    parent.env[n] = g
                    at = g
        parent.defined.extend(outs)

    def _place(self, frame: _Frame) -> InterpreterModule:
        """The frame's module, or the module of the same path's first call when both recorded the same ops."""
        first = self.modules.get(frame.path)
        if first is None:
            self.modules[frame.path] = frame.module
            return frame.module
        if _signature(first.graph) != _signature(frame.graph):
            raise NotImplementedError(f"unflatten: module {frame.path!r} is called more than once with different "
                                      "operators; ember unflattens only calls that record the same graph")
        return first

    def build(self, root_module: InterpreterModule) -> None:
        root = _Frame("", "", root_module, None)
        frames = [root]
        out_node = None
        for node in self.flat.graph.nodes:
            if node.op == "placeholder":
                ph = root.graph.placeholder(node.name)
                ph.meta.update(node.meta)
                root.env[node] = ph
                continue
            if node.op == "get_attr":
                continue            # made where it is used (Note [Unflatten])
            if node.op == "output":
                out_node = node
                continue
            chain = self.chains[node]
            if node.target is operator.getitem and node.args:       # an element of a result: with its producer
                chain = self.chains.get(node.args[0], chain)
            while frames[-1].chain != chain[:len(frames[-1].chain)]:
                self.close(frames.pop())
            while len(frames[-1].chain) < len(chain):
                frames.append(self.open(frames[-1], chain[len(frames[-1].chain)]))
            frame = frames[-1]

            def value(n: Any, f: _Frame = frame) -> Any:
                return self.local(f, n)
            frame.env[node] = frame.graph.node_copy(node, value)
            frame.defined.append(node)
        while len(frames) > 1:
            self.close(frames.pop())
        outs = out_node.args[0] if out_node is not None else ()
        root.graph.output(tuple(self.local(root, o) if hasattr(o, "op") else o for o in outs))
        order = {e.fqn: i for i, e in enumerate(self.ep.module_call_graph)}
        for path, module in [("", root_module)] + [(p, m) for p, m in root_module.named_modules() if p]:
            # children in the order the original module defined them (its module call graph), as PyTorch's
            children = sorted(module._modules.items(),
                              key=lambda kv: order.get(f"{path}.{kv[0]}" if path else kv[0], len(order)))
            module._modules.clear()
            module._modules.update(children)


def _has(module: Module, path: str) -> bool:
    m: Any = module
    for part in path.split("."):
        if part not in m._modules:
            return False
        m = m._modules[part]
    return True


def _signature(graph: Graph) -> list[Any]:
    """What two calls of one module must share to run as one module: the operators, and the number of inputs
    (their names are those of the caller's values)."""
    return [(n.op, "" if n.op == "placeholder" else str(n.target)) for n in graph.nodes]


class UnflattenedModule(InterpreterModule):
    """An exported program as its module tree (Note [Unflatten]); called as the original module is."""

    def __init__(self, ep: ExportedProgram) -> None:
        super().__init__(Graph())
        _Builder(ep).build(self)
        self.__dict__["_guards"] = getattr(ep.module(), "_guards_fn", None)     # not a child module
        sig = ep.module_call_graph[0].signature if ep.module_call_graph else None
        self.__dict__["_in_spec"] = sig.in_spec if sig else None
        self.__dict__["_out_spec"] = sig.out_spec if sig else None
        self.__dict__["graph_signature"] = ep.graph_signature
        self.__dict__["module_call_graph"] = ep.module_call_graph

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        flat, spec = tree_flatten((args, kwargs))
        if self._in_spec is not None and spec != self._in_spec:
            raise TypeError(f"unflattened module: expected the inputs to have structure {self._in_spec}, got {spec}")
        if self._guards is not None:
            self._guards(*flat)
        out = Interpreter(self, graph=self.graph).run(*flat)
        return tree_unflatten(list(out), self._out_spec) if self._out_spec is not None else out


def unflatten(module: ExportedProgram, flat_args_adapter: FlatArgsAdapter | None = None) -> UnflattenedModule:
    """``ExportedProgram`` -> a module with the original module tree, each module running its part of the graph
    (Note [Unflatten])."""
    if not isinstance(module, ExportedProgram):
        raise TypeError(f"unflatten expects an ExportedProgram, got {type(module).__name__}")
    return UnflattenedModule(module)
