"""``ember.library`` (``torch/library.py``): operators defined in Python by users and libraries, on the dispatcher.

Note [Library operators]
An operator defined here is an operator of the dispatcher like ``aten::add``: ``Library(ns, "DEF").define(schema)``
gives it an ``OperatorHandle`` in namespace ``ns`` and an ``OpOverload`` reachable as ``ember.ops.<ns>.<name>``,
whose calls parse their arguments against the schema and dispatch on the tensors' keys. What the library then
registers fills the kernel table:

- ``impl(name, fn, "CPU" | "CUDA" | "Meta" | "CompositeExplicitAutograd" | "CompositeImplicitAutograd" |
  "Autograd" | "AutocastCPU" | ...)``: ``fn`` for that key, called with the operator's arguments (backend kernels
  run with the autograd keys excluded, as PyTorch's do, so the operators they call record nothing);
- ``register_fake(op, fn)``: the Meta kernel, which fake tensors, ``make_fx`` and ``ember.compile`` run (a fake
  function asking ``get_ctx()`` for a data-dependent size stops a trace as ``nonzero`` does);
- ``register_autograd(op, backward, setup_context=)``: the ``Autograd`` kernel: one node of the graph per call,
  whose backward is ``backward``;
- ``register_kernel(op, "cpu" | "cuda" | None, fn)``: a backend kernel by device type.

``custom_op("ns::name", fn, mutates_args=...)`` does all of this at once from ``fn``'s annotations (the schema comes
from ``infer_schema``) and returns a ``CustomOpDef`` whose ``register_*`` methods are the functions above.

A library that ships compiled operators (torchvision's ``_C.so``) loads them with ``ember.ops.load_library``;
ember cannot run a libtorch binary, so it registers its own definitions of those operators instead
(``ember/extensions``, ``docs/ecosystem.md``) and the library's Python registrations run on top of them.
"""
from __future__ import annotations

import inspect
import threading
import typing
from typing import Any, Callable

from ember._ops import FunctionSchema, OpOverload, OpOverloadPacket, library_overloads, register_library_op
from ember.aten.dispatcher import FALLTHROUGH, Dispatcher, ExcludeDispatchKeyGuard, OperatorHandle, keys_below
from ember.c10 import forward_mode as _fw
from ember.c10.dispatch_key import AUTOGRAD_MASK, DispatchKey, DispatchKeySet

__all__ = ["custom_op", "register_fake", "register_kernel", "register_autograd", "Library", "define", "impl",
           "CustomOpDef", "get_ctx", "opcheck", "fallthrough_kernel", "register_torch_dispatch",
           "register_vmap", "infer_schema", "register_autocast"]

_reserved_namespaces = ("prim",)
_DEF_NAMESPACES = {"aten"}      # namespaces a "DEF" library holds (aten: ember's operator library)
_BELOW_AUTOGRAD = keys_below(DispatchKey.ADInplaceOrView)
_AUTOGRAD_AND_VIEW = DispatchKeySet(AUTOGRAD_MASK | 1 << DispatchKey.ADInplaceOrView)
# the dispatch keys of backend kernels: they run below autograd
_BACKEND_KEYS = frozenset({DispatchKey.CPU, DispatchKey.CUDA, DispatchKey.Meta, DispatchKey.QuantizedCPU,
                           DispatchKey.QuantizedCUDA, DispatchKey.CompositeExplicitAutograd,
                           DispatchKey.CompositeExplicitAutogradNonFunctional, DispatchKey.XPU, DispatchKey.MPS,
                           DispatchKey.PrivateUse1})
_DEVICE_KEYS = {"cpu": DispatchKey.CPU, "cuda": DispatchKey.CUDA, "meta": DispatchKey.Meta, "xpu": DispatchKey.XPU,
                "mps": DispatchKey.MPS, None: DispatchKey.CompositeExplicitAutograd,
                "default": DispatchKey.CompositeExplicitAutograd}


