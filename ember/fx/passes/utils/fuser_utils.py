"""Partition checks for fusing a set of nodes (``torch/fx/passes/utils/fuser_utils.py``)."""
from __future__ import annotations

from ember.fx.node import Node


def validate_partition(partition: list[Node]) -> bool:
    """Whether the nodes can become one unit without a cycle: no path leaves the set and comes back into it."""
    inside = set(partition)
    frontier = [u for n in inside for u in n.users if u not in inside]
    seen: set[Node] = set()
    while frontier:
        n = frontier.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in inside:
            return False
        frontier.extend(n.users)
    return True
