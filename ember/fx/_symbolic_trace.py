"""``torch.fx`` symbolic tracing of modules: ``Tracer``, ``symbolic_trace``, ``wrap``, ``PH``
(``torch/fx/_symbolic_trace.py``).

``Tracer.trace`` runs a module's ``forward`` (or a function) once on proxies. Submodules that are leaves (ember's
own ``nn`` layers) record ``call_module`` while ``Module.__call__`` is patched, parameters read as attributes record
``get_attr``, and functions named by ``wrap`` (and those of ``autowrap_modules``, ``math`` by default, that the
traced code's globals name) record ``call_function`` instead of being traced through; the generated code declares
them again with ``wrap("...")`` lines so that tracing it once more keeps them leaves.

``concrete_args`` fixes arguments: a value is traced as that constant (the graph keeps the input and asserts it);
``PH`` marks the parts of a structured argument (a dict, a tuple ...) that stay inputs. Such an argument makes the
graph's code flatten its inputs and rebuild its outputs with pytrees (``_PyTreeCodeGen``).
"""
from __future__ import annotations

import builtins
import functools
import inspect
import math
import sys
import types
from typing import Any, Callable

from ember.fx.graph import Graph, _PyTreeCodeGen, _PyTreeInfo
from ember.fx.node import map_aggregate
from ember.fx.proxy import ParameterProxy, Proxy, TracerBase
from ember.utils import _pytree as pytree

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "PHBase", "PHWithMeta", "is_fx_tracing"]

_wrapped_fns: dict[tuple[int, str], Any] = {}   # (id of module globals, name) -> None, for fx.wrap
_wrapped_globals: dict[int, dict[str, Any]] = {}
_is_fx_tracing_flag = False


def is_fx_tracing() -> bool:
    """Whether ``symbolic_trace`` is running now."""
    return _is_fx_tracing_flag


def is_fx_symbolic_tracing() -> bool:
    return _is_fx_tracing_flag


class PHBase:
    """The object ``PH`` marks an input inside a structured ``concrete_args`` value; a subclass instance's
    attributes are copied onto the placeholder node made for it."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


class PHWithMeta(PHBase):
    """A placeholder marker that carries a key, found again on the node as ``node.ph_key``."""

    def __init__(self, ph_key: str | None = None) -> None:
        super().__init__()
        self.ph_key = ph_key


def _transfer_attrs(fr: Any, to: Any) -> None:
    for name in dir(fr):
        if not name.startswith("__") and not callable(getattr(fr, name)):
            setattr(to, name, getattr(fr, name))


def wrap(fn_or_name: Any) -> Any:
    """Record calls of this module-level function as ``call_function`` leaves instead of tracing through them
    (call it at module scope, with the function or its name)."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise AssertionError("Unsupported type for global function! Must be either a callable or string name")
    if callable(fn_or_name):
        if not hasattr(fn_or_name, "__code__"):
            raise AssertionError("wrap must be called with a function, not a builtin; pass its name instead")
        fn_name = fn_or_name.__code__.co_name
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
    co = fn.__code__
    flags = co.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    code = co.replace(co_argcount=nargs, co_posonlyargcount=0, co_kwonlyargcount=0, co_flags=flags)
    return types.FunctionType(code, fn.__globals__, fn.__name__, None, fn.__closure__)


def _find_proxy(*objects: Any) -> Proxy | None:
    proxy = None

    def find(a: Any) -> Any:
        nonlocal proxy
        if isinstance(a, Proxy):
            proxy = a
        return a
    for o in objects:
        map_aggregate(o, find)
    return proxy


def _leaf_wrapper(orig: Callable[..., Any]) -> Callable[..., Any]:
    """``orig`` as a leaf: called on a proxy it records one ``call_function`` node (marked ``is_wrapped``, which
    makes the generated code declare it with ``wrap``); called on values it runs."""
    @functools.wraps(orig)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            out = proxy.tracer.create_proxy("call_function", orig, args, kwargs)
            out.node.meta["is_wrapped"] = True
            return out
        return orig(*args, **kwargs)
    return wrapped