def fallthrough_kernel() -> None:
    """A kernel that lets the dispatcher go on to the next key (a marker for ``Library.impl``)."""


# ----------------------------------------------------------------------------------------------- lookups
def _qualname(name: str) -> tuple[str, str]:
    if "::" not in name:
        raise ValueError(f"Expected `name` to be of the form \"namespace::op_name\", but got {name!r}")
    ns, op = name.split("::", 1)
    return ns, op


def _handle(op: Any) -> OperatorHandle:
    """The operator handle of ``op``: an ``OpOverload``, a ``CustomOpDef``, or a name ``"ns::name[.overload]"``."""
    if isinstance(op, CustomOpDef):
        return op._opoverload.handle      # type: ignore[no-any-return]
    if isinstance(op, OpOverload):
        return op.handle                  # type: ignore[no-any-return]
    if isinstance(op, OpOverloadPacket):
        return op._overloads[0].handle    # type: ignore[no-any-return]
    if not isinstance(op, str):
        raise ValueError(f"register: expected an operator or its name \"namespace::op_name\", got {op!r}")
    ns, name = _qualname(op)
    base, _, overload = name.partition(".")
    h = Dispatcher.ops.get(f"{ns}::{base}" + ("" if overload in ("", "default") else f".{overload}"))
    if h is None:
        raise RuntimeError(f"operator {ns}::{name} does not exist")
    return h


def _kernel_of(fn: Callable[..., Any], key: DispatchKey, with_keyset: bool = False) -> Callable[..., Any]:
    """A dispatcher kernel ``(ks, *args)`` calling the Python function ``fn(*args)``."""
    if with_keyset:
        def kernel(ks: int, *args: Any) -> Any:
            return fn(DispatchKeySet(ks), *args)
    elif key in _BACKEND_KEYS:
        def kernel(ks: int, *args: Any) -> Any:
            with ExcludeDispatchKeyGuard(_AUTOGRAD_AND_VIEW):
                return fn(*args)
    else:
        def kernel(ks: int, *args: Any) -> Any:
            return fn(*args)
    kernel.__qualname__ = kernel.__name__ = getattr(fn, "__qualname__", "python_kernel")
    kernel.__wrapped__ = fn   # type: ignore[attr-defined]
    return kernel


def _register(h: OperatorHandle, key: DispatchKey, fn: Callable[..., Any], with_keyset: bool = False) -> None:
    h.register(key, FALLTHROUGH if fn is fallthrough_kernel else _kernel_of(fn, key, with_keyset))


def _dispatch_key(name: str) -> DispatchKey:
    try:
        return DispatchKey[name]
    except KeyError:
        raise RuntimeError(f"Invalid dispatch key: {name}") from None


# ----------------------------------------------------------------------------------------------- fake kernels
class _FakeCtx(threading.local):
    """Where ``get_ctx()`` finds the context of the fake function running now."""

    def __init__(self) -> None:
        self.current: Any = None


_fake_ctx = _FakeCtx()


class FakeImplCtx:
    """What a fake function's ``get_ctx()`` returns (``torch._library.fake_impl.FakeImplCtx``).

    ember's fake tensors have no symbolic sizes, so an output whose size depends on the data (``nms``'s) cannot be
    described: asking for one stops a trace as ``nonzero`` does (``DynamicOutputShapeException``), and on plain meta
    tensors it is PyTorch's error."""

    def __init__(self, qualname: str, func: Any) -> None:
        self._qualname, self._func = qualname, func

    def new_dynamic_size(self, *, min: int = 0, max: int | None = None) -> int:  # noqa: A002
        from ember._subclasses.fake_tensor import DynamicOutputShapeException, in_fake_dispatch
        if in_fake_dispatch():
            raise DynamicOutputShapeException(self._func)
        raise RuntimeError(f"{self._qualname}: You're trying to run this operator with meta Tensors (as opposed to "
                           "FakeTensors), but this operator may return an output Tensor with data-dependent shape. "
                           "Meta Tensors don't support operators with outputs that have data-dependent shapes but "
                           "FakeTensors do. If your operator does not return an output with data-dependent shape, "
                           "make sure the FakeTensor and/or meta kernel does not call torch.library.get_ctx(). "
                           "Otherwise, please use FakeTensors.")

    create_unbacked_symint = new_dynamic_size


