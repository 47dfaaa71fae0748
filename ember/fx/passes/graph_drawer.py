"""``FxGraphDrawer``: a GraphModule as a Graphviz graph, through ``pydot`` (``torch/fx/passes/graph_drawer.py``).

``FxGraphDrawer(gm, "name").get_dot_graph()`` is a ``pydot.Dot`` with one record-shaped node per fx node --
its name, op, target, the non-node arguments, the number of users and, after ``ShapeProp``, dtype / shape /
requires_grad / stride -- one node per parameter and buffer of each called leaf module, and an edge per use;
``.write_svg(path)`` draws it with Graphviz. Submodules that are GraphModules (``split_module``'s) get graphs of
their own (``get_submod_dot_graph``). ``pydot`` is an optional extra: without it, constructing raises PyTorch's
error.
"""
from __future__ import annotations

import hashlib
from itertools import chain
from typing import Any

from ember.fx.graph_module import GraphModule
from ember.fx.node import Node, _format_arg
from ember.fx.passes.shape_prop import TensorMetadata

try:
    import pydot
    HAS_PYDOT = True
except ModuleNotFoundError:
    pydot = None
    HAS_PYDOT = False

__all__ = ["FxGraphDrawer"]

_COLOR_MAP = {"placeholder": '"AliceBlue"', "call_module": "LemonChiffon1", "get_param": "Yellow2",
              "get_attr": "LightGrey", "output": "PowderBlue"}
_HASH_COLOR_MAP = ["CadetBlue1", "Coral", "DarkOliveGreen1", "DarkSeaGreen1", "GhostWhite", "Khaki1",
                   "LavenderBlush1", "LightSkyBlue", "MistyRose1", "MistyRose2", "PaleTurquoise2", "PeachPuff1",
                   "Salmon", "Thistle1", "Thistle3", "Wheat1"]
_WEIGHT_TEMPLATE = {"fillcolor": "Salmon", "style": '"filled,rounded"', "fontcolor": "#000000"}


def _escape(s: str) -> str:
    return s.replace("{", r"\{").replace("}", r"\}")


