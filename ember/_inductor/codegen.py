"""The graph compiler: an ATen graph becomes one generated Python function that calls the array kernels directly
(``torch/_inductor``'s place in ember).

Note [Graph code]
Eagerly, every operator call goes through the public binding, the dispatcher, the autograd kernel and the
backend wrapper, and makes a ``Tensor`` for its result (Note [Kernel resolution], ``docs/op-path.md``). A
captured graph with no autograd to record -- an inference graph, or the forward and backward graphs of AOT
autograd (``ember/_functorch/aot_autograd.py``) -- needs none of that: its types, devices and argument
conversions were settled when it was traced. ``compile_graph`` writes the function once:

* an operator with a generated backend wrapper whose result is new or a view (``array_kernel``) becomes a call of
  its array kernel on arrays (``K.addmm(xp, bias, x, w_t, beta=1, alpha=1)``): no Tensor objects in between;
* an in-place or ``out=`` operator, and an operator implemented in other operators, calls its backend kernel with
  tensors (arrays are wrapped around the same memory, so a write lands in the array the code holds);
* anything that does not bind calls the ``OpOverload`` itself, the dispatcher's path;
* an array is dropped after its last use, so its memory returns to the allocator at once (the plan of buffer
  reuse that falls out of NumPy's allocator caching);
* the results become tensors at the end: a view of an input or of another result stays a view of it, sharing its
  version counter, as the eager call's would.

The code is readable (``EMBER_LOGS=output_code`` prints it), one line per operator with the source line of the
model it came from.
"""
from __future__ import annotations

import logging
import operator
from typing import Any, Callable

import numpy as np

from ember._inductor.fusion import Kernel as _Kernel
from ember._tensor import Tensor
from ember.aten.backends import BACKEND, ON_CUDA, array_kernel
from ember.aten.dispatcher import keys_below
from ember.aten.wrap import new_tensor, view_of
from ember.c10.dispatch_key import DispatchKey, KS_OF_DEVICE_TYPE
from ember.fx.graph import _stack_trace_comment
from ember.utils._pytree import tree_flatten, tree_unflatten
from ember.c10.device import canonical

log = logging.getLogger("ember._inductor")
_BACKEND_ONLY = keys_below(DispatchKey.ADInplaceOrView)
_IDENTITY = {"detach.default", "alias.default", "lift_fresh.default"}    # no-ops on arrays


def _bind(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]] | None:
    """The overload that takes these arguments and its bound parameters (as ``OpOverload.__call__`` finds them)."""
    from ember._ops import Signatures
    from ember._python_arg_parser import NUMBERS_AS_TENSORS
    bound = op.try_bind(args, kwargs)
    if bound is not None:
        return op, bound
    twin = op._scalar_twin
    if twin is not None:
        bound = twin.try_bind(args, kwargs)
        if bound is not None:
            return twin, bound
    if op.handle.name in NUMBERS_AS_TENSORS:
        like = next((a for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)), None)
        if like is not None:
            bound = Signatures._try(op._sig.sigs[0], args, kwargs, like)
            if bound is not None:
                return op, bound
    return None


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.globals: dict[str, Any] = {}
        self._names: dict[int, str] = {}

    def const(self, v: Any, hint: str = "c") -> str:
        """A global of the generated code holding ``v`` (named ``hint``, numbered when taken)."""
        name = self._names.get(id(v))
        if name is None:
            name = hint.rstrip("_") if hint.endswith("_") and hint.rstrip("_") not in self.globals else \
                f"{hint}{len(self.globals)}"
            self.globals[name] = v
            self._names[id(v)] = name
        return name

    def literal(self, v: Any) -> str:
        if v is None or type(v) in (bool, int, str):
            return repr(v)
        if type(v) is float:
            return repr(v) if v == v and v not in (float("inf"), float("-inf")) else self.const(v, "f")
        if type(v) in (list, tuple):
            inner = ", ".join(self.literal(x) for x in v)
            return f"[{inner}]" if type(v) is list else (f"({inner},)" if len(v) == 1 else f"({inner})")
        return self.const(v)