def get_ctx() -> FakeImplCtx:
    """The context of the fake function being run (for ``ctx.new_dynamic_size()``)."""
    ctx = _fake_ctx.current
    if ctx is None:
        raise RuntimeError("get_ctx() called outside of a fake / abstract implementation")
    return ctx  # type: ignore[no-any-return]


def _register_fake_kernel(h: OperatorHandle, fn: Callable[..., Any]) -> None:
    """Make ``fn`` the Meta kernel of ``h``, with ``get_ctx()`` answering while it runs."""
    from ember._ops import overload_of

    def fake_kernel(*args: Any) -> Any:
        prev = _fake_ctx.current
        _fake_ctx.current = FakeImplCtx(h.qualified_name, overload_of(h))
        try:
            return fn(*args)
        finally:
            _fake_ctx.current = prev
    fake_kernel.__qualname__ = getattr(fn, "__qualname__", "fake_kernel")
    _register(h, DispatchKey.Meta, fake_kernel)


# ----------------------------------------------------------------------------------------------- autograd kernels
class _AutogradInfo:
    """What ``register_autograd`` gave an operator (replaced in place when registered again)."""

    def __init__(self, backward: Callable[..., Any] | None = None,
                 setup_context: Callable[..., Any] | None = None) -> None:
        self.backward, self.setup_context = backward, setup_context


def _autograd_function(h: OperatorHandle, info: _AutogradInfo) -> Any:
    """The ``autograd.Function`` one call of ``h`` becomes a node of (PyTorch names it
    ``GeneratedBackwardFor_<ns>_<name>_<overload>``)."""
    from ember._tensor import Tensor
    from ember.autograd.function import Function

    def forward(ctx: Any, ks: int, *args: Any) -> Any:
        out = h.redispatch(ks, *args)
        outs = out if isinstance(out, tuple) else (out,)
        ctx.mark_non_differentiable(*[o for o in outs if isinstance(o, Tensor)
                                      and not (o.dtype.is_floating_point or o.dtype.is_complex)])
        if info.setup_context is not None:
            info.setup_context(ctx, args, out)
        ctx._n_args = len(args)
        return out

    def backward(ctx: Any, *grads: Any) -> Any:
        if info.backward is None:
            raise RuntimeError(f"Autograd has not been implemented for operator {h.qualified_name}. Please register "
                               "an autograd formula for it with ember.library.register_autograd"
                               f"(\"{h.qualified_name}\", ...).")
        r = info.backward(ctx, *grads)
        r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
        if len(r) != ctx._n_args:
            raise RuntimeError(f"{h.qualified_name}: the backward returned {len(r)} gradients, expected "
                               f"{ctx._n_args} (one per input, None for non-Tensor inputs)")
        return (None,) + r

    name = f"GeneratedBackwardFor_{h.namespace}_{h.name}_{h.overload_name or 'default'}"
    return type(name, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})


def _register_autograd_kernel(h: OperatorHandle, info: _AutogradInfo) -> None:
    from ember._tensor import Tensor
    fn = _autograd_function(h, info)

    def autograd_kernel(ks: int, *args: Any) -> Any:
        below = ks & _BELOW_AUTOGRAD
        if _fw.may_differentiate(*[a for a in args if isinstance(a, Tensor)]):
            return fn.apply(below, *args)
        return h.redispatch(below, *args)
    autograd_kernel.__qualname__ = f"autograd[{h.qualified_name}]"
    autograd_kernel.only_for_grad = True  # type: ignore[attr-defined]  # Note [Kernel resolution] in aten/dispatcher.py
    h.register(DispatchKey.Autograd, autograd_kernel)


