"""``ember.ops.aten``: direct access to operator overloads (``torch.ops.aten.add.Tensor``); ``ember.ops.<ns>``: the
Python operators of ``ember.library``.

An ``OpOverload`` calls its ``OperatorHandle`` through the dispatcher with arguments named as in the
schema; an ``OpOverloadPacket`` (``ember.ops.aten.add``) picks the first overload that accepts the call.
These are also the objects a ``__torch_dispatch__`` handler receives as ``func`` (``ember/_python_key.py``), with
PyTorch's names (``aten.mul.Tensor``), ``_schema`` (a parsed ``FunctionSchema``) and ``overloadpacket``.
"""
from __future__ import annotations

import importlib

from typing import Any

from ember._python_arg_parser import (MISS, NUMBERS_AS_TENSORS, Signatures, arg_default, arg_kind, fast_binder, ident,
                                     ks_device)
from ember.aten import torch_function as _tf
from ember.aten.schema import AliasInfo, Argument, FunctionSchema  # noqa: F401 (torch._C's names)
from ember.c10.dispatch_key import KS_CPU, DispatchKey
from ember.c10.tensor_impl import TensorImpl


# ------------------------------------------------------------------------------------------- overloads
# Note [Overloads PyTorch's bindings hide]
# PyTorch's Python bindings never call ``add.Scalar`` / ``sub.Scalar`` / ``mul.Scalar`` / ``div.Scalar`` (and their
# in-place, ``_mode`` and ``out`` forms): ``x * 2`` wraps the 2 as a 0-dim tensor and calls ``mul.Tensor``, and a
# ``__torch_dispatch__`` handler sees ``aten.mul.Tensor(x, 2)``. ember's bindings call the Scalar overloads to
# skip the wrapping. Two facts, each recorded once, make that invisible:
# * the Scalar overload's ``_reported_as`` is its Tensor twin: the Python key reports a call of it under the Tensor
#   overload, and that overload, called with a Python number, runs the Scalar one (``_scalar_twin``), so the
#   handler's ``func(*args)`` works;
# * its autograd node is the Tensor overload's, holding the number wrapped (``wrapped_number:`` in
#   derivatives.yaml), so ``(x * 2).grad_fn`` is ``MulBackward0`` and its formula calls ``mul.Tensor``, as PyTorch's.
# PyTorch's other derivative formulas and composite ops are C++, where ``grad / n`` *is* ``div.Scalar``: while the
# engine runs a formula or a composite op runs (``tls.in_formula``), overloads are reported as themselves.
_HIDDEN_SCALAR_OPS = {"add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_"}
_TENSOR_NAME_OF_SCALAR = {"Scalar": "Tensor", "Scalar_out": "out", "Scalar_mode": "Tensor_mode",
                          "Scalar_mode_out": "out_mode"}

_BY_HANDLE: dict[Any, OpOverload] = {}
_UNSET = object()


