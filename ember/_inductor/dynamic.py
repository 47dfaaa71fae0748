"""Shape-generic code from three traces (the dynamic-shape counterpart of PyTorch's symbolic sizes).

Note [Dynamic sizes]
PyTorch traces with symbolic sizes (``s0``) and writes code in them. ember traces with concrete sizes only, so
it generalizes afterwards: when a compiled function is called with a second size of some dimension (or
``dynamic=True`` asks from the first call), the same function is also compiled at a third size of that
dimension, on empty tensors (the capture computes nothing). The three generated functions are compared token by
token: they must be the same code but for integer literals, and every literal that differs must be an affine
function ``a * s + c`` (integer ``a`` and ``c``) of one dimension that differs among the inputs -- three points
check what two would only fit. The generic function reads each such dimension from its first input that has it
(``s0 = x_1._data.shape[0]``) and computes the literals from it; the guards then accept any size of 2 or more
for those dimensions (PyTorch also specializes 0 and 1), requiring the dimensions that were equal in the three
traces to stay equal. Anything else -- different code, a constant that depends on the size (a folded causal mask
of the dynamic length), a literal no affine function explains -- leaves the per-size graphs in place.
"""
from __future__ import annotations

import io
import tokenize
from typing import Any, Callable

import numpy as np


def _tokens(src: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(src).readline))


def symbols_of(shapes: list[list[tuple[int, ...] | None]]) -> list[tuple[tuple[int, ...], list[tuple[int, int]]]]:
    """The dimensions that differ among the traces, grouped by their values: [(values per trace, [(input, dim)])]."""
    groups: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    first = shapes[0]
    for i, shape in enumerate(first):
        if shape is None:
            continue
        for d in range(len(shape)):
            vals = tuple(s[i][d] for s in shapes)        # type: ignore[index]
            if len(set(vals)) > 1:
                groups.setdefault(vals, []).append((i, d))
    return list(groups.items())


def _fit(us: tuple[int, ...], syms: list[tuple[int, ...]]) -> str | None:
    for k, vs in enumerate(syms):
        dv = vs[1] - vs[0]
        if dv == 0 or (us[1] - us[0]) % dv:
            continue
        a = (us[1] - us[0]) // dv
        c = us[0] - a * vs[0]
        if all(u == a * v + c for u, v in zip(us, vs)):
            term = f"s{k}" if a == 1 else f"{a} * s{k}"
            return term if c == 0 else f"({term} {'+' if c > 0 else '-'} {abs(c)})"
    return None


def _same_global(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    from ember._inductor.fusion import Kernel
    if isinstance(a, Kernel):          # a fused loop: the same loop over the same layouts
        return a.key == b.key
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b, equal_nan=True))
    if hasattr(a, "_data") and isinstance(getattr(a, "_data", None), np.ndarray):   # a constant tensor
        return _same_global(a._data, b._data)
    if isinstance(a, (int, float, str, bytes, tuple, type(None))):
        return bool(a == b)
    return repr(a) == repr(b) and type(a).__name__ in ("TreeSpec", "LeafSpec", "dtype")


def generalize(fns: list[Callable[..., Any]], shapes: list[list[tuple[int, ...] | None]],
               params: list[str]) -> Callable[..., Any] | None:
    """One function for every size, from the generated functions of three (Note [Dynamic sizes]); ``shapes``:
    per trace, the shape of each parameter (None for a non-tensor), ``params``: the parameter names."""
    srcs = [f.__ember_source__ for f in fns]   # type: ignore[attr-defined]
    toks = [_tokens(s) for s in srcs]
    if len({len(t) for t in toks}) != 1:
        return None
    syms = symbols_of(shapes)
    if not syms:
        return None
    values = [vals for vals, _ in syms]
    edits: list[tuple[tuple[int, int], tuple[int, int], str]] = []
    for ts in zip(*toks):
        if all(t.string == ts[0].string for t in ts):
            continue
        if not all(t.type == tokenize.NUMBER and t.string.isdigit() for t in ts):
            return None
        expr = _fit(tuple(int(t.string) for t in ts), values)
        if expr is None:
            return None
        edits.append((ts[0].start, ts[0].end, expr))
    ns = [f.__globals__ for f in fns]
    for name, v in ns[0].items():
        if name.startswith("__") or name == fns[0].__name__:
            continue
        if not all(name in other and _same_global(v, other[name]) for other in ns[1:]):
            return None
    lines = srcs[0].splitlines(True)
    for (r0, c0), (r1, c1), expr in sorted(edits, reverse=True):
        if r0 != r1:
            return None
        line = lines[r0 - 1]
        lines[r0 - 1] = line[:c0] + expr + line[c1:]
    header = lines[0]
    reads = [f"    s{k} = {params[where[0][0]]}._data.shape[{where[0][1]}]\n" for k, (_, where) in enumerate(syms)]
    src = header + "".join(reads) + "".join(lines[1:])
    name = fns[0].__name__
    g = dict(ns[0])
    filename = f"<ember compiled {name} (dynamic)>"
    exec(compile(src, filename, "exec"), g)
    fn = g[name]
    fn.__ember_source__ = src
    import linecache
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    return fn  # type: ignore[no-any-return]
