"""Symbolic sizes as ``ember.export`` shows them (``torch/fx/experimental/symbolic_shapes.py``, ``torch.SymInt``,
``torch/utils/_sympy/value_ranges.py``).

Note [Symbolic sizes in ember]
PyTorch traces with sizes that are sympy symbols and propagates them through every meta kernel. ember's meta
kernels compute with concrete sizes (NumPy shapes), so an export learns how a size depends on the dynamic
dimensions by tracing more than once (Note [Dynamic shapes by retracing] in ``ember/export/_trace.py``) and
writes what it found with the small algebra here: a ``SymExpr`` is a polynomial with integer coefficients in the
symbols (``4*s17 + 4*s77``, ``s0*s1``), printed as sympy prints it; a ``SymInt`` is such an expression with the
example's value as its hint -- the ``meta["val"]`` of a ``sym_size`` node. ``ValueRanges`` are the ranges of
``ExportedProgram.range_constraints`` (``VR[2, int_oo]``).
"""
from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["SymExpr", "SymInt", "Symbol", "ValueRanges", "int_oo", "GuardOnDataDependentSymNode",
           "symbol_name"]


class GuardOnDataDependentSymNode(RuntimeError):
    """A branch or a size needed a value read from a tensor while exporting (PyTorch's error class)."""


class _IntInfinity:
    """``int_oo``: the upper end of a range without a bound."""

    def __repr__(self) -> str:
        return "int_oo"

    def __gt__(self, other: Any) -> bool:
        return other is not self

    def __ge__(self, other: Any) -> bool:
        return True

    def __lt__(self, other: Any) -> bool:
        return False

    def __le__(self, other: Any) -> bool:
        return other is self

    def __eq__(self, other: Any) -> bool:
        return other is self

    def __hash__(self) -> int:
        return hash("int_oo")


int_oo = _IntInfinity()


class ValueRanges:
    """A closed range of integers, ``upper`` may be ``int_oo`` (``torch.utils._sympy.value_ranges.ValueRanges``)."""

    __slots__ = ("lower", "upper")

    def __init__(self, lower: Any, upper: Any) -> None:
        self.lower = lower
        self.upper = upper

    def __contains__(self, v: int) -> bool:
        return self.lower <= v and (self.upper is int_oo or v <= self.upper)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ValueRanges) and (self.lower, self.upper) == (other.lower, other.upper)

    def __hash__(self) -> int:
        return hash((self.lower, self.upper))

    def __repr__(self) -> str:
        return f"VR[{self.lower}, {self.upper!r}]"


def symbol_name(source: str, taken: set[int]) -> str:
    """The name PyTorch gives the symbol of the size read from ``source`` (``L['x'].size()[0]`` -> ``s77``): a
    hash of the source's name, moved past numbers already taken."""
    n = int(hashlib.sha256(source.encode()).hexdigest(), 16) % 100
    while n in taken:
        n += 1
    taken.add(n)
    return f"s{n}"


class Symbol:
    """One dynamic size (a key of ``range_constraints``); prints as its name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Symbol) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


Monomial = tuple[str, ...]      # symbol names, sorted, repeated for powers; () is the constant term


class SymExpr:
    """A polynomial with integer coefficients in named symbols; immutable."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict[Monomial, int]) -> None:
        self.terms = {m: c for m, c in terms.items() if c}

    @staticmethod
    def of(x: Any) -> SymExpr:
        if isinstance(x, SymExpr):
            return x
        if isinstance(x, SymInt):
            return x.expr
        if isinstance(x, Symbol):
            return SymExpr({(x.name,): 1})
        return SymExpr({(): int(x)})

    def __add__(self, other: Any) -> SymExpr:
        t = dict(self.terms)
        for m, c in SymExpr.of(other).terms.items():
            t[m] = t.get(m, 0) + c
        return SymExpr(t)

    __radd__ = __add__

    def __neg__(self) -> SymExpr:
        return SymExpr({m: -c for m, c in self.terms.items()})

    def __sub__(self, other: Any) -> SymExpr:
        return self + -SymExpr.of(other)

    def __rsub__(self, other: Any) -> SymExpr:
        return SymExpr.of(other) - self

    def __mul__(self, other: Any) -> SymExpr:
        t: dict[Monomial, int] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in SymExpr.of(other).terms.items():
                m = tuple(sorted(m1 + m2))
                t[m] = t.get(m, 0) + c1 * c2
        return SymExpr(t)

    __rmul__ = __mul__

    @property
    def free_symbols(self) -> set[str]:
        return {s for m in self.terms for s in m}

    def is_constant(self) -> bool:
        return all(not m for m in self.terms)

    def constant(self) -> int:
        return self.terms.get((), 0)

    def subs(self, values: dict[str, int]) -> int:
        total = 0
        for m, c in self.terms.items():
            v = c
            for s in m:
                v *= values[s]
            total += v
        return total

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, (int, SymExpr, SymInt, Symbol)):
            return self.terms == SymExpr.of(other).terms
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self.terms.items()))

    def __str__(self) -> str:
        """As sympy prints it: terms of higher degree first, then by their symbols' names, the constant last
        (``4*s17 + 4*s77``, ``s77 - 1``, ``s17*s77``)."""
        order = sorted(self.terms, key=lambda m: (not m, -len(m), m))
        out = ""
        for i, m in enumerate(order):
            c = self.terms[m]
            body = _power_product(m)
            text = str(abs(c)) if not m else (body if abs(c) == 1 else f"{abs(c)}*{body}")
            if i == 0:
                out = ("-" if c < 0 else "") + text
            else:
                out += (" - " if c < 0 else " + ") + text
        return out or "0"

    __repr__ = __str__


def _power_product(m: Monomial) -> str:
    parts: list[str] = []
    for s in sorted(set(m)):
        k = m.count(s)
        parts.append(s if k == 1 else f"{s}**{k}")
    return "*".join(parts)


class SymInt:
    """A size that depends on the dynamic dimensions (``torch.SymInt``): its expression, and the value it had in
    the example the program was exported with. Arithmetic with ints and other SymInts stays symbolic."""

    __slots__ = ("expr", "hint")

    def __init__(self, expr: SymExpr, hint: int) -> None:
        self.expr = expr
        self.hint = hint

    def _lift(self, other: Any, op: Any) -> Any:
        if isinstance(other, SymInt):
            return SymInt(op(self.expr, other.expr), op(self.hint, other.hint))
        if isinstance(other, int):
            return SymInt(op(self.expr, SymExpr.of(other)), op(self.hint, other))
        return NotImplemented

    def __add__(self, other: Any) -> Any:
        return self._lift(other, lambda a, b: a + b)

    def __radd__(self, other: Any) -> Any:
        return self._lift(other, lambda a, b: b + a)

    def __sub__(self, other: Any) -> Any:
        return self._lift(other, lambda a, b: a - b)

    def __rsub__(self, other: Any) -> Any:
        return self._lift(other, lambda a, b: b - a)

    def __mul__(self, other: Any) -> Any:
        return self._lift(other, lambda a, b: a * b)

    def __rmul__(self, other: Any) -> Any:
        return self._lift(other, lambda a, b: b * a)

    def __int__(self) -> int:
        return self.hint

    def __index__(self) -> int:
        return self.hint

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, (SymInt, int)):
            return self.expr == SymExpr.of(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.expr)

    def __str__(self) -> str:
        return str(self.expr)

    def __repr__(self) -> str:
        return str(self.expr)