class OpOverload:
    """One operator overload, ``ember.ops.aten.mul.Tensor``."""

    __slots__ = ("handle", "_sig", "names", "_packet", "_schema_cache", "_scalar_twin", "_reported_as", "_fast",
                 "_fast_kw", "__weakref__")

    def __init__(self, handle: Any, spec: Any, names: list[str]) -> None:
        self.handle = handle
        self._sig = Signatures(handle.name, [spec])
        self._sig.public = self   # arguments no signature accepts (an fx Proxy) go to __torch_function__
        self.names = names
        self._packet: OpOverloadPacket | None = None
        self._schema_cache: FunctionSchema | None = None
        self._scalar_twin: OpOverload | None = None   # Note [Overloads PyTorch's bindings hide]
        self._reported_as: OpOverload = self
        self._fast: Any = _UNSET       # the function binder of the handle (Note [Fast binders of an OpOverload])
        self._fast_kw = frozenset(names) - {"self", "out"}   # the keywords it may take (it names self ``input``)
        _BY_HANDLE[handle] = self

    # -- PyTorch's introspection API
    @property
    def overloadname(self) -> str:
        return self.handle.overload_name or "default"

    _overloadname = overloadname

    @property
    def _schema(self) -> FunctionSchema:
        if self._schema_cache is None:
            self._schema_cache = FunctionSchema(self.handle.schema, self.handle.namespace)
        return self._schema_cache

    @property
    def overloadpacket(self) -> OpOverloadPacket | None:
        return self._packet

    @property
    def namespace(self) -> str:
        return self.handle.namespace  # type: ignore[no-any-return]

    @property
    def __name__(self) -> str:  # type: ignore[override]
        return f"{self.handle.name}.{self.overloadname}"

    @property
    def _op(self) -> OpOverload:
        return self

    @property
    def op(self) -> OpOverload:
        return self

    @property
    def tags(self) -> tuple[str, ...]:
        return self.handle.tags

    @property
    def is_view(self) -> bool:
        r = self._schema.returns
        return bool(r) and r[0].alias_info is not None and not r[0].alias_info.is_write

    def name(self) -> str:
        return self.handle.qualified_name

    def has_kernel_for_dispatch_key(self, key: Any) -> bool:
        if isinstance(key, str):
            key = DispatchKey[key]
        return self.handle.has_kernel_for(key)

    def decompose(self, *args: Any, **kwargs: Any) -> Any:
        """Run the CompositeImplicitAutograd kernel (the op written in other ops), or NotImplemented."""
        k = self.handle.kernels.get(DispatchKey.CompositeImplicitAutograd)
        if k is None:
            return NotImplemented
        bound = self.try_bind(args, kwargs)
        if bound is None:
            self._sig.parse(args, kwargs)
        return k(0, *[bound[n] for n in self.names])

    # -- calls
    def try_bind(self, args: Any, kwargs: Any) -> Any:
        return Signatures._try(self._sig.sigs[0], args, kwargs)

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:    # (``self=`` is the schema's argument)
        if _tf.ENABLED[0]:      # a torch function mode (or an overriding argument) sees the operator called
            r = _tf.dispatch(self, args, kwargs)
            if r is not _tf.NOT_HANDLED:
                return r
        fast = self._fast
        if fast is _UNSET:
            fast = self._fast = fast_binder(self.handle)
        # Note [Fast binders of an OpOverload]
        if fast is not None and (not kwargs or kwargs.keys() <= self._fast_kw):
            try:
                r = fast(*args, **kwargs)
            except TypeError as e:
                if e.__traceback__.tb_next is not None:  # raised inside the call, not by binding the arguments
                    raise
            else:
                if r is not MISS:
                    return r
        bound = self.try_bind(args, kwargs)
        if bound is None:
            twin = self._scalar_twin
            if twin is not None:  # Note [Overloads PyTorch's bindings hide]
                bound = twin.try_bind(args, kwargs)
                if bound is not None:
                    return twin.call_bound(bound)
            if self.handle.name in NUMBERS_AS_TENSORS:  # a number where a tensor goes (sub.Tensor(1, x))
                like = next((a for a in list(args) + list(kwargs.values()) if isinstance(a, TensorImpl)), None)
                if like is not None:
                    bound = Signatures._try(self._sig.sigs[0], args, kwargs, like)
                    if bound is not None:
                        return self.call_bound(bound)
            i, r = self._sig.parse(args, kwargs)  # __torch_function__'s answer, or the PyTorch-style TypeError
            if i < 0:
                return r
            bound = r
        return self.call_bound(bound)

    def call_bound(self, bound: dict[str, Any]) -> Any:
        ks = 0
        for v in bound.values():
            if isinstance(v, TensorImpl):
                ks |= v._ks
            elif type(v) is list or type(v) is tuple:
                for t in v:
                    if isinstance(t, TensorImpl):
                        ks |= t._ks
        if not ks:
            ks = ks_device(bound["device"]) if bound.get("device") is not None else KS_CPU
        return self.handle.call(ks, *[bound[n] for n in self.names])

    def _unbox(self, values: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """A dispatcher call's arguments as PyTorch hands them to ``__torch_dispatch__``: the positional parameters
        positionally, without a trailing run of defaults; keyword-only ones as kwargs when not their default."""
        spec = self._sig.sigs[0]
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        last = -1
        for i, (p, v) in enumerate(zip(spec, values)):
            name, kind, kwonly, has_default, default = p
            if type(v) is tuple and (kind.startswith("int[") or kind == "T[]"):
                v = list(v)
            elif isinstance(v, TensorImpl) and "_wrapped_number" in v.__dict__:
                v = v.__dict__["_wrapped_number"]   # a number the parser wrapped: PyTorch shows the number
            if kwonly:
                if not (has_default and _same(v, default)):
                    kwargs[name] = v
            else:
                args.append(v)
                if not (has_default and _same(v, default)):
                    last = i
        return tuple(args[:last + 1]), kwargs

    def __repr__(self) -> str:
        return f"<OpOverload(op='{self.handle.namespace}.{self.handle.name}', overload='{self.overloadname}')>"

    def __str__(self) -> str:
        return f"{self.handle.namespace}.{self.handle.name}.{self.overloadname}"

    def __reduce__(self) -> Any:
        return (_find_overload, (self.handle.name, self.overloadname, self.handle.namespace))


def _same(v: Any, default: Any) -> bool:
    if v is default:
        return True
    if isinstance(default, tuple) and isinstance(v, (list, tuple)):
        return tuple(v) == default
    if type(default) is int and isinstance(v, (list, tuple)):      # ``int[2] dilation=1``: a default of [1, 1]
        return len(v) > 0 and all(type(x) is int and x == default for x in v)
    try:
        return type(v) is type(default) and bool(v == default)
    except Exception:
        return False


def _find_overload(name: str, overload: str, namespace: str = "aten") -> OpOverload:
    return getattr(getattr(getattr(ops, namespace), name), overload)  # type: ignore[no-any-return]


class OpOverloadPacket:
    """All overloads of one operator name, ``ember.ops.aten.mul``; calling it picks the first that fits."""

    def __init__(self, name: str, overloads: list[OpOverload], namespace: str = "aten") -> None:
        self.__name__ = name
        self._namespace = namespace
        self._overloads = overloads
        for o in overloads:
            setattr(self, o.overloadname, o)
            o._packet = self
        if name.rstrip("_") in _HIDDEN_SCALAR_OPS:
            by = {o.overloadname: o for o in overloads}
            for scalar, tensor in _TENSOR_NAME_OF_SCALAR.items():
                if scalar in by and tensor in by:
                    by[tensor]._scalar_twin = by[scalar]
                    by[scalar]._reported_as = by[tensor]

    @property
    def _qualified_op_name(self) -> str:
        return f"{self._namespace}::{self.__name__}"

    @property
    def op(self) -> OpOverloadPacket:
        return self

    def overloads(self) -> list[str]:
        return [o.overloadname for o in self._overloads]

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:    # (``self=`` is an operator's argument)
        if _tf.ENABLED[0]:
            r = _tf.dispatch(self, args, kwargs)
            if r is not _tf.NOT_HANDLED:
                return r
        for o in self._overloads:
            bound = o.try_bind(args, kwargs)
            if bound is not None:
                return o.call_bound(bound)
        sig = Signatures(self.__name__, [o._sig.sigs[0] for o in self._overloads])
        sig.public = self       # an argument overriding __torch_function__ (an fx Proxy) sees the packet called
        i, r = sig.parse(args, kwargs)
        return r if i < 0 else self._overloads[i].call_bound(r)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"The underlying op of '{self._namespace}.{self.__name__}' has no overload name '{name}'")

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='{self._namespace}.{self.__name__}')>"

    def __str__(self) -> str:
        return f"{self._namespace}.{self.__name__}"

    def __reduce__(self) -> Any:
        return (getattr, (getattr(ops, self._namespace), self.__name__))


