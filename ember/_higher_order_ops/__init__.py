"""Higher-order operators: operators that take functions (``torch/_higher_order_ops``). ``cond`` is what
``torch.export`` needs for a branch on a tensor's value and ``while_loop`` for a loop on one; ``torch.cond`` /
``torch.while_loop`` and ``torch.ops.higher_order.cond`` / ``while_loop`` are them.

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

``while_loop`` goes the same way with two graphs (``cond_fn``'s returns its one tensor, ``body_fn``'s a tuple like
the carried inputs), and ``map_impl`` (``_higher_order_ops.map.map``) with one graph traced on the first slice of
its inputs; while a trace of real tensors records them, they also run for their values.

A Python ``bool`` as ``pred`` picks its branch at once, also while tracing (the branch is inlined, as Dynamo does).
"""
from __future__ import annotations

import operator
from typing import Any, Callable

from ember._functorch.functionalize import FunctionalTensor, _MakeFunctional, _fresh, _unwrap, functionalize
from ember._python_key import _stack as _mode_stacks, _sync_included, _sync_pre_dispatch
from ember._subclasses.fake_tensor import FakeTensor
from ember._generated import aten
from ember._C import _set_grad_enabled
from ember._tensor import Tensor
from ember.c10.grad_mode import state as _grad_state
from ember.c10.dtype import bool_ as _bool_dtype
from ember.fx.experimental.proxy_tensor import ProxyTorchDispatchMode, current_stack_trace
from ember.fx.proxy import _user_stack_trace
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.nn.modules.module import Module
from ember.utils._pytree import tree_flatten, tree_unflatten

__all__ = ["HigherOrderOperator", "cond", "while_loop", "UnsupportedAliasMutationException"]


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
    def checked(fn: Callable[..., Any]) -> Callable[..., Any]:
        return _no_input_mutation(fn, "One of torch.cond branch might be modifying the input!")
    return _on_values(lambda: _cond(_unwrap(pred), checked(true_fn), checked(false_fn), tuple(_unwrap(operands))),
                      (pred,) + operands)


def _on_values(run: Callable[[], Any], arguments: tuple[Any, ...]) -> Any:
    """``run()`` -- the operator on its functionalized arguments' values, with functionalized functions -- outside
    the enclosing functionalization (the functions get their own); its results made functional tensors."""
    copies = any(isinstance(t, FunctionalTensor) and t._copies for t in arguments)
    saved = [m for m in _mode_stacks.modes if isinstance(m, _MakeFunctional)]
    for m in saved:
        _mode_stacks.modes.remove(m)
    _sync_stacks()
    try:
        out = run()
    finally:
        _mode_stacks.modes.extend(saved)
        _sync_stacks()
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

    def finish(self, free: list[tuple[Any, str]], single: bool = False) -> GraphModule:
        """Placeholders for every free tensor of either branch (``free``: (tensor, name) in order), the constants
        this branch read replaced by them; then the output (a tuple, or with ``single`` the one tensor)."""
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
        outs = tuple(self.sub.node_of(t) for t in self.leaves)
        self.graph.output(outs[0] if single and len(outs) == 1 else outs)
        return GraphModule(Module(), self.graph)


def _placeholder(graph: Graph, name: str) -> Any:
    """A placeholder named as the outer graph's value it stands for (``x``, ``p_fc_weight``)."""
    ph = graph.placeholder(name)
    if ph.name != name:
        ph.name = name
        graph._graph_namespace._used_names.add(name)
    return ph


def _trace_subgraphs(tracer: ProxyTorchDispatchMode, stack: list[Any], fns: list[Callable[..., Any]],
                     prefixes: list[str], operands: tuple[Any, ...], names: list[str],
                     single: tuple[bool, ...]) -> tuple[list[_Branch], list[Any], list[Any]]:
    """Each function traced as a graph on ``operands`` (Note [Higher-order operators]), every tensor one of them
    reads from outside made a further input of all; the graphs installed on the recording module as
    ``<prefix>_<k>`` with ``get_attr`` nodes, and the outer nodes of the free tensors."""
    leaves = tree_flatten(operands)[0]
    branches = [_Branch(tracer, stack, fn, operands, names) for fn in fns]
    free: list[tuple[Any, str]] = []
    seen: set[int] = set()
    for b in branches:
        for t in b.free.values():
            if id(t) not in seen and not any(t is x for x in leaves):
                seen.add(id(t))
                free.append((t, tracer.node_of(t).name))
    attrs = []
    for b, prefix, one in zip(branches, prefixes, single):
        gm = b.finish(free, one)
        k = 0
        while f"{prefix}_{k}" in tracer.constants:
            k += 1
        tracer.constants[f"{prefix}_{k}"] = gm
        attrs.append(tracer.graph.get_attr(f"{prefix}_{k}"))
    return branches, attrs, [tracer.node_of(t) for t, _ in free]


