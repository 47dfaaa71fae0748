"""Higher-order operators: operators that take functions (``torch/_higher_order_ops``). ``cond`` is the one
``torch.export`` needs for a branch on a tensor's value; ``torch.cond`` and ``torch.ops.higher_order.cond`` are it.

Note [Higher-order operators]
A higher-order operator is not an ATen operator: it never reaches the dispatcher, so a tracer cannot see it as an
op. ``HigherOrderOperator.__call__`` looks at what is active, innermost first, as PyTorch's ``py_impl`` table does:

* functionalized arguments (``FunctionalTensor``): the branches run functionalized on the arguments' values -- a
  branch that mutates one of its inputs is refused, as PyTorch refuses it;
* a proxy mode recording a graph (``make_fx``, ``ember.export``; above autograd or below it): each branch is traced
  into a graph of its own, its inputs the operands and then every tensor the branches read from outside (a
  module's parameters through a closure), and one ``torch.ops.higher_order.cond(pred, true_graph_0,
  false_graph_0, (operands...))`` node with a ``getitem`` per output goes into the recording graph; the two
  branches must return tensors of the same sizes and dtypes;
* fake tensors: the true branch gives the outputs' metadata (both branches are run and compared);
* otherwise (eager): ``pred`` is read and one branch runs -- autograd records it as any code.

A Python ``bool`` as ``pred`` picks its branch at once, also while tracing (the branch is inlined, as Dynamo does).
"""
from __future__ import annotations

import operator
from typing import Any, Callable

from ember._functorch.functionalize import FunctionalTensor, _MakeFunctional, _fresh, _unwrap, functionalize
from ember._python_key import _stack as _mode_stacks
from ember._subclasses.fake_tensor import FakeTensor
from ember._tensor import Tensor
from ember.fx.experimental.proxy_tensor import ProxyTorchDispatchMode, current_stack_trace
from ember.fx.proxy import _user_stack_trace
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.nn.modules.module import Module
from ember.utils._pytree import tree_flatten, tree_unflatten

__all__ = ["HigherOrderOperator", "cond", "UnsupportedAliasMutationException"]


class UnsupportedAliasMutationException(RuntimeError):
    """A branch of ``cond`` mutates or returns one of its inputs (PyTorch's class)."""


class HigherOrderOperator:
    """An operator taking functions (Note [Higher-order operators]); ``torch.ops.higher_order.<name>``."""

    __module__ = "torch.ops.higher_order"

    def __init__(self, name: str, impl: Callable[..., Any]) -> None:
        self._name = name
        self.__name__ = name
        self.__qualname__ = name
        self._impl = impl

    def name(self) -> str:
        return self._name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._impl(*args, **kwargs)

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> Any:
        return (_find, (self._name,))


def _find(name: str) -> HigherOrderOperator:
    return HIGHER_ORDER_OPS[name]


def _active_tracer() -> tuple[ProxyTorchDispatchMode, list[Any]] | None:
    """The innermost proxy mode recording a graph, and the stack it sits on."""
    for stack in (_mode_stacks.pre_dispatch, _mode_stacks.modes):
        for mode in reversed(stack):
            if isinstance(mode, ProxyTorchDispatchMode):
                return mode, stack
    return None


def _check(pred: Any, operands: Any) -> None:
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    elif not isinstance(pred, (bool, int)):
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not isinstance(operands, (tuple, list)) or not all(isinstance(t, Tensor) for t in tree_flatten(operands)[0]):
        raise RuntimeError("Expect operands to be a tuple of possibly nested dict/list/tuple that only consists of "
                           f"tensor leaves, but got {operands}.")


def _cond(pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any], operands: Any = ()) -> Any:
    """``torch.cond(pred, true_fn, false_fn, operands)``: ``true_fn(*operands)`` if ``pred`` else
    ``false_fn(*operands)``, recorded as one operator while a graph is traced (Note [Higher-order operators])."""
    _check(pred, operands)
    operands = tuple(operands)
    if isinstance(pred, (bool, int)) and not isinstance(pred, Tensor):
        return (true_fn if pred else false_fn)(*operands)
    if any(isinstance(t, FunctionalTensor) for t in (pred,) + tuple(tree_flatten(operands)[0])):
        return _functional_cond(pred, true_fn, false_fn, operands)
    tracer = _active_tracer()
    if tracer is not None:
        return _traced_cond(tracer[0], tracer[1], pred, true_fn, false_fn, operands)
    if isinstance(pred, FakeTensor) or any(isinstance(t, FakeTensor) for t in tree_flatten(operands)[0]):
        out, other = true_fn(*operands), false_fn(*operands)
        _same_metadata(tree_flatten(out)[0], tree_flatten(other)[0])
        return out
    return (true_fn if bool(pred) else false_fn)(*operands)


