"""Argument parsing for generated bindings (mirrors ``torch/csrc/utils/python_arg_parser.cpp``).

A binding lists the signatures of one public name (``sum()``, ``sum(dim, keepdim=False)``); ``parse``
tries them in order and returns the index of the first that accepts the call, with its arguments
converted (sizes to tuples of ints, ``dtype=float`` to ``ember.float64``, device strings to
``ember.device``).  As in PyTorch, an ``int[]`` that is the only positional parameter may be given as
varargs (``x.view(2, 3)``), an ``int[N]`` accepts a single int, and when no signature fits the error
lists them all.
"""
from __future__ import annotations

import builtins
import numbers
from typing import Any

import numpy as np

from ember.aten import torch_function as _torch_function
from ember.c10 import dtype as _dt
from ember.c10.device import device as _device
from ember.aten.composite import scalar_to_tensor
from ember.aten.dispatcher import OperatorHandle, ks_device, ks_list, ks_opt, ks_out
from ember.aten.schema import FunctionSchema, arg_kind, ident
from ember.c10.generator import Generator
from ember.c10.size import Size as _Size
from ember.c10.tensor_impl import TensorImpl as Tensor  # every ember tensor is one
from ember.c10.dispatch_key import KS_CPU


_FAIL = object()
# PyTorch's should_allow_numbers_as_tensors list (python_arg_parser.cpp)
NUMBERS_AS_TENSORS = {"add", "add_", "div", "div_", "divide", "divide_", "mul", "mul_", "multiply", "multiply_",
                      "sub", "sub_", "subtract", "subtract_", "true_divide", "true_divide_", "floor_divide",
                      "floor_divide_", "to", "_to_copy", "copy_"}
_PY_TYPE_DTYPES = {builtins.float: _dt.float64, builtins.int: _dt.int64, builtins.bool: _dt.bool_,
                   builtins.complex: _dt.complex128}


NUMBER_TYPES = frozenset((bool, int, float, complex))


def fast_ints(x, single: bool):
    """``x`` as a tuple of ints when it is a tuple or list of them (or a lone int for ``int[N]``); else None."""
    t = type(x)
    if t is tuple or t is _Size or t is list:
        for i in x:
            if type(i) is not int:
                return None
        return x if t is not list else tuple(x)
    if single and t is int:
        return (x,)
    return None


def fast_tensors(x, none_ok: bool):
    """``x`` as a list of tensors (``None`` allowed where ``none_ok``) when it is a list or tuple of them; else None."""
    t = type(x)
    if t is list or t is tuple:
        for i in x:
            if not isinstance(i, Tensor) and not (none_ok and i is None):
                return None
        return x if t is list else list(x)
    return None


def finish_factory(t, a):
    if a.get("requires_grad"):
        t.requires_grad_(True)
    return t


def check_out_options(out, dtype):
    """A factory called with ``out=``: an explicit dtype must be the out tensor's (``check_out_type_matches``)."""
    if dtype is not None and out.dtype is not dtype:
        raise RuntimeError(f"dtype {_dt.scalar_type_name(dtype)} does not match dtype of out parameter "
                           f"({_dt.scalar_type_name(out.dtype)})")


def returning(_nothing, tensors):
    """What PyTorch's binding returns for an op that updates a tensor list in place and returns nothing
    (``torch._foreach_mul_(xs, 2)`` gives ``xs``): the list."""
    return tensors


def _is_int(v) -> bool:
    return (type(v) is int) or (isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, (bool, np.bool_)))


def _to_int(v):
    if type(v) is int:
        return v
    if isinstance(v, (bool, np.bool_)):
        return _FAIL
    if isinstance(v, (numbers.Integral, np.integer)):
        return int(v)
    if isinstance(v, Tensor) and v.numel() == 1 and not v.dtype.is_floating_point \
            and not v.dtype.is_complex and v.dtype is not _dt.bool_:
        return int(v.item())
    return _FAIL