class _GlobalsPatcher:
    """Replaces names in module globals for the length of a trace and puts everything back after."""

    def __init__(self) -> None:
        self._undo: list[tuple[dict[str, Any], str, bool, Any]] = []
        self._seen: set[tuple[int, str]] = set()

    def patch(self, g: dict[str, Any], name: str, new: Any) -> None:
        if (id(g), name) in self._seen:
            return
        self._seen.add((id(g), name))
        self._undo.append((g, name, name in g, g.get(name)))
        g[name] = new

    def restore(self) -> None:
        for g, name, had, old in reversed(self._undo):
            if had:
                g[name] = old
            else:
                g.pop(name, None)
        self._undo.clear()
        self._seen.clear()


class Tracer(TracerBase):
    """Runs a module's ``forward`` (or a function) once on proxies and records the graph (``trace``). Subclass
    and override ``is_leaf_module`` / ``create_proxy`` / ``create_arg`` to change what is recorded."""

    def __init__(self, autowrap_modules: tuple[Any, ...] = (math,), autowrap_functions: tuple[Any, ...] = (),
                 param_shapes_constant: bool = False) -> None:
        super().__init__()
        self.autowrap_modules = autowrap_modules
        self.autowrap_functions = autowrap_functions
        # the functions of the autowrap modules and the autowrap functions, by identity
        self._autowrap_function_ids = {id(v) for m in autowrap_modules for k, v in m.__dict__.items()
                                       if not k.startswith("_") and callable(v)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.graph: Graph = Graph()
        self.root: Any = None
        self.tensor_attrs: dict[Any, str] = {}
        self.module_stack: dict[str, Any] = {}
        self.num_calls: dict[str, int] = {}
        self.node_name_to_scope: dict[str, tuple[str, type]] = {}
        self._patcher: _GlobalsPatcher | None = None

    # -- what is recorded -------------------------------------------------------------------------------------
    def create_arg(self, a: Any) -> Any:
        """``a`` as a node argument: a parameter or buffer of the root becomes a get_attr, any other tensor a
        constant attribute of the traced module (``_tensor_constant0``); the rest as ``TracerBase`` has it."""
        import ember
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
        return super().create_arg(a)

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

    # -- the inputs -------------------------------------------------------------------------------------------
    def create_args_for_root(self, root_fn: Callable[..., Any], is_module: bool,
                             concrete_args: dict[str, Any] | tuple[Any, ...] | None = None
                             ) -> tuple[Callable[..., Any], list[Any]]:
        """One placeholder per parameter of ``root_fn`` (in the order of its code: positional, keyword-only,
        ``*args``, ``**kwargs``), or the ``concrete_args`` value with each ``PH`` in it made a placeholder. When a
        structured value stays, the function returned takes the flat leaves (see the module docstring)."""
        fn_for_analysis = inspect.unwrap(root_fn)
        co = fn_for_analysis.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        orig_args = list(co.co_varnames)
        names = iter(co.co_varnames)
        args: list[Any] = []
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            next(names)
            args.append(self.root)
        sig = inspect.signature(fn_for_analysis)
        varstuff = bool(co.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS))
        if isinstance(concrete_args, tuple) and concrete_args and varstuff and total_args == 1:
            # f(*args) traced with a tuple: one input per element
            for i, value in enumerate(concrete_args):
                out = self.create_proxy("placeholder", f"input_{i}", (), {})
                if isinstance(value, PHBase) and value is not PH:
                    _transfer_attrs(value, out.node)
                args.append(out)
            return root_fn, args
        arg_names = [next(names) for _ in range(1 if is_module else 0, total_args)]
        if isinstance(concrete_args, tuple):
            if len(arg_names) != len(concrete_args):
                raise RuntimeError(f"Tracing expected {len(arg_names)} arguments but got {len(concrete_args)} "
                                   "concrete arguments")
            concrete_args = dict(zip(arg_names, concrete_args))
        concrete = concrete_args or {}
        args.extend(self._proxy_placeholder(n, concrete, sig, fn_for_analysis) for n in arg_names)
        if co.co_kwonlyargcount > 0 or varstuff:
            if co.co_flags & inspect.CO_VARARGS:
                args.append(self._proxy_placeholder("*" + next(names), concrete, sig, fn_for_analysis))
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(self._proxy_placeholder("**" + next(names), concrete, sig, fn_for_analysis))
            root_fn = _patch_function(root_fn, len(args))

        flat_args, in_spec = pytree.tree_flatten(tuple(args))
        if all(c.is_leaf() for c in in_spec.children_specs):
            return root_fn, args
        codegen = _PyTreeCodeGen(_PyTreeInfo(orig_args[:total_args], in_spec, None))
        self.graph._codegen = codegen

        def flatten_fn(*flat: Any):  # type: ignore[no-untyped-def]  (no return annotation: none in the code)
            out_leaves, out_spec = pytree.tree_flatten(root_fn(*pytree.tree_unflatten(list(flat), in_spec)))
            codegen.pytree_info = codegen.pytree_info._replace(out_spec=out_spec)
            return out_leaves
        return flatten_fn, flat_args

    def _proxy_placeholder(self, name: str, concrete_args: dict[str, Any], sig: inspect.Signature,
                           fn_for_analysis: Callable[..., Any]) -> Any:
        import ember
        if name in concrete_args:
            count = 0
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)

            def replace_ph(x: Any) -> Any:
                # every leaf of the concrete value gets an input; a PH leaf stays one, any other is checked
                nonlocal count
                count += 1
                out = self.create_proxy("placeholder", f"{name}_{count}", default, {})
                if isinstance(x, PHBase):
                    if x is not PH:
                        _transfer_attrs(x, out.node)
                    return out
                if type(x) in (bool, int, float, str, complex):
                    ember._assert(out == x, f"{name} has been specialized to have value {x} but got another value")
                elif x is None:
                    self.create_proxy("call_function", _assert_is_none,
                                      (out, f"{name} has been specialized to have value None but got another value"),
                                      {})
                else:
                    import warnings
                    warnings.warn(f"Was not able to add assertion to guarantee correct input {name} to specialized "
                                  "function. It is up to the user to make sure that your inputs match the inputs you "
                                  "specialize the function with.")
                return x
            return pytree.tree_map(replace_ph, concrete_args[name])
        if name[0] == "*":
            default = ()
        else:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
        return self.create_proxy("placeholder", name, default, {},
                                 type_expr=getattr(fn_for_analysis, "__annotations__", {}).get(name))

    # -- tracing ----------------------------------------------------------------------------------------------
    def _autowrap(self, fn_globals: dict[str, Any]) -> None:
        """Make the autowrap functions that these globals name leaves while tracing."""
        assert self._patcher is not None
        if not self._autowrap_function_ids:
            return
        for name, value in list(fn_globals.items()):
            if not name.startswith("_") and callable(value) and id(value) in self._autowrap_function_ids:
                self._patcher.patch(fn_globals, name, _leaf_wrapper(value))

    def trace(self, root: Any, concrete_args: dict[str, Any] | tuple[Any, ...] | None = None) -> Graph:
        """The graph of ``root`` (a Module: its ``forward``; or a function)."""
        import ember
        global _is_fx_tracing_flag
        if isinstance(root, ember.nn.Module):
            self.root = root
            fn = type(root).forward
        else:
            self.root = ember.nn.Module()
            fn = root
        fn_globals = getattr(inspect.unwrap(fn), "__globals__", {})
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
            tracer._autowrap(getattr(getattr(mod, "forward", mod), "__globals__", {}))
            return tracer.call_module(mod, forward, args, kwargs)

        def module_getattr_wrapper(mod: Any, attr: str) -> Any:
            return tracer.getattr(attr, orig_getattr(mod, attr), parameter_proxy_cache)

        self._patcher = _GlobalsPatcher()
        for (gid, name) in list(_wrapped_fns):
            g = _wrapped_globals[gid]
            orig = g.get(name, getattr(builtins, name, None))
            if orig is not None:
                self._patcher.patch(g, name, _leaf_wrapper(orig))
        self._autowrap(fn_globals)
        Module.__call__ = module_call_wrapper  # type: ignore[method-assign]
        Module.__getattr__ = module_getattr_wrapper  # type: ignore[method-assign]
        was_tracing, _is_fx_tracing_flag = _is_fx_tracing_flag, True
        try:
            result = fn(*args)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=getattr(inspect.unwrap(fn), "__annotations__", {}).get("return"))
        finally:
            _is_fx_tracing_flag = was_tracing
            Module.__call__ = orig_call  # type: ignore[method-assign]
            Module.__getattr__ = orig_getattr  # type: ignore[method-assign]
            self._patcher.restore()
            self._patcher = None
        return self.graph


def _assert_is_none(value: Any, msg: str) -> None:
    assert value is None, msg


def symbolic_trace(root: Any, concrete_args: dict[str, Any] | tuple[Any, ...] | None = None) -> Any:
    """Trace ``root`` (a Module or a function) into a ``GraphModule``."""
    import ember
    from ember.fx.graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, ember.nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
