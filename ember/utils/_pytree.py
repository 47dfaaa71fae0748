"""Pytrees (``torch/utils/_pytree.py``): nested containers of leaves, flattened to a list of leaves and a
``TreeSpec`` that rebuilds the structure.

Containers are the types registered in ``SUPPORTED_NODES``: tuple, list, dict, OrderedDict, defaultdict, deque,
namedtuples and the ``return_types`` structseqs (as tuples of their type), and whatever
``register_pytree_node(cls, flatten_fn, unflatten_fn)`` adds (libraries register their output classes, as
Hugging Face's ``ModelOutput``). Everything else is a leaf (tensors, numbers, None).
"""
from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict, defaultdict, deque
from typing import Any, Callable, Iterable, NamedTuple

__all__ = ["PyTree", "Context", "FlattenFunc", "UnflattenFunc", "TreeSpec", "LeafSpec", "SUPPORTED_NODES",
           "register_pytree_node", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure", "tree_map",
           "tree_map_", "tree_map_only", "tree_all", "tree_any", "tree_flatten_with_path", "tree_leaves_with_path",
           "tree_map_with_path", "tree_iter", "treespec_pprint", "is_namedtuple", "is_namedtuple_class",
           "is_namedtuple_instance", "is_structseq", "is_structseq_class", "is_structseq_instance",
           "SequenceKey", "MappingKey", "GetAttrKey", "keystr", "arg_tree_leaves", "tree_all_only",
           "tree_any_only", "treespec_dumps", "treespec_loads"]

PyTree = Any
Context = Any
FlattenFunc = Callable[[PyTree], "tuple[list[Any], Context]"]
UnflattenFunc = Callable[[Iterable[Any], Context], PyTree]


class NodeDef(NamedTuple):
    type: type
    flatten_fn: FlattenFunc
    unflatten_fn: UnflattenFunc
    flatten_with_keys_fn: Any = None


SUPPORTED_NODES: dict[type, NodeDef] = {}