def _to_intlist(v, size):
    if isinstance(v, (tuple, list)):
        out = []
        for x in v:
            i = _to_int(x)
            if i is _FAIL:
                return _FAIL
            out.append(i)
        return tuple(out)
    if size and not isinstance(v, (tuple, list)):
        i = _to_int(v)
        if i is not _FAIL and not (isinstance(v, Tensor) and v.dim() > 0):
            return (i,)
    return _FAIL


def _none_is_default(param) -> bool:
    """PyTorch's parser takes None for an ``int[]`` argument whose default is ``[]`` (``avg_pool2d``'s stride,
    ``roll``'s dims) and passes the default."""
    _name, kind, _kwonly, has_default, default = param
    return has_default and default == () and kind.startswith("int[")


# the Python classes standing for TorchScript classes that operator schemas name (``__torch__.torch.classes.
# profiler._RecordFunction``): an argument of such a type binds only an instance of its class
SCRIPT_CLASSES: dict = {}


def _convert(kind: str, v):
    """Convert ``v`` for a parameter of ``kind``; ``_FAIL`` when it does not fit."""
    opt = kind.endswith("?")
    if v is None:   # "any" stands for the optional enum-like types (Layout?, MemoryFormat?)
        return None if opt or kind == "any" else _FAIL
    k = kind.rstrip("?")
    if k == "T":
        return v if isinstance(v, Tensor) else _FAIL
    if k.startswith("__torch__."):     # a registered class (``__torch__.torch.classes.ns.Name``)
        cls = SCRIPT_CLASSES.get(k)
        return v if cls is not None and isinstance(v, cls) else _FAIL
    if k == "Scalar":
        if isinstance(v, (bool, int, float, complex, np.number, np.bool_)):
            return v.item() if isinstance(v, (np.number, np.bool_)) else v
        if isinstance(v, Tensor) and v.dim() == 0:
            return v.item()
        return _FAIL
    if k == "Scalar[]":
        if isinstance(v, (list, tuple)) and all(isinstance(x, (bool, int, float, complex, np.number, np.bool_))
                                                for x in v):
            return tuple(x.item() if isinstance(x, (np.number, np.bool_)) else x for x in v)
        return _FAIL
    if k == "int":
        return _to_int(v)
    if k.startswith("int["):
        return _to_intlist(v, k[4:-1])
    if k == "float":
        if isinstance(v, (bool, np.bool_)):
            return _FAIL
        if isinstance(v, (int, float, np.integer, np.floating)):
            return float(v)
        if isinstance(v, Tensor) and v.numel() == 1:
            return float(v.item())
        return _FAIL
    if k == "float[]":
        if isinstance(v, (list, tuple)) and all(isinstance(x, (int, float)) for x in v):
            return tuple(float(x) for x in v)
        if isinstance(v, (int, float)):
            return (float(v),)
        return _FAIL
    if k == "bool":
        return bool(v) if isinstance(v, (bool, np.bool_)) else _FAIL
    if k == "bool[]":
        return tuple(v) if isinstance(v, (list, tuple)) else _FAIL
    if k == "T[]":
        if isinstance(v, (list, tuple)) and all(isinstance(x, Tensor) for x in v):
            return v if type(v) is list else list(v)
        return _FAIL
    if k == "T?[]":
        if isinstance(v, (list, tuple)) and all(x is None or isinstance(x, Tensor) for x in v):
            return list(v)
        return _FAIL
    if k == "dtype":
        if isinstance(v, _dt.dtype):
            return v
        return _PY_TYPE_DTYPES.get(v, _FAIL) if isinstance(v, type) else _FAIL
    if k == "device":
        if isinstance(v, _device):
            return v
        if isinstance(v, (str, int)) and not isinstance(v, bool):
            return _device(v)
        return _FAIL
    if k == "str":
        return v if isinstance(v, str) else _FAIL
    if k == "gen":
        return v if isinstance(v, Generator) else _FAIL
    return v


def _convert_number_ok(kind, v, like):
    if kind in ("T", "T?") and isinstance(v, (bool, int, float, complex, np.number, np.bool_)):
        return scalar_to_tensor(v.item() if isinstance(v, np.generic) else v, like)
    return _convert(kind, v)