def _record(tracer: ProxyTorchDispatchMode, op: HigherOrderOperator, args: tuple[Any, ...], attrs: list[Any],
            outs: list[Any]) -> None:
    """The operator's node (with its source line and module stack) and a ``getitem`` per output."""
    graph = tracer.graph
    tracer.sync_grad_mode()
    node = graph.call_function(op, args)
    if tracer.record_stack_traces:
        trace = current_stack_trace[0] or (_user_stack_trace() if tracer.user_stack_traces else None)
        for n in attrs + [node]:
            if trace:
                n.meta["stack_trace"] = trace
    if tracer.module_stack:
        node.meta["nn_module_stack"] = dict(tracer.module_stack)
    node.meta["val"] = tuple(outs)
    for i, o in enumerate(outs):
        g = graph.call_function(operator.getitem, (node, i))
        g.meta["val"] = o
        if "stack_trace" in node.meta:
            g.meta["stack_trace"] = node.meta["stack_trace"]
        tracer.track(o, g)


def _traced_cond(tracer: ProxyTorchDispatchMode, stack: list[Any], pred: Any, true_fn: Callable[..., Any],
                 false_fn: Callable[..., Any], operands: tuple[Any, ...]) -> Any:
    leaves = tree_flatten(operands)[0]
    names = [tracer.node_of(t).name for t in leaves]
    branches, attrs, free = _trace_subgraphs(tracer, stack, [true_fn, false_fn], ["true_graph", "false_graph"],
                                             operands, names, (False, False))
    _same_metadata(branches[0].leaves, branches[1].leaves)
    inputs = tuple(tracer.node_of(t) for t in leaves) + tuple(free)
    taken = branches[0] if isinstance(pred, FakeTensor) or _is_traced_value(pred) else \
        branches[0 if bool(pred) else 1]
    _record(tracer, cond, (tracer.node_of(pred), attrs[0], attrs[1], inputs), attrs, list(taken.leaves))
    return tree_unflatten(list(taken.leaves), taken.spec)


def _is_traced_value(t: Any) -> bool:
    return type(t).__torch_dispatch__ is not Tensor.__torch_dispatch__


def _check_pred(pred: Any) -> bool:
    if isinstance(pred, Tensor) and pred.numel() == 1 and pred.dtype == _bool_dtype:
        return bool(pred)
    if isinstance(pred, bool):
        return pred
    raise RuntimeError(f"cond_fn must return a boolean scalar tensor or a bool but got {pred}")


def _carried_metadata(out: Any, carried: tuple[Any, ...]) -> tuple[Any, ...]:
    out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    if len(out) != len(carried) or any(
            isinstance(c, Tensor) != isinstance(o, Tensor) or
            (isinstance(c, Tensor) and (tuple(o.shape) != tuple(c.shape) or o.dtype != c.dtype))
            for o, c in zip(out, carried)):
        def meta(ts: Any) -> list[Any]:
            return [(tuple(t.shape), t.dtype) if isinstance(t, Tensor) else type(t).__name__ for t in ts]
        raise RuntimeError("Expected body_fn_output and carried_inputs to have same metadata but found: "
                           f"{meta(out)} and {meta(carried)}")
    return out


def _while_loop(cond_fn: Callable[..., Any], body_fn: Callable[..., Any], carried_inputs: Any,
                additional_inputs: Any = ()) -> Any:
    """``torch.while_loop(cond_fn, body_fn, carried_inputs)``: ``carried = body_fn(*carried)`` while
    ``cond_fn(*carried)``; the loop's final values. Recorded as one operator with a graph for each function while a
    graph is traced (Note [Higher-order operators]); the body must return tensors like the carried ones."""
    if not isinstance(carried_inputs, (tuple, list)) or not all(isinstance(t, Tensor) for t in carried_inputs):
        raise RuntimeError(f"carried_inputs must be a tuple or list of tensors, got {carried_inputs!r}")
    carried, extra = tuple(carried_inputs), tuple(additional_inputs)
    every = carried + extra
    if any(isinstance(t, FunctionalTensor) for t in every):
        checked = [_no_input_mutation(fn, "torch.while_loop's body_fn might be modifying the input!")
                   for fn in (cond_fn, body_fn)]
        return _on_values(lambda: _while_loop(checked[0], checked[1], tuple(_unwrap(carried)),
                                              tuple(_unwrap(extra))), every)
    tracer = _active_tracer()
    if tracer is not None:
        mode, stack = tracer
        names = [f"arg{i}_1" for i in range(len(every))]
        branches, attrs, free = _trace_subgraphs(mode, stack, [cond_fn, body_fn],
                                                 ["while_loop_cond_graph", "while_loop_body_graph"], every, names,
                                                 (True, False))
        _carried_metadata(branches[1].out, carried)
        if len(branches[0].leaves) != 1:
            raise RuntimeError("cond_fn must return a boolean scalar tensor or a bool")
        fake = any(isinstance(t, FakeTensor) or _is_traced_value(t) for t in every)
        outs = list(branches[1].leaves) if fake else list(_run_untraced(stack, mode, lambda: _loop(
            cond_fn, body_fn, carried, extra)))
        _record(mode, while_loop, (attrs[0], attrs[1], tuple(mode.node_of(t) for t in carried),
                                   tuple(mode.node_of(t) for t in extra) + tuple(free)), attrs, outs)
        return tuple(outs)
    if any(isinstance(t, FakeTensor) for t in every):
        return _carried_metadata(body_fn(*every), carried)
    return _loop(cond_fn, body_fn, carried, extra)


