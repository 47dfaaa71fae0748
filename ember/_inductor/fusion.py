"""Pointwise fusion: chains of elementwise operators of a graph become one generated numba loop.

Note [Pointwise fusion]
Run one operator at a time, ``gelu(x + b) * m`` makes three passes over memory and two temporaries the size of
``x``. Inductor fuses such chains into one loop; ember does too, for the graphs it generates code for (Note
[Graph code]):

* **Which operators.** Those of ``_FORMULAS``: arithmetic, comparisons, ``where``, the activations and their
  backward formulas, each written as an expression on one element. A node qualifies when its result is a dense
  float32 / float64 (or bool) tensor on the CPU and its tensor arguments are of that float dtype (bool where the
  operator takes a mask). Numbers are rounded to the tensors' dtype first, as NumPy and PyTorch treat a Python
  scalar.
* **Groups.** Walking the graph in order, a qualifying node joins the group of the latest producer it reads that
  is in a group of the same shape -- unless a node in between reads a member of that group, since the group runs
  where its last member stands and everything outside it must find its members' values computed. A group of one
  is left to its own kernel. A member read outside the group (or returned) is written to an array; the others
  live in registers only.
* **Sums.** A ``sum`` or ``mean`` over the last dimension or over all of them (``dtype=None``) of a member joins its
  group: the loop runs over rows of the output's (rows, last dimension) view and accumulates each row in a float64
  register, written once the row is done -- a per-row result directly, an all-dimensions one as the total of the
  row totals. A sum is complete only after its row, so no member of its own loop may read it (what reads it joins
  another loop, after this one).
* **Layout.** Eagerly an elementwise result takes the memory order of its inputs (a transposed or channels-last
  input gives a transposed or channels-last result), and the arrays a loop writes must have the strides the graph
  recorded. So the loop runs in that order: every input is seen through the same permutation of dimensions, the
  output arrays are C-contiguous in it, and the results are their un-permuted views. A group whose written
  results disagree on their order is not fused.
* **The loop.** Each input is passed in the layout the loop reads directly: the full output shape (contiguous;
  a transposed or otherwise broadcast input is copied once), a row vector broadcast over the rows (a bias), a
  column broadcast over the columns (a per-row statistic), or one element. Inputs all full or single become one
  flat loop; otherwise a loop over rows and columns of the output viewed as (rows, last dimension). As ember's
  hand-written numba loops (``ember/aten/kernels/loops``), a fused loop evaluates each operator in
  float64 registers, with the same fast-math flags (no assumption that values are finite, so NaN and inf
  propagate as in PyTorch); each float32 operator's result is rounded to float32 before the next one reads it,
  as eagerly, so a chain gives the eager values to within each operator's own rounding. The range is split over
  the intra-op threads.
* **Cached on disk.** The loop's source is named by its hash and written to the kernel cache directory
  (``EMBER_INDUCTOR_CACHE_DIR``, else ``emberinductor_<user>`` in the temporary directory, as PyTorch's
  ``torchinductor_<user>``); numba keeps the machine code beside it, so a graph seen before, in any process,
  loads its kernels instead of compiling them.
* **Buffers.** A fused result writes into the array of a dead intermediate of the same size and dtype when there
  is one: an earlier fused result that only other fused loops read (so nothing views its memory).
"""
from __future__ import annotations

import getpass
import hashlib
import importlib.util
import math
import operator
import os
import sys
import tempfile
from typing import Any, Callable

import numpy as np

from ember._tensor import Tensor
from ember.aten import parallel

# argument layouts of a fused loop (Note [Pointwise fusion])
FULL, ROW, COL, ONE = "full", "row", "col", "one"


class _Var(str):
    """The name of an element value in a loop body (a tensor argument), as opposed to a Python number."""


def _mask(a: dict[str, Any], name: str) -> str:
    return str(a[name])


def _arith(sign: str) -> Callable[[dict[str, Any], Callable[[Any], str]], str]:
    def f(a: dict[str, Any], s: Callable[[Any], str]) -> str:
        alpha = a.get("alpha", 1)
        other = s(a["other"]) if alpha == 1 else f"({s(alpha)} * {s(a['other'])})"
        return f"({s(a['self'])} {sign} {other})"
    return f