def arg_type_name(v) -> str:
    """How PyTorch's argument errors name what was passed (``Tensor``, ``int``, ``tuple of [int, str]``)."""
    if isinstance(v, Tensor):
        return "Tensor"
    if isinstance(v, (tuple, list)):
        return f"{type(v).__name__} of [{', '.join(arg_type_name(x) for x in v)}]"
    return type(v).__name__


_KIND_NAMES = {"T": "Tensor", "T?": "Tensor", "T[]": "tuple of Tensors", "T?[]": "tuple of Tensors",
               "Scalar[]": "tuple of Scalars",
               "dtype?": "torch.dtype", "device?": "torch.device", "gen?": "torch.Generator", "any": "object"}


# PyTorch's ``numpy_compatibility_arg_names`` (python_arg_parser.cpp): NumPy's name -> PyTorch's
_NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input", "x1": "input", "x2": "other"}


class Signatures:
    """The signatures of one public name, tried in order (``PythonArgParser``). ``sigs`` are the parameter specs;
    a binding's table is built from its ``Overload``s on first use (Note [Python bindings])."""

    __slots__ = ("name", "sigs", "method", "public", "_handles", "overloads")

    def __init__(self, name: str, sigs=None, method: bool = False, handles=None):
        self.name = name
        self.sigs = sigs            # None for a binding until its first parse builds the table
        self.method = method
        self.public = None          # the binding itself, for __torch_function__ (set after its definition)
        self._handles = handles     # a binding's ((functional handle, out= handle or None), ...)
        self.overloads: list[Overload] = []   # made from them with the table

    def _table(self):
        if self.sigs is None:
            self.overloads = [Overload(op, op_out, self.method) for op, op_out in self._handles]
            self.sigs = [o.spec for o in self.overloads]
        return self.sigs

    def slow(self, args: tuple, kwargs: dict, self_=None):
        """A call no fast binder took: parse it against the table and run the overload it picks."""
        i, a = self.parse(args, kwargs, self_)
        if i < 0:  # an argument's __torch_function__ answered
            return a
        return self.overloads[i].call(a, self_)

    def parse(self, args: tuple, kwargs: dict, self_=None):
        sigs = self._table()
        for i, spec in enumerate(sigs):
            r = self._try(spec, args, kwargs)
            if r is not None:
                return i, r
        if kwargs and not _NUMPY_NAMES.keys().isdisjoint(kwargs):
            # NumPy's keyword names, which PyTorch's parser accepts too (``x.all(axis=1, keepdims=True)``)
            renamed = {_NUMPY_NAMES.get(k, k): v for k, v in kwargs.items()}
            if len(renamed) == len(kwargs):
                for i, spec in enumerate(sigs):
                    r = self._try(spec, args, renamed)
                    if r is not None:
                        return i, r
        # As PyTorch does for a few arithmetic ops: a Python number may stand for a tensor argument,
        # as a 0-dim tensor that promotes like a wrapped number (``torch.add(x, 2, out=o)``).
        if self.name not in NUMBERS_AS_TENSORS:
            return self._fail(args, kwargs, self_)
        like = self_ if self_ is not None else next(
            (v for v in list(args) + list(kwargs.values()) if isinstance(v, Tensor)), None)
        if like is not None:
            for i, spec in enumerate(sigs):
                r = self._try(spec, args, kwargs, like)
                if r is not None:
                    return i, r
        return self._fail(args, kwargs, self_)

    def _fail(self, args, kwargs, self_):
        """No signature accepts the call: an argument that overrides ``__torch_function__`` (an fx Proxy, which
        never passes the fast path) gets it, as (-1, its answer); else PyTorch's error."""
        if self.public is not None:
            full = args if self_ is None else (self_,) + tuple(args)
            r = _torch_function.dispatch(self.public, full, kwargs)
            if r is not _torch_function.NOT_HANDLED:
                return -1, r
        self._raise(args, kwargs)

    @staticmethod
    def _try(spec, args, kwargs, numbers_like=None):
        positional = [p for p in spec if not p[2]]
        if len(positional) == 1 and positional[0][1].startswith("int[") and len(args) >= 1 and \
                (len(args) > 1 or _is_int(args[0])):
            args = (tuple(args),)
        if len(args) > len(positional):
            return None
        out = {}
        for p, v in zip(positional, args):
            if v is None and _none_is_default(p):
                out[p[0]] = p[4]
                continue
            c = _convert(p[1], v) if numbers_like is None else _convert_number_ok(p[1], v, numbers_like)
            if c is _FAIL:
                return None
            out[p[0]] = c
        nkw = 0
        for name, kind, _kwonly, has_default, default in spec:
            if name in out:
                if name in kwargs:
                    return None
                continue
            if name in kwargs:
                nkw += 1
                if kwargs[name] is None and _none_is_default((name, kind, _kwonly, has_default, default)):
                    out[name] = default
                    continue
                c = _convert(kind, kwargs[name]) if numbers_like is None else \
                    _convert_number_ok(kind, kwargs[name], numbers_like)
                if c is _FAIL:
                    return None
                out[name] = c
            elif has_default:
                out[name] = default
            else:
                return None
        if nkw != len(kwargs):
            return None
        return out

    def _raise(self, args, kwargs):
        got = ", ".join([arg_type_name(a) for a in args] + [f"{k}={arg_type_name(v)}" for k, v in kwargs.items()])
        lines = []
        for spec in self.sigs:
            parts, star = [], False
            for name, kind, kwonly, has_default, default in spec:
                if kwonly and not star:
                    parts.append("*")
                    star = True
                tn = _KIND_NAMES.get(kind, kind.replace("int[", "tuple of ints[").rstrip("?"))
                parts.append(f"{tn} {name}" + (f" = {default}" if has_default else ""))
            lines.append(f" * ({', '.join(parts)})")
        if len(self.sigs) == 1:
            raise TypeError(f"{self.name}() received an invalid combination of arguments - got ({got}), "
                            f"but expected ({lines[0][4:-1]})")
        raise TypeError(f"{self.name}() received an invalid combination of arguments - got ({got}), but "
                        "expected one of:\n" + "\n".join(lines))


