"""The backward engine (mirrors ``torch/csrc/autograd/engine.cpp`` and ``autograd.cpp``).

``run_backward`` counts, for every node reachable from the roots, how many edges lead into it; a node
is ready when all its incoming gradients have arrived (summed in its input buffer).  Ready nodes run
highest sequence number first — the most recently created op first — which is PyTorch's order; leaves'
``AccumulateGrad`` nodes run as soon as they are ready.  Each gradient a node returns is checked against
the input it belongs to: a broadcast gradient is summed back to the input's shape (``sum_to``), a
different dtype is cast.  Unless ``retain_graph``, each node frees its saved tensors after it ran.
"""
from __future__ import annotations

import heapq
import itertools
import threading
from typing import Any

from ember.autograd import anomaly_mode, grad_mode
from ember.autograd import profiler as _profiler
from ember.autograd.graph import AccumulateGrad, Edge, FormulaNode, GraphRoot
from ember.aten.dispatcher import python_key_used, tls as _dispatch_tls
from ember.c10.dispatch_key import SPARSE_MASK

def _gradient_edge(t: Any) -> Any:
    from ember.autograd.recording import gradient_edge
    return gradient_edge(t)


def _sum_to(grad: Any, shape: Any) -> Any:
    """Reduce a broadcast gradient to ``shape`` (``at::sum_to``)."""
    shape = tuple(shape)
    gshape = tuple(grad.shape)
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and gshape[lead + i] != 1:
            dims.append(lead + i)
    r = grad.sum(tuple(dims), keepdim=True) if dims else grad
    if lead:
        r = r.reshape(shape)
    return r


def _validate(node: Any, grads: Any) -> Any:
    meta = node._input_meta
    out = list(grads)
    if len(out) != len(node._next):
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients (expected "
                           f"{len(node._next)}, got {len(out)})")
    for i, g in enumerate(out):
        if g is None or i >= len(meta) or meta[i] is None:
            continue
        shape, dtype = meta[i]
        if g._data.shape != shape:    # the arrays' shape tuples (Tensor.shape builds a Size each time)
            if not _expandable(tuple(shape), tuple(g.shape)):
                raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - got "
                                   f"[{', '.join(map(str, g.shape))}] but expected shape compatible with "
                                   f"[{', '.join(map(str, shape))}]")
            g = _sum_to(g, shape)
        if g.dtype is not dtype:
            g = g.to(dtype)
        out[i] = g
    return out


def _sum_grads(old: Any, g: Any) -> Any:
    """Two gradients of one input summed (PyTorch's InputBuffer::accumulate): a sparse one is added to a dense one,
    never the other way (PyTorch has no sparse + dense)."""
    if old._ks & SPARSE_MASK and not g._ks & SPARSE_MASK:
        return g + old
    return old + g


def _expandable(shape: Any, to: Any) -> bool:
    if len(shape) > len(to):
        return False
    for s, t in zip(reversed(shape), reversed(to)):
        if s != 1 and s != t:
            return False
    return True


# the backward calls running on this thread (PyTorch's GraphTask): an id each, and whether it may run reentrant
# checkpoints (not under autograd.grad or backward(inputs=...): ``torch.autograd._is_checkpoint_valid``)
_tasks_tls = threading.local()
_task_ids = itertools.count(1)


def _task_stack() -> list[tuple[int, bool]]:
    st = getattr(_tasks_tls, "stack", None)
    if st is None:
        st = _tasks_tls.stack = []
    return st


def _final_callbacks() -> list[list[Any]]:
    st = getattr(_tasks_tls, "callbacks", None)
    if st is None:
        st = _tasks_tls.callbacks = []
    return st


def queue_callback(callback: Any) -> None:
    """Run ``callback()`` once the innermost backward call running on this thread has computed every gradient
    (PyTorch's ``Variable._execution_engine.queue_callback``; DDP waits for its gradient buckets there)."""
    st = _final_callbacks()
    if not st:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    st[-1].append(callback)


def current_graph_task_id() -> int:
    """The id of the innermost backward call running on this thread, -1 outside backward."""
    st = _task_stack()
    return st[-1][0] if st else -1


def is_checkpoint_valid() -> bool:
    st = _task_stack()
    return st[-1][1] if st else True


