"""``make_fx``: record the ATen operators a function runs as an fx graph (``torch/fx/experimental/proxy_tensor.py``).

Note [make_fx]
``make_fx(f)(*args)`` runs ``f`` once under a ``ProxyTorchDispatchMode``. Every operator call reaches the mode
through the dispatcher's Python key (Note [The Python key] in ``ember/_python_key.py``) -- below autograd, so
``F.linear`` arrives as ``aten.t`` + ``aten.addmm`` and a ``.backward()`` or ``autograd.grad`` inside ``f`` arrives
as the ops of each derivative formula. The mode runs the operator (on real tensors, or on fake ones with
``tracing_mode="fake"``: shapes only), and adds a ``call_function`` node whose target is the ``OpOverload``
(``aten.addmm.default``), whose arguments are the nodes that made its tensor arguments, and which remembers the
tensors it produced (``node.meta["val"]``). A ``decomposition_table`` maps an overload to a Python function; the
mode then runs that function instead, under itself, so the graph holds the ops the function is written in
(``ember._decomp.core_aten_decompositions()`` lowers to a small core set). The inputs become placeholders named
after ``f``'s parameters (``x_1``), tensors made outside ``f`` become ``_param_constant<n>`` (parameters) and
``_tensor_constant<n>`` attributes, and the
result is a ``GraphModule`` whose code calls ``torch.ops.aten.*`` overloads.

With ``pre_dispatch=True`` the mode records above autograd instead (Note [Pre-dispatch] in
``ember/_python_key.py``): CompositeImplicitAutograd operators stay whole (``aten.linear.default``), in-place ops stay
in place, and grad-mode switches are recorded -- the graph ``ember.export`` returns (PyTorch's training IR).
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import operator
from typing import Any, Callable

from ember._python_key import pre_dispatch_mode
from ember.aten.dispatcher import enable_python_dispatcher
from ember._tensor import Tensor
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.proxy import _user_stack_trace
from ember.utils._python_dispatch import TorchDispatchMode
from ember.utils._pytree import tree_flatten, tree_map, tree_unflatten
from ember.c10.grad_mode import state

__all__ = ["make_fx", "ProxyTorchDispatchMode", "get_isolated_graphmodule"]


class ProxyTorchDispatchMode(TorchDispatchMode):
    """Records every operator that reaches it into ``graph`` (Note [make_fx])."""

    def __init__(self, graph: Graph, root: Any, decomposition_table: dict[Any, Callable[..., Any]] | None = None,
                 tracing_mode: str = "real", *, record_grad_mode: bool = False,
                 record_stack_traces: bool = False, constant_names: dict[int, str] | None = None,
                 pre_dispatch: bool = False) -> None:
        super().__init__()
        self.pre_dispatch = pre_dispatch
        self.graph = graph
        self.root = root
        self.decomposition_table = decomposition_table or {}
        self.tracing_mode = tracing_mode
        self._nodes: dict[int, tuple[Any, Any]] = {}   # id(tensor) -> (tensor, the node that made it)
        self._constants = {"param": 0, "tensor": 0}
        self.constants: dict[str, Any] = {}             # attributes of ``root``, set once the trace is over
        self.constant_names = constant_names or {}      # id(tensor) -> a name for it (a parameter's module path)
        # grad mode as the graph's code last set it: with ``record_grad_mode`` a change made by the traced code
        # (``with no_grad():``) becomes a ``_set_grad_enabled`` node, so that replaying the graph's ops through
        # the dispatcher records the same autograd history as the traced code did
        self.record_grad_mode = record_grad_mode
        self.grad_enabled = state.enabled
        self.record_stack_traces = record_stack_traces
        self.user_stack_traces = True       # without a current_stack_trace, the user's line that made the node
        self.module_stack: dict[str, tuple[str, type]] | None = None    # make_fx(record_module_stack=True)

    def sync_grad_mode(self) -> None:
        """Add a ``_set_grad_enabled`` node if the traced code changed grad mode since the last recorded op."""
        if self.record_grad_mode and state.enabled != self.grad_enabled:
            import ember._C
            self.grad_enabled = state.enabled
            self.graph.call_function(ember._C._set_grad_enabled, (state.enabled,))

    def track(self, t: Any, node: Any) -> None:
        self._nodes[id(t)] = (t, node)

    def node_of(self, t: Any) -> Any:
        hit = self._nodes.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        # a tensor made outside the traced function (a module's parameter, a captured tensor): a constant
        # attribute of the module, named as PyTorch names it
        from ember.nn.parameter import Parameter
        hint = self.constant_names.get(id(t))
        if hint is not None and hint not in self.constants:
            name = hint
        else:
            kind = "param" if isinstance(t, Parameter) else "tensor"
            name = f"_{kind}_constant{self._constants[kind]}"
            self._constants[kind] += 1
        self.constants[name] = t
        node = self.graph.get_attr(name)
        node.meta["val"] = t
        if self.module_stack:
            node.meta["nn_module_stack"] = dict(self.module_stack)
        self.track(t, node)
        return node

    def _untraced_subclass(self, t: Any) -> bool:
        return isinstance(t, Tensor) and type(t).__torch_dispatch__ is not Tensor.__torch_dispatch__ and \
            id(t) not in self._nodes

    def _active(self) -> Any:
        """This mode, active again where it records (above autograd with ``pre_dispatch``)."""
        return pre_dispatch_mode(self) if self.pre_dispatch else self

    def _as_arg(self, x: Any) -> Any:
        return self.node_of(x) if isinstance(x, Tensor) else x

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is _lift_fresh():       # a constant just made (torch.tensor): recorded where it is used
            return args[0]
        if not self.pre_dispatch and any(self._untraced_subclass(t) for t in tree_flatten((args, kwargs))[0]):
            # as PyTorch's proxy_call: a subclass the trace does not know (vmap's batched tensors, functionalize's
            # wrappers) handles the call itself, and the ops its handler runs on the tensors inside are recorded
            return NotImplemented
        decomp = self.decomposition_table.get(func)
        if decomp is not None:
            with self._active():
                r = decomp(*args, **kwargs)
            if r is not NotImplemented:
                return r
        if not self.pre_dispatch and func.has_kernel_for_dispatch_key("CompositeImplicitAutograd"):
            with self:      # an op written in other ops (reached here only below autograd): record those
                r = func.decompose(*args, **kwargs)
            if r is not NotImplemented:
                return r
        self.sync_grad_mode()
        if "inplace_view" in func.tags:
            # Note [In-place view ops]: the argument's sizes change in place; its node keeps a snapshot of them
            self.node_of(args[0]).meta["val"] = args[0].detach()
        out = func(*args, **kwargs)
        node = self.graph.call_function(func, tree_map(self._as_arg, tuple(args)),
                                        tree_map(self._as_arg, dict(kwargs)))
        node.meta["val"] = out
        if self.module_stack:
            node.meta["nn_module_stack"] = dict(self.module_stack)
        if self.record_stack_traces:
            trace = current_stack_trace[0] or (_user_stack_trace() if self.user_stack_traces else None)
            if trace:
                node.meta["stack_trace"] = trace
        written = _written_argument(func, args, kwargs)
        if written is not None:     # an in-place or out= op returns its argument itself, as it does eagerly
            out = written
        if isinstance(out, Tensor):
            self.track(out, node)
        elif isinstance(out, (tuple, list)):
            for i, o in enumerate(out):
                if isinstance(o, Tensor):
                    g = self.graph.call_function(operator.getitem, (node, i))
                    g.meta["val"] = o
                    if "stack_trace" in node.meta:
                        g.meta["stack_trace"] = node.meta["stack_trace"]
                    if self.module_stack:
                        g.meta["nn_module_stack"] = dict(self.module_stack)
                    self.track(o, g)
        return out


@functools.lru_cache(maxsize=None)
def _lift_fresh() -> Any:
    from ember._ops import ops
    return ops.aten.lift_fresh.default


# the stack trace new nodes get while another graph's node is being re-traced (AOT autograd keeps the source
# lines of the captured graph this way: ``preserve_node_meta`` in PyTorch)
current_stack_trace: list[str | None] = [None]


def _written_argument(func: Any, args: Any, kwargs: Any) -> Any:
    """The argument an in-place (``add_``) or ``out=`` operator writes and returns, if ``func`` is one."""
    returns = func._schema.returns
    if len(returns) != 1 or returns[0].alias_info is None or not returns[0].alias_info.is_write:
        return None
    alias = returns[0].alias_info.before_set
    for i, a in enumerate(func._schema.arguments):
        if a.alias_info is not None and a.alias_info.before_set == alias:
            v = kwargs.get(a.name) if a.kwarg_only or i >= len(args) else args[i]
            return v if isinstance(v, Tensor) else None
    return None


def _placeholder_names(f: Callable[..., Any], n: int) -> list[str]:
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            names += [f"arg{i}" for i in range(len(names), n)]
    names += [f"arg{i}" for i in range(len(names), n)]
    return [f"{nm}_1" for nm in names[:n]]


def make_fx(f: Callable[..., Any], decomposition_table: dict[Any, Callable[..., Any]] | None = None,
            tracing_mode: str = "real", _allow_non_fake_inputs: bool = False, *, pre_dispatch: bool = False,
            record_module_stack: bool = False, _allow_fake_constant: bool = False,
            _error_on_data_dependent_ops: bool = True, record_stack_traces: bool = False) -> Callable[..., GraphModule]:
    """A function that runs ``f`` on the given arguments and returns the ``GraphModule`` of the ATen operators it
    ran (Note [make_fx]). ``tracing_mode="fake"`` runs on fake tensors (no arithmetic at all)."""
    if tracing_mode not in ("real", "fake", "symbolic"):
        raise AssertionError(f"Unexpected tracing type: {tracing_mode}")
    if tracing_mode == "symbolic":
        raise NotImplementedError("make_fx(tracing_mode='symbolic'): symbolic shapes are not supported by ember; "
                                  "use 'real' or 'fake'")

    def wrapped(*args: Any) -> GraphModule:
        from ember.nn import Module
        root = Module()
        graph = Graph()
        leaves, spec = tree_flatten(list(args))
        fake_mode = None
        if tracing_mode == "fake":
            from ember._subclasses.fake_tensor import FakeTensorMode
            fake_mode = FakeTensorMode(allow_non_fake_inputs=_allow_non_fake_inputs)
            leaves = [fake_mode.from_tensor(x) if isinstance(x, Tensor) else x for x in leaves]
        mode = ProxyTorchDispatchMode(graph, root, decomposition_table, tracing_mode,
                                      record_stack_traces=record_stack_traces, pre_dispatch=pre_dispatch,
                                      record_grad_mode=pre_dispatch)
        names = _placeholder_names(f, len(args)) if len(leaves) == len(args) else \
            [f"arg{i}_1" for i in range(len(leaves))]
        for x, name in zip(leaves, names):
            node = graph.placeholder(name)
            if isinstance(x, Tensor):
                node.meta["val"] = x
                mode.track(x, node)
        call_args = tree_unflatten(leaves, spec)
        handles = _record_module_stack(f, mode) if record_module_stack else []
        try:
            with fake_mode if fake_mode is not None else contextlib.nullcontext(), enable_python_dispatcher(), \
                    mode._active():
                out = f(*call_args)
        finally:
            for h in handles:
                h.remove()
        graph.output(tree_map(lambda o: mode.node_of(o) if isinstance(o, Tensor) else o, out))
        for name, t in mode.constants.items():
            setattr(root, name, t)
        return GraphModule(root, graph)

    return wrapped


def _record_module_stack(f: Any, mode: ProxyTorchDispatchMode) -> list[Any]:
    """Global forward hooks that keep ``mode.module_stack`` -- the submodules of ``f`` being run, outermost first,
    keyed by path (``@n`` from a module's second call on) -- which each node records as ``meta["nn_module_stack"]``
    (fx's symbolic tracer records the same)."""
    from ember.nn import Module
    from ember.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
    paths = {id(m): n for n, m in f.named_modules()} if isinstance(f, Module) else {}
    stack: dict[str, tuple[str, type]] = {}
    calls: dict[str, int] = {}
    keys: list[str] = []
    mode.module_stack = stack

    def enter(module: Any, args: Any) -> None:
        if module is f:
            return
        path = paths.get(id(module), type(module).__name__)
        n = calls.get(path, 0)
        calls[path] = n + 1
        key = f"{path}@{n}" if n else path
        stack[key] = (path, type(module))
        keys.append(key)

    def leave(module: Any, args: Any, output: Any) -> None:
        if module is not f and keys:
            stack.pop(keys.pop(), None)
    return [register_module_forward_pre_hook(enter), register_module_forward_hook(leave)]


def get_isolated_graphmodule(func: Callable[..., Any], args: Any, kwargs: Any,
                             tracing_mode: str = "real") -> GraphModule:
    """The graph of ``func(*args, **kwargs)``, traced apart from any trace in progress."""
    from ember.utils._python_dispatch import _disable_current_modes
    with _disable_current_modes():
        return make_fx(lambda *a: func(*a, **kwargs), tracing_mode=tracing_mode)(*args)