def _loop(cond_fn: Callable[..., Any], body_fn: Callable[..., Any], carried: tuple[Any, ...],
          extra: tuple[Any, ...]) -> tuple[Any, ...]:
    while _check_pred(cond_fn(*carried, *extra)):
        carried = _carried_metadata(body_fn(*carried, *extra), carried)
    return carried


def _run_untraced(stack: list[Any], mode: Any, fn: Callable[[], Any]) -> Any:
    """``fn()`` with ``mode`` off its stack (the loop's real values while a real-tensor trace records it)."""
    i = stack.index(mode)
    stack.pop(i)
    _sync_stacks()
    try:
        return fn()
    finally:
        stack.insert(i, mode)
        _sync_stacks()


def _sync_stacks() -> None:
    """The thread's Python / PreDispatch keys after a mode stack changed."""
    _sync_included()
    _sync_pre_dispatch()


def _no_input_mutation(fn: Callable[..., Any], message: str) -> Callable[..., Any]:
    """``fn`` functionalized, refusing to write its inputs (a higher-order operator's function may not)."""
    pure = functionalize(fn)

    def run(*args: Any) -> Any:
        versions = [t._version for t in args if isinstance(t, Tensor)]
        out = pure(*args)
        if [t._version for t in args if isinstance(t, Tensor)] != versions:
            raise UnsupportedAliasMutationException(message)
        return out
    return run


def _map_impl(f: Callable[..., Any], xs: list[Any], args: list[Any]) -> Any:
    """``map_impl(f, xs, args)``: ``f(*slices, *args)`` for each slice of ``xs`` along their first dimension, each
    output stacked; traced as one node with ``f``'s graph on one slice (Note [Higher-order operators])."""
    xs, args = list(xs), list(args)
    if any(isinstance(t, FunctionalTensor) for t in xs + args):
        return _on_values(lambda: _map_impl(_no_input_mutation(f, "torch.map might be modifying the input!"),
                                            list(_unwrap(xs)), list(_unwrap(args))), tuple(xs + args))
    n = int(xs[0].shape[0])
    tracer = _active_tracer()
    if tracer is not None:
        mode, stack = tracer
        slices = _run_untraced(stack, mode, lambda: [x.select(0, 0) for x in xs])
        names = [mode.node_of(t).name for t in xs] + [mode.node_of(t).name for t in args]
        branches, attrs, free = _trace_subgraphs(mode, stack, [f], ["body_graph"], tuple(slices + args), names,
                                                 (False,))
        outs = _run_untraced(stack, mode, lambda: _map_eager(f, xs, args, n) if not any(
            isinstance(t, FakeTensor) or _is_traced_value(t) for t in xs + args) else
            [o.new_empty((n,) + tuple(o.shape)) for o in branches[0].leaves])
        _record(mode, map_impl, (attrs[0], [mode.node_of(t) for t in xs],
                                 [mode.node_of(t) for t in args] + list(free)), attrs, list(outs))
        return list(outs)
    return _map_eager(f, xs, args, n)


def _map_eager(f: Callable[..., Any], xs: list[Any], args: list[Any], n: int) -> list[Any]:
    results = [tree_flatten(f(*[x[i] for x in xs], *args))[0] for i in range(n)]
    return [aten.stack([r[k] for r in results]) for k in range(len(results[0]))]


def _wrap_with_set_grad_enabled(enable: bool, gm: Any, *args: Any) -> Any:
    """``wrap_with_set_grad_enabled(enable, graph, *args)``: the graph run with grad mode set (how an exported
    program keeps a ``with torch.no_grad():`` block); a trace records the graph's operators themselves."""
    prev = _grad_state.enabled
    _set_grad_enabled(enable)
    try:
        return gm(*args)
    finally:
        _set_grad_enabled(prev)


cond = HigherOrderOperator("cond", _cond)
while_loop = HigherOrderOperator("while_loop", _while_loop)
map_impl = HigherOrderOperator("map_impl", _map_impl)
wrap_with_set_grad_enabled = HigherOrderOperator("wrap_with_set_grad_enabled", _wrap_with_set_grad_enabled)
HIGHER_ORDER_OPS = {"cond": cond, "while_loop": while_loop, "map_impl": map_impl,
                    "wrap_with_set_grad_enabled": wrap_with_set_grad_enabled}
