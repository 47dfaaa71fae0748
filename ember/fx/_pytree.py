"""``torch.fx._pytree``: flattening a value by a known structure (``tree_flatten_spec``), which the code of a
graph traced with structured ``concrete_args`` calls on its arguments.

Unlike ``tree_flatten`` it reads the value through the spec: a dict gives the entries the spec names (extra
keys are ignored), a list or tuple its first ``num_children`` elements.
"""
from __future__ import annotations

from typing import Any, Callable

from ember.utils._pytree import TreeSpec, is_namedtuple_instance, tree_flatten

__all__ = ["register_pytree_flatten_spec", "tree_flatten_spec"]

FlattenFnSpec = Callable[[Any, TreeSpec], list[Any]]
FlattenFnExactMatchSpec = Callable[[Any, TreeSpec], bool]

SUPPORTED_NODES: dict[type, FlattenFnSpec] = {}
SUPPORTED_NODES_EXACT_MATCH: dict[type, FlattenFnExactMatchSpec | None] = {}


def register_pytree_flatten_spec(cls: type, flatten_fn_spec: FlattenFnSpec,
                                 flatten_fn_exact_match_spec: FlattenFnExactMatchSpec | None = None) -> None:
    """How ``tree_flatten_spec`` reads a value of type ``cls`` by its spec."""
    SUPPORTED_NODES[cls] = flatten_fn_spec
    SUPPORTED_NODES_EXACT_MATCH[cls] = flatten_fn_exact_match_spec


def tree_flatten_spec(pytree: Any, spec: TreeSpec) -> list[Any]:
    """The leaves of ``pytree`` read in the structure ``spec`` describes."""
    if spec.is_leaf():
        return [pytree]
    flatten = SUPPORTED_NODES.get(spec.type)
    if flatten is None and is_namedtuple_instance(pytree):
        flatten = _by_position
    if flatten is not None:
        out: list[Any] = []
        for child, child_spec in zip(flatten(pytree, spec), spec.children_specs):
            out += tree_flatten_spec(child, child_spec)
        return out
    leaves, real_spec = tree_flatten(pytree)
    if real_spec != spec:
        raise RuntimeError(f"Real spec {real_spec} of object {pytree} is different from expected spec {spec}.")
    return leaves


def _by_key(d: Any, spec: TreeSpec) -> list[Any]:
    return [d[k] for k in spec.context]


def _by_position(d: Any, spec: TreeSpec) -> list[Any]:
    return [d[i] for i in range(spec.num_children)]


def _same_length(d: Any, spec: TreeSpec) -> bool:
    return len(d) == spec.num_children


register_pytree_flatten_spec(dict, _by_key, _same_length)
register_pytree_flatten_spec(list, _by_position, _same_length)
register_pytree_flatten_spec(tuple, _by_position, _same_length)