# ------------------------------------------------------------------------------------------------ bindings
# Note [Python bindings]
# A public function (``ember.add``) or Tensor method (``Tensor.add``) is a *binding*: ``function_binding`` /
# ``method_binding`` below make it from the overloads codegen grouped under its name (tools/codegen/gen.py), each a
# functional operator handle with the ``out=`` handle folded into it. A call goes
#   1. to ``__torch_function__`` when the protocol is on (Note [Keeping __torch_function__ off the path of plain
#      tensors] in ember/aten/torch_function.py);
#   2. through the *fast binders* (generated, one per overload whose arguments need no conversion, shared by every
#      overload of the same shape): Python's own argument binding, inline type checks, and the operator's call;
#      a binder whose checks fail answers ``MISS``;
#   3. else through the signature table (``Signatures``, built from the handles' schemas on first use: PyTorch's
#      ``PythonArgParser``), which converts what it may (lists to sizes, ``dtype=float``, device strings, numpy
#      scalars), picks the overload, and calls it (``Overload.call``); or raises PyTorch's error naming them all.
# So every fact of a signature is in its schema; codegen writes only the grouping and the shapes of the binders.
MISS = object()          # a fast binder's answer when the call needs the signature table

_DTYPE_WORDS = {"long": _dt.int64, "int": _dt.int32, "float": _dt.float32, "double": _dt.float64, "bool": _dt.bool_}


def arg_default(value):
    """A schema default as the binding passes it (``[]`` -> ``()``, ``long`` -> ``ember.int64``)."""
    if isinstance(value, list):
        return tuple(value)
    if value == "contiguous_format":
        return None
    if isinstance(value, str) and value in _DTYPE_WORDS:
        return _DTYPE_WORDS[value]
    return value