def _same_metadata(a: list[Any], b: list[Any]) -> None:
    if len(a) != len(b) or any(not isinstance(x, Tensor) for x in a + b) or \
            any(tuple(x.shape) != tuple(y.shape) or x.dtype != y.dtype for x, y in zip(a, b)):
        def meta(ts: list[Any]) -> list[Any]:
            return [(tuple(t.shape), t.dtype) if isinstance(t, Tensor) else type(t).__name__ for t in ts]
        raise RuntimeError("Expected true_fn and false_fn to return tensors of the same number, sizes and dtypes, "
                           f"but got {meta(a)} and {meta(b)}")


def _functional_cond(pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any],
                     operands: tuple[Any, ...]) -> Any:
    """Under ``functionalize``: the branches functionalized, on the arguments' current values; a branch may not
    mutate its inputs."""
    copies = any(isinstance(t, FunctionalTensor) and t._copies for t in (pred,) + operands)

    def checked(fn: Callable[..., Any]) -> Callable[..., Any]:
        pure = functionalize(fn)

        def branch(*args: Any) -> Any:
            versions = [t._version for t in args if isinstance(t, Tensor)]
            out = pure(*args)
            if [t._version for t in args if isinstance(t, Tensor)] != versions:
                raise UnsupportedAliasMutationException("One of torch.cond branch might be modifying the input!")
            return out
        return branch
    saved = [m for m in _mode_stacks.modes if isinstance(m, _MakeFunctional)]
    for m in saved:       # the branches get their own functionalization
        _mode_stacks.modes.remove(m)
    try:
        out = _cond(_unwrap(pred), checked(true_fn), checked(false_fn), tuple(_unwrap(operands)))
    finally:
        _mode_stacks.modes.extend(saved)
    leaves, spec = tree_flatten(out)
    return tree_unflatten([_fresh(t, copies) if isinstance(t, Tensor) else t for t in leaves], spec)


class _Branch:
    """One branch traced into a graph of its own: its placeholders are the operands, its free tensors (read from
    outside: recorded as constants by the sub-trace) are made placeholders afterwards."""

    def __init__(self, tracer: ProxyTorchDispatchMode, stack: list[Any], fn: Callable[..., Any],
                 operands: tuple[Any, ...], names: list[str]) -> None:
        self.graph = Graph()
        sub = ProxyTorchDispatchMode(self.graph, Module(), tracer.decomposition_table, tracer.tracing_mode,
                                     record_grad_mode=tracer.record_grad_mode,
                                     record_stack_traces=tracer.record_stack_traces, pre_dispatch=tracer.pre_dispatch)
        sub.user_stack_traces = tracer.user_stack_traces
        leaves = tree_flatten(operands)[0]
        for t, name in zip(leaves, names):
            ph = _placeholder(self.graph, name)
            ph.meta["val"] = t
            sub.track(t, ph)
        i = stack.index(tracer)
        stack[i] = sub          # the branch's ops go to its own graph, not the one being recorded
        try:
            out = fn(*operands)
        finally:
            stack[i] = tracer
        self.out = out
        self.leaves, self.spec = tree_flatten(out)
        self.sub = sub
        self.free = {name: t for name, t in sub.constants.items() if isinstance(t, Tensor)}
        for node in self.graph.nodes:      # an in-place op on an input (or on a tensor read from outside)
            schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
            if schema is None:
                continue
            for a, v in zip(schema.arguments, node.args):
                if a.alias_info is not None and a.alias_info.is_write and getattr(v, "op", None) in \
                        ("placeholder", "get_attr"):
                    raise UnsupportedAliasMutationException("One of torch.cond branch might be modifying the "
                                                            "input!")
        for t in self.leaves:
            if not isinstance(t, Tensor):
                raise RuntimeError(f"Expected branches of torch.cond to return tensors, but got {type(t).__name__}")
            if any(t is x for x in leaves):
                raise UnsupportedAliasMutationException(
                    "Higher order ops do not support aliasing: a branch of torch.cond returns its input; return "
                    "input.clone() instead.")

    def finish(self, free: list[tuple[Any, str]]) -> GraphModule:
        """Placeholders for every free tensor of either branch (``free``: (tensor, name) in order), the constants
        this branch read replaced by them; then the output."""
        last = [n for n in self.graph.nodes if n.op == "placeholder"][-1:]
        at = last[0] if last else None
        by_id = {}
        for t, name in free:
            with self.graph.inserting_after(at) if at is not None else \
                    self.graph.inserting_before(next(iter(self.graph.nodes), None)):
                ph = _placeholder(self.graph, name)
            ph.meta["val"] = t
            by_id[id(t)] = ph
            at = ph
        for node in [n for n in self.graph.nodes if n.op == "get_attr"]:
            value = self.sub.constants.get(node.target)
            if isinstance(value, Tensor) and id(value) in by_id:
                node.replace_all_uses_with(by_id[id(value)])
                self.graph.erase_node(node)
        self.graph.output(tuple(self.sub.node_of(t) for t in self.leaves))
        return GraphModule(Module(), self.graph)