def _clamp(a: dict[str, Any], s: Callable[[Any], str], lo: Any, hi: Any) -> str:
    x = s(a["self"])
    if lo is not None:       # NaN stays NaN: the comparison is false
        x = f"({s(lo)} if {x} < {s(lo)} else {x})"
    if hi is not None:
        x = f"({s(hi)} if {x} > {s(hi)} else {x})"
    return x


def _pow(a: dict[str, Any], s: Callable[[Any], str]) -> str:
    x, e = s(a["self"]), a["exponent"]
    special = {2: f"({x} * {x})", 1: x, 3: f"({x} * {x} * {x})", 0.5: f"np.sqrt({x})", -1: f"(1.0 / {x})"}
    if not isinstance(e, _Var) and e in special:
        return special[e]
    return f"({x} ** {s(e)})"


def _gelu(a: dict[str, Any], s: Callable[[Any], str]) -> str:
    x = s(a["self"])
    if a.get("approximate", "none") == "tanh":
        return f"(0.5 * {x} * _one_plus_tanh(_TANH_BETA * ({x} + _TANH_KAPPA * {x} * {x} * {x})))"
    return f"(0.5 * {x} * _two_phi({x}))"


def _gelu_backward(a: dict[str, Any], s: Callable[[Any], str]) -> str:
    g, x = s(a["grad_output"]), s(a["self"])
    if a.get("approximate", "none") == "tanh":
        u = f"(_TANH_BETA * ({x} + _TANH_KAPPA * {x} * {x} * {x}))"
        return (f"({g} * (0.5 * _one_plus_tanh({u}) + 0.5 * {x} * _one_plus_tanh({u}) * _one_plus_tanh(-{u}) * "
                f"_TANH_BETA * (1.0 + 3.0 * _TANH_KAPPA * {x} * {x})))")
    return f"({g} * (0.5 * _two_phi({x}) + {x} * _INV_SQRT_2PI * math.exp(-0.5 * {x} * {x})))"


def _maximum(op: str) -> Callable[[dict[str, Any], Callable[[Any], str]], str]:
    def f(a: dict[str, Any], s: Callable[[Any], str]) -> str:   # a NaN on either side gives NaN
        x, y = s(a["self"]), s(a["other"])
        return f"({x} if ({x} {op} {y} or {x} != {x}) else {y})"
    return f


def _compare(op: str) -> Callable[[dict[str, Any], Callable[[Any], str]], str]:
    return lambda a, s: f"({s(a['self'])} {op} {s(a['other'])})"