class Overload:
    """One Python signature of a binding: a functional operator, with its ``out=`` operator folded in.

    ``spec`` lists the parameters as ``Signatures`` reads them, ``(name, kind, keyword-only, has default,
    default)``; ``call`` runs the operator on the arguments the parser converted (the generic form of a fast
    binder)."""

    __slots__ = ("op", "op_out", "spec", "_plan", "_out_plan", "factory", "returns")

    def __init__(self, op, op_out=None, method: bool = False) -> None:
        self.op, self.op_out = op, op_out
        s = FunctionSchema(op.schema, op.namespace)
        args = s.arguments
        self_arg = next((a for a in args if a.name == "self"), args[0]) if method else None
        pyname = {a.name: ("input" if a.name == "self" and not method else ident(a.name)) for a in args}
        spec = [(pyname[a.name], arg_kind(a.type), a.kwarg_only, a.has_default_value,
                 arg_default(a.default_value) if a.has_default_value else None) for a in args if a is not self_arg]
        n_out = op_out.out_arity if op_out is not None else 0
        if op_out is not None:
            spec.append(("out", "T?" if n_out == 1 else "any", True, True, None))
        names = {a.name for a in args}
        self.factory = "device" in names and "dtype" in names
        if self.factory:
            spec.append(("requires_grad", "bool", True, True, False))
        self.spec = tuple(spec)
        # per schema argument: where its value is (a parameter name, None for ``self``, ("out", i) for an out
        # tensor) and how it adds to the call's key set
        self._plan = _plan([(None if a is self_arg else pyname[a.name], a) for a in args])
        self._out_plan = None
        if op_out is not None:
            so = FunctionSchema(op_out.schema, op_out.namespace)
            outs = [a for a in so.arguments if a.is_out]
            self._out_plan = _plan([(("out", outs.index(a) if n_out > 1 else -1) if a.is_out else
                                     None if method and a.name == "self" else pyname[a.name], a)
                                    for a in so.arguments])
        r = s.returns
        self.returns = ("self_list" if not r and args and args[0].type.endswith("[]") and
                        args[0].alias_info is not None and args[0].alias_info.is_write else
                        "tuple" if len(r) == 1 and r[0].type.rstrip("?") == "Tensor[]" else None)

    def call(self, a: dict, self_=None):
        out = a.get("out") if self.op_out is not None else None
        if out is not None:
            if self.factory:
                check_out_options(out, a["dtype"])
            return self._run(self.op_out, self._out_plan, a, self_)
        r = self._run(self.op, self._plan, a, self_)
        if self.returns == "self_list":
            first = self._plan[1][0][0]
            return a[first] if first is not None else self_
        if self.returns == "tuple":
            r = tuple(r)
        return r

    def _run(self, op, plan, a, self_):
        ks, entries = plan
        vals = []
        for name, role in entries:
            if name is None:
                v = self_
            elif type(name) is tuple:
                v = a["out"] if name[1] < 0 else a["out"][name[1]]
            else:
                v = a[name]
            vals.append(v)
            if role == "T":
                ks |= v._ks
            elif role == "T?":
                ks |= ks_opt(v)
            elif role == "T[]":
                ks |= ks_list(v)
            elif role == "out":
                ks |= ks_out(v)
            elif role == "device":
                ks |= ks_device(v)
        r = op.call(ks, *vals)
        return finish_factory(r, a) if self.factory else r


def _plan(entries):
    """(initial key set, ((where, role), ...)): an operator without tensor arguments takes its ``device``
    argument's key set, or CPU's (Note [Dispatch key set of a call])."""
    roles = [_ks_role(a) for _where, a in entries]
    tensors = any(r in ("T", "T?", "T[]") for r in roles)
    if tensors:
        roles = [None if r == "device" else r for r in roles]
    initial = 0 if tensors or "device" in roles else KS_CPU
    return initial, tuple((where, r) for (where, _a), r in zip(entries, roles))


def _ks_role(a) -> str | None:
    """How a schema argument adds to a call's key set (Note [Dispatch key set of a call])."""
    t = a.type
    if t.startswith("Tensor"):
        if a.is_out:
            return "out"
        if t.endswith("[]") or t.endswith("[]?"):
            return "T[]"
        return "T?" if t.endswith("?") else "T"
    if t.rstrip("?") == "Device":
        return "device"
    return None


_TF_ON = False  # the __torch_function__ switch (Note [Keeping __torch_function__ off the path of plain tensors])