def register_pytree_node(cls: type, flatten_fn: FlattenFunc, unflatten_fn: UnflattenFunc, *,
                         serialized_type_name: str | None = None, to_dumpable_context: Any = None,
                         from_dumpable_context: Any = None, flatten_with_keys_fn: Any = None) -> None:
    """Make ``cls`` a container: ``flatten_fn(x) -> (children, context)``, ``unflatten_fn(children, context)``."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)


_register_pytree_node = register_pytree_node


# -- the built-in containers
def is_namedtuple_class(cls: type) -> bool:
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields") and \
        isinstance(getattr(cls, "_fields", None), tuple)


def is_namedtuple(obj: Any) -> bool:
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_namedtuple_instance(obj: Any) -> bool:
    return is_namedtuple_class(type(obj))


def is_structseq_class(cls: type) -> bool:
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "n_fields") and \
        hasattr(cls, "n_sequence_fields")


def is_structseq(obj: Any) -> bool:
    return is_structseq_class(obj if isinstance(obj, type) else type(obj))


def is_structseq_instance(obj: Any) -> bool:
    return is_structseq_class(type(obj))


def _dict_flatten(d: dict[Any, Any]) -> tuple[list[Any], Context]:
    return list(d.values()), list(d.keys())


def _dict_flatten_with_keys(d: dict[Any, Any]) -> tuple[list[tuple[Any, Any]], Context]:
    """``flatten_with_keys_fn`` of a mapping: its ``(MappingKey(k), value)`` pairs and its keys."""
    values, keys = _dict_flatten(d)
    return [(MappingKey(k), v) for k, v in zip(keys, values)], keys


def _list_flatten_with_keys(xs: Any) -> tuple[list[tuple[Any, Any]], Context]:
    return [(SequenceKey(i), v) for i, v in enumerate(xs)], None


register_pytree_node(tuple, lambda t: (list(t), None), lambda xs, _: tuple(xs))
register_pytree_node(list, lambda t: (list(t), None), lambda xs, _: list(xs))
register_pytree_node(dict, _dict_flatten, lambda xs, keys: dict(zip(keys, xs)))
register_pytree_node(OrderedDict, _dict_flatten, lambda xs, keys: OrderedDict(zip(keys, xs)))
register_pytree_node(defaultdict, lambda d: (list(d.values()), (d.default_factory, list(d.keys()))),
                     lambda xs, c: defaultdict(c[0], zip(c[1], xs)))
register_pytree_node(deque, lambda d: (list(d), d.maxlen), lambda xs, maxlen: deque(xs, maxlen=maxlen))


def _node_type(x: Any) -> type | None:
    t = type(x)
    if t in SUPPORTED_NODES:
        return t
    if is_namedtuple_class(t) or is_structseq_class(t):
        return t  # flattened as a tuple of its type
    return None


def _flatten_node(t: type, x: Any) -> tuple[list[Any], Context]:
    node = SUPPORTED_NODES.get(t)
    if node is not None:
        children, ctx = node.flatten_fn(x)
        return list(children), ctx
    return list(x), t


def _unflatten_node(t: type, children: list[Any], ctx: Context) -> Any:
    node = SUPPORTED_NODES.get(t)
    if node is not None:
        return node.unflatten_fn(children, ctx)
    return t(*children) if is_namedtuple_class(t) else t(children)


# -- specs
@dataclasses.dataclass(eq=True)
class TreeSpec:
    """The structure of a pytree: its container type, context and children's specs (leaves are ``LeafSpec``)."""
    type: Any
    context: Context
    children_specs: list[TreeSpec]

    def __post_init__(self) -> None:
        self.num_nodes = 1 + sum(c.num_nodes for c in self.children_specs)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)
        self.num_children = len(self.children_specs)

    def is_leaf(self) -> bool:
        return self.type is None

    def children(self) -> list[TreeSpec]:
        return list(self.children_specs)

    def child(self, index: int) -> TreeSpec:
        return self.children_specs[index]

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        return tree_unflatten(list(leaves), self)

    def __repr__(self, indent: int = 0) -> str:
        """PyTorch's layout: the first child on the same line, each further one on a line of its own, indented two
        more spaces per level."""
        if self.is_leaf():
            return "*"
        name = getattr(self.type, "__name__", str(self.type))
        indent += 2
        children = [c.__repr__(indent) for c in self.children_specs]
        inner = ("," + "\n" + " " * indent).join(children)
        return f"TreeSpec({name}, {self.context}, [{inner}])"


class LeafSpec(TreeSpec):
    def __init__(self) -> None:
        super().__init__(None, None, [])

    def __post_init__(self) -> None:
        self.num_nodes = 1
        self.num_leaves = 1
        self.num_children = 0

    def __repr__(self, indent: int = 0) -> str:
        return "*"


def _is_leaf(x: Any, is_leaf: Callable[[Any], bool] | None) -> bool:
    return (is_leaf is not None and is_leaf(x)) or _node_type(x) is None


def tree_flatten(tree: PyTree, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], TreeSpec]:
    """The leaves of ``tree`` in order, and the spec that rebuilds it."""
    leaves: list[Any] = []
    spec = _walk(tree, is_leaf, leaves)
    return leaves, spec


def _walk(x: Any, is_leaf: Callable[[Any], bool] | None, leaves: list[Any]) -> TreeSpec:
    """``tree_flatten``'s recursion. The recursions here are module functions: a nested function that calls
    itself is a reference cycle, which would keep the leaves (tensors) alive until the garbage collector runs."""
    if _is_leaf(x, is_leaf):
        leaves.append(x)
        return LeafSpec()
    t = type(x)
    children, ctx = _flatten_node(t, x)
    return TreeSpec(t, ctx, [_walk(c, is_leaf, leaves) for c in children])


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """The tree of ``treespec`` with ``leaves`` in its leaf positions."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got "
                        f"item of type {type(treespec)}.")
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to a "
                         f"pytree that holds {treespec.num_leaves} items ({treespec}).")
    return _build(treespec, iter(leaves))


def _build(spec: TreeSpec, it: Any) -> Any:
    """``tree_unflatten``'s recursion (a module function, as ``_walk``)."""
    if spec.is_leaf():
        return next(it)
    return _unflatten_node(spec.type, [_build(c, it) for c in spec.children_specs], spec.context)


