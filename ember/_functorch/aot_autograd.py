"""AOT autograd: a captured forward graph becomes a forward graph and a backward graph, run as one autograd node
(``torch/_functorch/aot_autograd.py`` + ``partitioners.py``).

Note [AOT autograd]
A graph captured by ``ember.compile`` holds the forward's ATen operators; run through the dispatcher, autograd
would record every one of them again and replay each formula op by op. Instead:

1. *Lifting*: the graph's inputs and the parameters it reads that require grad become the *primals*.
2. *The joint graph*: ``make_fx`` on fake tensors traces a function that runs the forward graph on the primals and
   then ``autograd.grad`` of its differentiable outputs with respect to the primals, given one *tangent* (incoming
   gradient) per output. Every formula of ``derivatives.yaml`` that backward would run is now nodes of one graph.
3. *Partitioning*: the forward graph is what the outputs need, plus every operator that writes a buffer (BatchNorm's
   running statistics) -- all of it independent of the tangents. The backward graph is what the gradients need
   and the forward did not compute. The forward values the backward reads are the *saved* values: the forward
   graph returns them after its outputs. An operator the backward needs that does not depend on the tangents runs
   in the forward (its result saved) unless it is a view, which costs nothing to recompute.
4. *Running*: ``CompiledFunction`` (an ``autograd.Function``) runs the compiled forward graph without recording,
   saves the saved values, and its node -- ``CompiledFunctionBackward``, PyTorch's name -- runs the compiled
   backward graph with them and the incoming gradients. The two graphs are compiled by the backend's compilers
   (the generated code of Note [Graph code] for ``inductor``; the dispatcher for ``aot_eager``).

A graph that returns a view of an input, or writes into an input that requires grad, keeps the dispatcher's path
(``aot_module_simplified`` says so by returning ``None``): a custom function cannot return such aliases faithfully.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

from ember._tensor import Tensor
from ember.utils._pytree import tree_flatten, tree_unflatten

__all__ = ["aot_module_simplified", "aot_function", "make_joint", "partition"]


def _lifted_params(gm: Any) -> list[tuple[str, Tensor]]:
    """The constants of ``gm`` that require grad (parameters), in the order the graph reads them."""
    out = []
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            v = operator.attrgetter(n.target)(gm)
            if isinstance(v, Tensor) and v.requires_grad:
                out.append((n.target, v))
    return out


def _run(gm: Any, args: list[Any], lifted: dict[str, Any]) -> Any:
    """Interpret ``gm`` on ``args`` with the lifted constants replaced by ``lifted``; the nodes a trace records
    meanwhile get the source line of the node that made them."""
    from ember.fx.experimental.proxy_tensor import current_stack_trace
    env: dict[Any, Any] = {}
    marked: set[int] = set()
    it = iter(args)

    def load(a: Any) -> Any:
        from ember.fx.node import map_arg
        return map_arg(a, lambda n: env[n])
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            env[n] = next(it)
        elif n.op == "get_attr":
            env[n] = lifted[n.target] if n.target in lifted else operator.attrgetter(n.target)(gm)
        elif n.op == "call_function":
            trace = n.meta.get("stack_trace")
            current_stack_trace[0] = trace
            try:
                env[n] = n.target(*load(n.args), **load(n.kwargs))
            finally:
                current_stack_trace[0] = None
            if trace:           # the backward of this op: the same source line
                for t in tree_flatten(env[n])[0]:
                    fn = getattr(t, "grad_fn", None) if isinstance(t, Tensor) else None
                    if fn is not None and id(fn) not in marked:
                        marked.add(id(fn))
                        fn._pre_hooks.insert(0, _set_trace(trace))
        elif n.op == "output":
            return load(n.args[0])
        else:
            raise RuntimeError(f"AOT autograd: unexpected node {n.op}")
    return None


def _set_trace(trace: str) -> Callable[..., None]:
    def pre_hook(grad_outputs: Any) -> None:
        from ember.fx.experimental.proxy_tensor import current_stack_trace
        current_stack_trace[0] = trace
    return pre_hook


def _alias_or_input_write(gm: Any) -> str | None:
    """Why ``gm`` cannot run as one custom function (an output that is a view of an input, a write into an input
    that requires grad), or None."""
    root: dict[Any, Any] = {}
    for n in gm.graph.nodes:
        if n.op in ("placeholder", "get_attr"):
            root[n] = n
        elif n.op == "call_function":
            op = n.target
            schema = getattr(op, "_schema", None)
            if schema is None:
                continue
            first = n.args[0] if n.args else None
            if getattr(op, "is_view", False) and first in root:
                root[n] = root[first]
            if n.target is operator.getitem and first in root:
                root[n] = root[first]
            for i, a in enumerate(schema.arguments):
                if a.alias_info is not None and a.alias_info.is_write:
                    written = n.args[i] if i < len(n.args) else n.kwargs.get(a.name)
                    src = root.get(written)
                    if src is not None:
                        v = src.meta.get("val")
                        if isinstance(v, Tensor) and v.requires_grad:
                            return f"{op} writes into an input that requires grad"
    out = gm.graph.find_nodes(op="output")[0]
    for leaf in tree_flatten(out.args[0])[0]:
        if leaf in root:
            return "an output is an input or a view of one"
    return None


def make_joint(gm: Any) -> tuple[Any, int, list[bool], list[bool], list[tuple[str, Tensor]]]:
    """The joint forward + backward graph of ``gm`` (Note [AOT autograd], step 2): its placeholders are the
    primals then the tangents, its output ``(forward outputs, gradients of the primals)``. Also: the number of
    primals, which forward outputs are differentiable, which primals get gradients, and the lifted parameters."""
    from ember.autograd import grad as autograd_grad
    from ember.fx.experimental.proxy_tensor import current_stack_trace, make_fx
    params = _lifted_params(gm)
    inputs = [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]
    primals_meta = inputs + [p for _, p in params]
    out_node = gm.graph.find_nodes(op="output")[0]
    out_vals = [n.meta.get("val") if hasattr(n, "meta") else n for n in tree_flatten(out_node.args[0])[0]]
    diff_out = [isinstance(v, Tensor) and v.requires_grad and (v.dtype.is_floating_point or v.dtype.is_complex)
                for v in out_vals]
    wants_grad = [isinstance(p, Tensor) and p.requires_grad for p in primals_meta]
    n_primals = len(primals_meta)
    names = [name for name, _ in params]

    def joint(*flat: Any) -> Any:
        primals, tangents = list(flat[:n_primals]), list(flat[n_primals:])
        outs = _run(gm, primals[:len(inputs)], dict(zip(names, primals[len(inputs):])))
        flat_outs = tree_flatten(outs)[0]
        diff = [o for o, d in zip(flat_outs, diff_out) if d]
        needs = [p for p, w in zip(primals, wants_grad) if w]
        try:
            grads = list(autograd_grad(diff, needs, tangents, allow_unused=True)) if diff and needs else \
                [None] * len(needs)
        finally:
            current_stack_trace[0] = None
        it = iter(grads)
        return flat_outs, [next(it) if w else None for w in wants_grad]

    tangents = [_zeros_like(v) for v, d in zip(out_vals, diff_out) if d]
    real_primals = [_example(v) for v in inputs] + [p for _, p in params]
    jgm = make_fx(joint, tracing_mode="fake", record_stack_traces=True,
                  _allow_non_fake_inputs=True)(*real_primals, *tangents)
    for i, n in enumerate(n for n in jgm.graph.nodes if n.op == "placeholder"):   # PyTorch's names
        n.name = n.target = f"primals_{i + 1}" if i < n_primals else f"tangents_{i - n_primals + 1}"
    jgm.recompile()
    return jgm, n_primals, diff_out, wants_grad, params


def _example(v: Any) -> Any:
    """A real tensor with the metadata of the fake ``v`` (make_fx makes its own fakes from it)."""
    import ember
    if not isinstance(v, Tensor):
        return v
    t = ember.empty_strided(tuple(v.shape), tuple(v.stride()), dtype=v.dtype, device=getattr(v, "fake_device", "cpu"))
    if v.requires_grad:
        t.requires_grad_(True)
    return t


def _zeros_like(v: Any) -> Any:
    import ember
    return ember.zeros(tuple(v.shape), dtype=v.dtype, device=getattr(v, "fake_device", "cpu"))


_VIEW_FREE = True   # views are recomputed in the backward rather than saved (they cost nothing)


def partition(jgm: Any, n_primals: int, n_outputs: int) -> tuple[Any, Any, int]:
    """Split the joint graph into forward and backward GraphModules (Note [AOT autograd], step 3). The forward
    takes the primals and returns its outputs then the saved values; the backward takes the saved values then
    the tangents and returns one gradient (or None) per primal. Also returns the number of saved values."""
    from ember.fx.graph import Graph
    from ember.fx.graph_module import GraphModule
    nodes = list(jgm.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    primals, tangents = placeholders[:n_primals], placeholders[n_primals:]
    output = nodes[-1]
    fw_outs, grads = output.args[0]
    # what depends on the tangents: through arguments, and through writes -- a tensor the backward writes into
    # (``zeros`` then ``copy_`` of a tangent into a view of it) depends on the tangent from then on
    root = _alias_roots(nodes)
    tangent_dep: set[Any] = set(tangents)
    changed = True
    while changed:
        changed = False
        for n in nodes:
            if n in tangent_dep:
                continue
            if any(i in tangent_dep for i in n._input_nodes):
                tangent_dep.add(n)
                changed = True
        for n in nodes:
            if n in tangent_dep and n.op == "call_function":
                for w in _written(n):
                    r = root.get(w, w)
                    for m in nodes:
                        if root.get(m, m) is r and m not in tangent_dep and m.op == "call_function":
                            tangent_dep.add(m)
                            changed = True
    # the forward: ancestors of the outputs and of the writes, none depending on a tangent
    fw: set[Any] = set()

    def need(n: Any, into: set[Any]) -> None:
        stack = [n]
        while stack:
            x = stack.pop()
            if x in into or x.op == "placeholder" and x in tangents:
                continue
            into.add(x)
            stack.extend(x._input_nodes)
    for o in fw_outs:
        if hasattr(o, "op"):
            need(o, fw)
    for n in nodes:
        if n.op == "call_function" and n not in tangent_dep and n.is_impure():
            need(n, fw)
    # the backward: ancestors of the gradients and of the backward's own writes, not computed by the forward;
    # tangent-free ones move to the forward unless they are views (recomputed from what they view)
    bw: set[Any] = set()
    stack = [g for g in grads if hasattr(g, "op")]
    stack += [n for n in nodes if n in tangent_dep and n.op == "call_function" and n.is_impure()]
    while stack:
        x = stack.pop()
        if x in bw or x in fw:
            continue
        if x.op == "placeholder":
            if x in tangents:
                bw.add(x)
            else:
                fw.add(x)
            continue
        if x not in tangent_dep and not (_VIEW_FREE and _is_view(x)):
            need(x, fw)
            continue
        bw.add(x)
        stack.extend(x._input_nodes)
    grad_nodes = {g for g in grads if hasattr(g, "op")}    # a gradient the forward computed (zeros_like) too
    saved = [n for n in nodes if n in fw and n.op != "output" and (n in grad_nodes or any(u in bw for u in n.users))]
    # forward graph
    fg = Graph()
    fmap: dict[Any, Any] = {}
    for n in nodes:
        if n in fw or n in primals:
            if n.op == "placeholder" and n not in primals:
                continue
            fmap[n] = fg.node_copy(n, lambda a: fmap[a])
    fg.output((*[fmap[o] if hasattr(o, "op") else o for o in fw_outs], *[fmap[s] for s in saved]))
    # backward graph
    bg = Graph()
    bmap: dict[Any, Any] = {}
    for s in saved:
        p = bg.placeholder(s.name)
        p.meta = dict(s.meta)
        bmap[s] = p
    for t in tangents:
        bmap[t] = bg.node_copy(t)
    for n in nodes:
        if n in bw and n.op != "placeholder":
            bmap[n] = bg.node_copy(n, lambda a: bmap[a])
    bg.output([bmap[g] if hasattr(g, "op") else None for g in grads])
    fgm = GraphModule(jgm, fg)
    bgm = GraphModule(jgm, bg)
    return fgm, bgm, len(saved)


def _written(n: Any) -> list[Any]:
    """The nodes an in-place or out= operator writes into."""
    schema = getattr(n.target, "_schema", None)
    if schema is None:
        return []
    out = []
    for i, a in enumerate(schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            v = n.args[i] if i < len(n.args) else n.kwargs.get(a.name)
            if hasattr(v, "op"):
                out.append(v)
    return out


def _alias_roots(nodes: list[Any]) -> dict[Any, Any]:
    """For each node that is a view (or the in-place result) of another, the node whose memory it is."""
    root: dict[Any, Any] = {}
    for n in nodes:
        if n.op != "call_function" or not n.args or not hasattr(n.args[0], "op"):
            continue
        first = n.args[0]
        if _is_view(n) or _written(n)[:1] == [first]:
            root[n] = root.get(first, first)
    return root


def _is_view(n: Any) -> bool:
    return n.op == "call_function" and (getattr(n.target, "is_view", False) or n.target is operator.getitem and
                                        getattr(n.args[0].target, "is_view", False))


def aot_module_simplified(gm: Any, example_inputs: list[Any], fw_compiler: Callable[..., Any],
                          bw_compiler: Callable[..., Any] | None = None, **kwargs: Any) -> Callable[..., Any] | None:
    """``gm`` run as one autograd node whose forward and backward are ``fw_compiler`` / ``bw_compiler``'s
    compilations of its partitioned graphs (Note [AOT autograd]); None when the graph cannot be (aliases)."""
    from ember.autograd.function import Function
    if _alias_or_input_write(gm) is not None:
        return None
    bw_compiler = bw_compiler or fw_compiler
    jgm, n_primals, diff_out, wants_grad, params = make_joint(gm)
    out_node = gm.graph.find_nodes(op="output")[0]
    out_leaves, out_spec = tree_flatten(out_node.args[0])
    n_out = len(out_leaves)
    fgm, bgm, n_saved = partition(jgm, n_primals, n_out)
    fw = fw_compiler(fgm, list(example_inputs) + [p for _, p in params])
    bw = bw_compiler(bgm, [])
    param_objs = [p for _, p in params]
    non_diff = [i for i, d in enumerate(diff_out) if not d]

    def make(fw: Callable[..., Any], bw: Callable[..., Any]) -> Callable[..., Any]:
        """The callable running ``fw`` and ``bw`` as one autograd node (rebuilt with shape-generic ones by
        Note [Dynamic sizes])."""
        class CompiledFunction(Function):
            @staticmethod
            def forward(ctx: Any, *primals: Any) -> Any:
                res = fw(*primals)
                outs, saved = res[:n_out], res[n_out:]
                ctx.save_for_backward(*[s for s in saved if isinstance(s, Tensor)])
                ctx._ember_saved_other = [s if not isinstance(s, Tensor) else None for s in saved]
                nd = [outs[i] for i in non_diff if isinstance(outs[i], Tensor)]
                if nd:
                    ctx.mark_non_differentiable(*nd)
                return tuple(outs)

            @staticmethod
            def backward(ctx: Any, *grad_outs: Any) -> Any:
                it = iter(ctx.saved_tensors)
                saved = [next(it) if o is None else o for o in ctx._ember_saved_other]
                tangents = [g for g, d in zip(grad_outs, diff_out) if d]
                return tuple(bw(*saved, *tangents))

        def run(*inputs: Any) -> Any:
            outs = CompiledFunction.apply(*inputs, *param_objs)
            if not isinstance(outs, tuple):
                outs = (outs,)
            return tree_unflatten(list(outs), out_spec)

        run._ember_graphs = (jgm, fgm, bgm, n_saved)  # type: ignore[attr-defined]
        run._ember_fw, run._ember_bw, run._ember_make = fw, bw, make  # type: ignore[attr-defined]
        return run
    return make(fw, bw)


def aot_function(fn: Callable[..., Any], fw_compiler: Callable[..., Any], bw_compiler: Callable[..., Any] | None = None,
                 **kwargs: Any) -> Callable[..., Any]:
    """``fn`` traced on its first call's tensors and run through ``aot_module_simplified``."""
    from ember.fx.experimental.proxy_tensor import make_fx
    cache: dict[str, Any] = {}

    def call(*args: Any) -> Any:
        if "run" not in cache:
            gm = make_fx(fn, tracing_mode="fake")(*args)
            cache["run"] = aot_module_simplified(gm, list(args), fw_compiler, bw_compiler) or gm.forward
        return cache["run"](*args)
    return call
