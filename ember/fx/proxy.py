"""``torch.fx`` symbolic tracing: ``Proxy``, ``Tracer``, ``symbolic_trace``, ``wrap`` (``torch/fx/proxy.py`` and
``_symbolic_trace.py``).

A ``Proxy`` stands for a value while ``Tracer.trace`` runs a module's ``forward`` once: every operation on it
records a ``Node`` instead of computing. Operators and attribute calls are Proxy's own methods; ember functions
reach it through ``__torch_function__`` (``docs/extending.md``), which records ``call_function`` for functions
and ``call_method`` for Tensor methods; submodules that are leaves (ember's own ``nn`` layers) record
``call_module`` while ``Module.__call__`` is patched, and parameters read as attributes record ``get_attr``.
"""
from __future__ import annotations

import builtins
import dis
import inspect
import math
import operator
import sys
from typing import Any, Callable

from ember.fx.graph import Graph, _BINARY, _UNARY
from ember.fx.immutable_collections import immutable_dict, immutable_list
from ember.fx.node import Node, map_aggregate

__all__ = ["Proxy", "Attribute", "TraceError", "Tracer", "symbolic_trace", "wrap", "ParameterProxy"]


class TraceError(ValueError):
    pass


class Proxy:
    """A value of a function being traced; operations on it add nodes to the tracer's graph."""

    def __init__(self, node: Node, tracer: Tracer | None = None) -> None:
        self.tracer = tracer if tracer is not None else GraphAppendingTracer(node.graph)
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        return Attribute(self, k)

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__

    def __deepcopy__(self, memo: Any) -> Any:
        raise TraceError("Proxy objects cannot be deep-copied while tracing")

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self) -> Any:
        # ``a, b = proxy`` is the one iteration that can be traced: the caller's instruction is UNPACK_SEQUENCE
        frame = sys._getframe(1)
        inst = next((i for i in dis.get_instructions(frame.f_code) if i.offset == frame.f_lasti), None)
        if inst is not None and inst.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(inst.argval))  # type: ignore[index]
        return self.tracer.iter(self)

    def __abs__(self) -> Proxy:
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def keys(self) -> Any:
        return self.tracer.keys(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")

    @classmethod
    def __torch_function__(cls, orig_method: Any, types: Any, args: Any = None, kwargs: Any = None) -> Any:
        args = args if args else ()
        kwargs = kwargs if kwargs else {}
        tracers: dict[Any, None] = {}

        def find_tracer(a: Any) -> Any:
            if isinstance(a, cls):
                tracers[a.tracer] = None
            return a
        map_aggregate(args, find_tracer)
        map_aggregate(kwargs, find_tracer)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {list(tracers.keys())} while trying to trace "
                               f"operations {orig_method}")
        tracer = next(iter(tracers))
        from ember.overrides import is_tensor_method_or_property
        if is_tensor_method_or_property(orig_method):
            return tracer.create_proxy("call_method", orig_method.__name__, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs,
                                   name=tracer.graph._target_to_str(orig_method.__name__))


