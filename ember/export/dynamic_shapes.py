"""``Dim``: which sizes of an exported program's inputs may change (``torch/export/dynamic_shapes.py``).

``dynamic_shapes`` mirrors the inputs: for each tensor, a dict ``{dim: spec}`` or a list / tuple with one spec per
dimension, where a spec is a named ``Dim("b", min=, max=)`` (a dimension that must be dynamic, within its range;
the same Dim object at several places says those sizes are equal), a derived Dim (``2 * b``, ``b + 1``),
``Dim.AUTO`` (dynamic if the program allows, else static), ``Dim.DYNAMIC`` (must be dynamic), ``Dim.STATIC`` or
``None`` or an int (static). The top level is a dict keyed by the forward's parameter names, or a tuple / list in
the order of the inputs.
"""
from __future__ import annotations

import dataclasses
import inspect
from enum import Enum, auto
from typing import Any, Callable

from ember._dynamo.exc import UserError, UserErrorType
from ember._tensor import Tensor
from ember.utils._pytree import tree_map
from ember.fx.experimental.symbolic_shapes import int_oo

__all__ = ["Dim", "dims", "ShapesCollection", "Constraint"]


class _DimHintType(Enum):
    AUTO = auto()
    STATIC = auto()
    DYNAMIC = auto()


@dataclasses.dataclass
class _DimHint:
    """``Dim.AUTO`` / ``Dim.DYNAMIC`` / ``Dim.STATIC``; calling one gives it bounds (``Dim.AUTO(min=2, max=64)``)."""
    type: _DimHintType
    min: int | None = None
    max: int | None = None
    _factory: bool | None = True

    @staticmethod
    def AUTO() -> _DimHint:     # noqa: N802  (PyTorch's names)
        return _DimHint(_DimHintType.AUTO)

    @staticmethod
    def DYNAMIC() -> _DimHint:  # noqa: N802
        return _DimHint(_DimHintType.DYNAMIC)

    @staticmethod
    def STATIC() -> _DimHint:   # noqa: N802
        return _DimHint(_DimHintType.STATIC)

    def __call__(self, min: int | None = None, max: int | None = None) -> _DimHint:  # noqa: A002
        if not self._factory:
            raise TypeError(f"'{type(self)}' object is not callable")
        if min is not None and min < 0:
            raise AssertionError(f"min must be non-negative, got {min}")
        if max is not None and max < 0:
            raise AssertionError(f"max must be non-negative, got {max}")
        if min is not None and max is not None and min > max:
            raise AssertionError(f"min must be <= max, got min={min}, max={max}")
        return _DimHint(self.type, min=min, max=max, _factory=False)

    def __repr__(self) -> str:
        parts = [self.type.name]
        if self.min is not None:
            parts.append(f"min={self.min}")
        if self.max is not None:
            parts.append(f"max={self.max}")
        return f"DimHint({', '.join(parts)})"


class Dim:
    """A named dynamic dimension with its range (``min`` defaults to 0, ``max`` to ``int_oo``); ``Dim.AUTO``,
    ``Dim.DYNAMIC`` and ``Dim.STATIC`` are the unnamed hints."""

    AUTO = _DimHint.AUTO()
    DYNAMIC = _DimHint.DYNAMIC()
    STATIC = _DimHint.STATIC()

    def __init__(self, name: str, *, min: int | None = None, max: int | None = None) -> None:  # noqa: A002
        _min = 0 if min is None else min
        _max: Any = int_oo if max is None else max
        if not (_max > _min):
            raise AssertionError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        if not name.isidentifier():
            raise AssertionError(f"Dim name must be a valid identifier, got {name}")
        self.__name__ = name
        self.min = _min
        self.max = _max

    def _check_int(self, other: Any, what: str, positive: bool = False) -> None:
        if type(other) is not int or (positive and other <= 0):
            raise NotImplementedError(
                f"Attempted to {what}, where {'a positive integer' if positive else 'an integer'} was expected. "
                "(Only increasing linear operations with integer coefficients are supported.)")

    def __add__(self, other: Any) -> Dim:
        self._check_int(other, f"add {other} to {self.__name__}")
        return self._derive(1, other)

    def __radd__(self, other: Any) -> Dim:
        return self.__add__(other)

    def __sub__(self, other: Any) -> Dim:
        self._check_int(other, f"subtract {other} from {self.__name__}")
        return self._derive(1, -other)

    def __rsub__(self, other: Any) -> Dim:
        raise NotImplementedError(f"Attempted to negate {self.__name__}. "
                                  "(Only increasing linear operations with integer coefficients are supported.)")

    def __mul__(self, other: Any) -> Dim:
        self._check_int(other, f"multiply {other} with {self.__name__}", positive=True)
        return self._derive(other, 0)

    def __rmul__(self, other: Any) -> Dim:
        return self.__mul__(other)

    def _derive(self, a: int, b: int) -> Dim:
        return _DerivedDim(self, a, b)

    @staticmethod
    def _readable(name: str, min_: Any, max_: Any) -> str:
        lo = None if min_ == 2 else min_
        hi = None if max_ is int_oo else max_
        if lo is None and hi is None:
            return f"Dim('{name}')"
        if lo is None:
            return f"Dim('{name}', max={hi})"
        if hi is None:
            return f"Dim('{name}', min={lo})"
        return f"Dim('{name}', min={lo}, max={hi})"

    def __repr__(self) -> str:
        return Dim._readable(self.__name__, self.min, self.max)


