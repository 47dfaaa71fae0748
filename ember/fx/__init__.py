"""``torch.fx``: trace a module into a graph of its operations, edit the graph, and run it again as generated
Python (see ``docs/fx.md``)."""
from ember.fx.graph import Graph  # noqa: F401
from ember.fx.graph_module import GraphModule  # noqa: F401
from ember.fx.interpreter import Interpreter, Transformer  # noqa: F401
from ember.fx.node import Node, map_arg  # noqa: F401
from ember.fx.proxy import Proxy, Tracer, TraceError, symbolic_trace, wrap  # noqa: F401

__all__ = ["symbolic_trace", "Tracer", "Graph", "GraphModule", "Interpreter", "Transformer", "Node", "Proxy",
           "wrap", "map_arg", "TraceError"]