# "name.overload" -> (the element formula, the arguments that are bool masks, whether the result is bool)
_FORMULAS: dict[str, tuple[Callable[[dict[str, Any], Callable[[Any], str]], str], tuple[str, ...], bool]] = {
    "add.Tensor": (_arith("+"), (), False),
    "add.Scalar": (_arith("+"), (), False),
    "sub.Tensor": (_arith("-"), (), False),
    "sub.Scalar": (_arith("-"), (), False),
    "rsub.Tensor": (lambda a, s: f"({s(a['other'])} - {s(a.get('alpha', 1))} * {s(a['self'])})", (), False),
    "rsub.Scalar": (lambda a, s: f"({s(a['other'])} - {s(a.get('alpha', 1))} * {s(a['self'])})", (), False),
    "mul.Tensor": (lambda a, s: f"({s(a['self'])} * {s(a['other'])})", (), False),
    "mul.Scalar": (lambda a, s: f"({s(a['self'])} * {s(a['other'])})", (), False),
    "div.Tensor": (lambda a, s: f"({s(a['self'])} / {s(a['other'])})", (), False),
    "div.Scalar": (lambda a, s: f"({s(a['self'])} / {s(a['other'])})", (), False),
    "neg.default": (lambda a, s: f"(-{s(a['self'])})", (), False),
    "abs.default": (lambda a, s: f"abs({s(a['self'])})", (), False),
    "reciprocal.default": (lambda a, s: f"(1.0 / {s(a['self'])})", (), False),
    "exp.default": (lambda a, s: f"math.exp({s(a['self'])})", (), False),
    "log.default": (lambda a, s: f"np.log({s(a['self'])})", (), False),
    "log1p.default": (lambda a, s: f"np.log1p({s(a['self'])})", (), False),
    "expm1.default": (lambda a, s: f"np.expm1({s(a['self'])})", (), False),
    "sqrt.default": (lambda a, s: f"np.sqrt({s(a['self'])})", (), False),
    "rsqrt.default": (lambda a, s: f"(1.0 / np.sqrt({s(a['self'])}))", (), False),
    "sin.default": (lambda a, s: f"np.sin({s(a['self'])})", (), False),
    "cos.default": (lambda a, s: f"np.cos({s(a['self'])})", (), False),
    "erf.default": (lambda a, s: f"math.erf({s(a['self'])})", (), False),
    "tanh.default": (lambda a, s: f"_tanh({s(a['self'])})", (), False),
    "sigmoid.default": (lambda a, s: f"_sigmoid({s(a['self'])})", (), False),
    "relu.default": (lambda a, s: f"(0.0 if {s(a['self'])} < 0.0 else {s(a['self'])})", (), False),
    "silu.default": (lambda a, s: f"({s(a['self'])} * _sigmoid({s(a['self'])}))", (), False),
    "leaky_relu.default": (lambda a, s: f"({s(a['self'])} if {s(a['self'])} > 0.0 else "
                                        f"{s(a['self'])} * {s(a.get('negative_slope', 0.01))})", (), False),
    "pow.Tensor_Scalar": (_pow, (), False),
    "pow.Tensor_Tensor": (lambda a, s: f"({s(a['self'])} ** {s(a['exponent'])})", (), False),
    "clamp_min.default": (lambda a, s: _clamp(a, s, a["min"], None), (), False),
    "clamp_max.default": (lambda a, s: _clamp(a, s, None, a["max"]), (), False),
    "clamp.default": (lambda a, s: _clamp(a, s, a.get("min"), a.get("max")), (), False),
    "hardtanh.default": (lambda a, s: _clamp(a, s, a.get("min_val", -1.0), a.get("max_val", 1.0)), (), False),
    "maximum.default": (_maximum(">"), (), False),
    "minimum.default": (_maximum("<"), (), False),
    "gelu.default": (_gelu, (), False),
    "gelu_backward.default": (_gelu_backward, (), False),
    "threshold_backward.default": (lambda a, s: f"(0.0 if {s(a['self'])} <= {s(a['threshold'])} else "
                                                f"{s(a['grad_output'])})", (), False),
    "sigmoid_backward.default": (lambda a, s: f"({s(a['grad_output'])} * (1.0 - {s(a['output'])}) * "
                                              f"{s(a['output'])})", (), False),
    "tanh_backward.default": (lambda a, s: f"({s(a['grad_output'])} * (1.0 - {s(a['output'])} * "
                                           f"{s(a['output'])}))", (), False),
    "silu_backward.default": (lambda a, s: f"({s(a['grad_output'])} * _sigmoid({s(a['self'])}) * (1.0 + "
                                           f"{s(a['self'])} * (1.0 - _sigmoid({s(a['self'])}))))", (), False),
    "where.self": (lambda a, s: f"({s(a['self'])} if {_mask(a, 'condition')} else {s(a['other'])})",
                   ("condition",), False),
    "masked_fill.Scalar": (lambda a, s: f"({s(a['value'])} if {_mask(a, 'mask')} else {s(a['self'])})",
                           ("mask",), False),
    "clone.default": (lambda a, s: s(a["self"]), (), False),
}
for _name, _op in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">=")):
    _FORMULAS[f"{_name}.Tensor"] = (_compare(_op), (), True)
    _FORMULAS[f"{_name}.Scalar"] = (_compare(_op), (), True)

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_NAMES = {k.split(".")[0] for k in _FORMULAS}      # operator names worth binding a node's arguments for


