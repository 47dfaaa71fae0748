"""``ember.library`` (``torch/library.py``): operators defined in Python by users and libraries, reachable as
``ember.ops.<namespace>.<name>``.

``custom_op("ns::name", fn, mutates_args=...)`` makes ``fn`` an operator: called with real tensors it runs
``fn`` (or the kernel ``register_kernel`` gave for the inputs' device type) below autograd, so its outputs have
no history unless ``register_autograd`` gave a backward, in which case the call is one node of the graph whose
backward is that function (``setup_context`` saves what it needs). Called with meta tensors (shape inference)
it runs the ``register_fake`` function instead. ``Library(ns, "DEF" | "FRAGMENT" | "IMPL")`` with
``define(schema)`` and ``impl(name, fn, dispatch_key)`` is the older way to the same operators.

ember's own operators live in ``native_functions.yaml`` and its dispatcher; these Python operators sit beside it:
they are called directly, with the same meta / autograd / device split the dispatcher makes.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Iterable

__all__ = ["custom_op", "register_fake", "register_kernel", "register_autograd", "Library", "define", "impl",
           "CustomOpDef", "get_ctx", "opcheck", "fallthrough_kernel", "register_torch_dispatch",
           "register_vmap", "infer_schema"]

_OPS: dict[str, CustomOpDef] = {}


def _qualname(name: str) -> tuple[str, str]:
    if "::" not in name:
        raise ValueError(f"Expected `name` to be of the form \"namespace::op_name\", but got {name!r}")
    ns, op = name.split("::", 1)
    return ns, op


def _tensors(args: Iterable[Any]) -> list[Any]:
    import ember
    from ember.utils._pytree import tree_leaves
    return [a for a in tree_leaves(list(args)) if isinstance(a, ember.Tensor)]


class CustomOpDef:
    """A Python operator: its implementation, and what ``register_*`` added (``torch._library.custom_ops``)."""

    def __init__(self, namespace: str, name: str, schema: str | None, fn: Callable[..., Any] | None,
                 mutates_args: Any = ()) -> None:
        self._namespace, self._name = namespace, name
        self._schema = schema
        self._init_fn = fn
        self._mutates_args = mutates_args
        self._kernels: dict[str, Callable[..., Any]] = {}
        self._fake_fn: Callable[..., Any] | None = None
        self._backward_fn: Callable[..., Any] | None = None
        self._setup_context_fn: Callable[..., Any] | None = None
        self.__name__ = name

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._namespace}::{self._name})>"

    # -- registration (each also a decorator)
    def register_kernel(self, device_types: Any, fn: Callable[..., Any] | None = None) -> Any:
        def reg(f: Callable[..., Any]) -> Callable[..., Any]:
            for d in ([device_types] if isinstance(device_types, str) or device_types is None else device_types):
                self._kernels[d or "default"] = f
            return f
        return reg if fn is None else reg(fn)

    def register_fake(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self._fake_fn = fn
        return fn

    def register_autograd(self, backward: Callable[..., Any], *,
                          setup_context: Callable[..., Any] | None = None) -> None:
        self._backward_fn, self._setup_context_fn = backward, setup_context

    # -- calls
    def _impl_for(self, args: Any) -> Callable[..., Any]:
        tensors = _tensors(args)
        dev = tensors[0].device.type if tensors else "cpu"
        fn = self._kernels.get(dev) or self._kernels.get("default") or self._init_fn
        if fn is None:
            raise NotImplementedError(f"{self._namespace}::{self._name}: no implementation for device type {dev!r} "
                                      "(register one with register_kernel or Library.impl)")
        return fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import ember
        if kwargs:
            args = self._bind(args, kwargs)
        tensors = _tensors(args)
        if any(t.device.type == "meta" for t in tensors):
            if self._fake_fn is None:
                raise RuntimeError(f"There was no fake impl registered for {self}. This is necessary for torch.compile"
                                   f"/export/fx tracing to work. Please use `{self._namespace}::{self._name}."
                                   "register_fake` to add an fake impl.")
            return self._fake_fn(*args)
        impl = self._impl_for(args)
        if ember.is_grad_enabled() and any(t.requires_grad for t in tensors):
            return _CustomOpAutograd.apply(self, impl, *args)
        with ember.no_grad():
            return impl(*args)

    def _bind(self, args: Any, kwargs: Any) -> tuple[Any, ...]:
        fn = self._init_fn or self._fake_fn or next(iter(self._kernels.values()), None)
        if fn is None:
            raise TypeError(f"{self}: keyword arguments need an implementation to bind them to")
        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        return tuple(bound.arguments.values())


def _custom_op_autograd() -> Any:
    from ember.autograd.function import Function

    class CustomOpAutograd(Function):
        """One call of a Python operator as a node of the graph: its backward is the registered one."""

        @staticmethod
        def forward(ctx: Any, op: CustomOpDef, impl: Callable[..., Any], *args: Any) -> Any:
            out = impl(*args)
            ctx._custom_op = op
            ctx._n_args = len(args)
            if op._setup_context_fn is not None:
                op._setup_context_fn(ctx, args, out)
            return out

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            op = ctx._custom_op
            if op._backward_fn is None:
                raise RuntimeError(f"Autograd has not been implemented for operator {op._namespace}::{op._name}. "
                                   "Please register an autograd formula for it with "
                                   f"ember.library.register_autograd(\"{op._namespace}::{op._name}\", ...).")
            r = op._backward_fn(ctx, *grads)
            r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
            if len(r) != ctx._n_args:
                raise RuntimeError(f"{op._namespace}::{op._name}: the backward returned {len(r)} gradients, expected "
                                   f"{ctx._n_args} (one per input, None for non-Tensor inputs)")
            return (None, None) + r

    return CustomOpAutograd


class _LazyFunction:
    """The autograd Function above, made on first use (ember.autograd needs ember to be imported)."""
    _cls: Any = None

    def apply(self, *args: Any) -> Any:
        if _LazyFunction._cls is None:
            _LazyFunction._cls = _custom_op_autograd()
        return _LazyFunction._cls.apply(*args)


_CustomOpAutograd = _LazyFunction()


# -- the module-level API
def custom_op(name: str, fn: Callable[..., Any] | None = None, /, *, mutates_args: Any, device_types: Any = None,
              schema: str | None = None, tags: Any = None) -> Any:
    """Make ``fn`` the operator ``name`` ("namespace::op"), as a call or a decorator."""
    ns, op_name = _qualname(name)

    def make(f: Callable[..., Any]) -> CustomOpDef:
        op = CustomOpDef(ns, op_name, schema, None if device_types else f, mutates_args)
        if device_types:
            op.register_kernel(device_types, f)
        _OPS[name] = op
        return op
    return make if fn is None else make(fn)


def _op(op: Any) -> CustomOpDef:
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, str) and op in _OPS:
        return _OPS[op]
    raise ValueError(f"register: {op!r} is not an operator defined with ember.library (custom_op or Library.define)")


def register_fake(op: Any, fn: Callable[..., Any] | None = None, /, *, lib: Any = None, _stacklevel: int = 1,
                  allow_override: bool = False) -> Any:
    """The shape-only implementation of ``op``, run on meta tensors."""
    def reg(f: Callable[..., Any]) -> Callable[..., Any]:
        return _op(op).register_fake(f)
    return reg if fn is None else reg(fn)


register_meta = register_fake


def register_kernel(op: Any, device_types: Any, fn: Callable[..., Any] | None = None, /, *, lib: Any = None) -> Any:
    """The implementation of ``op`` for inputs on ``device_types`` ("cpu", "cuda"; None: every device)."""
    return _op(op).register_kernel(device_types, fn)


def register_autograd(op: Any, backward: Callable[..., Any], /, *, setup_context: Callable[..., Any] | None = None,
                      lib: Any = None) -> None:
    """Make ``op`` differentiable: ``setup_context(ctx, inputs, output)`` saves, ``backward(ctx, *grads)`` returns a
    gradient per input."""
    _op(op).register_autograd(backward, setup_context=setup_context)


def get_ctx() -> Any:
    raise RuntimeError("get_ctx() is only valid inside a fake implementation traced for data-dependent shapes, "
                       "which ember does not trace yet")


def register_torch_dispatch(op: Any, torch_dispatch_class: Any, func: Any = None, /, *, lib: Any = None) -> Any:
    raise NotImplementedError("register_torch_dispatch: __torch_dispatch__ is not in ember yet (issue 17)")


def register_vmap(op: Any, func: Any = None, /, *, lib: Any = None) -> Any:
    raise NotImplementedError("register_vmap: vmap is not in ember yet")


def fallthrough_kernel() -> None:
    """A kernel that lets the dispatcher go on to the next key (a marker for ``Library.impl``)."""


def infer_schema(prototype_function: Callable[..., Any], /, *, mutates_args: Any, op_name: str | None = None) -> str:
    """A schema string from ``prototype_function``'s annotations (Tensor, int, float, bool, str, lists)."""
    import ember
    names = {ember.Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool", str: "str"}
    sig = inspect.signature(prototype_function)
    params = []
    for p in sig.parameters.values():
        ann = p.annotation
        ann = ember.Tensor if ann in ("Tensor", "torch.Tensor") else ann
        params.append(f"{names.get(ann, 'Any')} {p.name}" + ("" if p.default is p.empty else f"={p.default!r}"))
    ret = sig.return_annotation
    rets = "Tensor" if ret in (ember.Tensor, "Tensor", "torch.Tensor") else "()"
    return f"({', '.join(params)}) -> {rets}"


def opcheck(op: Any, args: Any, kwargs: Any = None, *, test_utils: Any = None, raise_exception: bool = True) -> dict:
    """Check a Python operator: it runs, and its fake implementation gives the real outputs' shapes and dtypes."""
    import ember
    o = _op(op)
    kwargs = kwargs or {}
    real = o(*args, **kwargs)
    result: dict[str, str] = {"test_schema": "SUCCESS"}
    if o._fake_fn is not None:
        fake = o(*[a.to("meta") if isinstance(a, ember.Tensor) else a for a in args], **kwargs)
        from ember.utils._pytree import tree_leaves
        ok = all(tuple(f.shape) == tuple(r.shape) and f.dtype is r.dtype
                 for f, r in zip(tree_leaves(fake), tree_leaves(real)) if isinstance(r, ember.Tensor))
        result["test_faketensor"] = "SUCCESS" if ok else "FAILED"
        if not ok and raise_exception:
            raise AssertionError(f"{o}: the fake implementation's shapes or dtypes differ from the real outputs'")
    return result


class Library:
    """A namespace of Python operators: ``define`` declares one from its schema, ``impl`` gives it an
    implementation for a dispatch key ("CPU", "CUDA", "Meta", "CompositeImplicitAutograd", ...)."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._defined: list[str] = []

    def define(self, schema: str, alias_analysis: str = "", *, tags: Any = ()) -> str:
        name = schema.split("(", 1)[0].strip()
        qual = f"{self.ns}::{name}"
        _OPS[qual] = CustomOpDef(self.ns, name.split(".")[0], schema, None)
        self._defined.append(qual)
        return name

    def impl(self, op_name: Any, fn: Callable[..., Any], dispatch_key: str = "", *, with_keyset: bool = False) -> None:
        name = op_name if isinstance(op_name, str) else op_name.__name__
        qual = name if "::" in name else f"{self.ns}::{name}"
        op = _OPS.get(qual)
        if op is None:
            raise RuntimeError(f"Could not find schema for {qual}")
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        if key == "Meta":
            op.register_fake(fn)
        elif key in ("CPU", "CUDA"):
            op.register_kernel(key.lower(), fn)
        elif key == "Autograd":
            raise NotImplementedError("Library.impl(..., 'Autograd'): use ember.library.register_autograd")
        else:
            op._init_fn = fn

    def _destroy(self) -> None:
        for qual in self._defined:
            _OPS.pop(qual, None)


def define(qualname: str, schema: str, *, lib: Any = None, tags: Any = ()) -> None:
    """Declare the operator ``qualname`` ("ns::name") with ``schema`` ("(Tensor x) -> Tensor")."""
    ns, name = _qualname(qualname)
    _OPS[qualname] = CustomOpDef(ns, name, schema, None)


def impl(qualname: str, types: Any, func: Callable[..., Any] | None = None, *, lib: Any = None) -> Any:
    """The implementation of ``qualname`` for device ``types``, as a call or a decorator."""
    def reg(f: Callable[..., Any]) -> Callable[..., Any]:
        op = _op(qualname)
        if types in ("default", "CompositeImplicitAutograd"):
            op._init_fn = f
        else:
            op.register_kernel(types, f)
        return f
    return reg if func is None else reg(func)


def namespace(ns: str) -> dict[str, CustomOpDef]:
    """The Python operators of namespace ``ns`` (``ember.ops.<ns>``)."""
    return {qual.split("::", 1)[1]: op for qual, op in _OPS.items() if qual.split("::", 1)[0] == ns}