def compile_graph(gm: Any, example_inputs: list[Any] | None = None, *, name: str = "call") -> Callable[..., Any]:
    """The generated function of ``gm`` (Note [Graph code]); it takes the graph's placeholders in order."""
    from ember._inductor.passes import materialize_math_bits
    graph = gm.graph
    materialize_math_bits(graph)
    device = _device_of(graph)
    be = BACKEND[KS_OF_DEVICE_TYPE[device.type] & ON_CUDA]
    w = _Writer()
    w.globals.update({"xp": be.xp, "KS": be.ks, "_new": new_tensor, "_view_out": _view_out})
    ks_backend = KS_OF_DEVICE_TYPE[device.type] & _BACKEND_ONLY
    # per node: ("t", var) a Tensor; ("a", var) an array; ("v", var) anything else; ("seq", var, kinds)
    env: dict[Any, tuple[str, ...]] = {}
    views: dict[str, str] = {}         # array var -> the var it is a view of
    groups = _fusion_plan(graph, be.xp)     # Note [Pointwise fusion]: a group runs where its last member stands
    group_of = {m: gi for gi, g in enumerate(groups) for m in g[0].members}
    nodes = list(graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    last_use: dict[Any, Any] = {}
    for n in nodes:
        at = groups[group_of[n]][0].last if n in group_of else n
        for i in n._input_nodes:
            if i not in last_use or index[at] > index[last_use[i]]:
                last_use[i] = at
    # fused results only fused loops read: their arrays can take a later fused result (Note [Pointwise fusion])
    reusable = {m for g, _ in groups for m in g.members
                if all(u in group_of for u in m.users) and any(group_of[u] != group_of[m] for u in m.users)}
    free: list[tuple[str, int, Any]] = []
    dies_at: dict[Any, list[Any]] = {}
    keep = _output_view_roots(graph)     # arrays a result will be a view of: alive until the end
    for v, n in last_use.items():
        if v not in keep:
            dies_at.setdefault(n, []).append(v)
    array_of: dict[str, str] = {}      # tensor var -> the var of its array
    params: list[str] = []
    body: list[str] = []

    def arr(node: Any) -> str:
        kind, var = env[node][0], env[node][1]
        if kind == "a":
            return var
        if kind == "t":
            a = array_of.get(var)
            if a is None:
                a = array_of[var] = f"{var}_a"
                body.append(f"{a} = {var}._data")
            return a
        raise TypeError(f"{node} is not a tensor")

    def tensor(node: Any) -> str:
        kind, var = env[node][0], env[node][1]
        if kind == "t":
            return var
        if kind == "a":
            t = f"{var}_t"
            if ("t", t) not in env.values():
                body.append(f"{t} = _new({var}, KS, DEV)")
            return t
        raise TypeError(f"{node} is not a tensor")

    w.globals["DEV"] = be.device if device.type == "cpu" else device

    def value(x: Any, as_array: bool) -> str:
        from ember.fx.node import Node
        if isinstance(x, Node):
            kind = env[x][0]
            if kind in ("a", "t"):
                return arr(x) if as_array else tensor(x)
            return env[x][1]
        if isinstance(x, (list, tuple)):
            inner = ", ".join(value(y, as_array) for y in x)
            return f"[{inner}]" if isinstance(x, list) else (f"({inner},)" if len(x) == 1 else f"({inner})")
        return w.literal(x)

    from ember.fx.node import Node
    for node in graph.nodes:
        if node.op == "placeholder":
            params.append(node.name)
            env[node] = _kind_of_result(node.meta.get("val"), node.name)
            continue
        if node.op == "get_attr":
            obj = operator.attrgetter(node.target)(gm)
            var = node.name
            body.append(f"{var} = {w.const(obj, 'k')}")
            env[node] = ("t", var) if isinstance(obj, Tensor) else ("v", var)
            continue
        if node.op == "output":
            body.append("return " + _output(node.args[0], env, views, arr, tensor, w, body))
            break
        if node in group_of:
            g, info = groups[group_of[node]]
            if node is not g.last:
                continue
            _emit_fused(g, info, env, w, body, arr, free)
        elif node.stack_trace:
            comment = _stack_trace_comment(node.stack_trace)
            if comment:
                body.append(comment)
        var = node.name
        target = node.target
        if node in group_of:
            pass
        elif target is operator.getitem:
            src, idx = node.args
            kinds = env[src]
            body.append(f"{var} = {env[src][1]}[{idx}]")
            env[node] = (kinds[2][idx] if kinds[0] == "seq" else "v", var)
            if env[node][0] == "a" and env[src][1] in views:
                views[var] = views[env[src][1]]
        elif getattr(target, "__name__", "") in _IDENTITY and isinstance(node.args[0], Node) and \
                env[node.args[0]][0] == "a":     # detach / alias of an array: the array itself
            src = env[node.args[0]][1]
            body.append(f"{var} = {src}  # {target}")
            env[node] = ("a", var)
            views[var] = views.get(src, src)
        elif hasattr(target, "_schema") and hasattr(target, "handle"):
            _emit_op(node, var, env, views, w, body, arr, tensor, value, ks_backend)
        else:                                   # a plain function (grad-mode switch): tensors as tensors
            f = w.const(target, "fn")
            args = ", ".join([value(a, False) for a in node.args] +
                             [f"{k}={value(v, False)}" for k, v in node.kwargs.items()])
            body.append(f"{var} = {f}({args})")
            env[node] = ("v", var)
        dead = [env[d][1] for d in dies_at.get(node, []) if d.op != "placeholder" and d in env and d not in reusable]
        for d in dies_at.get(node, []):
            if d in reusable and d in env:
                free.append((env[d][1], d.meta["val"].numel(), d.meta["val"].dtype))
        while len(free) > _MAX_FREE:
            dead.append(free.pop(0)[0])
        if dead:
            body.append(" = ".join(dead + ["None"]))
    src = f"def {name}({', '.join(params)}):\n" + "\n".join("    " + ln for ln in body) + "\n"
    ns = dict(w.globals)
    code = compile(src, f"<ember compiled {name}>", "exec")
    exec(code, ns)
    fn = ns[name]
    fn.__ember_source__ = src                   # type: ignore[attr-defined]
    fn.__ember_kernels__ = [k.src for k in w.globals.values() if isinstance(k, _Kernel)]  # type: ignore[attr-defined]
    fn.__ember_params__ = [(n.name, tuple(n.meta["val"].shape) if isinstance(n.meta.get("val"), Tensor) else None)
                           for n in graph.nodes if n.op == "placeholder"]   # type: ignore[attr-defined]
    import linecache
    linecache.cache[f"<ember compiled {name}>"] = (len(src), None, src.splitlines(True), f"<ember compiled {name}>")
    return fn  # type: ignore[no-any-return]


_MAX_FREE = 4          # dead fused results kept for reuse at once; older ones are released


def _fusion_plan(graph: Any, xp: Any) -> list[Any]:
    from ember._inductor import config, fusion
    from ember.aten.backends import compiled_loops_enabled
    if xp is not np or not config.pointwise_fusion or not compiled_loops_enabled():
        return []
    return fusion.plan(graph, xp)


def _emit_fused(g: Any, info: Any, env: dict[Any, tuple[str, ...]], w: _Writer, body: list[str],
                arr: Callable[[Any], str], free: list[tuple[str, int, Any]]) -> None:
    """One call of a group's fused loop (Note [Pointwise fusion]); each result that leaves the loop takes the array
    of a dead fused result of its size and dtype when there is one."""
    from ember._inductor import fusion
    kernel, inputs, outputs = fusion.kernel_of(g, info)
    seen = set()
    for m in g.members:
        comment = _stack_trace_comment(m.stack_trace) if m.stack_trace else None
        if comment and comment not in seen:
            seen.add(comment)
            body.append(comment)
    reuse = []
    for m in outputs:
        val = m.meta["val"]
        hit = None if m in g.reductions else next((f for f in free if f[1] == val.numel() and f[2] == val.dtype),
                                                   None)
        if hit is not None:
            free.remove(hit)
        reuse.append(hit[0] if hit is not None else "None")
    k = w.const(kernel, "fused")
    ins = ", ".join(arr(v) for v in inputs)
    names = ", ".join(m.name for m in outputs)
    ops = ", ".join(str(m.target.__name__) for m in g.members)
    body.append(f"{names}, = {k}({g.shape!r}, ({ins}{',' if len(inputs) == 1 else ''}), "
                f"({', '.join(reuse)}{',' if len(reuse) == 1 else ''}))  # fused: {ops}")
    for m in outputs:
        env[m] = ("a", m.name)
    dropped = [r for r in reuse if r != "None"]
    if dropped:
        body.append(" = ".join(dropped + ["None"]))


def _emit_op(node: Any, var: str, env: dict[Any, tuple[str, ...]], views: dict[str, str], w: _Writer,
             body: list[str], arr: Callable[[Any], str], tensor: Callable[[Any], str],
             value: Callable[[Any, bool], str], ks_backend: int) -> None:
    from ember.fx.node import Node
    op = node.target
    node_of: dict[int, Any] = {}

    def val(x: Any) -> Any:
        if isinstance(x, Node):
            v = x.meta.get("val")
            if isinstance(v, Tensor):
                node_of[id(v)] = x
            return v
        if isinstance(x, (list, tuple)):
            return type(x)(val(y) for y in x)
        return x
    args = tuple(val(a) for a in node.args)
    kwargs = {k: val(v) for k, v in node.kwargs.items()}
    hit = _bind(op, args, kwargs)
    out_val = node.meta.get("val")
    if hit is None:                              # the dispatcher's own path
        call = ", ".join([value(a, False) for a in node.args] +
                         [f"{k}={value(v, False)}" for k, v in node.kwargs.items()])
        body.append(f"{var} = {w.const(op, 'op')}({call})")
        env[node] = _kind_of_result(out_val, var)
        return
    overload, bound = hit

    def bound_value(x: Any, as_array: bool) -> str:
        if isinstance(x, Tensor):
            n = node_of.get(id(x))
            if n is not None:
                return arr(n) if as_array else tensor(n)
            return w.const(x._data if as_array else x, "k")     # a number the binding wrapped
        if isinstance(x, (list, tuple)) and any(isinstance(y, Tensor) for y in x):
            inner = ", ".join(bound_value(y, as_array) if y is not None else "None" for y in x)
            return f"[{inner}]"
        return w.literal(x)

    fill = _FILLS.get(overload.handle.name)
    if fill is not None and isinstance(out_val, Tensor) and out_val.is_contiguous():
        value = bound.get("fill_value", fill) if fill == "fill_value" else fill   # a factory: its shape is known
        if value is not None and not isinstance(value, Tensor):
            dtype = w.const(out_val._data.dtype, "dt")
            shape = tuple(out_val.shape)
            body.append(f"{var} = xp.empty({shape!r}, {dtype})  # {overload}" if value == "empty" else
                        f"{var} = xp.full({shape!r}, {w.literal(value)}, {dtype})  # {overload}")
            env[node] = ("a", var)
            return
    info = array_kernel(overload.handle)
    returns = overload._schema.returns
    all_tensors = bool(returns) and all(r.type in ("Tensor", "Tensor[]") or r.type.startswith("Tensor(")
                                        for r in returns)
    if info is not None and info[2] in ("new", "view") and all_tensors:
        kernel, kwnames, kind, _ = info
        spec = overload._sig.sigs[0]
        pos, kws = [], []
        for p in spec:
            name, _, kwonly = p[0], p[1], p[2]
            if kwonly:
                if name in kwnames:
                    kws.append(f"{name}={bound_value(bound[name], True)}")
            else:
                pos.append(bound_value(bound[name], True))
        k = w.const(kernel, f"k_{overload.handle.name}_")
        call = f"{k}(xp{''.join(', ' + a for a in pos)}{''.join(', ' + a for a in kws)})"
        # NumPy hands back a scalar, not an array, for a 0-dim result: the code after needs the array
        vals = out_val if isinstance(out_val, (list, tuple)) else [out_val]
        if kind == "new" and any(isinstance(v, Tensor) and v.dim() == 0 for v in vals):
            w.globals["_arr"] = _as_array
            call = f"_arr({call})" if isinstance(out_val, Tensor) else f"tuple(map(_arr, {call}))"

        body.append(f"{var} = {call}  # {overload}")
        if len(returns) == 1 and returns[0].type.endswith("[]"):
            env[node] = ("seq", var, _SeqKinds("a"))
        elif len(returns) == 1:
            env[node] = ("a", var)
        else:
            env[node] = ("seq", var, _SeqKinds("a"))
        if kind == "view":              # remember the root whose memory this views
            base = node.args[0]
            if isinstance(base, Node) and env[base][0] in ("a", "t"):
                views[var] = env[base][1] if env[base][0] == "t" else views.get(env[base][1], env[base][1])
            elif isinstance(base, Node) and env[base][0] == "seq":
                views[var] = views.get(env[base][1], env[base][1])
        return
    kernel_fn = overload.handle.resolve(ks_backend)
    k = w.const(kernel_fn, f"kt_{overload.handle.name}_")
    call = ", ".join(bound_value(bound[n], False) for n in overload.names)
    body.append(f"{var} = {k}(KS, {call})  # {overload}")
    env[node] = _kind_of_result(out_val, var)
    # a write through a tensor wrapped around an array lands in that array; a tensor argument that was written
    # keeps its array var valid (write_inplace copies into the array it holds)


# factories whose result the graph's static shape and dtype decide: made with one NumPy (CuPy) call
_FILLS = {"ones": 1, "ones_like": 1, "new_ones": 1, "zeros": 0, "zeros_like": 0, "new_zeros": 0,
          "full": "fill_value", "full_like": "fill_value", "new_full": "fill_value", "empty": "empty",
          "empty_like": "empty", "new_empty": "empty"}


def _as_array(x: Any) -> Any:
    """``x`` as an array (NumPy returns 0-dim results of its functions as scalars)."""
    import numpy as np
    return np.asarray(x) if isinstance(x, np.generic) else x


class _SeqKinds:
    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __getitem__(self, i: int) -> str:
        return self.kind


def _kind_of_result(val: Any, var: str) -> tuple[Any, ...]:
    if isinstance(val, Tensor):
        return ("t", var)
    if isinstance(val, (list, tuple)) and any(isinstance(v, Tensor) for v in val):
        return ("seq", var, _SeqKinds("t"))
    return ("v", var)


def _output(out: Any, env: dict[Any, tuple[str, ...]], views: dict[str, str], arr: Callable[[Any], str],
            tensor: Callable[[Any], str], w: _Writer, body: list[str]) -> str:
    """The result expression: arrays become tensors, a view of an input or of another result a view of it."""
    from ember.fx.node import Node
    leaves, spec = tree_flatten(_plain(out))
    made: dict[str, str] = {}
    exprs = []
    for x in leaves:
        if not isinstance(x, Node):
            exprs.append(w.literal(x))
            continue
        kind, var = env[x][0], env[x][1]
        if kind == "seq" and env[x][2][0] == "a":     # a list of arrays (a saved split): tensors
            exprs.append(f"[_new(_x, KS, DEV) for _x in {var}]")
            continue
        if kind != "a":
            exprs.append(var)
            continue
        exprs.append(_as_output(var, views, env, made, body))
    return _unflatten_expr(exprs, spec, w)


def _output_view_roots(graph: Any) -> set[Any]:
    """The nodes whose memory a result of the graph views (through view ops and their getitems)."""
    from ember.fx.node import Node
    root: dict[Any, Any] = {}
    for n in graph.nodes:
        if n.op == "call_function" and n.args and isinstance(n.args[0], Node) and (
                getattr(n.target, "is_view", False) or n.target is operator.getitem):
            root[n] = root.get(n.args[0], n.args[0])
    out = graph.find_nodes(op="output")[0]
    return {root[x] for x in tree_flatten(_plain(out.args[0]))[0] if isinstance(x, Node) and x in root}


def _as_output(var: str, views: dict[str, str], env: dict[Any, tuple[str, ...]], made: dict[str, str],
               body: list[str]) -> str:
    """The tensor a result array becomes: a view of the tensor (or the result) whose memory it views, with that
    as its ``_base``, as the view op's autograd kernel makes it eagerly; else a new tensor."""
    if var in made:
        return made[var]
    root = views.get(var)
    t = f"{var}_out"
    if root is None:
        body.append(f"{t} = _new({var}, KS, DEV)")
    else:
        tensor_vars = {e[1] for e in env.values() if e[0] == "t"}
        base_t = root if root in tensor_vars else _as_output(root, views, env, made, body)
        body.append(f"{t} = _view_out({var}, {base_t})")
    made[var] = t
    return t


def _view_out(arr: Any, base: Any) -> Any:
    t = view_of(arr, base)
    t.__dict__["_base"] = base._base if base._base is not None else base
    return t


def _plain(x: Any) -> Any:
    """fx's immutable lists and dicts as the plain containers pytree flattens; any other container (a tuple, a
    named tuple, a registered node such as a model-output class) keeps its type."""
    from ember.fx.immutable_collections import immutable_dict, immutable_list
    from ember.utils._pytree import _flatten_node, _node_type, _unflatten_node
    if type(x) is immutable_list:
        return [_plain(y) for y in x]
    if type(x) is immutable_dict:
        return {k: _plain(v) for k, v in x.items()}
    t = _node_type(x)
    if t is None:
        return x
    children, ctx = _flatten_node(t, x)
    return _unflatten_node(t, [_plain(c) for c in children], ctx)


def _unflatten_expr(exprs: list[str], spec: Any, w: _Writer) -> str:
    """The expression that rebuilds the result's structure from the leaves' expressions."""
    it = iter(exprs)

    def build(sp: Any) -> str | None:
        if sp.type is None:
            return next(it)
        if sp.type not in (tuple, list):
            return None
        parts = [build(c) for c in sp.children_specs]
        if any(p is None for p in parts):
            return None
        inner = ", ".join(p for p in parts if p is not None)
        return f"[{inner}]" if sp.type is list else (f"({inner},)" if len(parts) == 1 else f"({inner})")
    built = build(spec)
    if built is not None:
        return built
    return f"{w.const(tree_unflatten, 'unflatten')}([{', '.join(exprs)}], {w.const(spec, 'spec')})"


def _device_of(graph: Any) -> Any:
    for n in graph.nodes:
        v = n.meta.get("val")
        if isinstance(v, Tensor):
            return getattr(v, "fake_device", None) or v.device
    return canonical("cpu")