class Group:
    """Nodes run as one loop, at the place of the last."""

    def __init__(self, first: Any, shape: tuple[int, ...], dtype: Any) -> None:
        self.members = [first]
        self.shape = shape
        self.dtype = dtype
        self.perm: tuple[int, ...] = tuple(range(len(shape)))     # the loop's order of dimensions
        self.reductions: set[Any] = set()      # members that sum a member over the last dim or all dims

    @property
    def last(self) -> Any:
        return self.members[-1]


def _bound(node: Any) -> dict[str, Any] | None:
    """The node's arguments by parameter name: graph nodes as they are, numbers (a number the binding wrapped as a
    tensor included) as numbers; None when the node binds no overload."""
    from ember._inductor.codegen import _bind
    from ember.fx.node import Node
    node_of: dict[int, Any] = {}

    def val(x: Any) -> Any:
        if isinstance(x, Node):
            v = x.meta.get("val")
            node_of[id(v)] = x
            return v
        return x
    hit = _bind(node.target, tuple(val(a) for a in node.args), {k: val(v) for k, v in node.kwargs.items()})
    if hit is None:
        return None
    overload, bound = hit
    out: dict[str, Any] = {"__op__": overload}
    for k, v in bound.items():
        if isinstance(v, Tensor):
            n = node_of.get(id(v))
            if n is None:          # a number the binding wrapped as a tensor
                from ember._subclasses.fake_tensor import FakeTensor
                if isinstance(v, FakeTensor) or v.dim() != 0 or not isinstance(v._data, np.ndarray):
                    return None
                v = v._data.item()
            else:
                v = n
        out[k] = v
    return out


def _qualifies(node: Any, xp: Any) -> tuple[str, dict[str, Any], Any] | None:
    """(formula key, bound arguments, compute dtype) of a node a fused loop can compute, else None."""
    from ember.fx.node import Node
    if node.op != "call_function" or xp is not np or not hasattr(node.target, "_schema"):
        return None
    if node.target.handle.name not in _NAMES:
        return None
    out = node.meta.get("val")
    if not isinstance(out, Tensor) or getattr(out, "fake_device", out.device).type != "cpu" or \
            dense_order(tuple(out.shape), out.stride()) is None:
        return None
    bound = _bound(node)
    if bound is None:
        return None
    key = bound.pop("__op__").__name__
    spec = _FORMULAS.get(key)
    if spec is None:
        return None
    _, masks, is_bool = spec
    dtype = None
    for k, v in bound.items():
        if isinstance(v, Node):
            t = v.meta.get("val")
            if not isinstance(t, Tensor) or not (v.op in ("placeholder", "get_attr") or
                                                 hasattr(v.target, "_schema") or v.target is operator.getitem):
                return None
            dt = np.dtype(t._data.dtype) if hasattr(t, "_data") else None
            if k in masks:
                if dt != np.bool_:
                    return None
                continue
            if dt not in _FLOATS or (dtype is not None and dt != dtype):
                return None
            dtype = dt
        elif isinstance(v, (list, tuple, dict)) or (isinstance(v, complex)):
            return None
    out_dt = np.dtype(out._data.dtype)
    if dtype is None or (out_dt != (np.dtype(np.bool_) if is_bool else dtype)):
        return None
    return key, bound, dtype


_REDUCTIONS = {"sum.default": "sum", "sum.dim_IntList": "sum", "mean.default": "mean", "mean.dim": "mean"}


