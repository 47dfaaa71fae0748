"""``torch.fx``: trace a module into a graph of its operations, edit the graph, and run it again as generated
Python (see ``docs/fx.md``)."""
from ember.fx.graph import CodeGen, Graph  # noqa: F401
from ember.fx.graph_module import GraphModule  # noqa: F401
from ember.fx.interpreter import Interpreter, Transformer  # noqa: F401
from ember.fx.node import Node, has_side_effect, map_arg  # noqa: F401
from ember.fx.proxy import Proxy, TraceError  # noqa: F401
from ember.fx._symbolic_trace import PH, Tracer, symbolic_trace, wrap  # noqa: F401
from ember.fx import passes, subgraph_rewriter  # noqa: F401,E402
from ember.fx.subgraph_rewriter import replace_pattern  # noqa: F401

__all__ = ["symbolic_trace", "Tracer", "Graph", "GraphModule", "Interpreter", "Transformer", "Node", "Proxy",
           "wrap", "map_arg", "TraceError", "replace_pattern", "has_side_effect"]


def _register_side_effects() -> None:
    import ember
    has_side_effect(ember._assert)


_register_side_effects()
