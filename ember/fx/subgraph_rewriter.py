"""``replace_pattern``: find every occurrence of one subgraph in a GraphModule and replace it with another
(``torch/fx/subgraph_rewriter.py``).

``pattern`` and ``replacement`` are functions (traced with ``symbolic_trace``), GraphModules or Graphs with the
same number of inputs and outputs. The matches are found as Note [Subgraph matching] describes (non-overlapping,
self-contained); each is replaced by a copy of the replacement graph, inserted before the first user of the
match's results (so the new nodes come before anything that reads them), whose results take over every use of
the matched ones; the matched nodes are erased and the module recompiled.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node
from ember.fx._symbolic_trace import symbolic_trace

__all__ = ["Match", "ReplacedPatterns", "replace_pattern", "replace_pattern_with_filters"]


class Match(NamedTuple):
    anchor: Node                    # the node the match was found from
    nodes_map: dict[Node, Node]     # pattern node -> node of the larger graph


@dataclass
class ReplacedPatterns:
    anchor: Node
    nodes_map: dict[Node, Node]
    replacements: list[Node]        # the nodes added to the graph


def _graph_of(x: Any) -> Graph:
    if isinstance(x, GraphModule):
        return x.graph
    if isinstance(x, Graph):
        return x
    return symbolic_trace(x).graph


def _replace_attributes(gm: GraphModule, replacement: Any) -> None:
    """Attributes the replacement graph reads (``get_attr``) and the GraphModule lacks are copied over."""
    from ember.fx.graph_module import _assign_attr, _get_attr
    for node in gm.graph.nodes:
        if node.op in ("call_module", "get_attr"):
            try:
                _get_attr(gm, node.target)
            except AttributeError:
                _assign_attr(_get_attr(replacement, node.target), gm, node.target)


def replace_pattern(gm: GraphModule, pattern: Callable[..., Any] | GraphModule,
                    replacement: Callable[..., Any] | GraphModule) -> list[Match]:
    """Replace every non-overlapping occurrence of ``pattern`` in ``gm`` by ``replacement``; the matches."""
    done = _replace_pattern(gm, pattern, replacement)
    return [Match(anchor=m.anchor, nodes_map=m.nodes_map) for m in done]


def replace_pattern_with_filters(gm: GraphModule, pattern: Any, replacement: Any = None,
                                 match_filters: list[Callable[..., bool]] | None = None,
                                 ignore_literals: bool = False,
                                 replacement_callback: Callable[..., Graph] | None = None,
                                 node_name_match: str = "") -> list[ReplacedPatterns]:
    """``replace_pattern`` keeping only the matches every ``match_filter(match, graph, pattern_graph)`` accepts;
    literals may be wildcards; the replacement may be computed per match."""
    return _replace_pattern(gm, pattern, replacement, match_filters, ignore_literals, replacement_callback,
                            node_name_match)


def _replace_pattern(gm: GraphModule, pattern: Any, replacement: Any = None,
                     match_filters: list[Callable[..., bool]] | None = None, ignore_literals: bool = False,
                     replacement_callback: Callable[..., Graph] | None = None,
                     node_name_match: str = "") -> list[ReplacedPatterns]:
    from ember.fx.passes.utils.matcher_utils import SubgraphMatcher
    graph = gm.graph
    pattern_graph = _graph_of(pattern)
    matcher = SubgraphMatcher(pattern_graph, match_output=False, match_placeholder=False,
                              remove_overlapping_matches=True, ignore_literals=ignore_literals)
    matches = [m for m in matcher.match(graph, node_name_match=node_name_match)
               if all(f(m, graph, pattern_graph) for f in (match_filters or []))]
    common = None
    if replacement is not None:
        common = _graph_of(replacement)
    elif replacement_callback is None:
        raise AssertionError("Must provide either a replacement GraphModule or a replacement callback")

    replaced_by: dict[Node, Node] = {}   # a node an earlier replacement took the place of -> its replacement
    out: list[ReplacedPatterns] = []
    for m in matches:
        rgraph = replacement_callback(m, graph, pattern_graph) if replacement_callback is not None else common
        assert rgraph is not None
        placeholders = [n for n in rgraph.nodes if n.op == "placeholder"]
        if len(m.placeholder_nodes) != len(placeholders):
            raise AssertionError(f"Placeholder count mismatch: {len(m.placeholder_nodes)} vs {len(placeholders)}")
        val_map: dict[Node, Any] = {}
        for i, (rn, gn) in enumerate(zip(placeholders, m.placeholder_nodes)):
            if isinstance(gn, Node) and gn in replaced_by:   # an input an earlier match replaced
                new = replaced_by[gn]
                m.placeholder_nodes[i] = new
                for k, v in m.nodes_map.items():
                    if v is gn:
                        m.nodes_map[k] = new
                gn = new
            val_map[rn] = gn
        users: set[Node] = set()
        for n in m.returning_nodes:
            users.update(n.users)
        insert_point = next((n for n in graph.nodes if n in users), None)
        if insert_point is None:      # results unused: right after the last returning node
            nodes = list(graph.nodes)
            last = max(nodes.index(n) for n in m.returning_nodes)
            insert_point = nodes[last + 1] if last + 1 < len(nodes) else None
        if insert_point is None:
            raise AssertionError("The insert point can't be None")
        with graph.inserting_before(insert_point):
            copied = graph.graph_copy(rgraph, val_map)
        if isinstance(copied, Node):
            copied = (copied,)
        new_nodes = [v for v in val_map.values() if isinstance(v, Node) and v not in m.placeholder_nodes]
        if len(m.returning_nodes) != len(copied):
            raise AssertionError(f"Returning nodes count mismatch: {len(m.returning_nodes)} vs {len(copied)}")
        for gn, cn in zip(m.returning_nodes, copied):
            gn.replace_all_uses_with(cn)
            replaced_by[gn] = cn
        for pn in reversed(list(pattern_graph.nodes)):
            if pn.op not in ("placeholder", "output"):
                graph.erase_node(m.nodes_map[pn])
        out.append(ReplacedPatterns(anchor=m.anchors[0], nodes_map=m.nodes_map, replacements=new_nodes))
    gm.recompile()
    import ember
    if isinstance(replacement, ember.nn.Module):
        _replace_attributes(gm, replacement)
    return out