def _switch_torch_function(on: bool) -> None:
    global _TF_ON
    _TF_ON = on


_torch_function.on_switch(_switch_torch_function)
_tf_dispatch, _NOT_HANDLED = _torch_function.dispatch, _torch_function.NOT_HANDLED


# Note [Fast binders of an OpOverload]
# ``ember.ops.aten.add.Tensor(a, b)`` (what tensor subclasses' ``__torch_dispatch__``, decompositions and fx graphs of
# aten ops call) parsed its arguments against the schema on every call: 13.5 us for 16 x 16 tensors where
# ``aten.add_Tensor`` takes 6 and PyTorch's ``torch.ops.aten.add.Tensor`` 6. The public functions' fast binders
# already take an overload's arguments as its schema lists them (``self`` named ``input``) and check their types, so
# an OpOverload tries the function binder of its handle first (``fast_binder``), as a binding does, and parses only
# what that binder does not take (conversions, ``self=``, an ``out=``, which a functional overload refuses). A binder
# whose result is not the operator's (``torch._foreach_mul_(xs, 2)`` returns ``xs``; the operator nothing) is not
# used. Bindings register their binders here; the map is built on first use.
_BINDERS: list[tuple[Any, ...]] = []      # every function binding's fast binders, in order of definition
_BY_HANDLE: dict[Any, Any] | None = None


def fast_binder(handle: Any) -> Any:
    """The function binder whose operator is ``handle`` (None if no public function has one): Note [Fast binders of
    an OpOverload]."""
    global _BY_HANDLE
    if _BY_HANDLE is None:
        by: dict[Any, Any] = {}
        for fasts in _BINDERS:
            for f in fasts:
                if "_returning" in f.__code__.co_names:   # the binding's result is not the operator's
                    continue
                for cell in f.__closure__ or ():
                    h = cell.cell_contents
                    if isinstance(h, OperatorHandle) and not h.out_arity:
                        by.setdefault(h, f)
        _BY_HANDLE = by
    return _BY_HANDLE.get(handle)


def _named(binding, name: str, module: str, doc: str, wrapped, fasts):
    binding.__name__ = binding.__qualname__ = name
    binding.__module__ = module
    binding.__doc__ = doc
    if wrapped is not None:  # Note [Binding docstrings]: what inspect.signature shows
        binding.__wrapped__ = fasts[0] if wrapped is True else wrapped
    return binding


# Note [Choosing a fast binder by its arguments]
# A binding with several fast binders (``Tensor.sum``: ``sum(*, dtype)`` and ``sum(dim, keepdim, *, dtype)``) used to
# try them in order, and a binder whose parameters do not fit the call is refused by Python with a TypeError:
# ``x.sum(1)`` raised and caught one before it reached its binder, 1.4 us of its 11. The binders' parameters are
# known when the binding is made, so it keeps, per count of positional arguments, the binders that can take that
# many (``_ARITY_TABLE`` counts; more tries them all), each with its parameter names: a call's keywords must be
# among them. The TypeError handling stays for what the table cannot see (a required parameter left out), and a
# TypeError raised inside a binder (not by binding its arguments) propagates.  A binder taking ``int[]`` as
# varargs (``x.view(2, 3)``) takes any count of positional integers.
_ARITY_TABLE = 8


def _fits(fasts, varargs, method: bool):
    """Per count of positional arguments (after ``self``), the binders that can take that many: without keywords
    (their required parameters all given), and with keywords (which may give the rest), in the binding's order, as
    ``(binder, varargs?, parameter names)``; and all of them, for longer calls."""
    first = 1 if method else 0
    rows = []
    for i, f in enumerate(fasts):
        code = f.__code__
        most = code.co_argcount - first
        fewest = most - len(f.__defaults__ or ())
        names = frozenset(code.co_varnames[first:code.co_argcount + code.co_kwonlyargcount])
        rows.append(((f, i in varargs, names), fewest, most))
    every = tuple(r[0] for r in rows)
    plain = tuple(tuple(r[0] for r in rows if (r[0][1] and n) or r[1] <= n <= r[2]) for n in range(_ARITY_TABLE))
    keyed = tuple(tuple(r[0] for r in rows if (r[0][1] and n) or n <= r[2]) for n in range(_ARITY_TABLE))
    return plain, keyed, every


