"""``ember.ops.aten``: direct access to operator overloads (``torch.ops.aten.add.Tensor``); ``ember.ops.<ns>``: the
Python operators of ``ember.library``.

An ``OpOverload`` calls its ``OperatorHandle`` through the dispatcher with arguments named as in the
schema; an ``OpOverloadPacket`` (``ember.ops.aten.add``) picks the first overload that accepts the call.
"""
from __future__ import annotations

from ember._python_arg_parser import Signatures, ks_device
from ember.c10.dispatch_key import KS_CPU


class OpOverload:
    __slots__ = ("handle", "_sig", "names")

    def __init__(self, handle, spec, names):
        self.handle = handle
        self._sig = Signatures(handle.name, [spec])
        self.names = names

    @property
    def overloadname(self) -> str:
        return self.handle.overload_name or "default"

    def _schema(self):
        return self.handle.schema

    def try_bind(self, args, kwargs):
        return Signatures._try(self._sig.sigs[0], args, kwargs)

    def __call__(self, *args, **kwargs):
        bound = self.try_bind(args, kwargs)
        if bound is None:
            self._sig.parse(args, kwargs)  # raises the PyTorch-style TypeError
        return self.call_bound(bound)

    def call_bound(self, bound):
        from ember._tensor import Tensor
        ks = 0
        for v in bound.values():
            if isinstance(v, Tensor):
                ks |= v._ks
            elif isinstance(v, list):
                for t in v:
                    if isinstance(t, Tensor):
                        ks |= t._ks
        if not ks:
            ks = ks_device(bound["device"]) if "device" in bound else KS_CPU
        return self.handle.call(ks, *[bound[n] for n in self.names])

    def __repr__(self) -> str:
        return f"aten.{self.handle.name}.{self.overloadname}"


class OpOverloadPacket:
    def __init__(self, name, overloads):
        self.__name__ = name
        self._overloads = overloads
        for o in overloads:
            setattr(self, o.overloadname, o)

    def overloads(self) -> list[str]:
        return [o.overloadname for o in self._overloads]

    def __call__(self, *args, **kwargs):
        for o in self._overloads:
            bound = o.try_bind(args, kwargs)
            if bound is not None:
                return o.call_bound(bound)
        sig = Signatures(self.__name__, [o._sig.sigs[0] for o in self._overloads])
        sig.parse(args, kwargs)

    def __repr__(self) -> str:
        return f"aten.{self.__name__}"


class _OpNamespace:
    def __init__(self, modname):
        self._modname = modname

    def __getattr__(self, name):
        import importlib
        mod = importlib.import_module(self._modname)
        try:
            return getattr(mod, name + "_" if name in ("from", "to", "is", "in") else name)
        except AttributeError:
            raise AttributeError(f"'_OpNamespace' 'aten' object has no attribute '{name}'") from None


class _LibraryNamespace:
    """``ember.ops.<ns>`` for a namespace of Python operators (``ember.library.custom_op("<ns>::name", ...)``)."""

    def __init__(self, ns):
        self._ns = ns

    def __getattr__(self, name):
        from ember import library
        op = library.namespace(self._ns).get(name)
        if op is None:
            raise AttributeError(f"'_OpNamespace' '{self._ns}' object has no attribute '{name}'")
        return op


class _Ops:
    aten = _OpNamespace("ember._generated.ops")

    def __getattr__(self, ns):
        if ns.startswith("__"):
            raise AttributeError(ns)
        return _LibraryNamespace(ns)


ops = _Ops()