def _placeholder(graph: Graph, name: str) -> Any:
    """A placeholder named as the outer graph's value it stands for (``x``, ``p_fc_weight``)."""
    ph = graph.placeholder(name)
    if ph.name != name:
        ph.name = name
        graph._graph_namespace._used_names.add(name)
    return ph


def _traced_cond(tracer: ProxyTorchDispatchMode, stack: list[Any], pred: Any, true_fn: Callable[..., Any],
                 false_fn: Callable[..., Any], operands: tuple[Any, ...]) -> Any:
    leaves = tree_flatten(operands)[0]
    names = [tracer.node_of(t).name for t in leaves]
    branches = [_Branch(tracer, stack, fn, operands, names) for fn in (true_fn, false_fn)]
    _same_metadata(branches[0].leaves, branches[1].leaves)
    free: list[tuple[Any, str]] = []
    seen: set[int] = set()
    for b in branches:
        for t in b.free.values():
            if id(t) not in seen and not any(t is x for x in leaves):
                seen.add(id(t))
                free.append((t, tracer.node_of(t).name))
    modules = [b.finish(free) for b in branches]
    graph = tracer.graph
    attrs = []
    for kind, gm in zip(("true", "false"), modules):
        k = 0
        while f"{kind}_graph_{k}" in tracer.constants:
            k += 1
        name = f"{kind}_graph_{k}"
        tracer.constants[name] = gm
        attrs.append(graph.get_attr(name))
    inputs = tuple(tracer.node_of(t) for t in leaves) + tuple(tracer.node_of(t) for t, _ in free)
    tracer.sync_grad_mode()
    node = graph.call_function(cond, (tracer.node_of(pred), attrs[0], attrs[1], inputs))
    if tracer.record_stack_traces:
        trace = current_stack_trace[0] or (_user_stack_trace() if tracer.user_stack_traces else None)
        for n in attrs + [node]:
            if trace:
                n.meta["stack_trace"] = trace
    if tracer.module_stack:
        node.meta["nn_module_stack"] = dict(tracer.module_stack)
    taken = branches[0] if isinstance(pred, FakeTensor) or _is_traced_value(pred) else \
        branches[0 if bool(pred) else 1]
    outs = taken.leaves
    node.meta["val"] = tuple(outs)
    for i, o in enumerate(outs):
        g = graph.call_function(operator.getitem, (node, i))
        g.meta["val"] = o
        if "stack_trace" in node.meta:
            g.meta["stack_trace"] = node.meta["stack_trace"]
        tracer.track(o, g)
    return tree_unflatten(list(outs), taken.spec)


def _is_traced_value(t: Any) -> bool:
    return type(t).__torch_dispatch__ is not Tensor.__torch_dispatch__


cond = HigherOrderOperator("cond", _cond)
HIGHER_ORDER_OPS = {"cond": cond}