def tree_iter(tree: PyTree, is_leaf: Callable[[Any], bool] | None = None) -> Iterable[Any]:
    yield from tree_flatten(tree, is_leaf)[0]


def tree_leaves(tree: PyTree, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: Callable[[Any], bool] | None = None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
             is_leaf: Callable[[Any], bool] | None = None) -> PyTree:
    """``func`` applied to every leaf (of ``tree`` and, position by position, of ``rests``)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec_leaves(r, spec, is_leaf) for r in rests]
    return tree_unflatten([func(x, *xs) for x, *xs in zip(leaves, *others)], spec)


def spec_leaves(tree: PyTree, spec: TreeSpec, is_leaf: Callable[[Any], bool] | None) -> list[Any]:
    leaves, other = tree_flatten(tree, is_leaf)
    if other != spec:
        raise ValueError(f"Tree structure mismatch: {other} vs {spec}")
    return leaves


def tree_map_(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
              is_leaf: Callable[[Any], bool] | None = None) -> PyTree:
    """``func`` called on every leaf for its effect; returns ``tree``."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec_leaves(r, spec, is_leaf) for r in rests]
    for x, *xs in zip(leaves, *others):
        func(x, *xs)
    return tree


def _type_filter(types: Any, func: Callable[..., Any]) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        return func(x) if isinstance(x, types) else x
    return f


def tree_map_only(types: Any, func: Callable[..., Any], tree: PyTree,
                  is_leaf: Callable[[Any], bool] | None = None) -> PyTree:
    """``func`` on the leaves that are instances of ``types``; other leaves unchanged."""
    return tree_map(_type_filter(types, func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: PyTree, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree: PyTree, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return any(map(pred, tree_leaves(tree, is_leaf)))


def tree_all_only(types: Any, pred: Callable[[Any], bool], tree: PyTree,
                  is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, types))


def tree_any_only(types: Any, pred: Callable[[Any], bool], tree: PyTree,
                  is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, types))


def arg_tree_leaves(*args: PyTree, **kwargs: PyTree) -> list[Any]:
    """The leaves of ``(args, kwargs)``, without building a spec."""
    return tree_leaves(list(args)) + tree_leaves(dict(kwargs))


# -- key paths
@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence: Any) -> Any:
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping: Any) -> Any:
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj: Any) -> Any:
        return getattr(obj, self.name)


def keystr(kp: tuple[Any, ...]) -> str:
    return "".join(str(k) for k in kp)


def _child_keys(x: Any, spec: TreeSpec) -> list[Any]:
    if isinstance(x, dict):
        return [MappingKey(k) for k in x.keys()]
    if is_namedtuple_instance(x):
        return [GetAttrKey(f) for f in type(x)._fields]
    node = SUPPORTED_NODES.get(type(x))
    if node is not None and node.flatten_with_keys_fn is not None:
        return [k for k, _ in node.flatten_with_keys_fn(x)[0]]
    return [SequenceKey(i) for i in range(spec.num_children)]


def tree_flatten_with_path(tree: PyTree, is_leaf: Callable[[Any], bool] | None = None) \
        -> tuple[list[tuple[tuple[Any, ...], Any]], TreeSpec]:
    """Each leaf with its key path (``(MappingKey('a'), SequenceKey(0))``), and the spec."""
    out: list[tuple[tuple[Any, ...], Any]] = []
    spec = tree_structure(tree, is_leaf)
    _walk_with_path(tree, spec, (), out)
    return out, spec


