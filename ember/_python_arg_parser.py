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

import numpy as np

from ember.aten import torch_function as _torch_function
from ember.c10 import dtype as _dt
from ember.c10.device import device as _device
from ember.aten.composite import wrapped_number
from ember.aten.dispatcher import ks_device, ks_list, ks_opt  # noqa: F401 (the bindings import them from here)
from ember.c10.generator import Generator
from ember.c10.size import Size as _Size
from ember.c10.tensor_impl import TensorImpl as Tensor  # every ember tensor is one
from ember.aten.wrap import new_tensor as _new_tensor
from ember.c10.device import CPU
from ember.c10.dispatch_key import KS_CPU, DispatchKey

_PYTHON_BIT = 1 << DispatchKey.Python


_FAIL = object()
# PyTorch's should_allow_numbers_as_tensors list (python_arg_parser.cpp)
NUMBERS_AS_TENSORS = {"add", "add_", "div", "div_", "divide", "divide_", "mul", "mul_", "multiply", "multiply_",
                      "sub", "sub_", "subtract", "subtract_", "true_divide", "true_divide_", "floor_divide",
                      "floor_divide_", "to", "_to_copy", "copy_"}
_PY_TYPE_DTYPES = {builtins.float: _dt.float64, builtins.int: _dt.int64, builtins.bool: _dt.bool_,
                   builtins.complex: _dt.complex128}


NUMBER_TYPES = frozenset((bool, int, float, complex))


def fast_ints(x, single: bool):
    """``x`` as a tuple of ints when it already is one (or a lone int for ``int[N]``); else None."""
    t = type(x)
    if t is tuple or t is _Size:
        for i in x:
            if type(i) is not int:
                return None
        return x
    if single and t is int:
        return (x,)
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
        return _wrap_number(v.item() if isinstance(v, np.generic) else v, like)
    return _convert(kind, v)


def _wrap_number(value, like):
    """The parser's own wrapping of a number as a 0-dim tensor (PyTorch's ``scalar_to_tensor``): made directly, not
    through the dispatcher, so a dispatch mode sees no ``scalar_tensor`` call for it -- as in PyTorch. The dtype is
    ``wrapped_number``'s."""
    if like.device.type == "meta" or like._ks & _PYTHON_BIT:
        t = wrapped_number(value, like)
        t.__dict__["_wrapped_number"] = value
        return t
    d = _dt.scalar_dtype(value)
    if d._cat <= like.dtype._cat:
        d = like.dtype
    t = _new_tensor(np.asarray(value, dtype=d.np), KS_CPU, CPU) if like.device.type == "cpu" else \
        wrapped_number(value, like)
    t.__dict__["_wrapped_number"] = value   # the Python key shows it as the number (ember/_ops.py's _unbox)
    return t


def scalar_type_name(v) -> str:
    if isinstance(v, Tensor):
        return "Tensor"
    if isinstance(v, (tuple, list)):
        return f"{type(v).__name__} of [{', '.join(scalar_type_name(x) for x in v)}]"
    return type(v).__name__


_KIND_NAMES = {"T": "Tensor", "T?": "Tensor", "T[]": "tuple of Tensors", "T?[]": "tuple of Tensors",
               "Scalar[]": "tuple of Scalars",
               "dtype?": "torch.dtype", "device?": "torch.device", "gen?": "torch.Generator", "any": "object"}


# PyTorch's ``numpy_compatibility_arg_names`` (python_arg_parser.cpp): NumPy's name -> PyTorch's
_NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input", "x1": "input", "x2": "other"}


class Signatures:
    __slots__ = ("name", "sigs", "method", "public")

    def __init__(self, name: str, sigs, method: bool = False):
        self.name = name
        self.sigs = sigs
        self.method = method
        self.public = None          # the binding itself, for __torch_function__ (set after its definition)

    def parse(self, args: tuple, kwargs: dict, self_=None):
        for i, spec in enumerate(self.sigs):
            r = self._try(spec, args, kwargs)
            if r is not None:
                return i, r
        if kwargs and not _NUMPY_NAMES.keys().isdisjoint(kwargs):
            # NumPy's keyword names, which PyTorch's parser accepts too (``x.all(axis=1, keepdims=True)``)
            renamed = {_NUMPY_NAMES.get(k, k): v for k, v in kwargs.items()}
            if len(renamed) == len(kwargs):
                for i, spec in enumerate(self.sigs):
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
            for i, spec in enumerate(self.sigs):
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
        got = ", ".join([scalar_type_name(a) for a in args] + [f"{k}={scalar_type_name(v)}" for k, v in kwargs.items()])
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