def _leaving(g: Any) -> Any:
    """A gradient leaving the graph (captured by ``autograd.grad``, or accumulated into ``.grad``): a batched tensor
    of a vmap that is no longer running is the gradient of a tensor the vmap shared across its batch, so it is
    summed over the batch (Note [Batched tensors] in ``ember/_functorch/vmap.py``). Anything else as it is. Batched
    tensors are wrapper subclasses: a process that never made one (``python_key_used`` unset) skips the look."""
    if not python_key_used[0]:
        return g
    leave = getattr(g, "_sum_exited_levels", None)
    return g if leave is None else leave()


def _leave_in_place(grads: list[Any]) -> None:
    """``_leaving`` on each gradient of the list, in place (a new list would keep the old one's references alive in
    the engine's frame, and AccumulateGrad could no longer steal a gradient nothing else holds)."""
    if python_key_used[0]:
        for j in range(len(grads)):
            if getattr(grads[j], "_sum_exited_levels", None) is not None:
                grads[j] = _leaving(grads[j])


def run_backward(roots: Any, grad_outputs: Any, keep_graph: bool, create_graph: bool, inputs: Any = None,
                 allow_unused: bool = False, accumulate_grad: bool = True) -> Any:
    """Run the graph behind ``roots``; return the captured gradients of ``inputs`` (``autograd.grad``)."""
    root_edges = []
    for i, t in enumerate(roots):
        e = _gradient_edge(t)
        if e is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        root_edges.append(e)
    graph_root = GraphRoot(grad_outputs)
    graph_root._next = tuple(root_edges)

    # dependencies: incoming edges per node, over everything reachable from the root
    deps: dict[Any, int] = {}
    seen: set[Any] = {graph_root}
    stack: list[Any] = [graph_root]
    while stack:
        n = stack.pop()
        for e in n._next:
            if e is None:
                continue
            deps[e.node] = deps.get(e.node, 0) + 1
            if e.node not in seen:
                seen.add(e.node)
                stack.append(e.node)

    # what to run: with ``inputs``, only nodes on a path to one of them
    capture = None
    needed = None
    if inputs is not None:
        targets = []
        for t in inputs:
            e = _gradient_edge(t)
            if e is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            targets.append(e)
        target_nodes = {e.node for e in targets}
        needed = _nodes_leading_to(graph_root, target_nodes)
        if not accumulate_grad:
            capture = {(id(e.node), e.input_nr): i for i, e in enumerate(targets)}
        captured = [None] * len(targets)

    buffers: dict[Any, list[Any]] = {}
    ready: list[Any] = []
    counter = 0
    prev_mode = grad_mode.state.enabled
    grad_mode.state.enabled = create_graph
    tasks = _task_stack()
    tasks.append((next(_task_ids), accumulate_grad and inputs is None))
    callbacks = _final_callbacks()
    callbacks.append([])
    try:
        heapq.heappush(ready, (-graph_root.sequence_nr, counter, graph_root))
        buffers[graph_root] = []
        while ready:
            _, _, node = heapq.heappop(ready)
            grads = buffers.pop(node)
            if isinstance(node, AccumulateGrad):
                _leave_in_place(grads)
            if capture is not None:
                for j in range(len(grads) if node is not graph_root else 0):
                    k = capture.get((id(node), j))
                    if k is not None:
                        captured[k] = _apply_tensor_hooks(node, j, _leaving(grads[j]))
                if isinstance(node, AccumulateGrad):
                    continue  # autograd.grad never writes .grad
            if needed is not None and node is not graph_root and \
                    any(e is not None and e.node not in needed for e in node._next):
                # PyTorch's task_should_compute_output: a formula computes only the gradients this call needs
                full = node._next
                node._next = type(full)(e if e is None or e.node in needed else None for e in full)
                try:
                    outputs = _call_node(node, grads, keep_graph)
                finally:
                    node._next = full
            else:
                outputs = _call_node(node, grads, keep_graph)
            for e, g in zip(node._next, outputs):
                if e is None:
                    continue
                nxt = e.node
                if needed is not None and nxt not in needed:
                    continue
                buf = buffers.get(nxt)
                if buf is None:
                    buf = buffers[nxt] = [None] * max(getattr(nxt, "_num_outputs", 1), e.input_nr + 1)
                if g is not None:
                    old = buf[e.input_nr]
                    buf[e.input_nr] = g if old is None else _sum_grads(old, g)
                left = deps[nxt] - 1
                deps[nxt] = left
                if left == 0:
                    counter += 1
                    heapq.heappush(ready, (-nxt.sequence_nr, counter, nxt))
            outputs = g = None   # no engine frame holds a gradient past its node: AccumulateGrad steals what
            #                      only its buffer holds, and copies what anything else still refers to
        queued = callbacks[-1]
        while queued:  # a callback may queue more
            queued.pop(0)()
    finally:
        grad_mode.state.enabled = prev_mode
        tasks.pop()
        callbacks.pop()

    if capture is not None:
        for i, g in enumerate(captured):
            if g is None and not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
        return captured
    return None