def _walk_with_path(x: Any, s: TreeSpec, path: tuple[Any, ...], out: list[tuple[tuple[Any, ...], Any]]) -> None:
    if s.is_leaf():
        out.append((path, x))
        return
    children, _ = _flatten_node(type(x), x)
    for k, c, cs in zip(_child_keys(x, s), children, s.children_specs):
        _walk_with_path(c, cs, path + (k,), out)


def tree_leaves_with_path(tree: PyTree, is_leaf: Callable[[Any], bool] | None = None) \
        -> list[tuple[tuple[Any, ...], Any]]:
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
                       is_leaf: Callable[[Any], bool] | None = None) -> PyTree:
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    others = [spec_leaves(r, spec, is_leaf) for r in rests]
    return tree_unflatten([func(p, x, *xs) for (p, x), *xs in zip(pairs, *others)], spec)


def treespec_pprint(treespec: TreeSpec) -> str:
    return repr(treespec)


def _broadcast_to_and_flatten(tree: PyTree, treespec: TreeSpec,
                              is_leaf: Callable[[Any], bool] | None = None) -> list[Any] | None:
    """``tree`` broadcast to ``treespec``'s structure and flattened: a leaf of ``tree`` stands for the whole
    subtree at its place (``vmap``'s ``in_dims=0`` for every input); None if the structures are incompatible."""
    out: list[Any] = []
    return out if _broadcast_walk(tree, treespec, is_leaf, out) else None


def _broadcast_walk(tree: PyTree, spec: TreeSpec, is_leaf: Callable[[Any], bool] | None, out: list[Any]) -> bool:
    if _is_leaf(tree, is_leaf):
        out.extend([tree] * spec.num_leaves)
        return True
    if spec.is_leaf():
        return False
    t = type(tree)
    if t is not spec.type:
        return False
    children, ctx = _flatten_node(t, tree)
    if ctx != spec.context or len(children) != spec.num_children:
        return False
    return all(_broadcast_walk(c, s, is_leaf, out) for c, s in zip(children, spec.children_specs))


# -- specs as JSON (``treespec_dumps`` / ``treespec_loads``: the form ``.pt2`` archives store specs in)
_SERIALIZED_TYPES: dict[Any, str] = {tuple: "builtins.tuple", list: "builtins.list", dict: "builtins.dict",
                                     OrderedDict: "collections.OrderedDict"}
_TYPES_BY_NAME = {v: k for k, v in _SERIALIZED_TYPES.items()}


def _spec_to_json(spec: TreeSpec) -> dict[str, Any]:
    if spec.is_leaf():
        return {"type": None, "context": None, "children_spec": []}
    name = _SERIALIZED_TYPES.get(spec.type)
    if name is None:
        raise NotImplementedError(f"Serializing {spec.type} in pytree is not registered.")
    return {"type": name, "context": json.dumps(spec.context),
            "children_spec": [_spec_to_json(c) for c in spec.children_specs]}


def _spec_from_json(d: dict[str, Any]) -> TreeSpec:
    if d["type"] is None:
        return LeafSpec()
    t = _TYPES_BY_NAME.get(d["type"])
    if t is None:
        raise NotImplementedError(f"Deserializing {d['type']} in pytree is not registered.")
    return TreeSpec(t, json.loads(d["context"]), [_spec_from_json(c) for c in d["children_spec"]])


def treespec_dumps(treespec: TreeSpec, protocol: int | None = None) -> str:
    """The spec as JSON in PyTorch's protocol 1: ``[1, {"type": "builtins.tuple", "context": "null", ...}]``."""
    if protocol not in (None, 1):
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [1]")
    return json.dumps([1, _spec_to_json(treespec)])


def treespec_loads(serialized: str) -> TreeSpec:
    protocol, spec = json.loads(serialized)
    if protocol != 1:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [1]")
    return _spec_from_json(spec)