def _reduction(node: Any, xp: Any) -> tuple[str, dict[str, Any], Any] | None:
    """("sum" | "mean", {"self", "over": "last" | "all", "keepdim"}, dtype) of a sum or mean of a float tensor over
    its last dimension or all of them, which a fused loop can accumulate row by row; else None."""
    from ember.fx.node import Node
    if node.op != "call_function" or xp is not np or not hasattr(node.target, "_schema"):
        return None
    kind = _REDUCTIONS.get(node.target.__name__)
    out = node.meta.get("val")
    x = node.args[0] if node.args else None
    if kind is None or not isinstance(out, Tensor) or not isinstance(x, Node):
        return None
    bound = _bound(node)
    t = x.meta.get("val")
    if bound is None or bound.get("dtype") is not None or not isinstance(t, Tensor) or t.dim() == 0:
        return None
    dt = np.dtype(t._data.dtype)
    if dt not in _FLOATS or np.dtype(out._data.dtype) != dt:
        return None
    nd = t.dim()
    dims = bound.get("dim")
    dims = set(range(nd)) if not dims else {d % nd for d in dims}
    over = "all" if dims == set(range(nd)) else ("last" if dims == {nd - 1} else None)
    if over is None:
        return None
    return kind, {"self": x, "over": over, "keepdim": bool(bound.get("keepdim", False))}, dt


