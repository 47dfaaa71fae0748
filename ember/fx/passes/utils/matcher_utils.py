"""Finding a pattern graph inside a larger graph (``torch/fx/passes/utils/matcher_utils.py``).

Note [Subgraph matching]
A pattern's *anchors* are the nodes its output returns that nothing else in the pattern uses. Every node of the
target graph that equals an anchor (same op and target; any placeholder matches anything) starts a match, which
walks backwards through both graphs at once, argument by argument: a pattern node must map to one target node and
back, a pattern placeholder binds to whatever stands in that place (a node or a literal, consistently), literals
must be equal. Walking backwards is deterministic because a value has one producer (it may have many users).
With several anchors, each one's candidates are tried in turn, with backtracking. A match is kept when it is
*contained* (its inner nodes are used only inside it), fusing it would not create a cycle, and (by default) it
does not overlap an earlier one.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from ember.fx.graph import Graph
from ember.fx.node import Node
from ember.fx.passes.utils.fuser_utils import validate_partition

__all__ = ["InternalMatch", "SubgraphMatcher"]


@dataclass
class InternalMatch:
    anchors: list[Node]                                             # the pattern nodes the match started from
    nodes_map: dict[Node, Node] = field(default_factory=dict)       # pattern node -> target node
    placeholder_nodes: list[Node] = field(default_factory=list)     # what the pattern's placeholders bound to
    returning_nodes: list[Node] = field(default_factory=list)       # the target nodes the pattern's output returns
    name_node_map: dict[str, Node] = field(default_factory=dict)

    def __copy__(self) -> InternalMatch:
        return InternalMatch(anchors=self.anchors, nodes_map=self.nodes_map.copy(),
                             placeholder_nodes=self.placeholder_nodes.copy(),
                             returning_nodes=self.returning_nodes.copy())


class SubgraphMatcher:
    """Matches ``pattern`` against graphs (Note [Subgraph matching])."""

    def __init__(self, pattern: Graph, match_output: bool = False, match_placeholder: bool = False,
                 remove_overlapping_matches: bool = True, ignore_literals: bool = False) -> None:
        self.pattern = pattern
        self.match_output = match_output
        self.match_placeholder = match_placeholder
        self.remove_overlapping_matches = remove_overlapping_matches
        self.ignore_literals = ignore_literals
        nodes = list(pattern.nodes)
        if not nodes:
            raise ValueError("SubgraphMatcher cannot be initialized with an empty pattern")
        for node in nodes:
            if node.op != "output" and not node.is_impure() and not node.users:
                raise AssertionError("SubgraphMatcher cannot be initialized with an pattern with dead code")
        self.pattern_placeholder_nodes = [n for n in nodes if n.op == "placeholder"]
        output = nodes[-1]
        self.pattern_returning_nodes: list[Node] = output.all_input_nodes
        self.pattern_anchors: list[Node] = [output] if match_output else \
            [n for n in output.all_input_nodes if len(n.users) == 1]

    # -- node and argument comparison
    def _match_attributes(self, pn: Node, gn: Node) -> bool:
        from ember.fx.graph_module import _get_attr
        pv = _get_attr(pn.graph.owning_module, pn.target)
        gv = _get_attr(gn.graph.owning_module, gn.target)
        if type(pv) is not type(gv):
            return False
        import ember
        if isinstance(pv, ember.Tensor):
            return isinstance(gv, ember.Tensor)
        raise RuntimeError(f"Unsupported type {pv} when matching attributes")

    def _nodes_are_equal(self, pn: Node, gn: Node, node_name_match: str = "") -> bool:
        if not self.match_placeholder and pn.op == "placeholder":
            return True
        if node_name_match and node_name_match in gn.name:
            return True
        if pn.op != gn.op:
            return False
        if pn.op in ("placeholder", "output"):
            return True
        if pn.op == "get_attr":
            return self._match_attributes(pn, gn)
        return bool(pn.target == gn.target)

    def _match_literals(self, pn: Any, gn: Any, match: InternalMatch) -> bool:
        if isinstance(pn, Node):     # a placeholder may stand for a literal
            if pn.op != "placeholder":
                return False
            if pn in match.nodes_map:
                return bool(match.nodes_map[pn] == gn)
            match.nodes_map[pn] = gn
            return True
        if isinstance(gn, Node):
            return False
        return type(gn) is type(pn) and bool(gn == pn)

    def _all_arguments(self, node: Node) -> list[Any]:
        """Every argument of an ATen-overload call in schema order, defaults filled in (so ``add(x, y)`` matches
        ``add(x, y, alpha=1)``)."""
        schema = node.target._schema
        out = []
        for i, a in enumerate(schema.arguments):
            if a.name in node.kwargs:
                out.append(node.kwargs[a.name])
            elif not a.kwarg_only and i < len(node.args):
                out.append(node.args[i])
            else:
                out.append(a.default_value)
        return out

    def _match_nodes(self, pn: Node, gn: Node, match: InternalMatch, node_name_match: str = "") -> bool:
        if pn in match.nodes_map:
            return match.nodes_map[pn] is gn
        if gn in match.nodes_map.values():
            return False
        if not self._nodes_are_equal(pn, gn, node_name_match):
            return False
        saved = copy.copy(match)
        match.nodes_map[pn] = gn
        if pn.op == "placeholder":
            return True

        def match_args(a1: Any, a2: Any) -> bool:
            if len(a1) != len(a2):
                return False
            for x, y in zip(a1, a2):
                if isinstance(x, Node) and isinstance(y, Node):
                    ok = self._match_nodes(x, y, match)
                elif isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
                    ok = match_args(x, y)
                else:
                    ok = self._match_literals(x, y, match) or self.ignore_literals
                if not ok:
                    return False
            return True

        from ember._ops import OpOverload
        same_layout = len(pn.args) == len(gn.args) and list(pn.kwargs) == list(gn.kwargs)
        if not same_layout and pn.op == "call_function" and isinstance(pn.target, OpOverload):
            found = match_args(self._all_arguments(pn), self._all_arguments(gn))
        elif same_layout:
            found = match_args(list(pn.args) + list(pn.kwargs.values()), list(gn.args) + list(gn.kwargs.values()))
        else:
            found = False
        if not found:
            match.nodes_map = saved.nodes_map
            return False
        return True

    def _is_contained(self, nodes_map: dict[Node, Node]) -> bool:
        lookup = {gn: pn for pn, gn in nodes_map.items() if pn.op != "placeholder"}
        for gn, pn in lookup.items():
            if pn in self.pattern_returning_nodes:
                continue
            if any(user not in lookup for user in gn.users):
                return False
        return True

    def _remove_overlapping_matches(self, matches: list[InternalMatch]) -> list[InternalMatch]:
        kept: list[InternalMatch] = []
        taken: set[Node] = set()
        for m in matches:
            inner = [gn for pn, gn in m.nodes_map.items() if pn.op not in ("placeholder", "output")]
            if any(gn in taken for gn in inner):
                continue
            kept.append(m)
            taken.update(inner)
        return kept

    # -- the search
    def match(self, graph: Graph, node_name_match: str = "") -> list[InternalMatch]:
        candidates: dict[Node, list[Node]] = {}
        for anchor in self.pattern_anchors:
            for node in graph.nodes:
                if self._nodes_are_equal(anchor, node, node_name_match):
                    candidates.setdefault(anchor, []).append(node)
        todo = list(candidates.items())
        matches: list[InternalMatch] = []

        def backtrack(i: int, match: InternalMatch) -> None:
            if i == len(todo):
                match.placeholder_nodes = [match.nodes_map[pn] for pn in self.pattern_placeholder_nodes]
                match.returning_nodes = [match.nodes_map[pn] for pn in self.pattern_returning_nodes]
                matches.append(match)
                return
            anchor, nodes = todo[i]
            saved = copy.copy(match)
            for node in nodes:
                if self._match_nodes(anchor, node, match, node_name_match):
                    backtrack(i + 1, match)
                match = copy.copy(saved)

        if todo:
            backtrack(0, InternalMatch(anchors=self.pattern_anchors))
        matches = [m for m in matches if self._is_contained(m.nodes_map)]
        matches = [m for m in matches if validate_partition(
            [gn for pn, gn in m.nodes_map.items() if pn.op not in ("placeholder", "output")])]
        if self.remove_overlapping_matches:
            matches = self._remove_overlapping_matches(matches)
        return matches