class Attribute(Proxy):
    """``proxy.attr``: recorded as a method call when called, as ``getattr`` when used as a value."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:  # type: ignore[override]
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", builtins.getattr, (self.root, self.attr),
                                                  {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """A parameter read while tracing: a proxy that also answers its shape, size and dim from the parameter."""

    def __init__(self, tracer: Tracer, node: Node, name: str, param: Any) -> None:
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self) -> Any:
        return self.param.shape

    def size(self, dim: Any = None) -> Any:
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


def _install_magic_methods() -> None:
    for name in list(_BINARY) + list(_UNARY):
        fn = getattr(operator, name)
        dunder = name.rstrip("_")

        def impl(*args: Any, _fn: Any = fn) -> Proxy:
            return args[0].tracer.create_proxy("call_function", _fn, args, {})
        setattr(Proxy, f"__{dunder}__", impl)
        if name in _BINARY and name not in ("eq", "ne", "lt", "gt", "le", "ge"):
            def rimpl(self: Proxy, rhs: Any, _fn: Any = fn) -> Proxy:
                return self.tracer.create_proxy("call_function", _fn, (rhs, self), {})
            setattr(Proxy, f"__r{dunder}__", rimpl)
    Proxy.__getitem__ = lambda self, k: self.tracer.create_proxy(  # type: ignore[method-assign]
        "call_function", operator.getitem, (self, k), {})
    Proxy.__truediv__.__name__ = "__truediv__"


_install_magic_methods()


# ------------------------------------------------------------------------------------------------ tracers
_wrapped_fns: dict[tuple[int, str], Any] = {}   # (id of module globals, name) -> globals, for fx.wrap
_wrapped_globals: dict[int, dict[str, Any]] = {}


def wrap(fn_or_name: Any) -> Any:
    """Record calls of this module-level function as ``call_function`` leaves instead of tracing through them
    (call it at module scope, with the function or its name)."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or string name")
    if callable(fn_or_name):
        fn_name = fn_or_name.__name__
    else:
        fn_name = fn_or_name
    frame = sys._getframe(1)
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    g = frame.f_globals
    _wrapped_fns[(id(g), fn_name)] = None
    _wrapped_globals[id(g)] = g
    return fn_or_name


def _patch_function(fn: Callable[..., Any], nargs: int) -> Callable[..., Any]:
    """``fn`` rewritten to take its keyword-only, ``*args`` and ``**kwargs`` parameters positionally, one value
    each (what PyTorch's tracer does, so that one proxy can stand for the whole ``*args`` tuple)."""
    import types
    co = fn.__code__
    flags = co.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    code = co.replace(co_argcount=nargs, co_posonlyargcount=0, co_kwonlyargcount=0, co_flags=flags)
    return types.FunctionType(code, fn.__globals__, fn.__name__, None, fn.__closure__)


