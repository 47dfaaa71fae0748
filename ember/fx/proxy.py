"""``torch.fx.proxy``: ``Proxy``, the value that records, and ``TracerBase``, what it records into (the tracer of
modules, ``Tracer``, and ``symbolic_trace`` are in ``_symbolic_trace.py``, as in PyTorch).

A ``Proxy`` stands for a value while ``Tracer.trace`` runs a module's ``forward`` once: every operation on it
records a ``Node`` instead of computing. Operators and attribute calls are Proxy's own methods; ember functions
reach it through ``__torch_function__`` (``docs/extending.md``), which records ``call_function`` for functions
and ``call_method`` for Tensor methods; submodules that are leaves (ember's own ``nn`` layers) record
``call_module`` while ``Module.__call__`` is patched, and parameters read as attributes record ``get_attr``.
"""
from __future__ import annotations

import builtins
import dis
import operator
import sys
from typing import Any

from ember.fx.graph import Graph, _BINARY, _UNARY
from ember.fx.immutable_collections import immutable_dict, immutable_list
from ember.fx.node import Node, map_aggregate

__all__ = ["Proxy", "Attribute", "TraceError", "TracerBase", "GraphAppendingTracer", "ParameterProxy"]


class TraceError(ValueError):
    pass


class Proxy:
    """A value of a function being traced; operations on it add nodes to the tracer's graph."""

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
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

    def __init__(self, tracer: TracerBase, node: Node, name: str, param: Any) -> None:
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
class TracerBase:
    """What a Proxy records into: a graph, and how values become node arguments (``create_arg``). ``Tracer``
    (``_symbolic_trace.py``) adds modules, parameters and tensors."""
    graph: Graph
    record_stack_traces = False

    def create_node(self, kind: str, target: Any, args: Any, kwargs: Any, name: str | None = None,
                    type_expr: Any = None) -> Node:
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        if self.record_stack_traces and kind not in ("placeholder", "output"):
            node.stack_trace = _user_stack_trace()
        return node

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                     name: str | None = None, type_expr: Any = None, proxy_factory_fn: Any = None) -> Proxy:
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        module_stack = getattr(self, "module_stack", None)
        if module_stack:
            node.meta["nn_module_stack"] = dict(module_stack)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Any:
        """``a`` as a node argument: proxies become their nodes, containers are rebuilt of converted elements,
        constants stay as they are."""
        import ember
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
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


def _user_stack_trace() -> str:
    """The stack of the code being traced, innermost last, without ember's own frames (``node.stack_trace``)."""
    import os
    import sys
    import traceback
    import ember
    pkg = os.path.dirname(ember.__file__) + os.sep
    modules = pkg + os.path.join("nn", "modules") + os.sep   # a module's forward is where the user's model is
    frames = []
    f = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        if not name.startswith(pkg) or (name.startswith(modules) and f.f_code.co_name == "forward"):
            frames.append((f, f.f_lineno))
        f = f.f_back
    profile = sys.getprofile()      # reading the source lines is not the traced code's doing (Note [Capture])
    sys.setprofile(None)
    try:
        summary = traceback.StackSummary.extract(reversed(frames), lookup_lines=True)
    finally:
        sys.setprofile(profile)
    return "".join(summary.format())


class GraphAppendingTracer(TracerBase):
    """The tracer of a Proxy made over an existing graph's node: new nodes go to that graph."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.module_stack: dict[str, Any] = {}