# ----------------------------------------------------------------------------------------------- Library
class Library:
    """A namespace of operators: ``define`` declares one from its schema, ``impl`` gives it a kernel for a
    dispatch key ("CPU", "CUDA", "Meta", "CompositeImplicitAutograd", "Autograd", "AutocastCPU", ...).

    ``kind`` is ``"DEF"`` (the namespace's definitions), ``"FRAGMENT"`` (more definitions) or ``"IMPL"`` (kernels
    for operators defined elsewhere, under ``dispatch_key`` unless ``impl`` names one)."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError("Unsupported kind: ", kind)
        if ns in _reserved_namespaces and kind in ("DEF", "FRAGMENT"):
            raise ValueError(ns, " is a reserved namespace. Please try creating a library with another name.")
        if kind == "DEF":
            if ns in _DEF_NAMESPACES:
                raise RuntimeError(
                    f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please put all of your "
                    "definitions in a single TORCH_LIBRARY block.  If you were trying to specify implementations, "
                    "consider using TORCH_LIBRARY_IMPL (which can be duplicated).  If you really intended to define "
                    "operators for a single namespace in a distributed way, you can use TORCH_LIBRARY_FRAGMENT to "
                    "explicitly indicate this.")
            _DEF_NAMESPACES.add(ns)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._op_defs: list[OperatorHandle] = []
        self._registrations: list[tuple[OperatorHandle, DispatchKey, Any]] = []

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema: str, alias_analysis: str = "", *, tags: Any = ()) -> str:
        """Declare an operator of this namespace, ``"name[.overload](args) -> returns"``; returns its name."""
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        name = schema.split("(", 1)[0].strip()
        if "::" in name:
            ns, name = _qualname(name)
            schema = schema.split("::", 1)[1]
        qual = f"{self.ns}::{name}"
        if qual in Dispatcher.ops:
            raise RuntimeError(f"Tried to register an operator ({self.ns}::{schema}) with the same name and overload "
                               "name multiple times. Each overload's schema should only be registered with a single "
                               "call to def().")
        parsed = FunctionSchema(schema, self.ns)
        out_arity = sum(1 for a in parsed.arguments if a.is_out)
        h = Dispatcher.define(schema, out_arity, namespace=self.ns)
        register_library_op(h)
        self._op_defs.append(h)
        return name.split(".")[0]

    def impl(self, op_name: Any, fn: Callable[..., Any], dispatch_key: str = "", *, with_keyset: bool = False,
             allow_override: bool = False) -> None:
        """Register ``fn`` as the kernel of ``op_name`` (a name of this namespace, ``"ns::name"``, or an
        ``OpOverload``) for ``dispatch_key``."""
        if not callable(fn):
            raise TypeError(f"Input function is required to be a callable but found type {type(fn)}")
        if isinstance(op_name, (OpOverload, OpOverloadPacket, CustomOpDef)):
            h = _handle(op_name)
        elif isinstance(op_name, str):
            h = _handle(op_name if "::" in op_name else f"{self.ns}::{op_name}")
        else:
            raise RuntimeError("impl should be passed either a name or an OpOverload object as the first argument")
        key = _dispatch_key(dispatch_key or self.dispatch_key or "CompositeImplicitAutograd")
        if key == DispatchKey.Meta and fn is not fallthrough_kernel:
            _register_fake_kernel(h, fn)
        else:
            _register(h, key, fn, with_keyset)
        self._registrations.append((h, key, h.kernels[key]))

    def fallback(self, fn: Callable[..., Any], dispatch_key: str = "", *, with_keyset: bool = False) -> None:
        raise NotImplementedError("Library.fallback: ember registers boxed fallbacks for its own keys only")

    def _register_fake(self, op_name: str, fn: Callable[..., Any], _stacklevel: int = 1, *,
                       allow_override: bool = False) -> None:
        h = _handle(op_name if "::" in op_name else f"{self.ns}::{op_name}")
        _register_fake_kernel(h, fn)
        self._registrations.append((h, DispatchKey.Meta, h.kernels[DispatchKey.Meta]))

    def _destroy(self) -> None:
        """Remove what this library registered: its kernels, and the operators it defined."""
        for h, key, kernel in self._registrations:
            if h.kernels.get(key) is kernel:
                del h.kernels[key]
                h.clear_cache()
        self._registrations.clear()
        from ember._ops import unregister_library_op
        for h in self._op_defs:
            unregister_library_op(h)
            Dispatcher.undefine(h)
        self._op_defs.clear()
        if self.kind == "DEF":
            _DEF_NAMESPACES.discard(self.ns)


def define(qualname: str, schema: str, *, lib: Library | None = None, tags: Any = ()) -> None:
    """Declare the operator ``qualname`` ("ns::name") with ``schema`` ("(Tensor x) -> Tensor")."""
    ns, name = _qualname(qualname)
    (lib or Library(ns, "FRAGMENT")).define(name + schema, tags=tags)


def impl(qualname: Any, types: Any, func: Callable[..., Any] | None = None, *, lib: Library | None = None) -> Any:
    """The kernel of ``qualname`` for device ``types`` ("cpu", "cuda", "default"), or for a dispatch key name, as a
    call or a decorator. The older form ``impl(lib, name, dispatch_key)`` is a decorator registering in ``lib``."""
    if isinstance(qualname, Library):           # impl(lib, "name", "CPU")
        library, name, key = qualname, types, func if isinstance(func, str) else ""

        def reg_lib(f: Callable[..., Any]) -> Callable[..., Any]:
            library.impl(name, f, key)
            return f
        return reg_lib

    def reg(f: Callable[..., Any]) -> Callable[..., Any]:
        h = _handle(qualname)
        for t in ([types] if isinstance(types, str) or types is None else types):
            key = _DEVICE_KEYS[t] if t in _DEVICE_KEYS else _dispatch_key(t)
            if key == DispatchKey.Meta:
                _register_fake_kernel(h, f)
            else:
                _register(h, key, f)
        return f
    return reg if func is None else reg(func)


def register_kernel(op: Any, device_types: Any, func: Callable[..., Any] | None = None, /, *,
                    lib: Library | None = None) -> Any:
    """The implementation of ``op`` for inputs on ``device_types`` ("cpu", "cuda"; None: every device)."""
    if isinstance(op, CustomOpDef):
        return op.register_kernel(device_types, func)

    def reg(f: Callable[..., Any]) -> Callable[..., Any]:
        h = _handle(op)
        for d in ([device_types] if isinstance(device_types, str) or device_types is None else device_types):
            _register(h, _DEVICE_KEYS[d], f)
        return f
    return reg if func is None else reg(func)


def register_fake(op: Any, func: Callable[..., Any] | None = None, /, *, lib: Library | None = None,
                  _stacklevel: int = 1, allow_override: bool = False) -> Any:
    """The shape-only implementation of ``op``, run on meta and fake tensors."""
    def reg(f: Callable[..., Any]) -> Callable[..., Any]:
        if isinstance(op, CustomOpDef):
            op.register_fake(f)
        else:
            _register_fake_kernel(_handle(op), f)
        return f
    return reg if func is None else reg(func)


register_meta = register_fake
impl_abstract = register_fake


def register_autograd(op: Any, backward: Callable[..., Any], /, *, setup_context: Callable[..., Any] | None = None,
                      lib: Library | None = None) -> None:
    """Make ``op`` differentiable: ``setup_context(ctx, inputs, output)`` saves, ``backward(ctx, *grads)`` returns a
    gradient per input (None for the non-Tensor ones)."""
    if isinstance(op, CustomOpDef):
        op.register_autograd(backward, setup_context=setup_context)
        return
    h = _handle(op)
    _register_autograd_kernel(h, _AutogradInfo(backward, setup_context))


def register_autocast(op: Any, device_type: str, cast_inputs: Any, /, *, lib: Library | None = None) -> None:
    """Under autocast on ``device_type``, run ``op`` with its floating-point tensor inputs cast to ``cast_inputs``."""
    from ember._tensor import Tensor
    h = _handle(op)
    key = {"cpu": DispatchKey.AutocastCPU, "cuda": DispatchKey.AutocastCUDA}.get(device_type)
    if key is None:
        raise ValueError(f"Expected `device_type` of str type in ['cpu', 'cuda'] but got {device_type}")
    below = keys_below(key)

    def autocast_kernel(ks: int, *args: Any) -> Any:
        cast = [a.to(cast_inputs) if isinstance(a, Tensor) and a.is_floating_point() else a for a in args]
        return h.call(ks & below, *cast)
    h.register(key, autocast_kernel)


def register_torch_dispatch(op: Any, torch_dispatch_class: Any, func: Any = None, /, *,
                            lib: Library | None = None) -> Any:
    raise NotImplementedError("register_torch_dispatch: per-operator __torch_dispatch__ rules are not in ember; "
                              "define __torch_dispatch__ on the subclass or mode instead")


def register_vmap(op: Any, func: Any = None, /, *, lib: Library | None = None) -> Any:
    raise NotImplementedError("register_vmap: vmap is not in ember yet")


# ----------------------------------------------------------------------------------------------- custom_op
def _type_name(ann: Any) -> str:
    """The schema type of a Python annotation (``torch._library.infer_schema``'s table)."""
    import ember
    if isinstance(ann, str):
        ann = {"Tensor": ember.Tensor, "torch.Tensor": ember.Tensor, "int": int, "float": float, "bool": bool,
               "str": str}.get(ann, ann)
    simple = {ember.Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool", str: "str",
              ember.dtype: "ScalarType", ember.device: "Device"}
    if ann in simple:
        return simple[ann]
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is typing.Union and len(args) == 2 and type(None) in args:
        inner = next(a for a in args if a is not type(None))
        return _type_name(inner) + "?"
    if origin in (list, typing.List, typing.Sequence) or str(origin) == "<class 'collections.abc.Sequence'>":
        return _type_name(args[0]) + "[]" if args else "Any[]"
    return "Any"


def infer_schema(prototype_function: Callable[..., Any], /, *, mutates_args: Any, op_name: str | None = None) -> str:
    """A schema string from ``prototype_function``'s annotations: ``"(Tensor x, float k) -> Tensor"``."""
    sig = inspect.signature(prototype_function)
    hints = typing.get_type_hints(prototype_function) if not any(
        isinstance(p.annotation, str) for p in sig.parameters.values()) else {}
    mutated = set(sig.parameters) if mutates_args == "unknown" else set(mutates_args)
    params, kwonly_started = [], False
    for i, p in enumerate(sig.parameters.values()):
        if p.kind == p.KEYWORD_ONLY and not kwonly_started:
            params.append("*")
            kwonly_started = True
        t = _type_name(hints.get(p.name, p.annotation))
        if p.name in mutated and t.startswith("Tensor"):
            t = t.replace("Tensor", f"Tensor(a{i}!)", 1)
        default = "" if p.default is p.empty else "=" + ("None" if p.default is None else repr(p.default))
        params.append(f"{t} {p.name}{default}")
    ret = hints.get("return", sig.return_annotation)
    if ret in (None, type(None), inspect.Signature.empty):
        rets = "()"
    elif typing.get_origin(ret) is tuple:
        rets = "(" + ", ".join(_type_name(a) for a in typing.get_args(ret)) + ")"
    else:
        rets = _type_name(ret)
    name = "" if op_name is None else op_name
    return f"{name}({', '.join(params)}) -> {rets}"


class CustomOpDef:
    """An operator made by ``custom_op``: its kernels by device, its fake function and its autograd
    (``torch._library.custom_ops.CustomOpDef``). Calling it calls the operator (``ember.ops.<ns>.<name>``)."""

    def __init__(self, namespace: str, name: str, schema: str, fn: Callable[..., Any] | None,
                 mutates_args: Any = ()) -> None:
        self._namespace, self._name = namespace, name
        self._init_fn = fn
        self._backend_fns: dict[str, Callable[..., Any]] = {}
        self._abstract_fn: Callable[..., Any] | None = None
        self._autograd = _AutogradInfo()
        self._lib = Library(namespace, "FRAGMENT")
        self._lib.define(name + schema)
        h = Dispatcher.ops[f"{namespace}::{name}"]
        self._opoverload = library_overloads(h)
        self._schema = schema
        self.__name__ = name
        _register(h, DispatchKey.CompositeExplicitAutograd, self._backend_impl)
        _register_fake_kernel(h, self._fake_impl)
        _register_autograd_kernel(h, self._autograd)

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._namespace}::{self._name})>"

    # -- the kernels this op registered
    def _backend_impl(self, *args: Any) -> Any:
        import ember
        dev = next((a.device.type for a in args if isinstance(a, ember.Tensor)), "cpu")
        fn = self._backend_fns.get(dev) or self._init_fn
        if fn is None:
            raise NotImplementedError(f"{self._namespace}::{self._name}: no implementation for device type {dev!r} "
                                      "(register one with register_kernel)")
        return fn(*args)

    def _fake_impl(self, *args: Any) -> Any:
        if self._abstract_fn is None:
            raise RuntimeError(f"There was no fake impl registered for {self}. This is necessary for torch.compile"
                               f"/export/fx tracing to work. Please use `{self._namespace}::{self._name}."
                               "register_fake` to add an fake impl.")
        return self._abstract_fn(*args)

    # -- registration (each also a decorator)
    def register_kernel(self, device_types: Any, fn: Callable[..., Any] | None = None) -> Any:
        def reg(f: Callable[..., Any]) -> Callable[..., Any]:
            for d in ([device_types] if isinstance(device_types, str) or device_types is None else device_types):
                if d is None:
                    self._init_fn = f
                else:
                    self._backend_fns[d] = f
            return f
        return reg if fn is None else reg(fn)

    def register_fake(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self._abstract_fn = fn
        return fn

    def register_autograd(self, backward: Callable[..., Any], *,
                          setup_context: Callable[..., Any] | None = None) -> None:
        self._autograd.backward, self._autograd.setup_context = backward, setup_context

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._opoverload(*args, **kwargs)


def custom_op(name: str, fn: Callable[..., Any] | None = None, /, *, mutates_args: Any, device_types: Any = None,
              schema: str | None = None, tags: Any = None) -> Any:
    """Make ``fn`` the operator ``name`` ("namespace::op"), as a call or a decorator; its schema comes from ``fn``'s
    annotations unless ``schema`` is given."""
    ns, op_name = _qualname(name)

    def make(f: Callable[..., Any]) -> CustomOpDef:
        s = schema if schema is not None else infer_schema(f, mutates_args=mutates_args)
        op = CustomOpDef(ns, op_name, s, None if device_types else f, mutates_args)
        if device_types:
            op.register_kernel(device_types, f)
        return op
    return make if fn is None else make(fn)


def opcheck(op: Any, args: Any, kwargs: Any = None, *, test_utils: Any = None, raise_exception: bool = True) -> dict:
    """Check an operator: it runs, and its fake implementation gives the real outputs' shapes and dtypes."""
    import ember
    from ember.utils._pytree import tree_leaves
    kwargs = kwargs or {}
    call = library_overloads(_handle(op)) if isinstance(op, str) else op
    real = call(*args, **kwargs)
    fake = call(*[a.to("meta") if isinstance(a, ember.Tensor) else a for a in args], **kwargs)
    ok = all(tuple(f.shape) == tuple(r.shape) and f.dtype is r.dtype
             for f, r in zip(tree_leaves(fake), tree_leaves(real)) if isinstance(r, ember.Tensor))
    result = {"test_schema": "SUCCESS", "test_faketensor": "SUCCESS" if ok else "FAILED"}
    if not ok and raise_exception:
        raise AssertionError(f"{op}: the fake implementation's shapes or dtypes differ from the real outputs'")
    return result