class Tracer:
    """Runs a module's ``forward`` (or a function) once on proxies and records the graph (``trace``). Subclass
    and override ``is_leaf_module`` / ``create_proxy`` / ``create_arg`` to change what is recorded."""

    def __init__(self, autowrap_modules: tuple[Any, ...] = (math,), autowrap_functions: tuple[Any, ...] = (),
                 param_shapes_constant: bool = False) -> None:
        self.autowrap_modules = autowrap_modules
        self.autowrap_functions = autowrap_functions
        self.param_shapes_constant = param_shapes_constant
        self.graph: Graph = Graph()
        self.root: Any = None
        self.tensor_attrs: dict[Any, str] = {}
        self.module_stack: dict[str, Any] = {}
        self.num_calls: dict[str, int] = {}
        self.node_name_to_scope: dict[str, tuple[str, type]] = {}

    # -- what is recorded -------------------------------------------------------------------------------------
    def create_node(self, kind: str, target: Any, args: Any, kwargs: Any, name: str | None = None,
                    type_expr: Any = None) -> Node:
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                     name: str | None = None, type_expr: Any = None, proxy_factory_fn: Any = None) -> Proxy:
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        if self.module_stack:
            node.meta["nn_module_stack"] = dict(self.module_stack)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Any:
        """``a`` as a node argument: proxies become their nodes, a parameter or buffer of the root a get_attr, any
        other tensor a constant attribute of the traced module (``_tensor_constant0``)."""
        import ember
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, ember.nn.Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, ember.Tensor):
            for n_, p_ in self.root.named_buffers():
                if a is p_:
                    return self.create_node("get_attr", n_, (), {})
            qualname = self.tensor_attrs.get(a)
            if qualname is None:
                i = 0
                while True:
                    qualname = f"_tensor_constant{i}"
                    if not hasattr(self.root, qualname):
                        break
                    i += 1
                self.tensor_attrs[a] = qualname
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, ember.nn.Module):
            raise RuntimeError(f"Unsupported node type: {a!r} (a module passed as an argument)")
        if isinstance(a, tuple):
            t = tuple(self.create_arg(e) for e in a)
            return type(a)(*t) if hasattr(a, "_fields") else t
        if isinstance(a, list):
            return immutable_list(self.create_arg(e) for e in a)
        if isinstance(a, dict):
            out = immutable_dict()
            for k, v in a.items():
                if not isinstance(k, str):
                    raise NotImplementedError(f"dictionaries with non-string keys: {a}")
                dict.__setitem__(out, k, self.create_arg(v))
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if a is None or isinstance(a, (str, int, float, bool, complex, type(Ellipsis), ember.dtype,
                                       ember.device, ember.memory_format, ember.layout)):
            return a
        if callable(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy) -> Any:
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop "
                         "or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for a "
                         "more detailed explanation of what types of control flow can be traced, and check out "
                         "the Proxy docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy) -> Any:
        return Attribute(obj, "keys")()

    def is_leaf_module(self, m: Any, module_qualified_name: str) -> bool:
        """ember's (PyTorch's) own layers are leaves, recorded as call_module; Sequential and user modules are
        traced through."""
        import ember
        module = type(m).__module__
        return (module.startswith("ember.nn") or module.startswith("torch.nn") or
                module.startswith("ember.ao.nn")) and not isinstance(m, ember.nn.Sequential)

    def path_of_module(self, mod: Any) -> str:
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(self, m: Any, forward: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A leaf module becomes one call_module node; any other is traced through. Either way the module is on
        ``module_stack`` meanwhile (key: its path, ``@n`` from its second call on), which every node made inside
        records as ``meta["nn_module_stack"]``."""
        module_qualified_name = self.path_of_module(m)
        calls = self.num_calls.get(module_qualified_name, 0)
        key = f"{module_qualified_name}@{calls}" if calls else module_qualified_name
        self.module_stack[key] = (module_qualified_name, type(m))
        self.num_calls[module_qualified_name] = calls + 1
        try:
            if not self.is_leaf_module(m, module_qualified_name):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", module_qualified_name, args, kwargs)
        finally:
            self.module_stack.pop(key, None)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        import ember
        if isinstance(attr_val, ember.nn.Parameter):
            for n, p in self.root.named_parameters():
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        if self.param_shapes_constant:
                            parameter_proxy_cache[n] = self.create_proxy(
                                "get_attr", n, (), {}, proxy_factory_fn=lambda node, n=n, p=p: ParameterProxy(
                                    self, node, n, p))
                        else:
                            parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {})
                    return parameter_proxy_cache[n]
        return attr_val

    # -- tracing ----------------------------------------------------------------------------------------------
    def create_args_for_root(self, root_fn: Callable[..., Any], is_module: bool,
                             concrete_args: dict[str, Any] | None) -> tuple[Callable[..., Any], list[Any]]:
        sig = inspect.signature(root_fn)
        params = list(sig.parameters.values())
        if is_module:
            params = params[1:]
        concrete_args = dict(concrete_args or {})
        args: list[Any] = [self.root] if is_module else []
        # in the order of the code's local variables: positional, keyword-only, *args, **kwargs
        P = inspect.Parameter
        order = {P.POSITIONAL_ONLY: 0, P.POSITIONAL_OR_KEYWORD: 0, P.KEYWORD_ONLY: 1, P.VAR_POSITIONAL: 2,
                 P.VAR_KEYWORD: 3}
        params.sort(key=lambda q: order[q.kind])
        varstuff = any(q.kind in (q.VAR_POSITIONAL, q.VAR_KEYWORD, q.KEYWORD_ONLY) for q in params)
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                # one proxy stands for the whole tuple / dict (``args[0]`` and ``kwargs["k"]`` become getitem nodes)
                stars = "*" if p.kind == p.VAR_POSITIONAL else "**"
                args.append(self.create_proxy("placeholder", stars + p.name, (), {}))
                continue
            if p.name in concrete_args:
                args.append(self._specialize(p, concrete_args[p.name]))
                continue
            default = p.default
            args.append(self.create_proxy("placeholder", p.name, () if default is inspect.Parameter.empty
                                          else (default,), {}, name=p.name))
        if varstuff:
            root_fn = _patch_function(root_fn, len(args))
        return root_fn, args

    def _specialize(self, p: inspect.Parameter, value: Any) -> Any:
        """A concrete argument: still an input of the graph (``<name>_1``), checked to equal the value traced
        with (``torch._assert``), the value itself used while tracing."""
        import ember
        import warnings
        default = () if p.default is inspect.Parameter.empty else (p.default,)
        out = self.create_proxy("placeholder", f"{p.name}_1", default, {})
        if type(value) in (bool, int, float, str, complex):
            ember._assert(out == value, f"{p.name} has been specialized to have value {value} but got another "
                                        "value")
        elif value is None:
            self.create_proxy("call_function", _assert_is_none,
                              (out, f"{p.name} has been specialized to have value None but got another value"), {})
        else:
            warnings.warn(f"Was not able to add assertion to guarantee correct input {p.name} to specialized "
                          "function. It is up to the user to make sure that your inputs match the inputs you "
                          "specialize the function with.")
        return value

    def trace(self, root: Any, concrete_args: dict[str, Any] | None = None) -> Graph:
        """The graph of ``root`` (a Module: its ``forward``; or a function)."""
        import ember
        if isinstance(root, ember.nn.Module):
            self.root = root
            fn = type(root).forward
        else:
            self.root = ember.nn.Module()
            fn = root
        self.graph = Graph(tracer_cls=type(self))
        self.module_stack, self.num_calls = {}, {}
        self.tensor_attrs = {}
        fn, args = self.create_args_for_root(fn, isinstance(root, ember.nn.Module), concrete_args)
        parameter_proxy_cache: dict[str, Any] = {}
        Module = ember.nn.Module
        orig_call, orig_getattr = Module.__call__, Module.__getattr__
        tracer = self

        def module_call_wrapper(mod: Any, *args: Any, **kwargs: Any) -> Any:
            def forward(*args: Any, **kwargs: Any) -> Any:
                return orig_call(mod, *args, **kwargs)
            return tracer.call_module(mod, forward, args, kwargs)

        def module_getattr_wrapper(mod: Any, attr: str) -> Any:
            return tracer.getattr(attr, orig_getattr(mod, attr), parameter_proxy_cache)

        patched = []
        for (gid, name) in list(_wrapped_fns):
            g = _wrapped_globals[gid]
            orig = g.get(name, getattr(builtins, name, None))
            if orig is not None:
                patched.append((g, name, name in g, g.get(name)))
                g[name] = _leaf_wrapper(orig)
        Module.__call__ = module_call_wrapper  # type: ignore[method-assign]
        Module.__getattr__ = module_getattr_wrapper  # type: ignore[method-assign]
        try:
            result = fn(*args)
            self.create_node("output", "output", (self.create_arg(result),), {})
        finally:
            Module.__call__ = orig_call  # type: ignore[method-assign]
            Module.__getattr__ = orig_getattr  # type: ignore[method-assign]
            for g, name, had, old in reversed(patched):
                if had:
                    g[name] = old
                else:
                    del g[name]
        return self.graph


def _assert_is_none(value: Any, msg: str) -> None:
    assert value is None, msg


def _leaf_wrapper(orig: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        proxy = None

        def find(a: Any) -> Any:
            nonlocal proxy
            if isinstance(a, Proxy):
                proxy = a
            return a
        map_aggregate(args, find)
        map_aggregate(kwargs, find)
        if proxy is not None:
            return proxy.tracer.create_proxy("call_function", orig, args, kwargs)
        return orig(*args, **kwargs)
    wrapped.__name__ = getattr(orig, "__name__", "wrapped")
    return wrapped


class GraphAppendingTracer(Tracer):
    """The tracer of a Proxy made over an existing graph's node: new nodes go to that graph."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph


def symbolic_trace(root: Any, concrete_args: dict[str, Any] | None = None) -> Any:
    """Trace ``root`` (a Module or a function) into a ``GraphModule``."""
    import ember
    from ember.fx.graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, ember.nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