class FxGraphDrawer:
    """Draw a GraphModule (and the GraphModules it calls) with Graphviz."""

    def __init__(self, graph_module: GraphModule, name: str, ignore_getattr: bool = False,
                 ignore_parameters_and_buffers: bool = False, skip_node_names_in_args: bool = True,
                 parse_stack_trace: bool = False, dot_graph_shape: str | None = None,
                 normalize_args: bool = False) -> None:
        if not HAS_PYDOT:
            raise RuntimeError("FXGraphDrawer requires the pydot package to be installed. Please install pydot "
                               "through your favorite Python package manager.")
        self._name = name
        self.dot_graph_shape = dot_graph_shape if dot_graph_shape is not None else "record"
        self.normalize_args = normalize_args
        opts = (ignore_getattr, ignore_parameters_and_buffers, skip_node_names_in_args)
        self._dot_graphs = {name: self._to_dot(graph_module, name, *opts)}
        for node in graph_module.graph.nodes:
            if node.op != "call_module":
                continue
            leaf = self._get_leaf_node(graph_module, node)
            if isinstance(leaf, GraphModule):
                self._dot_graphs[f"{name}_{node.target}"] = self._to_dot(leaf, f"{name}_{node.target}", *opts)

    def get_dot_graph(self, submod_name: str | None = None) -> Any:
        return self.get_main_dot_graph() if submod_name is None else self.get_submod_dot_graph(submod_name)

    def get_main_dot_graph(self) -> Any:
        return self._dot_graphs[self._name]

    def get_submod_dot_graph(self, submod_name: str) -> Any:
        return self._dot_graphs[f"{self._name}_{submod_name}"]

    def get_all_dot_graphs(self) -> dict[str, Any]:
        return self._dot_graphs

    # -- pieces
    def _get_node_style(self, node: Node) -> dict[str, str]:
        style = {"shape": self.dot_graph_shape, "fillcolor": "#CAFFE3", "style": '"filled,rounded"',
                 "fontcolor": "#000000"}
        if node.op in _COLOR_MAP:
            style["fillcolor"] = _COLOR_MAP[node.op]
        else:   # a colour per target, stable across runs
            h = int(hashlib.md5(node._pretty_print_target(node.target).encode(), usedforsecurity=False)
                    .hexdigest()[:8], 16)
            style["fillcolor"] = _HASH_COLOR_MAP[h % len(_HASH_COLOR_MAP)]
        return style

    def _get_leaf_node(self, module: Any, node: Node) -> Any:
        obj = module
        for atom in node.target.split("."):
            if not hasattr(obj, atom):
                raise RuntimeError(str(obj) + " does not have attribute " + atom + "!")
            obj = getattr(obj, atom)
        return obj

    def _typename(self, target: Any) -> str:
        import ember
        if isinstance(target, ember.nn.Module):
            ret = ember.typename(target)
        elif isinstance(target, str):
            ret = target
        else:
            from ember.fx.node import _qualified_name
            ret = _qualified_name(target)
        return _escape(ret)

    def _args_label(self, arg: Any, skip_node_names: bool) -> str:
        if isinstance(arg, tuple):
            prefix, suffix = r"|args=(\l", r",\n)\l"
            items = [_format_arg(a, max_list_len=8) for a in arg]
        else:
            prefix, suffix = r"|kwargs={\l", r",\n}\l"
            items = [f"{k}: {_format_arg(v, max_list_len=8)}" for k, v in arg.items()]
        if skip_node_names:
            items = [a for a in items if "%" not in a]
        if not items:
            return ""
        s = prefix + r",\n".join(items) + suffix
        if len(items) == 1:
            s = s.replace(r"\l", "").replace(r"\n", "")
        return _escape(s)

    def _get_node_label(self, module: Any, node: Node, skip_node_names_in_args: bool) -> str:
        label = "{" + f"name=%{node.name}|op_code={node.op}\n"
        if node.op == "call_module":
            leaf = self._get_leaf_node(module, node)
            label += r"\n" + self._typename(leaf) + r"\n|"
            consts = getattr(leaf, "__constants__", None)
            if consts:
                label += r"\n".join(f"{c}: {getattr(leaf, c)}" for c in consts)
            label += r"\n"
        else:
            label += f"|target={self._typename(node.target)}" + r"\n"
            if node.args:
                label += self._args_label(node.args, skip_node_names_in_args)
            if node.kwargs:
                label += self._args_label(node.kwargs, skip_node_names_in_args)
            label += f"|num_users={len(node.users)}" + r"\n"
        label += self._tensor_meta_to_label(node.meta.get("tensor_meta"))
        return label + "}"

    def _tensor_meta_to_label(self, tm: Any) -> str:
        if tm is None:
            return ""
        if isinstance(tm, TensorMetadata):
            return (f"|dtype={tm.dtype}" + r"\n" + f"|shape={tuple(tm.shape)}" + r"\n"
                    + f"|requires_grad={tm.requires_grad}" + r"\n" + f"|stride={tm.stride}" + r"\n")
        if isinstance(tm, dict):
            tm = list(tm.values())
        if isinstance(tm, (list, tuple)):
            return "".join(self._tensor_meta_to_label(t) for t in tm)
        raise RuntimeError(f"Unsupported tensor meta type {type(tm)}")

    def _get_tensor_label(self, t: Any) -> str:
        return str(t.dtype) + str(list(t.shape)) + r"\n"

    def _to_dot(self, graph_module: GraphModule, name: str, ignore_getattr: bool,
                ignore_parameters_and_buffers: bool, skip_node_names_in_args: bool) -> Any:
        import ember
        dot = pydot.Dot(name, rankdir="TB")
        for node in graph_module.graph.nodes:
            if ignore_getattr and node.op == "get_attr":
                continue
            dot.add_node(pydot.Node(node.name, label=self._get_node_label(graph_module, node,
                                                                          skip_node_names_in_args),
                                    **self._get_node_style(node)))
            if node.op == "call_module":
                leaf = self._get_leaf_node(graph_module, node)
                if not ignore_parameters_and_buffers and not isinstance(leaf, GraphModule):
                    for pname, t in chain(leaf.named_parameters(), leaf.named_buffers()):
                        full = node.name + "." + pname
                        kind = (full + "|op_code=get_parameter") if isinstance(t, ember.nn.Parameter) else \
                            "buffer" + r"\l"
                        dot.add_node(pydot.Node(full, label="{" + kind + self._get_tensor_label(t) + "}",
                                                **_WEIGHT_TEMPLATE, shape=self.dot_graph_shape))
                        dot.add_edge(pydot.Edge(full, node.name))
        for node in graph_module.graph.nodes:
            if ignore_getattr and node.op == "get_attr":
                continue
            for user in node.users:
                dot.add_edge(pydot.Edge(node.name, user.name))
        return dot
