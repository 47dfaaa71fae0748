"""``split_module``: cut a GraphModule into submodules by a partition function (``torch/fx/passes/split_module.py``).

Note [Splitting a graph]
``split_callback(node)`` names each computing node's partition. A value made in one partition and used in
another becomes an output of the first and an input (a placeholder with the value's name) of the second, and the
second depends on the first. The partitions are ordered topologically (as PyTorch orders them: the partitions
without dependencies taken last-first) -- a cycle is an error -- and each becomes a GraphModule ``submod_<name>``
holding copies of its nodes; the modules and attributes its nodes use are copied into it under names with ``_``
for ``.``. The top graph keeps the placeholders and attribute reads, calls the submodules in order, and unpacks a
submodule's several outputs with ``getitem``.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule, _get_attr
from ember.fx.node import Node, map_arg

__all__ = ["Partition", "split_module"]


class Partition:
    def __init__(self, name: str) -> None:
        self.name = name
        self.submod_name = f"submod_{name}"
        self.node_names: list[str] = []
        self.inputs: dict[str, None] = {}
        self.outputs: dict[str, None] = {}
        self.dependencies: dict[str, None] = {}
        self.dependents: dict[str, None] = {}
        self.graph = Graph()
        self.environment: dict[Node, Node] = {}
        self.targets: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (f"name: {self.name},\n nodes: {self.node_names},\n inputs: {self.inputs},\n outputs: {self.outputs},"
                f"\n partitions depended on: {self.dependencies},\n partition dependents: {self.dependents}")


def split_module(m: GraphModule, root_m: Any, split_callback: Callable[[Node], int],
                 qualname_map: dict[str, str] | None = None, keep_original_order: bool | None = False,
                 keep_original_node_name: bool | None = False, keep_original_input_name: bool = True, *,
                 partition_affix: str | None = None, tuple_return: bool = False) -> GraphModule:
    """``m``'s graph as a module calling one submodule per partition (Note [Splitting a graph]);
    ``qualname_map`` (if given) is filled with new attribute names -> original ones."""
    partitions: dict[str, Partition] = {}
    part_of: dict[Node, str] = {}
    orig: dict[str, Node] = {}

    for node in m.graph.nodes:
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        name = str(split_callback(node))
        if partition_affix is not None:
            name = f"{partition_affix}_{name}"
        p = partitions.get(name)
        if p is None:
            p = partitions[name] = Partition(name)
        p.node_names.append(node.name)
        part_of[node] = name

    def record(def_node: Node, use_node: Node | None) -> None:
        defined = part_of.get(def_node)
        used = part_of.get(use_node) if use_node is not None else None
        if defined == used:
            return
        if defined is not None:
            partitions[defined].outputs.setdefault(def_node.name)
            if used is not None:
                partitions[defined].dependents.setdefault(used)
        if used is not None:
            partitions[used].inputs.setdefault(def_node.name)
            if defined is not None:
                partitions[used].dependencies.setdefault(defined)

    for node in m.graph.nodes:
        orig[node.name] = node
        if node.op in ("placeholder", "get_attr"):
            continue
        if node.op == "output":
            map_arg(node.args[0], lambda n: record(n, None))
            continue
        map_arg(node.args, lambda d: record(d, node))
        map_arg(node.kwargs, lambda d: record(d, node))

    original_order = list(partitions)
    roots = [name for name, p in partitions.items() if not p.dependencies]
    ordered: list[str] = []
    pending = {name: dict(p.dependencies) for name, p in partitions.items()}
    while roots:
        r = roots.pop()
        ordered.append(r)
        for dep in partitions[r].dependents:
            pending[dep].pop(r)
            if not pending[dep]:
                roots.append(dep)
    if len(ordered) != len(partitions):
        raise RuntimeError("cycle exists between partitions!")

    # each partition's inputs: placeholders (submodules an input names are read as attributes instead)
    import ember
    for name in ordered:
        p = partitions[name]
        attrs_first = [i for i in p.inputs if orig[i].op == "get_attr"
                       and isinstance(_get_attr(m, orig[i].target), ember.nn.Module)]
        plain = [i for i in p.inputs if i not in attrs_first]
        new_inputs: dict[str, None] = {}
        for count, inp in enumerate(plain + attrs_first):
            o = orig[inp]
            if inp in attrs_first:
                ph = p.graph.get_attr(o.target)
                p.targets[o.target] = _get_attr(m, o.target)
            else:
                ph = p.graph.placeholder(inp if keep_original_input_name else f"arg_{count}", type_expr=o.type)
                new_inputs[inp] = None
            ph.meta = dict(o.meta)
            p.environment[o] = ph
        p.inputs = new_inputs

    for node in m.graph.nodes:
        pname = part_of.get(node)
        if pname is None:
            continue
        p = partitions[pname]
        env = p.environment
        args = map_arg(node.args, lambda n: env[n])
        kwargs = map_arg(node.kwargs, lambda n: env[n])
        target = node.target
        if node.op in ("call_module", "get_attr"):
            target = node.target.replace(".", "_")
            p.targets[target] = _get_attr(m, node.target)
            if qualname_map is not None:
                qualname_map[f"{p.submod_name}.{target}"] = node.target
        new = p.graph.create_node(node.op, target, args, kwargs, node.name if keep_original_node_name else None,
                                  node.type)
        new.meta = dict(node.meta)
        env[node] = new

    base = Graph()
    base_env: dict[str, Node] = {}
    base_attrs: dict[str, Any] = {}
    for node in m.graph.nodes:
        if node.op == "placeholder":
            default = node.args[0] if node.args else inspect.Signature.empty
            base_env[node.name] = base.placeholder(node.target, type_expr=node.type, default_value=default)
            base_env[node.name].meta = dict(node.meta)
        elif node.op == "get_attr":
            base_env[node.name] = base.get_attr(node.target)
            base_env[node.name].meta = dict(node.meta)
            base_attrs[node.target] = _get_attr(m, node.target)
    from ember.fx.proxy import Proxy
    for name in (original_order if keep_original_order else ordered):
        p = partitions[name]
        outs = tuple(p.environment[orig[o]] for o in p.outputs)
        p.graph.output(outs[0] if len(outs) == 1 and not tuple_return else outs)
        base_attrs[p.submod_name] = GraphModule(p.targets, p.graph)
        call = base.call_module(p.submod_name, tuple(base_env[i] for i in p.inputs))
        if len(p.outputs) > 1 or (len(p.outputs) == 1 and tuple_return):
            proxy = Proxy(call)
            for i, o in enumerate(p.outputs):
                base_env[o] = proxy[i].node
        elif len(p.outputs) == 1:
            base_env[next(iter(p.outputs))] = call
    for node in m.graph.nodes:
        if node.op == "output":
            base.output(map_arg(node.args[0], lambda n: base_env[n.name]))
    ret = GraphModule(base_attrs, base)
    ret.meta["partition_names"] = {p.submod_name for p in partitions.values()}
    return ret