class _DerivedDim(Dim):
    """``a * root + b`` (``a`` positive): a dimension that is a function of a named one."""

    root: Dim
    a: int
    b: int

    def __init__(self, root: Dim, a: int, b: int) -> None:     # (no Dim.__init__: min and max are derived)
        if isinstance(root, _DerivedDim):      # a derived dim of a derived dim: compose the two functions
            a, b, root = root.a * a, root.b * a + b, root.root
        self.root, self.a, self.b = root, a, b
        term = root.__name__ if a == 1 else f"{a}*{root.__name__}"
        self.__name__ = term if b == 0 else f"{term} {'+' if b > 0 else '-'} {abs(b)}"

    @property
    def min(self) -> Any:      # type: ignore[override]
        v = self.a * self.root.min + self.b
        if v < 0:
            raise AssertionError(f"Expected derived min value of {self.__name__} to be >= 0. Please specify an "
                                 f"appropriate min value for {self.root.__name__} (currently {self.root.min}).")
        return v

    @property
    def max(self) -> Any:
        return int_oo if self.root.max is int_oo else self.a * self.root.max + self.b

    def value_of(self, root_value: int) -> int:
        return self.a * root_value + self.b

    def __repr__(self) -> str:
        return self.__name__


def dims(*names: str, min: int | None = None, max: int | None = None) -> tuple[Dim, ...]:  # noqa: A002
    """``Dim`` objects with the given names and the same range."""
    return tuple(Dim(name, min=min, max=max) for name in names)


class ShapesCollection:
    """``dynamic_shapes`` keyed by the input tensors themselves: ``sc[x] = {0: Dim("b")}``, then
    ``export(m, args, dynamic_shapes=sc.dynamic_shapes(m, args))``."""

    def __init__(self) -> None:
        self._shapes: dict[int, Any] = {}

    def __setitem__(self, t: Any, shape: Any) -> None:
        self._shapes[id(t)] = shape

    def __getitem__(self, t: Any) -> Any:
        return self._shapes.setdefault(id(t), {})

    def __len__(self) -> int:
        return len(self._shapes)

    def dynamic_shapes(self, m: Any, args: Any, kwargs: Any = None) -> Any:
        return tree_map(lambda t: self._shapes.get(id(t)) if isinstance(t, Tensor) else None,
                        (tuple(args), dict(kwargs or {})))


Constraint = Any


def _error(msg: str) -> UserError:
    return UserError(UserErrorType.INVALID_INPUT, msg)


def _arg_names(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    sig = inspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    return list(bound.arguments)


def specs_per_input(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                    dynamic_shapes: Any) -> dict[str, Any]:
    """``dynamic_shapes`` as {argument name: its spec}, checked as PyTorch checks it (dict keys must be the
    argument names; a tuple / list must have one entry per input)."""
    names = _arg_names(fn, args, kwargs)
    if dynamic_shapes is None:
        return {}
    if isinstance(dynamic_shapes, dict):
        if not set(dynamic_shapes) <= set(names):
            raise _error(f"When `dynamic_shapes` is specified as a dict, its top-level keys must be the arg names "
                         f"{names} of `inputs`, but here they are {list(dynamic_shapes)}. Alternatively, you could "
                         "also ignore arg names entirely and specify `dynamic_shapes` as a list/tuple matching "
                         "`inputs`.")
        return dict(dynamic_shapes)
    if isinstance(dynamic_shapes, (tuple, list)):
        if len(dynamic_shapes) != len(names):
            raise _error(f"When `dynamic_shapes` is specified as a {type(dynamic_shapes).__name__}, it must have "
                         f"one entry per input ({len(names)}), but it has {len(dynamic_shapes)}.")
        return dict(zip(names, dynamic_shapes))
    raise _error(f"Unexpected dynamic_shapes {dynamic_shapes!r}: expected a dict, a tuple or a list")


def dims_of_tensor(spec: Any, ndim: int, where: str) -> dict[int, Any]:
    """One tensor's spec as {dim: Dim or hint}; static dimensions left out."""
    if spec is None:
        return {}
    if isinstance(spec, dict):
        items = list(spec.items())
    elif isinstance(spec, (tuple, list)):
        if len(spec) != ndim:
            raise _error(f"Expected dynamic shape spec {spec} at {where} to have the same length as the actual "
                         f"tensor shape ({ndim})")
        items = list(enumerate(spec))
    else:
        raise _error(f"Unexpected dynamic_shape {spec!r} of a Tensor at {where}; expected a dict, tuple or list")
    out: dict[int, Any] = {}
    for d, s in items:
        if not isinstance(d, int) or not -ndim <= d < ndim:
            raise _error(f"Dimension {d} of {where} is out of range for a tensor of {ndim} dimensions")
        if s is None or isinstance(s, int) or (isinstance(s, _DimHint) and s.type == _DimHintType.STATIC):
            continue
        if not isinstance(s, (Dim, _DimHint)):
            raise _error(f"Unexpected dimension mapped to index {d} in input tensor shape {spec} specified at "
                         f"{where} (expected None, an int, a Dim, Dim.AUTO, Dim.STATIC, or Dim.DYNAMIC, but got "
                         f"{s!r} instead)")
        out[d % ndim] = s
    return out