def overload_of(handle: Any, in_formula: bool = False) -> OpOverload:
    """The ``OpOverload`` a ``__torch_dispatch__`` handler receives for a dispatcher call of ``handle``
    (Note [Overloads PyTorch's bindings hide])."""
    o = _BY_HANDLE.get(handle)
    if o is None:
        aten_packet(handle.name)
        o = _BY_HANDLE[handle]
    return o if in_formula else o._reported_as


class _OpNamespace:
    """``ember.ops.aten``: one packet per operator name of native_functions.yaml, made from the operator handles of
    the internal op API (``ember/_generated/aten.py``) when first asked for."""

    name = "aten"

    def __getattr__(self, name: str) -> Any:
        packet = aten_packet(name)
        if packet is None:
            raise AttributeError(f"'_OpNamespace' 'aten' object has no attribute '{name}'")
        return packet

    def __dir__(self) -> list[str]:
        return sorted(_aten_handles())


_ATEN_HANDLES: dict[str, list[Any]] = {}
_ATEN_PACKETS: dict[str, OpOverloadPacket] = {}


def _aten_handles() -> dict[str, list[Any]]:
    """Operator name -> its handles, in native_functions.yaml's order."""
    if not _ATEN_HANDLES:
        from ember._generated import aten
        from ember.aten.dispatcher import OperatorHandle
        for k, h in vars(aten).items():
            if k.startswith("_op_") and isinstance(h, OperatorHandle):
                _ATEN_HANDLES.setdefault(h.name, []).append(h)
    return _ATEN_HANDLES


def aten_packet(name: str) -> OpOverloadPacket | None:
    """``ember.ops.aten.<name>``: made on first use from the operator's handles."""
    packet = _ATEN_PACKETS.get(name)
    if packet is None:
        handles = _aten_handles().get(name)
        if handles is None:
            return None
        overloads = []
        for h in handles:
            schema = FunctionSchema(h.schema, h.namespace)
            o = OpOverload(h, schema_spec(schema), [ident(a.name) for a in schema.arguments])
            o._schema_cache = schema
            overloads.append(o)
        packet = _ATEN_PACKETS[name] = OpOverloadPacket(name, overloads)
    return packet