def function_binding(module: str, name: str, overloads, fasts=(), varargs=(), wrapped=None, op_name=None,
                  doc: str = ""):
    """A public function (``ember.add``) over ``overloads``, trying the fast binders ``fasts`` first (Note [Python
    bindings]); ``varargs`` lists the positions of the binders that take an ``int[]`` as varargs (``ember.zeros(2,
    3)``); ``wrapped`` is what ``inspect.signature`` reads (True: the first fast binder); ``op_name`` the
    ``__name__`` when PyTorch's differs from the public name (``linalg_inv``)."""
    sig = Signatures(name, None, False, overloads)
    fasts = tuple(fasts)
    if not varargs:
        _BINDERS.append(fasts)      # Note [Fast binders of an OpOverload]
    if len(fasts) == 1 and not varargs:
        fast = fasts[0]

        def binding(*args, **kwargs):
            if _TF_ON:
                r = _tf_dispatch(binding, args, kwargs)
                if r is not _NOT_HANDLED:
                    return r
            try:
                r = fast(*args, **kwargs)
            except TypeError as e:
                if e.__traceback__.tb_next is not None:  # raised inside, not by binding the arguments
                    raise
            else:
                if r is not MISS:
                    return r
            return sig.slow(args, kwargs)
    else:
        plain, keyed, every = _fits(fasts, varargs, False)   # Note [Choosing a fast binder by its arguments]

        def binding(*args, **kwargs):
            if _TF_ON:
                r = _tf_dispatch(binding, args, kwargs)
                if r is not _NOT_HANDLED:
                    return r
            n = len(args)
            for fast, va, names in ((keyed if kwargs else plain)[n] if n < _ARITY_TABLE else every):
                if kwargs and not kwargs.keys() <= names:
                    continue
                try:
                    r = fast(args, **kwargs) if va and n and type(args[0]) is int else fast(*args, **kwargs)
                except TypeError as e:
                    if e.__traceback__.tb_next is not None:
                        raise
                    continue
                if r is not MISS:
                    return r
            return sig.slow(args, kwargs)
    sig.public = binding
    return _named(binding, op_name or name, module, doc, wrapped, fasts)


def method_binding(module: str, name: str, overloads, fasts=(), varargs=(), wrapped=None, op_name=None,
                  doc: str = ""):
    """A Tensor method (``Tensor.add``): ``function_binding`` with ``self`` bound first."""
    sig = Signatures(name, None, True, overloads)
    fasts = tuple(fasts)
    if len(fasts) == 1 and not varargs:
        fast = fasts[0]

        def binding(self, *args, **kwargs):
            if _TF_ON:
                r = _tf_dispatch(binding, (self,) + args, kwargs)
                if r is not _NOT_HANDLED:
                    return r
            try:
                r = fast(self, *args, **kwargs)
            except TypeError as e:
                if e.__traceback__.tb_next is not None:  # raised inside, not by binding the arguments
                    raise
            else:
                if r is not MISS:
                    return r
            return sig.slow(args, kwargs, self)
    else:
        plain, keyed, every = _fits(fasts, varargs, True)   # Note [Choosing a fast binder by its arguments]

        def binding(self, *args, **kwargs):
            if _TF_ON:
                r = _tf_dispatch(binding, (self,) + args, kwargs)
                if r is not _NOT_HANDLED:
                    return r
            n = len(args)
            for fast, va, names in ((keyed if kwargs else plain)[n] if n < _ARITY_TABLE else every):
                if kwargs and not kwargs.keys() <= names:
                    continue
                try:
                    r = fast(self, args, **kwargs) if va and n and type(args[0]) is int else fast(self, *args, **kwargs)
                except TypeError as e:
                    if e.__traceback__.tb_next is not None:
                        raise
                    continue
                if r is not MISS:
                    return r
            return sig.slow(args, kwargs, self)
    sig.public = binding
    return _named(binding, op_name or name, module, doc, wrapped, fasts)