def plan(graph: Any, xp: Any) -> list[tuple[Group, dict[Any, tuple[str, dict[str, Any], Any]]]]:
    """The groups of ``graph`` worth one loop each (two members or more), with each member's formula key, bound
    arguments and dtype (Note [Pointwise fusion])."""
    from ember._inductor import config
    nodes = list(graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    info: dict[Any, tuple[str, dict[str, Any], Any]] = {}
    group_of: dict[Any, Group] = {}
    groups: list[Group] = []
    def free_between(g: Group, n: Any) -> bool:      # nothing outside g reads a member of g before n
        return not any(index[g.last] < index[u] < index[n] and group_of.get(u) is not g
                       for m in g.members for u in m.users)
    for n in nodes:
        r = _reduction(n, xp)
        if r is not None:         # a sum of a member joins its group: the loop accumulates it row by row
            g = group_of.get(r[1]["self"])
            if g is not None and r[1]["self"] not in g.reductions and g.dtype == r[2] and \
                    len(g.members) < config.max_fusion_size and free_between(g, n):
                info[n] = r
                g.members.append(n)
                g.reductions.add(n)
                group_of[n] = g
            continue
        q = _qualifies(n, xp)
        if q is None:
            continue
        info[n] = q
        shape = tuple(n.meta["val"].shape)
        best = None
        for a in n._input_nodes:
            g = group_of.get(a)
            if g is None or g.shape != shape or g.dtype != q[2] or len(g.members) >= config.max_fusion_size:
                continue
            if any(i in g.reductions for i in n._input_nodes):
                continue          # a sum is complete only after its row: no member of its own loop can read it
            if best is None or index[g.last] > index[best.last]:
                best = g
        if best is not None and free_between(best, n):
            best.members.append(n)
            group_of[n] = best
        else:
            g = Group(n, shape, q[2])
            groups.append(g)
            group_of[n] = g
    out = []
    for g in groups:
        if len(g.members) < 2:
            continue
        members = set(g.members)
        orders = {dense_order(tuple(m.meta["val"].shape), m.meta["val"].stride())
                  for m in g.members if m not in g.reductions and any(u not in members for u in m.users)}
        identity = tuple(range(len(g.shape)))
        if g.reductions and not orders:
            orders = {identity}
        order = orders.pop() if len(orders) == 1 else None
        if g.reductions and order != identity:
            order = None              # sums run over rows of the logical shape
        if order is not None:         # every result the loop writes has one layout: the loop runs in its order
            g.perm = order
            out.append((g, {m: info[m] for m in g.members}))
    return out


def dense_order(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...] | None:
    """The order of dimensions (outermost first) in which a tensor of these sizes and strides is C-contiguous --
    ``(0, 1, ..., n-1)`` for a contiguous one, ``(0, 2, 3, 1)`` for channels-last -- or None if there is none."""
    perm = tuple(sorted(range(len(shape)), key=lambda d: (-strides[d] if shape[d] != 1 else 0, d)))
    perm = tuple(d for d in perm if shape[d] != 1)
    ones = [d for d in range(len(shape)) if shape[d] == 1]
    expected = 1
    for d in reversed(perm):
        if strides[d] != expected:
            return None
        expected *= shape[d]
    order = list(perm)
    for d in ones:                # a dimension of size 1 goes where it stands among the others
        order.insert(sum(1 for e in order if e < d), d)
    return tuple(order) if sorted(order) == list(range(len(shape))) else None


def _literal(v: Any, dtype: Any) -> str:
    """A number as the tensors' dtype holds it (PyTorch casts a Python scalar to the tensor's dtype)."""
    if isinstance(v, bool):
        return "1.0" if v else "0.0"
    f = float(np.dtype(dtype).type(v))
    if math.isnan(f):
        return "np.nan"
    if math.isinf(f):
        return "np.inf" if f > 0 else "(-np.inf)"
    return repr(f)


def _layout(shape: tuple[int, ...], out: tuple[int, ...]) -> str:
    """How the loop reads an input of ``shape`` broadcast to ``out``."""
    shape = (1,) * (len(out) - len(shape)) + tuple(shape)
    if all(s == 1 for s in shape):
        return ONE
    if shape == tuple(out):
        return FULL
    if len(out) >= 2 and shape[-1] == out[-1] and all(s == 1 for s in shape[:-1]):
        return ROW
    if len(out) >= 2 and shape[-1] == 1 and shape[:-1] == tuple(out[:-1]):
        return COL
    return FULL          # any other broadcast: materialized to the full shape


class Kernel:
    """One fused loop: its source, the layouts of its inputs, and per output ``(dtype,)`` for a value the loop
    writes or ``(dtype, "sum" | "mean", "last" | "all", keepdim)`` for a sum it accumulates."""

    def __init__(self, src: str, layouts: tuple[str, ...], out_specs: tuple[Any, ...], flat: bool,
                 perm: tuple[int, ...]) -> None:
        self.src = src
        self.layouts = layouts
        self.out_specs = out_specs
        self.flat = flat
        self.perm = None if perm == tuple(range(len(perm))) else perm
        self.inverse = None if self.perm is None else tuple(int(i) for i in np.argsort(perm))
        self.name = "fused_" + hashlib.sha256(src.encode()).hexdigest()[:20]
        self.key = (self.name, layouts, out_specs, flat, perm)
        self._fn: Any = None

    @property
    def fn(self) -> Any:
        """The loop and its parallel driver."""
        if self._fn is None:
            self._fn = _load(self.name, self.src)
        return self._fn

    def __call__(self, shape: tuple[int, ...], inputs: tuple[Any, ...], reuse: tuple[Any, ...]) -> Any:
        perm = self.perm
        if perm is not None:           # run in the results' memory order: every array seen through that order
            nd = len(shape)
            inputs = tuple(x.reshape((1,) * (nd - x.ndim) + x.shape).transpose(perm) for x in inputs)
            shape = tuple(shape[d] for d in perm)
        n = 1
        for s in shape:
            n *= s
        C = shape[-1] if shape else 1
        R = n // C if C else 0
        args = []
        for x, lay in zip(inputs, self.layouts):
            if lay == FULL:
                if x.shape != shape or not x.flags.c_contiguous:
                    x = np.ascontiguousarray(np.broadcast_to(x, shape))
                args.append(x.reshape(n) if self.flat else x.reshape(R, C))
            elif lay == ONE:
                args.append(x.reshape(1))
            else:
                args.append(np.ascontiguousarray(x.reshape(C if lay == ROW else R)))
        outs = []
        for spec, buf in zip(self.out_specs, reuse):
            if len(spec) > 1:          # a sum's row totals (float64)
                outs.append(np.zeros(R))
            else:
                dt = spec[0]
                outs.append(buf if buf is not None and buf.size == n and buf.dtype == dt else np.empty(n, dt))
        flat_outs = [o if len(spec) > 1 else (o.reshape(n) if self.flat else o.reshape(R, C))
                     for o, spec in zip(outs, self.out_specs)]
        fn, driver = self._fn or self.fn
        work, grain = (n, parallel.GRAIN_SIZE) if self.flat else (R, max(1, parallel.GRAIN_SIZE // max(C, 1)))
        if work < 2 * grain:           # one range (``run_split``'s own first test, without making its closures)
            if work > 0:
                fn(0, work, C, *args, *flat_outs)
        else:
            parallel.run_split(work, grain, lambda b, e: fn(b, e, C, *args, *flat_outs),
                               lambda chunks: driver(work, chunks, C, *args, *flat_outs))
        if perm is not None:
            return tuple(o.reshape(shape).transpose(self.inverse) for o in outs)
        return tuple([o.reshape(shape) if len(spec) == 1 else _finish(o, spec, shape, n)
                      for o, spec in zip(outs, self.out_specs)])


def _finish(rows: Any, spec: tuple[Any, ...], shape: tuple[int, ...], n: int) -> Any:
    """A fused sum's result from its row totals: per row (the last dimension summed) or their total, a mean
    divided by the count, in the tensors' dtype and the shape ``keepdim`` gives."""
    dtype, kind, over, keepdim = spec
    if over == "last":
        if kind == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):      # the mean of nothing is NaN, as eagerly
                rows = rows / shape[-1]
        return rows.astype(dtype).reshape(shape[:-1] + ((1,) if keepdim else ()))
    v = rows[0] if rows.size == 1 else np.add.reduce(rows)     # (a reduction's own cost, for one row)
    if kind == "mean":
        v = v / n if n else np.nan
    v = np.array(v, dtype)
    return v.reshape((1,) * len(shape)) if keepdim else v


def kernel_of(group: Group, info: dict[Any, tuple[str, dict[str, Any], Any]],
              ) -> tuple[Kernel, list[Any], list[Any]]:
    """The loop of ``group``: the kernel, its inputs (graph nodes, in order) and its outputs (the members whose
    values leave the loop, in order)."""
    from ember.fx.node import Node
    members = set(group.members)
    inputs: list[Any] = []
    var_of: dict[Any, str] = {}
    body: list[str] = []
    dtype = group.dtype
    outputs = [m for m in group.members if any(u not in members for u in m.users)]
    for m in group.members:
        key, bound, _ = info[m]
        for v in bound.values() if m not in group.reductions else [bound["self"]]:
            if isinstance(v, Node) and v not in members and v not in var_of:
                var_of[v] = f"v{len(inputs)}"
                inputs.append(v)
    nd, perm = len(group.shape), group.perm

    def seen(shape: tuple[int, ...]) -> tuple[int, ...]:     # a shape as the loop sees it (Kernel.__call__)
        shape = (1,) * (nd - len(shape)) + tuple(shape)
        return tuple(shape[d] for d in perm)
    layouts = tuple(_layout(seen(tuple(v.meta["val"].shape)), seen(group.shape)) for v in inputs)
    flat = all(lay in (FULL, ONE) for lay in layouts) and not group.reductions
    for i, (v, lay) in enumerate(zip(inputs, layouts)):
        index = {FULL: "k" if flat else "i, j", ONE: "0", ROW: "j", COL: "i"}[lay]
        is_mask = np.dtype(v.meta["val"]._data.dtype) == np.bool_
        body.append(f"v{i} = in{i}[{index}]" if is_mask else f"v{i} = np.float64(in{i}[{index}])")

    def s(x: Any) -> str:
        return x if isinstance(x, _Var) else _literal(x, dtype)
    sums = [m for m in outputs if m in group.reductions]
    for j, m in enumerate(group.members):
        key, bound, _ = info[m]
        if m in group.reductions:
            body.append(f"acc{sums.index(m)} += {var_of[bound['self']]}")
            continue
        args = {k: (_Var(var_of[v]) if isinstance(v, Node) else v) for k, v in bound.items()}
        var_of[m] = f"t{j}"
        expr = _FORMULAS[key][0](args, s)
        if _FORMULAS[key][2] or dtype == np.float64:
            body.append(f"t{j} = {expr}")
        else:                # rounded to float32 as the operator's own result is: the next one reads that value
            body.append(f"t{j} = np.float64(np.float32({expr}))")
    for o, m in enumerate(outputs):
        if m not in group.reductions:
            body.append(f"out{o}[{'k' if flat else 'i, j'}] = {var_of[m]}")
    params = ", ".join(["b", "e", "C"] + [f"in{i}" for i in range(len(inputs))] +
                       [f"out{o}" for o in range(len(outputs))])
    if flat:
        head, tail = ["for k in range(b, e):"], []
    else:                  # a sum accumulates over its row (float64), written once the row is done
        head = (["for i in range(b, e):"] + [f"    acc{r} = 0.0" for r in range(len(sums))] +
                ["    for j in range(C):"])
        tail = [f"    out{outputs.index(m)}[i] = acc{r}" for r, m in enumerate(sums)]
    indent = "    " * (2 if flat else 3)
    data = ", ".join([f"in{i}" for i in range(len(inputs))] + [f"out{o}" for o in range(len(outputs))])
    src = (_prelude() + f"@_kernel\ndef kernel({params}):\n" + "".join(f"    {ln}\n" for ln in head) +
           "".join(f"{indent}{ln}\n" for ln in body) + "".join(f"    {ln}\n" for ln in tail) +
           f"\n\n@_driver\ndef driver(work, chunks, C, {data}):\n    for c in prange(chunks):\n"
           f"        b, e = chunk(work, chunks, c)\n        kernel(b, e, C, {data})\n")
    specs = tuple((np.dtype(m.meta["val"]._data.dtype),) + ((info[m][0], info[m][1]["over"], info[m][1]["keepdim"])
                                                           if m in group.reductions else ())
                  for m in outputs)
    return Kernel(src, layouts, specs, flat, perm), inputs, outputs


_PRELUDE = '''"""A fused pointwise loop generated by ember (Note [Pointwise fusion] in ember/_inductor/fusion.py)."""
import math

import numba
import numpy as np
from numba import prange

from ember.aten.kernels.loops._common import (_FLAGS, _INV_SQRT_2PI, _TANH_BETA, _TANH_KAPPA, _driver, _one_plus_tanh,
                                              _sigmoid, _tanh, _two_phi, chunk)

_kernel = numba.njit(nogil=True, cache=True, error_model="numpy", fastmath=_FLAGS)


'''


_prelude_text: str | None = None


def _prelude() -> str:
    """The loop module's header; it names the helper kernels' source and numba's version, so that a change of
    either gives new file names rather than stale machine code (numba's cache checks only the file itself)."""
    global _prelude_text
    if _prelude_text is None:
        import numba
        spec = importlib.util.find_spec("ember.aten.kernels.loops._common")
        assert spec is not None and spec.origin is not None
        with open(spec.origin, "rb") as f:
            helpers = hashlib.sha256(f.read()).hexdigest()[:16]
        stamp = f"# helpers {helpers}, numba {numba.__version__}"
        _prelude_text = _PRELUDE.replace("\nimport math", f"\n{stamp}\nimport math", 1)
    return _prelude_text


def cache_dir() -> str:
    """Where the fused loops and their machine code are kept."""
    d = os.environ.get("EMBER_INDUCTOR_CACHE_DIR")
    if not d:
        try:
            user = getpass.getuser()
        except Exception:      # no user name (a container without passwd entry)
            user = str(os.getuid()) if hasattr(os, "getuid") else "user"
        d = os.path.join(tempfile.gettempdir(), f"emberinductor_{user}")
    return d


_loaded: dict[str, Any] = {}


def _load(name: str, src: str) -> Any:
    """The compiled loop of ``src`` and its parallel driver (``parallel.run_split``): its file written once
    (atomically) in the cache directory, imported, and compiled by numba or loaded from numba's cache beside it."""
    fn = _loaded.get(name)
    if fn is not None:
        return fn
    d = os.path.join(cache_dir(), "kernels")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name + ".py")
    try:
        with open(path, encoding="utf-8") as f:
            same = f.read() == src
    except OSError:
        same = False
    if not same:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(src)
        os.replace(tmp, path)
    mod_name = f"ember._inductor.kernels.{name}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    spec.loader.exec_module(mod)
    fn = _loaded[name] = (mod.kernel, mod.driver)
    return fn