def schema_spec(schema: FunctionSchema, sized_defaults: bool = False) -> tuple[Any, ...]:
    """The argument parser's spec of a schema's arguments, named as the schema names them (``ember.ops``); with
    ``sized_defaults`` an ``int[2]`` default of ``1`` reads ``(1, 1)``, as for a library's operators."""
    spec = []
    for a in schema.arguments:
        d = arg_default(a.default_value) if a.has_default_value else None
        if sized_defaults and isinstance(d, int) and a.type.rstrip("?").startswith(("int[", "SymInt[")):
            size = a.type.split("[", 1)[1].rstrip("]?")
            d = (d,) * int(size) if size else (d,)
        kind = a.type if a.type.startswith("__torch__.") else arg_kind(a.type)
        spec.append((ident(a.name), kind, a.kwarg_only, a.has_default_value, d))
    return tuple(spec)


# ------------------------------------------------------------------------------------ library operators
_LIBRARY_PACKETS: dict[str, dict[str, OpOverloadPacket]] = {}


def register_library_op(handle: Any) -> OpOverload:
    """The ``OpOverload`` of an operator a library defined, reachable as ``ember.ops.<ns>.<name>.<overload>``."""
    schema = FunctionSchema(handle.schema, handle.namespace)
    o = OpOverload(handle, schema_spec(schema, sized_defaults=True), [a.name for a in schema.arguments])
    o._schema_cache = schema
    packets = _LIBRARY_PACKETS.setdefault(handle.namespace, {})
    packet = packets.get(handle.name)
    if packet is None:
        packets[handle.name] = OpOverloadPacket(handle.name, [o], handle.namespace)
    else:
        packet._overloads.append(o)
        setattr(packet, o.overloadname, o)
        o._packet = packet
    return o


def unregister_library_op(handle: Any) -> None:
    packets = _LIBRARY_PACKETS.get(handle.namespace, {})
    packet = packets.get(handle.name)
    o = _BY_HANDLE.pop(handle, None)
    if packet is None or o is None:
        return
    packet._overloads.remove(o)
    packet.__dict__.pop(o.overloadname, None)
    if not packet._overloads:
        del packets[handle.name]


def library_overloads(handle: Any) -> OpOverload:
    """The ``OpOverload`` of a library operator's handle."""
    return _BY_HANDLE[handle]


class _LibraryNamespace:
    """``ember.ops.<ns>``: the operators libraries defined in namespace ``ns`` (``ember.library``)."""

    def __init__(self, ns: str) -> None:
        self.name = ns

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        packet = _LIBRARY_PACKETS.get(self.name, {}).get(name)
        if packet is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{name}'")
        return packet

    def __iter__(self) -> Any:
        return iter(list(_LIBRARY_PACKETS.get(self.name, {})))

    def __dir__(self) -> list[str]:
        return sorted(_LIBRARY_PACKETS.get(self.name, {}))

    def __repr__(self) -> str:
        return f"<module 'torch.ops.{self.name}'>"


class _HigherOrderNamespace:
    """``ember.ops.higher_order``: the higher-order operators (``ember/_higher_order_ops``)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        table = importlib.import_module("ember._higher_order_ops").HIGHER_ORDER_OPS
        if name not in table:
            raise AttributeError(f"'_OpNamespace' 'higher_order' object has no attribute '{name}'")
        return table[name]

    def __repr__(self) -> str:
        return "<module 'torch.ops.higher_order'>"


class _Ops:
    """``ember.ops``: ``ember.ops.aten`` and one namespace per library; ``load_library`` for libraries that ship
    compiled operators."""

    aten = _OpNamespace()

    def __init__(self) -> None:
        self._namespaces: dict[str, _LibraryNamespace] = {}
        self.loaded_libraries: set[str] = set()

    def __getattr__(self, ns: str) -> Any:
        if ns.startswith("__"):
            raise AttributeError(ns)
        if ns == "higher_order":      # ``torch.ops.higher_order.cond``: loaded when first named
            return _HigherOrderNamespace()
        space = self._namespaces.get(ns)
        if space is None:
            space = self._namespaces[ns] = _LibraryNamespace(ns)
        return space

    def load_library(self, path: str) -> None:
        """Load the compiled operator library at ``path`` (``torch.ops.load_library``): ember registers its own
        definitions of the operators of the libraries it knows (``ember.extensions``), and raises ``OSError`` for
        any other, as PyTorch does for a library it cannot load."""
        from ember.extensions import load_library
        self.loaded_libraries.add(load_library(path))

    def import_module(self, module: str) -> None:
        """Import the Python module that registers operators (``torch.ops.import_module``)."""
        importlib.import_module(module)


ops = _Ops()