def _nodes_leading_to(root: Any, targets: Any) -> set[Any]:
    """Nodes from which one of ``targets`` can be reached (they, and only they, need to run)."""
    order, seen, stack = [], {root}, [root]
    while stack:
        n = stack.pop()
        order.append(n)
        for e in n._next:
            if e is not None and e.node not in seen:
                seen.add(e.node)
                stack.append(e.node)
    needed = set(targets)
    changed = True
    while changed:
        changed = False
        for n in order:
            if n in needed:
                continue
            if any(e is not None and e.node in needed for e in n._next):
                needed.add(n)
                changed = True
    return needed


def _apply_tensor_hooks(node: Any, j: Any, g: Any) -> Any:
    for h in node._tensor_pre_hooks.get(j, ()):
        r = h(g)
        if r is not None:
            g = r
    ref = node._retains_grad.get(j)
    if ref is not None:
        t = ref()
        if t is not None and g is not None:  # PyTorch's retain_grad hook: clone first, then sum
            t._grad = g.clone() if t._grad is None else _sum_grads(t._grad, g)
    return g


def _call_node(node: Any, grads: Any, keep_graph: Any) -> Any:
    """Run one node: its hooks, its formula, validation of what it returns (Note [RecordFunction]: inside the
    engine's range for the node while a profiler records)."""
    rec = _profiler.recorder
    if rec is None or isinstance(node, GraphRoot):
        return _run_node(node, grads, keep_graph)
    with _profiler._Range(rec, "autograd::engine::evaluate_function: " + node.name()):
        return _run_node(node, grads, keep_graph)


def _apply(node: Any, grads: Any) -> Any:
    if _profiler.recorder is None:
        return node.apply(grads)
    return _profiler._node_apply(node, grads, node.name())


def _run_node(node: Any, grads: Any, keep_graph: Any) -> Any:
    grads = [_apply_tensor_hooks(node, j, g) for j, g in enumerate(grads)] if \
        (node._tensor_pre_hooks or node._retains_grad) else grads
    for h in node._pre_hooks:
        r = h(tuple(grads))
        if r is not None:
            grads = list(r)
    if isinstance(node, GraphRoot):
        return node.apply(grads)
    if not _has_grad(grads) and not isinstance(node, AccumulateGrad):
        # no gradient reached the node: nothing to compute (an AccumulateGrad still runs its hooks)
        return _finish(node, [None] * len(node._next), grads, keep_graph)
    if python_key_used[0] and isinstance(node, FormulaNode):
        prev, _dispatch_tls.in_formula = _dispatch_tls.in_formula, True   # Note [Overloads PyTorch's bindings hide]
        try:
            outputs = _apply(node, grads)
        finally:
            _dispatch_tls.in_formula = prev
    else:
        outputs = _apply(node, grads)
    return _finish(node, outputs, grads, keep_graph)


def _has_grad(grads: Any) -> bool:
    """Whether any gradient is not None (a function, so that no frame of the engine keeps a reference to one:
    AccumulateGrad steals a gradient nothing else holds)."""
    for g in grads:
        if g is not None:
            return True
    return False


def _finish(node: Any, outputs: Any, grads: Any, keep_graph: Any) -> Any:
    """After a node's formula: anomaly checks, validation of the gradients, the node's post hooks, freeing what
    it saved."""
    if anomaly_mode.enabled:
        anomaly_mode.check_nan(node, outputs)
    if not isinstance(node, AccumulateGrad):
        outputs = _validate(node, outputs)
    for h in node._hooks:
        r = h(tuple(outputs), tuple(grads))
        if r is not None:
            outputs = list(r)
    if not keep_graph:
        node.release_variables()
    return outputs


__all__ = ["run_backward", "Edge"]
