"""Graph passes before code generation: common-subexpression elimination and constant folding (PyTorch's
Inductor runs the same two on its graphs), and the math bits made physical.

Both leave alone what has an effect: an operator that writes into an argument, one that draws random numbers
(``Node.is_impure``), and -- for folding -- any value something later writes into (a ``zeros`` the graph then
fills is a fresh buffer on every call, not a constant).
"""
from __future__ import annotations

import operator
from typing import Any

from ember._tensor import Tensor

_FOLD_MAX_NUMEL = 1 << 16     # a folded constant lives as long as the graph: small ones only


def _key(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(_key(y) for y in x))
    if isinstance(x, dict):
        return ("dict", tuple((k, _key(v)) for k, v in x.items()))
    if isinstance(x, float) and x != x:
        return ("nan",)
    if hasattr(x, "op") and hasattr(x, "graph"):
        return ("node", id(x))
    try:
        hash(x)
    except TypeError:
        return ("id", id(x))
    return (type(x).__name__, x)


def cse(graph: Any) -> int:
    """Replace each pure operator call that repeats an earlier one (same overload, same arguments) with the
    earlier result; a write anywhere starts over (what was read may have changed). The number removed."""
    seen: dict[Any, Any] = {}
    removed = 0
    for n in list(graph.nodes):
        if n.op != "call_function":
            continue
        if n.is_impure():
            seen.clear()
            continue
        if not hasattr(n.target, "_schema") and n.target is not operator.getitem:
            continue
        key = (id(n.target), _key(n.args), _key(n.kwargs))
        prev = seen.get(key)
        if prev is None:
            seen[key] = n
            continue
        n.replace_all_uses_with(prev)
        graph.erase_node(n)
        removed += 1
    return removed


def _written_roots(graph: Any) -> set[Any]:
    """The nodes whose memory some operator of the graph writes (through views)."""
    from ember._functorch.aot_autograd import _alias_roots, _written
    nodes = list(graph.nodes)
    root = _alias_roots(nodes)
    written = {root.get(w, w) for n in nodes if n.op == "call_function" for w in _written(n)}
    return {n for n in nodes if root.get(n, n) in written}


def constant_fold(gm: Any) -> int:
    """Compute once, at compile time, each pure operator whose arguments are all constants (``tril(ones(T, T))``,
    ``arange(T)``) and that nothing writes into; the graph reads the result as an attribute. The number folded."""
    graph = gm.graph
    written = _written_roots(graph)
    values: dict[Any, Any] = {}
    from ember.fx.node import map_arg
    for n in graph.nodes:
        if n.op != "call_function" or n.is_impure() or n in written or not hasattr(n.target, "_schema"):
            continue
        if not n._input_nodes.keys() <= values.keys():
            continue
        if any(isinstance(v, Tensor) for v in _flat(n.args) + _flat(n.kwargs)):
            continue   # (a tensor literal in the arguments: leave it to the kernel)
        out = n.meta.get("val")
        if not isinstance(out, Tensor) or out.numel() > _FOLD_MAX_NUMEL or out.requires_grad:
            continue
        try:
            values[n] = n.target(*map_arg(n.args, lambda a: values[a]), **map_arg(n.kwargs, lambda a: values[a]))
        except Exception:
            continue
    folded = 0
    for n, real in values.items():
        if all(u in values for u in n.users):
            continue       # only other folded nodes read it: nothing to keep
        name = f"_folded_constant{folded}"
        setattr(gm, name, real)
        with graph.inserting_before(n):
            attr = graph.get_attr(name)
        attr.meta = dict(n.meta)
        n.replace_all_uses_with(attr)
        folded += 1
    graph.eliminate_dead_code()
    gm.recompile()
    return folded


def _flat(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return [z for y in x for z in _flat(y)]
    if isinstance(x, dict):
        return [z for y in x.values() for z in _flat(y)]
    return [x]


def materialize_math_bits(graph: Any) -> int:
    """Generated code passes arrays, which hold memory and no conjugate / negative bit (Note [Math bits]): a lazy
    ``_conj`` becomes ``_conj_physical`` and ``_neg_view`` becomes ``neg``, so every later node reads values.
    Returns how many nodes changed."""
    import ember
    aten = ember.ops.aten
    physical = {aten._conj.default: aten._conj_physical.default, aten._neg_view.default: aten.neg.default}
    changed = 0
    for n in graph.nodes:
        if n.op == "call_function" and n.target in physical:
            n.target = physical[n.target]
            changed += 1
    return changed
