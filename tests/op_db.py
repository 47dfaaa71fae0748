"""The op table: every public op of native_functions.yaml has an entry here (or is on the commented
``NOT_IN_TABLE`` allowlist of ``test_ops.py``)."""
from __future__ import annotations

import numpy as np

from tests import op_db_spectral
from tests.opinfo import (ALL_REAL, BOOL, FLOATS, INTS, ErrorInput, OpInfo, Sample, arr, binary_samples,
                          dim_samples, positive, reduction_samples, unary_samples)

op_db: list[OpInfo] = []


def add(*infos):
    op_db.extend(infos)


def _err(args, kwargs, etype, match):
    return ErrorInput(Sample(args, kwargs), etype, match)


# ------------------------------------------------------------------------------ unary
for name, low, high, pos in [
    ("exp", -3, 3, False), ("exp2", -3, 3, False), ("expm1", -3, 3, False), ("log", 0, 0, True),
    ("log2", 0, 0, True), ("log10", 0, 0, True), ("log1p", 0, 0, True), ("sqrt", 0, 0, True),
    ("rsqrt", 0, 0, True), ("sin", -3, 3, False), ("cos", -3, 3, False), ("tan", -1.2, 1.2, False),
    ("asin", -0.9, 0.9, False), ("acos", -0.9, 0.9, False), ("atan", -3, 3, False), ("sinh", -3, 3, False),
    ("cosh", -3, 3, False), ("tanh", -3, 3, False), ("asinh", -3, 3, False), ("atanh", -0.9, 0.9, False),
    ("sigmoid", -5, 5, False), ("reciprocal", 0, 0, True), ("erf", -3, 3, False), ("erfc", -3, 3, False),
    ("erfinv", -0.95, 0.95, False), ("lgamma", 0, 0, True), ("digamma", 0, 0, True), ("i0", -3, 3, False),
    ("sinc", -3, 3, False), ("deg2rad", -3, 3, False), ("rad2deg", -3, 3, False),
]:
    add(OpInfo(name, unary_samples(low, high, pos), dtypes=FLOATS + ("int64",) if name not in
               ("erfinv", "atanh", "asin", "acos") else FLOATS, inplace=True, out=True,
               aliases={"digamma": ("special.psi", "special.digamma"), "sigmoid": ("special.expit",),
                        "lgamma": ("special.gammaln",), "asin": ("arcsin",), "acos": ("arccos",), "atan": ("arctan",),
                        "asinh": ("arcsinh",), "atanh": ("arctanh",)}.get(name, ("special." + name,) if name in
                                                           ("erf", "erfc", "erfinv", "expm1", "exp2", "i0", "sinc",
                                                            "log1p") else ())))
for _n in (1, 2, 3):
    add(OpInfo("polygamma", lambda d, r, n=_n: [Sample((n, positive(r, (3, 4), d)))], dtypes=FLOATS, method=False,
               aliases=("special.polygamma",),
               ember_fn=lambda e, n, x: e.polygamma(n, x), torch_fn=lambda t, n, x: t.polygamma(n, x)))
add(OpInfo("acosh", unary_samples(pos=True), dtypes=FLOATS,
           ember_fn=lambda e, a: e.acosh(a + 1), torch_fn=lambda t, a: t.acosh(a + 1)))
add(OpInfo("arccosh", unary_samples(low=1.1, high=4.0), dtypes=FLOATS))
for _name in ("i0e", "i1", "i1e"):  # both branches of the kernel: the series (|x| <= 30) and the expansion
    add(OpInfo("special_" + _name, lambda d, r: [Sample((arr(r, (3, 4), d, -4, 4),)),
                                                Sample((np.array([-45.0, -30.5, 0.25, 29.5, 31.0, 80.0], d),))],
               method=False, out=True, torch_name="special." + _name, dtypes=FLOATS + ("int64",)))
for name in ["abs", "neg", "sign", "floor", "ceil", "trunc", "frac", "square"]:
    dts = ALL_REAL if name not in ("frac",) else FLOATS
    if name == "neg":
        dts = FLOATS + INTS
    add(OpInfo(name, unary_samples(), dtypes=dts, inplace=True, out=True,
               aliases={"abs": ("absolute",), "neg": ("negative",), "trunc": ("fix",)}.get(name, ()),
               errors=(lambda: [_err((np.array([True, False]),), {}, RuntimeError, "Negation, the `-` operator")])
               if name == "neg" else None))
add(OpInfo("sgn", unary_samples(), dtypes=FLOATS + INTS, inplace=True, out=True))
add(OpInfo("relu", unary_samples(), dtypes=FLOATS + INTS, inplace=True))  # PyTorch has no relu.out
add(OpInfo("round", unary_samples(-10, 10), dtypes=FLOATS + INTS, inplace=True, out=True))
add(OpInfo("round", lambda d, r: [Sample((arr(r, (3, 4), d, -100, 100),), dict(decimals=1))], dtypes=FLOATS,
           inplace=True))
add(OpInfo("bitwise_not", unary_samples(), dtypes=INTS + BOOL + ("uint8",), inplace=True, out=True))
add(OpInfo("logical_not", unary_samples(), dtypes=FLOATS + INTS + BOOL, inplace=False, out=True))
for name in ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit"]:
    add(OpInfo(name, lambda d, r: [Sample((np.array([1.0, np.nan, np.inf, -np.inf, -0.0, 2.5], d),))] +
               [Sample((arr(r, (3, 4), d),))], dtypes=FLOATS))
add(OpInfo("nan_to_num", lambda d, r: [Sample((np.array([1.0, np.nan, np.inf, -np.inf], d),)),
                                       Sample((np.array([1.0, np.nan, np.inf, -np.inf], d),),
                                              dict(nan=0.5, posinf=9.0, neginf=-9.0))],
           dtypes=FLOATS, inplace=True))
add(OpInfo("logit", lambda d, r: [Sample((r.uniform(0.05, 0.95, (3, 4)).astype(d),)),
                                  Sample((r.uniform(0.0, 1.0, (3, 4)).astype(d),), dict(eps=1e-3))],
           dtypes=FLOATS, inplace=True, aliases=("special.logit",)))
add(OpInfo("positive", unary_samples(), dtypes=FLOATS + INTS, method=True))

# ------------------------------------------------------------------------------ binary
add(OpInfo("add", binary_samples(), dtypes=ALL_REAL + BOOL, inplace=True, out=True,
           errors=lambda: [_err((np.ones((2, 3)), np.ones((4,))), {}, RuntimeError,
                                r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton "
                                r"dimension 1"),
                           _err((np.ones(3, "int64"), np.ones(3, "int64")), dict(alpha=1.5), RuntimeError,
                                "alpha must not be a floating point number")]))
add(OpInfo("add", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (4,), d)), dict(alpha=2))], dtypes=ALL_REAL,
           inplace=True, out=True))
add(OpInfo("sub", binary_samples(), dtypes=ALL_REAL, inplace=True, out=True, aliases=("subtract",),
           errors=lambda: [_err((np.array([True]), np.array([False])), {}, RuntimeError,
                                "Subtraction, the `-` operator, with two bool tensors is not supported")]))
add(OpInfo("mul", binary_samples(), dtypes=ALL_REAL + BOOL, inplace=True, out=True, aliases=("multiply",)))
add(OpInfo("div", binary_samples(pos_other=True), dtypes=FLOATS + INTS, inplace=True, out=True,
           aliases=("true_divide", "divide")))
for mode in ("trunc", "floor"):
    add(OpInfo("div", lambda d, r, m=mode: [Sample((arr(r, (3, 4), d, -9, 9), positive(r, (4,), d)),
                                                   dict(rounding_mode=m)),
                                            Sample((arr(r, (3, 4), d, -9, 9), -positive(r, (4,), d)),
                                                   dict(rounding_mode=m))],
               dtypes=FLOATS + INTS, inplace=True, out=True))
add(OpInfo("floor_divide", binary_samples(pos_other=True), dtypes=FLOATS + INTS, inplace=True, out=True,
           errors=lambda: [_err((np.array([1, 2]), np.array([0, 1])), {}, RuntimeError, "ZeroDivisionError")]))
add(OpInfo("remainder", binary_samples(pos_other=True), dtypes=FLOATS + INTS, inplace=True, out=True))
add(OpInfo("fmod", binary_samples(pos_other=True), dtypes=FLOATS + INTS, inplace=True, out=True))
add(OpInfo("pow", lambda d, r: [Sample((positive(r, (3, 4), d), arr(r, (3, 4), d, -2, 2))),
                                Sample((positive(r, (3, 4), d), 2)), Sample((positive(r, (3, 4), d), 0.5))]
           if np.dtype(d).kind == "f" else
           [Sample((arr(r, (3, 4), d), positive(r, (3, 4), d))), Sample((arr(r, (3, 4), d), 3))],
           dtypes=FLOATS + INTS, inplace=True, out=True,
           errors=lambda: [_err((np.array([2, 3]), -1), {}, RuntimeError,
                                "Integers to negative integer powers are not allowed")]))
add(OpInfo("rsub", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (4,), d))), Sample((arr(r, (3, 4), d), 2)),
                                 Sample((arr(r, (3, 4), d), arr(r, (3, 4), d)), dict(alpha=2))],
           dtypes=FLOATS + INTS, method=False))
add(OpInfo("float_power", lambda d, r: [Sample((positive(r, (3, 4), d), arr(r, (3, 4), d, -2, 2))),
                                        Sample((positive(r, (3, 4), d), 2)), Sample((positive(r, (3, 4), d), -0.5)),
                                        Sample((1.5, arr(r, (4,), d, -2, 2)))],
           dtypes=FLOATS + INTS))
for name in ["atan2", "hypot", "logaddexp", "logaddexp2", "copysign", "maximum", "minimum", "fmax", "fmin",
             "xlogy", "nextafter"]:
    add(OpInfo(name, binary_samples(scalar=False), dtypes=FLOATS, out=True,
               inplace=name in ("atan2", "hypot", "copysign", "xlogy", "nextafter"),
               aliases=("special.xlogy",) if name == "xlogy" else ("arctan2",) if name == "atan2" else ()))
add(OpInfo("maximum", binary_samples(scalar=False), dtypes=INTS + ("uint8",), out=True))
for name in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
    add(OpInfo(name, binary_samples(), dtypes=INTS + BOOL + ("uint8",), inplace=True, out=True))
for name in ["bitwise_left_shift", "bitwise_right_shift"]:
    add(OpInfo(name, lambda d, r: [Sample((arr(r, (3, 4), d, 0, 9), positive(r, (3, 4), d)))], dtypes=INTS,
               inplace=True, out=True))
for name in ["logical_and", "logical_or", "logical_xor"]:
    add(OpInfo(name, binary_samples(scalar=False), dtypes=FLOATS + INTS + BOOL, inplace=True, out=True))
for name in ["eq", "ne", "lt", "le", "gt", "ge"]:
    add(OpInfo(name, binary_samples(low=-2, high=2), dtypes=ALL_REAL + BOOL, inplace=False, out=True,
               aliases={"gt": ("greater",), "ge": ("greater_equal",), "lt": ("less",), "le": ("less_equal",),
                        "ne": ("not_equal",)}.get(name, ())))

# ------------------------------------------------------------------------------ ternary
add(OpInfo("where", lambda d, r: [Sample((r.random((3, 4)) > 0.5, arr(r, (3, 4), d), arr(r, (4,), d))),
                                  Sample((r.random((3, 1)) > 0.5, arr(r, (1, 4), d), 0))],
           dtypes=FLOATS + INTS, method=False, out=True,
           errors=lambda: [_err((np.ones(3), np.ones(3), np.ones(3)), {}, RuntimeError,
                                "where expected condition to be a boolean tensor")]))
add(OpInfo("clamp", lambda d, r: [Sample((arr(r, (3, 4), d), -1, 2)), Sample((arr(r, (3, 4), d), None, 1)),
                                  Sample((arr(r, (3, 4), d),), dict(min=arr(r, (4,), d), max=None))],
           dtypes=FLOATS + INTS, inplace=True, out=True, aliases=("clip",),
           errors=lambda: [_err((np.ones(3),), {}, RuntimeError, "At least one of 'min' or 'max' must not be None")]))
for name in ["clamp_min", "clamp_max"]:
    add(OpInfo(name, lambda d, r: [Sample((arr(r, (3, 4), d), 0))], dtypes=FLOATS, inplace=True))
    add(OpInfo(name, lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (4,), d)))], dtypes=FLOATS))
add(OpInfo("clip", lambda d, r: [Sample((arr(r, (3, 4), d),), dict(min=arr(r, (4,), d), max=arr(r, (3, 1), d) + 1))],
           dtypes=FLOATS))
add(OpInfo("lerp", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (3, 4), d), 0.3)),
                                 Sample((arr(r, (3, 4), d), arr(r, (4,), d), r.uniform(0, 1, (3, 4)).astype(d)))],
           dtypes=FLOATS, inplace=True, out=False))
for name in ["addcmul", "addcdiv"]:
    add(OpInfo(name, lambda d, r, n=name: [Sample((arr(r, (3, 4), d), arr(r, (3, 4), d), positive(r, (4,), d)),
                                                  dict(value=0.5))],
               dtypes=FLOATS, inplace=True, out=True))

# ------------------------------------------------------------------------------ reductions
add(OpInfo("sum", reduction_samples(), dtypes=ALL_REAL + BOOL, out=True))
add(OpInfo("sum", lambda d, r: [Sample((arr(r, (3, 4), d), 1), dict(dtype="float64"))], dtypes=INTS))
add(OpInfo("nansum", reduction_samples(dims=(None, 1)), dtypes=FLOATS))
add(OpInfo("prod", reduction_samples(dims=(None,), keepdim=False), dtypes=FLOATS + INTS))
add(OpInfo("prod", dim_samples(shape=(3, 4), dims=(0, 1)), dtypes=FLOATS + INTS))
add(OpInfo("mean", reduction_samples(), dtypes=FLOATS, out=True,
           errors=lambda: [_err((np.arange(4),), {}, RuntimeError,
                                "mean\\(\\): could not infer output dtype. Input dtype must be either a floating "
                                "point or complex dtype. Got: Long")]))
add(OpInfo("nanmean", lambda d, r: [Sample((np.array([[1.0, np.nan], [3.0, 4.0]], d),)),
                                    Sample((np.array([[1.0, np.nan], [3.0, 4.0]], d), 1))], dtypes=FLOATS))
for name in ["var", "std"]:
    add(OpInfo(name, lambda d, r: [Sample((arr(r, (3, 4, 5), d),)), Sample((arr(r, (3, 4, 5), d), 1)),
                                   Sample((arr(r, (3, 4, 5), d), (0, 2)), dict(unbiased=False, keepdim=True)),
                                   Sample((arr(r, (3, 4, 5), d),), dict(dim=1, correction=0))],
               dtypes=FLOATS))
for name in ["var_mean", "std_mean"]:
    add(OpInfo(name, lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (3, 4), d), 1)),
                                   Sample((arr(r, (3, 4), d),), dict(dim=0, correction=0, keepdim=True))],
               dtypes=FLOATS, method=False))
for name in ["max", "min"]:
    add(OpInfo(name, lambda d, r: [Sample((arr(r, (3, 4, 5), d),)), Sample((arr(r, (3, 4, 5), d), 1)),
                                   Sample((arr(r, (3, 4, 5), d), -1), dict(keepdim=True)),
                                   Sample((arr(r, (3, 4), d), arr(r, (4,), d)))],
               dtypes=FLOATS + INTS,
               errors=lambda n=name: [_err((np.zeros((0,)),), {}, RuntimeError,
                                           "Expected reduction dim to be specified for input.numel\\(\\) == 0")]))
for name in ["amax", "amin"]:
    add(OpInfo(name, reduction_samples(dims=((), 0, (0, 2))), dtypes=FLOATS + INTS, out=True))
add(OpInfo("aminmax", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (3, 4), d),), dict(dim=1))],
           dtypes=FLOATS + INTS))
for name in ["argmax", "argmin"]:
    add(OpInfo(name, reduction_samples(dims=(None, 0, -1)), dtypes=FLOATS + INTS))
add(OpInfo("logsumexp", reduction_samples(dims=(0, (0, 2), -1)), dtypes=FLOATS, aliases=("special.logsumexp",)))
for name in ["all", "any"]:
    add(OpInfo(name, lambda d, r: [Sample((arr(r, (3, 4), d, 0, 1),)), Sample((arr(r, (3, 4), d, 0, 1), 1)),
                                   Sample((arr(r, (3, 4), d, 0, 1), 0), dict(keepdim=True))],
               dtypes=FLOATS + INTS + BOOL))
add(OpInfo("count_nonzero", lambda d, r: [Sample((arr(r, (3, 4), d, -1, 1),)), Sample((arr(r, (3, 4), d, -1, 1), 1)),
                                          Sample((arr(r, (3, 4), d, -1, 1), (0, 1)))],
           dtypes=FLOATS + INTS + BOOL))
for name in ["cumsum", "cumprod"]:
    add(OpInfo(name, dim_samples(shape=(3, 4), dims=(0, 1, -1)), dtypes=FLOATS + INTS, inplace=True, out=True))
add(OpInfo("logcumsumexp", dim_samples(shape=(3, 4), dims=(0, 1)), dtypes=FLOATS))
for name in ["cummax", "cummin"]:
    add(OpInfo(name, dim_samples(shape=(3, 4), dims=(0, 1)), dtypes=FLOATS + INTS))
add(OpInfo("sort", lambda d, r: [Sample((arr(r, (3, 5), d),)), Sample((arr(r, (3, 5), d), 0)),
                                 Sample((arr(r, (3, 5), d),), dict(descending=True)),
                                 Sample((arr(r, (4, 6), d),), dict(stable=True, dim=0, descending=True))],
           dtypes=FLOATS + INTS))
add(OpInfo("argsort", lambda d, r: [Sample((np.array([3, 1, 2, 1, 3, 0], d),)),
                                    Sample((np.array([3, 1, 2, 1, 3, 0], d),), dict(descending=True, stable=True))],
           dtypes=FLOATS + INTS))
add(OpInfo("topk", lambda d, r: [Sample((r.permutation(20).reshape(4, 5).astype(d), 2)),
                                 Sample((r.permutation(20).reshape(4, 5).astype(d), 3, 0)),
                                 Sample((r.permutation(20).reshape(4, 5).astype(d), 2), dict(largest=False))],
           dtypes=FLOATS + INTS))
add(OpInfo("kthvalue", lambda d, r: [Sample((r.permutation(20).reshape(4, 5).astype(d), 2)),
                                     Sample((r.permutation(20).reshape(4, 5).astype(d), 1, 0, True))],
           dtypes=FLOATS + INTS))
add(OpInfo("median", lambda d, r: [Sample((r.permutation(20).reshape(4, 5).astype(d),)),
                                   Sample((r.permutation(20).reshape(4, 5).astype(d), 1))], dtypes=FLOATS + INTS))
add(OpInfo("mode", lambda d, r: [Sample((np.array([[1, 2, 2, 3], [4, 4, 1, 1]], d),))], dtypes=FLOATS + INTS))
add(OpInfo("quantile", lambda d, r: [Sample((arr(r, (4, 5), d), 0.3)), Sample((arr(r, (4, 5), d), 0.5, 1)),
                                     Sample((arr(r, (4, 5), d), 0.25), dict(interpolation="nearest"))],
           dtypes=FLOATS))
add(OpInfo("nanquantile", lambda d, r: [Sample((np.where(r.random((4, 5)) > 0.7, np.nan, arr(r, (4, 5), d)).astype(d),
                                                0.3)),
                                        Sample((np.where(r.random((4, 5)) > 0.7, np.nan, arr(r, (4, 5), d)).astype(d),
                                                arr(r, (2,), d, 0, 1), 1))], dtypes=FLOATS))
add(OpInfo("bincount", lambda d, r: [Sample((r.integers(0, 6, 10).astype(d),)),
                                     Sample((r.integers(0, 6, 10).astype(d),), dict(minlength=9))],
           dtypes=INTS))
add(OpInfo("histc", lambda d, r: [Sample((arr(r, (20,), d),), dict(bins=5)),
                                  Sample((arr(r, (20,), d),), dict(bins=4, min=-1, max=1))], dtypes=FLOATS))
add(OpInfo("norm", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (3, 4), d), 1)),
                                 Sample((arr(r, (3, 4), d), 2, 1))], dtypes=FLOATS))

# ------------------------------------------------------------------------------ views and shapes
add(OpInfo("view", lambda d, r: [Sample((arr(r, (3, 4), d), (4, 3))), Sample((arr(r, (3, 4), d), (-1,))),
                                 Sample((arr(r, (3, 4), d), (2, -1, 2)))], dtypes=ALL_REAL, function=False,
           noncontiguous=False,
           errors=lambda: [_err((np.ones((3, 4)), (5, 2)), {}, RuntimeError,
                                r"shape '\[5, 2\]' is invalid for input of size 12")]))
add(OpInfo("reshape", lambda d, r: [Sample((arr(r, (3, 4), d), (4, 3))), Sample((arr(r, (3, 4), d), (-1,))),
                                    Sample((arr(r, (2, 3, 4), d), (6, -1)))], dtypes=ALL_REAL))
add(OpInfo("_unsafe_view", lambda d, r: [Sample((arr(r, (3, 4), d), (4, 3))), Sample((arr(r, (2, 3, 4), d), (6, -1)))],
           dtypes=ALL_REAL, method=False, ember_fn=lambda e, x, s: e.ops.aten._unsafe_view(x, s),
           torch_fn=lambda t, x, s: t.ops.aten._unsafe_view(x, s)))
# (of a fresh tensor, which is what it is for: PyTorch moves a leaf it is given into the graph's interior)
add(OpInfo("lift_fresh", lambda d, r: [Sample((arr(r, (3, 4), d),))], dtypes=ALL_REAL, method=False,
           ember_fn=lambda e, x: e.ops.aten.lift_fresh(x * 1), torch_fn=lambda t, x: t.ops.aten.lift_fresh(x * 1)))
add(OpInfo("t", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (3,), d),))], dtypes=ALL_REAL))
add(OpInfo("transpose", lambda d, r: [Sample((arr(r, (2, 3, 4), d), 0, 2)), Sample((arr(r, (2, 3, 4), d), -1, 1))],
           dtypes=ALL_REAL, aliases=("swapaxes", "swapdims")))
add(OpInfo("permute", lambda d, r: [Sample((arr(r, (2, 3, 4), d), (2, 0, 1)))], dtypes=ALL_REAL))
add(OpInfo("movedim", lambda d, r: [Sample((arr(r, (2, 3, 4), d), 0, 2)), Sample((arr(r, (2, 3, 4), d), (0, 1), (2, 0)))],
           dtypes=FLOATS, aliases=("moveaxis",)))
add(OpInfo("expand", lambda d, r: [Sample((arr(r, (3, 1), d), (3, 4))), Sample((arr(r, (3, 1), d), (2, -1, 4)))],
           dtypes=FLOATS, function=False,
           errors=lambda: [_err((np.ones((3, 2)), (3, 4)), {}, RuntimeError,
                                r"The expanded size of the tensor \(4\) must match the existing size \(2\) at "
                                r"non-singleton dimension 1")]))
add(OpInfo("broadcast_to", lambda d, r: [Sample((arr(r, (3, 1), d), (2, 3, 4)))], dtypes=FLOATS))
add(OpInfo("expand_as", lambda d, r: [Sample((arr(r, (3, 1), d), arr(r, (2, 3, 4), d)))], dtypes=FLOATS,
           function=False))
add(OpInfo("broadcast_tensors", lambda d, r: [Sample((arr(r, (3, 1), d), arr(r, (4,), d), arr(r, (2, 1, 1), d)))],
           dtypes=FLOATS, method=False))
add(OpInfo("sum_to_size", lambda d, r: [Sample((arr(r, (2, 3), d), (1, 3))), Sample((arr(r, (2, 3), d), (3,))),
                                        Sample((arr(r, (4, 2, 3), d), (2, 1))), Sample((arr(r, (2, 3), d), (2, 3)))],
           dtypes=FLOATS, function=False,
           errors=lambda: [_err((np.ones((2, 3)), (4, 3)), {}, RuntimeError,
                                r"size \{\[4, 3\]\} is not expandable to size \{\[2, 3\]\}\.")]))
add(OpInfo("squeeze", lambda d, r: [Sample((arr(r, (3, 1, 4, 1), d),)), Sample((arr(r, (3, 1, 4, 1), d), 1)),
                                    Sample((arr(r, (3, 1, 4, 1), d), (1, 3)))], dtypes=FLOATS))
add(OpInfo("unsqueeze", lambda d, r: [Sample((arr(r, (3, 4), d), 0)), Sample((arr(r, (3, 4), d), -1))],
           dtypes=FLOATS))
add(OpInfo("flatten", lambda d, r: [Sample((arr(r, (2, 3, 4), d),)), Sample((arr(r, (2, 3, 4), d), 1)),
                                    Sample((arr(r, (2, 3, 4), d), 0, 1))], dtypes=FLOATS))
add(OpInfo("ravel", lambda d, r: [Sample((arr(r, (2, 3, 4), d),))], dtypes=FLOATS))
add(OpInfo("unflatten", lambda d, r: [Sample((arr(r, (2, 12), d), 1, (3, 4))), Sample((arr(r, (2, 12), d), 1, (-1, 2)))],
           dtypes=FLOATS))
add(OpInfo("narrow", lambda d, r: [Sample((arr(r, (5, 4), d), 0, 1, 3)), Sample((arr(r, (5, 4), d), -1, 0, 2))],
           dtypes=FLOATS))
add(OpInfo("select", lambda d, r: [Sample((arr(r, (5, 4), d), 0, 2)), Sample((arr(r, (5, 4), d), 1, -1))],
           dtypes=FLOATS,
           errors=lambda: [_err((np.ones((2, 3)), 0, 5), {}, IndexError, "select\\(\\): index 5 out of range")]))
add(OpInfo("unbind", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (3, 4), d), 1))], dtypes=FLOATS))
add(OpInfo("split", lambda d, r: [Sample((arr(r, (7, 4), d), 3)), Sample((arr(r, (7, 4), d), (2, 5))),
                                  Sample((arr(r, (3, 6), d), 4, 1))], dtypes=FLOATS,
           covers=("split_with_sizes",)))
add(OpInfo("chunk", lambda d, r: [Sample((arr(r, (7, 4), d), 3)), Sample((arr(r, (4, 6), d), 4, 1))], dtypes=FLOATS))
add(OpInfo("tensor_split", lambda d, r: [Sample((arr(r, (7, 4), d), 3)), Sample((arr(r, (7, 4), d), (1, 5)))],
           dtypes=FLOATS))
add(OpInfo("unfold", lambda d, r: [Sample((arr(r, (7, 4), d), 0, 3, 2)), Sample((arr(r, (7, 4), d), 1, 2, 1))],
           dtypes=FLOATS, function=False))
add(OpInfo("diagonal", lambda d, r: [Sample((arr(r, (4, 5), d),)), Sample((arr(r, (4, 5), d), 1)),
                                     Sample((arr(r, (3, 4, 5), d), -1, 1, 2))], dtypes=FLOATS))
add(OpInfo("as_strided", lambda d, r: [Sample((arr(r, (4, 5), d), (2, 2), (1, 2))),
                                       Sample((arr(r, (4, 5), d), (3,), (2,), 1))], dtypes=FLOATS,
           noncontiguous=False))
add(OpInfo("contiguous", lambda d, r: [Sample((arr(r, (4, 5), d),))], dtypes=FLOATS, function=False))
add(OpInfo("view_as", lambda d, r: [Sample((arr(r, (4, 5), d), arr(r, (2, 10), d)))], dtypes=FLOATS, function=False,
           noncontiguous=False))
add(OpInfo("reshape_as", lambda d, r: [Sample((arr(r, (4, 5), d), arr(r, (2, 10), d)))], dtypes=FLOATS,
           function=False))

# ------------------------------------------------------------------------------ joining, indexing, shapes
add(OpInfo("cat", lambda d, r: [Sample(([arr(r, (2, 3), d), arr(r, (4, 3), d)],)),
                                Sample(([arr(r, (2, 3), d), arr(r, (2, 1), d)], 1))], dtypes=ALL_REAL, method=False,
           out=True, aliases=("concat", "concatenate"),
           errors=lambda: [_err(([np.ones((2, 3)), np.ones((2, 4))],), {}, RuntimeError,
                                "Sizes of tensors must match except in dimension 0")]))
add(OpInfo("stack", lambda d, r: [Sample(([arr(r, (2, 3), d), arr(r, (2, 3), d)],)),
                                  Sample(([arr(r, (2, 3), d), arr(r, (2, 3), d)], -1))], dtypes=ALL_REAL, method=False,
           out=True))
for name in ["hstack", "vstack", "dstack", "column_stack", "row_stack"]:
    add(OpInfo(name, lambda d, r: [Sample(([arr(r, (2, 3), d), arr(r, (2, 3), d)],)),
                                   Sample(([arr(r, (3,), d), arr(r, (3,), d)],))], dtypes=FLOATS, method=False))
for name in ["atleast_1d", "atleast_2d", "atleast_3d"]:
    add(OpInfo(name, lambda d, r: [Sample((arr(r, (), d),)), Sample((arr(r, (3,), d),)), Sample((arr(r, (2, 3), d),))],
               dtypes=FLOATS, method=False))
add(OpInfo("meshgrid", lambda d, r: [Sample((arr(r, (3,), d), arr(r, (4,), d)), dict(indexing="ij")),
                                     Sample((arr(r, (3,), d), arr(r, (4,), d)), dict(indexing="xy"))],
           dtypes=FLOATS, method=False,
           ember_fn=lambda e, *a, **k: e.meshgrid(*a, **k), torch_fn=lambda t, *a, **k: t.meshgrid(*a, **k)))
for name in ["tril", "triu"]:
    add(OpInfo(name, lambda d, r: [Sample((arr(r, (4, 5), d),)), Sample((arr(r, (4, 5), d), 1)),
                                   Sample((arr(r, (2, 4, 5), d), -1))], dtypes=FLOATS + INTS, inplace=True, out=True))
add(OpInfo("flip", lambda d, r: [Sample((arr(r, (3, 4), d), (0,))), Sample((arr(r, (3, 4), d), (0, 1)))],
           dtypes=FLOATS + INTS))
for name in ["fliplr", "flipud"]:
    add(OpInfo(name, lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (3, 4, 2), d),))], dtypes=FLOATS))
add(OpInfo("roll", lambda d, r: [Sample((arr(r, (3, 4), d), 1)), Sample((arr(r, (3, 4), d), (1, -2), (0, 1)))],
           dtypes=FLOATS))
add(OpInfo("rot90", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (3, 4), d), 2))], dtypes=FLOATS))
add(OpInfo("repeat", lambda d, r: [Sample((arr(r, (2, 3), d), (2, 1))), Sample((arr(r, (2, 3), d), (2, 1, 3)))],
           dtypes=FLOATS, function=False))
add(OpInfo("tile", lambda d, r: [Sample((arr(r, (2, 3), d), (2,))), Sample((arr(r, (2, 3), d), (2, 1, 2)))],
           dtypes=FLOATS))
add(OpInfo("repeat_interleave", lambda d, r: [Sample((arr(r, (2, 3), d), 2)), Sample((arr(r, (2, 3), d), 2, 1)),
                                              Sample((arr(r, (2, 3), d), np.array([1, 2])), dict(dim=0))],
           dtypes=FLOATS))
add(OpInfo("diag", lambda d, r: [Sample((arr(r, (4,), d),)), Sample((arr(r, (4, 5), d), 1))], dtypes=FLOATS))
add(OpInfo("diag_embed", lambda d, r: [Sample((arr(r, (2, 3), d),)), Sample((arr(r, (2, 3), d), 1))], dtypes=FLOATS))
add(OpInfo("gather", lambda d, r: [Sample((arr(r, (3, 4), d), 1, r.integers(0, 4, (3, 2)))),
                                   Sample((arr(r, (3, 4), d), 0, r.integers(0, 3, (2, 4))))],
           dtypes=FLOATS + INTS, out=True))
add(OpInfo("scatter", lambda d, r: [Sample((arr(r, (3, 4), d), 1, np.array([[0, 1], [2, 3], [1, 0]]),
                                            arr(r, (3, 2), d))),
                                    Sample((arr(r, (3, 4), d), 1, np.array([[0, 1], [2, 3], [1, 0]]), 7))],
           dtypes=FLOATS + INTS, inplace=True))
add(OpInfo("scatter_add", lambda d, r: [Sample((arr(r, (3, 4), d), 1, np.array([[0, 0], [2, 3], [1, 1]]),
                                                arr(r, (3, 2), d)))], dtypes=FLOATS + INTS, inplace=True))
add(OpInfo("scatter_reduce", lambda d, r: [Sample((arr(r, (3, 4), d), 1, np.array([[0, 0], [2, 3], [1, 1]]),
                                                   arr(r, (3, 2), d), red), dict(include_self=inc))
                                           for red in ("sum", "prod", "amax", "amin", "mean")
                                           for inc in (True, False)],
           dtypes=FLOATS, inplace=True))
add(OpInfo("index_select", lambda d, r: [Sample((arr(r, (3, 4), d), 1, np.array([0, 3, 1]))),
                                         Sample((arr(r, (3, 4), d), 0, np.array([2, 2])))], dtypes=FLOATS + INTS,
           out=True))
add(OpInfo("index_add", lambda d, r: [Sample((arr(r, (3, 4), d), 0, np.array([0, 2, 0]), arr(r, (3, 4), d)))],
           dtypes=FLOATS, inplace=True))
add(OpInfo("index_copy", lambda d, r: [Sample((arr(r, (3, 4), d), 1, np.array([0, 2]), arr(r, (3, 2), d)))],
           dtypes=FLOATS, inplace=True))
add(OpInfo("index_fill", lambda d, r: [Sample((arr(r, (3, 4), d), 1, np.array([0, 2]), -1.0))],
           dtypes=FLOATS, inplace=True))
add(OpInfo("index_put", lambda d, r: [Sample((arr(r, (3, 4), d), [np.array([0, 2])], arr(r, (4,), d))),
                                      Sample((arr(r, (3, 4), d), [np.array([0, 0]), np.array([1, 1])],
                                              np.array([1.0, 2.0], d)), dict(accumulate=True))],
           dtypes=FLOATS, inplace=True))
add(OpInfo("masked_fill", lambda d, r: [Sample((arr(r, (3, 4), d), r.random((3, 4)) > 0.5, -1.0)),
                                        Sample((arr(r, (3, 4), d), r.random((4,)) > 0.5, 2))],
           dtypes=FLOATS + INTS, inplace=True))
add(OpInfo("masked_select", lambda d, r: [Sample((arr(r, (3, 4), d), r.random((3, 4)) > 0.5)),
                                          Sample((arr(r, (3, 4), d), r.random((4,)) > 0.5))], dtypes=FLOATS + INTS))
add(OpInfo("masked_scatter", lambda d, r: [Sample((arr(r, (3, 4), d), r.random((3, 4)) > 0.5, arr(r, (12,), d)))],
           dtypes=FLOATS, inplace=True))
add(OpInfo("nonzero", lambda d, r: [Sample((arr(r, (3, 4), d, -1, 1),))], dtypes=FLOATS + INTS + BOOL))
add(OpInfo("argwhere", lambda d, r: [Sample((arr(r, (3, 4), d, -1, 1),))], dtypes=FLOATS))
add(OpInfo("take", lambda d, r: [Sample((arr(r, (3, 4), d), np.array([[0, 11], [5, 3]])))], dtypes=FLOATS))
add(OpInfo("take_along_dim", lambda d, r: [Sample((arr(r, (3, 4), d), np.argsort(arr(r, (3, 4), d), 1), 1))],
           dtypes=FLOATS))
add(OpInfo("searchsorted", lambda d, r: [Sample((np.sort(arr(r, (6,), d)), arr(r, (3, 2), d))),
                                         Sample((np.sort(arr(r, (6,), d)), arr(r, (3, 2), d)), dict(right=True))],
           dtypes=FLOATS, method=False))
add(OpInfo("bucketize", lambda d, r: [Sample((arr(r, (3, 2), d), np.sort(arr(r, (6,), d))))], dtypes=FLOATS,
           method=False))
add(OpInfo("unique", lambda d, r: [Sample((np.array([3, 1, 2, 3, 1], d),)),
                                   Sample((np.array([3, 1, 2, 3, 1], d),), dict(return_inverse=True, return_counts=True)),
                                   Sample((np.array([[3, 1], [2, 0], [3, 1]], d),), dict(dim=0, return_counts=True))],
           dtypes=FLOATS + INTS, noncontiguous=False, meta=False, covers=("_unique2", "unique_dim")))

# ------------------------------------------------------------------------------ linear algebra
add(OpInfo("mm", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (4, 5), d)))], dtypes=FLOATS, out=True,
           errors=lambda: [_err((np.ones((2, 3)), np.ones((4, 5))), {}, RuntimeError,
                                r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)")]))
add(OpInfo("bmm", lambda d, r: [Sample((arr(r, (2, 3, 4), d), arr(r, (2, 4, 5), d)))], dtypes=FLOATS, out=True))
add(OpInfo("matmul", lambda d, r: [Sample((arr(r, s1, d), arr(r, s2, d))) for s1, s2 in
                                   [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                                    ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2))]],
           dtypes=FLOATS, out=True,
           errors=lambda: [_err((np.ones((2, 3)), np.ones((4, 5))), {}, RuntimeError,
                                r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)")]))
add(OpInfo("mv", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (4,), d)))], dtypes=FLOATS))
add(OpInfo("dot", lambda d, r: [Sample((arr(r, (4,), d), arr(r, (4,), d)))], dtypes=FLOATS))
add(OpInfo("vdot", lambda d, r: [Sample((arr(r, (4,), d), arr(r, (4,), d)))], dtypes=FLOATS))
add(OpInfo("inner", lambda d, r: [Sample((arr(r, (2, 4), d), arr(r, (3, 4), d)))], dtypes=FLOATS))
add(OpInfo("outer", lambda d, r: [Sample((arr(r, (4,), d), arr(r, (3,), d)))], dtypes=FLOATS, aliases=("ger",)))
for name, shapes in [("addmm", ((3, 5), (3, 4), (4, 5))), ("addmv", ((3,), (3, 4), (4,))),
                     ("baddbmm", ((2, 3, 5), (2, 3, 4), (2, 4, 5))), ("addbmm", ((3, 5), (2, 3, 4), (2, 4, 5)))]:
    add(OpInfo(name, lambda d, r, s=shapes: [Sample(tuple(arr(r, x, d) for x in s)),
                                             Sample(tuple(arr(r, x, d) for x in s), dict(beta=0.5, alpha=2.0))],
               dtypes=FLOATS, inplace=True, out=True))
add(OpInfo("einsum", lambda d, r: [Sample(("ij,jk->ik", arr(r, (3, 4), d), arr(r, (4, 5), d))),
                                   Sample(("bij->bji", arr(r, (2, 3, 4), d)))], dtypes=FLOATS, method=False,
           ember_fn=lambda e, eq, *ts: e.einsum(eq, *ts), torch_fn=lambda t, eq, *ts: t.einsum(eq, *ts),
           noncontiguous=False))
add(OpInfo("tensordot", lambda d, r: [Sample((arr(r, (3, 4, 5), d), arr(r, (4, 5, 2), d)), dict(dims=2)),
                                      Sample((arr(r, (3, 4), d), arr(r, (4, 2), d)), dict(dims=([1], [0])))],
           dtypes=FLOATS, method=False, noncontiguous=False,
           ember_fn=lambda e, a, b, dims: e.tensordot(a, b, dims=dims),
           torch_fn=lambda t, a, b, dims: t.tensordot(a, b, dims=dims)))
add(OpInfo("kron", lambda d, r: [Sample((arr(r, (2, 3), d), arr(r, (2, 2), d)))], dtypes=FLOATS))
add(OpInfo("cdist", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (5, 4), d))),
                                  Sample((arr(r, (3, 4), d), arr(r, (5, 4), d)), dict(p=1.0))], dtypes=FLOATS,
           method=False))
add(OpInfo("cross", lambda d, r: [Sample((arr(r, (4, 3), d), arr(r, (4, 3), d)), dict(dim=1))], dtypes=FLOATS,
           covers=("linalg_cross",)))


def _spd(r, n, d):
    a = r.uniform(-1, 1, (n, n))
    return (a @ a.T + n * np.eye(n)).astype(d)


_SINGULAR = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]])
_LINALG_ERRORS = {  # LAPACK's info and the failing batch element, in PyTorch's words (class: tests/test_fidelity.py)
    "linalg.inv": lambda: [_err((_SINGULAR,), {}, RuntimeError, "linalg.inv: \\(Batch element 1\\): The diagonal "
                                "element 2 is zero, the inversion could not be completed"),
                           _err((np.zeros((3, 3)),), {}, RuntimeError, "linalg.inv: The diagonal element 1 is zero")],
    "linalg.cholesky": lambda: [_err((np.array([[4.0, 2, 0], [2, 1, 0], [0, 0, 1]]),), {}, RuntimeError,
                                     "the leading minor of order 2 is not positive-definite")],
    "linalg.solve_triangular": lambda: [
        _err((np.eye(2), np.ones(2)), dict(upper=False), RuntimeError, "The input tensor B must have at least 2 dimensions"),
        _err((np.eye(2), np.ones((3, 2))), dict(upper=False), RuntimeError,
             "Incompatible shapes of A and B for the equation AX = B \\(2x2 and 3x2\\)")],
    "linalg.solve": lambda: [_err((_SINGULAR[1], np.ones(2)), {}, RuntimeError,
                                  "torch.linalg.solve: The solver failed because the input matrix is singular."),
                             _err((np.eye(2), np.ones((3, 2))), {}, RuntimeError,
                                  "Incompatible shapes of A and B for the equation AX = B \\(2x2 and 3x2\\)"),
                             _err((np.eye(2), np.ones((2, 3))), dict(left=False), RuntimeError,
                                  "Incompatible shapes of A and B for the equation XA = B \\(2x2 and 2x3\\)")],
}
for name, fn in [
    ("linalg.inv", lambda d, r: [Sample((_spd(r, 4, d),))]),
    ("linalg.det", lambda d, r: [Sample((arr(r, (4, 4), d),)), Sample((arr(r, (2, 3, 3), d),))]),
    ("linalg.slogdet", lambda d, r: [Sample((arr(r, (4, 4), d),))]),
    ("linalg.solve", lambda d, r: [Sample((_spd(r, 4, d), arr(r, (4, 2), d))), Sample((_spd(r, 4, d), arr(r, (4,), d))),
                                   Sample((_spd(r, 3, d), arr(r, (2, 3), d)), dict(left=False))]),
    ("linalg.cholesky", lambda d, r: [Sample((_spd(r, 4, d),))]),
    ("linalg.solve_triangular", lambda d, r: [
        Sample((_spd(r, 4, d), arr(r, (4, 2), d)), dict(upper=False)),
        Sample((_spd(r, 4, d), arr(r, (2, 3, 4), d)), dict(upper=True, left=False)),
        Sample((_spd(r, 3, d), arr(r, (3, 1), d)), dict(upper=True, unitriangular=True))]),
    ("linalg.eigvalsh", lambda d, r: [Sample((_spd(r, 4, d),))]),
    ("linalg.svdvals", lambda d, r: [Sample((arr(r, (4, 3), d),))]),
    ("linalg.pinv", lambda d, r: [Sample((arr(r, (4, 3), d),))]),
    ("linalg.matrix_power", lambda d, r: [Sample((arr(r, (3, 3), d), 3)), Sample((_spd(r, 3, d), -2))]),
    ("linalg.vector_norm", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (3, 4), d), 1, 1)),
                                         Sample((arr(r, (3, 4), d), float("inf"))), Sample((arr(r, (3, 4), d), 3.0, (0, 1)))]),
    ("linalg.matrix_norm", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (3, 4), d), "nuc")),
                                         Sample((arr(r, (3, 4), d), 1))]),
    ("linalg.norm", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (5,), d), 3))]),
    ("linalg.cross", lambda d, r: [Sample((arr(r, (4, 3), d), arr(r, (4, 3), d)))]),
]:
    add(OpInfo(name, fn, dtypes=FLOATS, method=False, rtol=1e-4, atol=1e-5, errors=_LINALG_ERRORS.get(name)))
# decompositions whose factors are unique only up to signs: compared through reconstruction in test_linalg.py
add(OpInfo("linalg.qr", lambda d, r: [Sample((arr(r, (4, 3), d),))], dtypes=FLOATS, method=False,
           ember_fn=lambda e, a: e.linalg.qr(a).Q @ e.linalg.qr(a).R,
           torch_fn=lambda t, a: t.linalg.qr(a).Q @ t.linalg.qr(a).R, rtol=1e-4, atol=1e-5))
add(OpInfo("linalg.eigh", lambda d, r: [Sample((_spd(r, 4, d),))], dtypes=FLOATS, method=False,
           ember_fn=lambda e, a: e.linalg.eigh(a).eigenvalues, torch_fn=lambda t, a: t.linalg.eigh(a).eigenvalues,
           rtol=1e-4, atol=1e-5))
add(OpInfo("linalg.svd", lambda d, r: [Sample((arr(r, (4, 3), d),))], dtypes=FLOATS, method=False,
           ember_fn=lambda e, a: e.linalg.svd(a, full_matrices=False).S,
           torch_fn=lambda t, a: t.linalg.svd(a, full_matrices=False).S, rtol=1e-4, atol=1e-5))
add(OpInfo("linalg.lstsq", lambda d, r: [Sample((arr(r, (5, 3), d), arr(r, (5, 2), d)))], dtypes=FLOATS, method=False,
           ember_fn=lambda e, a, b: e.linalg.lstsq(a, b).solution,
           torch_fn=lambda t, a, b: t.linalg.lstsq(a, b).solution, rtol=1e-4, atol=1e-4))
for name, src in [("det", "linalg.det"), ("inverse", "linalg.inv"), ("slogdet", "linalg.slogdet"),
                  ("pinverse", "linalg.pinv")]:
    add(OpInfo(name, lambda d, r: [Sample((_spd(r, 3, d),))], dtypes=FLOATS, rtol=1e-4, atol=1e-5))

# ------------------------------------------------------------------------------ comparisons, small reductions
def _close_samples(d, r):
    a = arr(r, (3, 4), d)
    floating = np.dtype(d).kind == "f"
    b = (a + r.uniform(-1e-6, 1e-6, (3, 4))).astype(d) if floating else a.copy()
    b2 = a.copy()
    if floating:
        b2[0, 0] += 1.0
        b2[1, 1] = np.nan
    return [Sample((a, b)), Sample((a, b2)), Sample((a, b2), dict(equal_nan=True)),
            Sample((a, b2), dict(rtol=0.5, atol=1.5)), Sample((a, arr(r, (4,), d)))]


add(OpInfo("isclose", _close_samples, dtypes=FLOATS + INTS, supports_autograd=False,
           errors=lambda: [_err((np.ones(2, "float32"), np.ones(2)), {}, RuntimeError, "Float did not match Double"),
                           _err((np.ones(2), np.ones(2)), dict(atol=-1.0), RuntimeError,
                                "atol must be greater than or equal to zero, but got -1")]))
add(OpInfo("allclose", _close_samples, dtypes=FLOATS + INTS, supports_autograd=False, meta=False))
def _equal_samples(d, r):
    a = arr(r, (2, 3), d)
    b = a.copy()
    b[1, 2] = b[0, 0] if b[1, 2] != b[0, 0] else (not b[0, 0] if d == "bool" else b[0, 0] + 1)
    return [Sample((a, a.copy())), Sample((a, b)), Sample((a.reshape(-1), a))]


add(OpInfo("equal", _equal_samples,
           dtypes=FLOATS + INTS + BOOL, supports_autograd=False, meta=False, noncontiguous=False))
add(OpInfo("is_same_size", lambda d, r: [Sample((arr(r, (2, 3), d), arr(r, (2, 3), d))),
                                         Sample((arr(r, (2, 3), d), arr(r, (3, 2), d)))],
           supports_autograd=False, meta=False, noncontiguous=False))
add(OpInfo("is_nonzero", lambda d, r: [Sample((np.array([0.0], d),)), Sample((np.array(2.5, d),))],
           supports_autograd=False, meta=False, noncontiguous=False,
           errors=lambda: [_err((np.ones(3),), {}, RuntimeError, "more than one value is ambiguous"),
                           _err((np.ones(0),), {}, RuntimeError, "with no values is ambiguous")]))
add(OpInfo("msort", lambda d, r: [Sample((arr(r, (4, 3), d),)), Sample((arr(r, (5,), d),))], dtypes=FLOATS + INTS))
add(OpInfo("diff", lambda d, r: [Sample((arr(r, (3, 5), d),)), Sample((arr(r, (3, 5), d),), dict(n=2, dim=0)),
                                 Sample((arr(r, (3, 4), d),), dict(prepend=arr(r, (3, 1), d), append=arr(r, (3, 2), d))),
                                 Sample((arr(r, (4,), d),), dict(n=5))],
           dtypes=FLOATS + INTS,
           errors=lambda: [_err((np.array(1.0),), {}, RuntimeError, "diff expects input to be at least one-dimensional"),
                           _err((np.ones(3),), dict(n=-1), RuntimeError, "order must be non-negative but got -1"),
                           _err((np.ones(3),), dict(prepend=np.ones((2, 2))), RuntimeError,
                                "diff expects prepend or append to be the same dimension as input")]))
add(OpInfo("trace", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (4, 2), d),))], dtypes=FLOATS + INTS,
           errors=lambda: [_err((np.ones(3),), {}, RuntimeError, "trace: expected a matrix, but got tensor with dim 1")]))

add(OpInfo("cov", lambda d, r: [
    Sample((arr(r, (3, 6), d),)), Sample((arr(r, (6,), d),)), Sample((arr(r, (2, 5), d),), dict(correction=0)),
    Sample((arr(r, (2, 5), d),), dict(fweights=np.array([1, 2, 0, 3, 1]), aweights=positive(r, (5,), d)))],
    dtypes=FLOATS, rtol=1e-5, atol=1e-6, meta=False,  # PyTorch's Meta refuses cov (it reads values); ember's works
    errors=lambda: [_err((np.ones((2, 2, 2)),), {}, RuntimeError, "cov\\(\\): expected input to have two or fewer"),
                    _err((np.ones((2, 3)),), dict(fweights=np.array([1, -1, 1])), RuntimeError,
                         "fweights cannot be negative")]))
add(OpInfo("corrcoef", lambda d, r: [Sample((arr(r, (3, 6), d),)), Sample((arr(r, (6,), d),))], dtypes=FLOATS,
           rtol=1e-5, atol=1e-6, meta=False))
add(OpInfo("cartesian_prod", lambda d, r: [Sample(([arr(r, (2,), d), arr(r, (3,), d)],)),
                                           Sample(([arr(r, (2,), d), arr(r, (1,), d), arr(r, (2,), d)],))],
           method=False, dtypes=FLOATS + INTS, ember_fn=lambda e, ts: e.cartesian_prod(*ts),
           torch_fn=lambda t, ts: t.cartesian_prod(*ts)))
add(OpInfo("block_diag", lambda d, r: [Sample(([arr(r, (2, 2), d), arr(r, (), d), arr(r, (3,), d)],)),
                                       Sample(([arr(r, (1, 3), d), arr(r, (2, 1), d)],))],
           method=False, dtypes=FLOATS + INTS, ember_fn=lambda e, ts: e.block_diag(*ts),
           torch_fn=lambda t, ts: t.block_diag(*ts)))

# ------------------------------------------------------------------------------ copies
add(OpInfo("conj_physical", unary_samples(), dtypes=FLOATS + INTS))  # complex: tests/test_fidelity.py
add(OpInfo("clone", unary_samples(), dtypes=ALL_REAL + BOOL))
add(OpInfo("relu6", unary_samples(-8, 8), dtypes=FLOATS, method=False, torch_name="nn.functional.relu6"))

# ------------------------------------------------------------------------------ nn ops (through nn.functional)
add(OpInfo("linear", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (5, 4), d), arr(r, (5,), d))),
                                   Sample((arr(r, (2, 3, 4), d), arr(r, (5, 4), d), arr(r, (5,), d))),
                                   Sample((arr(r, (4,), d), arr(r, (5, 4), d)))],
           method=False, torch_name="nn.functional.linear"))
def _loss_samples(d, r):
    """Each reduction, a broadcast target, and PyTorch 2.13's ``weight=`` (the mean divides by its sum)."""
    return ([Sample((arr(r, (3, 4), d), arr(r, (3, 4), d)), dict(reduction=red)) for red in ("mean", "sum", "none")] +
            [Sample((arr(r, (3, 4), d), arr(r, (4,), d)))] +
            [Sample((arr(r, (3, 4), d), arr(r, (3, 4), d)), dict(reduction=red, weight=positive(r, (3, 4), d)))
             for red in ("mean", "sum", "none")])


add(OpInfo("l1_loss", _loss_samples,
           method=False, torch_name="nn.functional.l1_loss",
           errors=lambda: [_err((np.ones(2), np.ones(2)), dict(reduction="bad"), ValueError,
                                "bad is not a valid value for reduction")]))
add(OpInfo("mse_loss", _loss_samples, method=False, torch_name="nn.functional.mse_loss", covers=("mse_loss_backward",),
           errors=lambda: [_err((np.ones(2), np.ones(2)), dict(reduction="bad"), ValueError,
                                "bad is not a valid value for reduction"),
                           _err((np.ones(2, "int64"), np.ones(2, "int64")), {}, NotImplementedError,
                                "\"mse_cpu\" not implemented for 'Long'")]))
def _nll_samples(d, r):
    """(N, C), no batch (C,), spatial (N, C, H, W) and other ranks (viewed as spatial); weights, ignore_index."""
    t = np.array([0, 3, -100, 1, 2])
    out = [Sample((arr(r, (5, 4), d), t), dict(reduction=red)) for red in ("mean", "sum", "none")]
    out += [Sample((arr(r, (5, 4), d), t), dict(reduction=red, weight=positive(r, (4,), d))) for red in ("mean", "none")]
    out += [Sample((arr(r, (5, 4), d), np.array([0, 1, 1, 3, 1])), dict(ignore_index=1, weight=positive(r, (4,), d))),
            Sample((arr(r, (4,), d), np.array(2))), Sample((arr(r, (4,), d), np.array(1)), dict(reduction="none")),
            Sample((arr(r, (2, 3, 2, 2), d), np.array([[[0, 2], [1, -100]], [[2, 2], [0, 1]]])), {}),
            Sample((arr(r, (2, 3, 2, 2), d), np.array([[[0, 2], [1, 0]], [[2, 2], [0, 1]]])), dict(reduction="none")),
            Sample((arr(r, (2, 3, 4), d), np.array([[0, 2, 1, 1], [2, 0, -100, 1]])), dict(reduction="none")),
            Sample((arr(r, (2, 3, 2, 1, 2), d), np.array([[[[0, 2]], [[1, 1]]], [[[2, 0]], [[0, 1]]]])),
                   dict(weight=positive(r, (3,), d))),
            Sample((arr(r, (0, 4), d), np.zeros(0, "int64")), dict(reduction="sum"))]
    return out


def _nll_errors():
    x, t = np.ones((3, 4)), np.array([0, 1, 2])
    return [_err((x, t), dict(reduction="bad"), ValueError, "bad is not a valid value for reduction"),
            _err((x, np.array([0, 5, 1])), {}, IndexError, "Target 5 is out of bounds."),
            _err((x, np.array([0, 1])), {}, ValueError, r"Expected input batch_size \(3\) to match target batch_size "
                 r"\(2\)\."),
            _err((x, t), dict(weight=np.ones(3)), RuntimeError, r"weight tensor should be defined either for all 4 "
                 r"classes or no classes but got weight tensor of shape: \[3\]"),
            _err((x, t.astype("float64")), {}, RuntimeError, "expected target dtype to be Long or Byte, but got Double"),
            _err((np.ones(4), np.array([1, 2])), {}, ValueError,
                 "For 1D input, 1D target must have size 1, but got target size: 2"),
            _err((np.ones((2, 3, 4)), np.zeros((2, 5), "int64")), {}, RuntimeError, r"Expected target size \[2, 4\], "
                 r"got \[2, 5\]"),
            _err((np.ones(()), np.array(0)), {}, ValueError, r"Expected 1 or more dimensions \(got 0\)")]


_NLL_OPS = ("nll_loss_nd", "nll_loss", "nll_loss_forward", "nll_loss_backward", "nll_loss2d", "nll_loss2d_forward",
            "nll_loss2d_backward")
add(OpInfo("nll_loss", _nll_samples, method=False, torch_name="nn.functional.nll_loss", covers=_NLL_OPS,
           errors=_nll_errors))


def _cross_entropy_samples(d, r):
    """Class indices (with label smoothing, weights, ignore_index, spatial) and class probabilities."""
    t = np.array([0, 3, -100, 1, 2])
    out = [Sample((arr(r, (5, 4), d), t), dict(reduction=red)) for red in ("mean", "sum", "none")]
    out += [Sample((arr(r, (5, 4), d), t), dict(reduction=red, label_smoothing=0.2, weight=positive(r, (4,), d)))
            for red in ("mean", "sum", "none")]
    out += [Sample((arr(r, (5, 4), d), t), dict(label_smoothing=0.1)),
            Sample((arr(r, (2, 3, 2, 2), d), np.array([[[0, 2], [1, -100]], [[2, 2], [0, 1]]])),
                   dict(label_smoothing=0.3)),
            Sample((arr(r, (4,), d), np.array(3))),
            Sample((arr(r, (3, 4), d), positive(r, (3, 4), d)), dict(reduction="mean")),
            Sample((arr(r, (3, 4), d), positive(r, (3, 4), d)), dict(reduction="none", weight=positive(r, (4,), d))),
            Sample((arr(r, (2, 3, 2), d), positive(r, (2, 3, 2), d)), dict(label_smoothing=0.25, reduction="sum"))]
    return out


def _cross_entropy_errors():
    x, t = np.ones((3, 4)), np.array([0, 1, 2])
    return [_err((x, t), dict(label_smoothing=1.5), RuntimeError, r"label_smoothing must be between 0\.0 and 1\.0\. "
                 r"Got: 1\.5"),
            _err((x, np.ones((3, 4))), dict(ignore_index=1), RuntimeError,
                 "ignore_index is not supported for floating point target"),
            _err((x, np.ones((3, 4), "int64")), {}, RuntimeError,
                 "Expected floating point type for target with class probabilities, got Long"),
            _err((x, np.ones((3, 4))), dict(weight=np.ones(3)), RuntimeError, r"cross_entropy: weight tensor should be "
                 r"defined either for all 4 classes or no classes but got weight tensor of shape: \[3\]"),
            _err((x, t), dict(reduction="bad"), ValueError, "bad is not a valid value for reduction")]


add(OpInfo("cross_entropy", _cross_entropy_samples, method=False, torch_name="nn.functional.cross_entropy",
           covers=("cross_entropy_loss", "nll_loss_nd", "nll_loss_forward", "nll_loss_backward"),
           errors=_cross_entropy_errors))
add(OpInfo("softmax", lambda d, r: [Sample((arr(r, (3, 4), d), 1)), Sample((arr(r, (2, 3, 4), d), 0))],
           covers=("_softmax",)))
add(OpInfo("log_softmax", lambda d, r: [Sample((arr(r, (3, 4), d), 1)), Sample((arr(r, (2, 3, 4), d), -1))],
           covers=("_log_softmax",)))
def _softmax_out(r, shape, d, dim, log):
    """softmax (log_softmax) of random values along dim, in float64 then cast: a valid ``output`` argument."""
    x = r.uniform(-3, 3, shape)
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    y = e / e.sum(axis=dim, keepdims=True)
    return (np.log(y) if log else y).astype(d)


# the backward ops themselves, with their own derivatives (softmax's double backward): through torch.ops.aten
add(OpInfo("_softmax_backward_data",
           lambda d, r: [Sample((arr(r, (3, 4), d), _softmax_out(r, (3, 4), d, 1, False), 1, d)),
                         Sample((arr(r, (2, 3, 4), d), _softmax_out(r, (2, 3, 4), d, 0, False), 0, d))],
           method=False, ember_fn=lambda e, g, y, dim, dt: e.ops.aten._softmax_backward_data(g, y, dim, getattr(e, dt)),
           torch_fn=lambda t, g, y, dim, dt: t.ops.aten._softmax_backward_data(g, y, dim, getattr(t, dt))))
add(OpInfo("_log_softmax_backward_data",
           lambda d, r: [Sample((arr(r, (3, 4), d), _softmax_out(r, (3, 4), d, 1, True), 1, d)),
                         Sample((arr(r, (2, 3, 4), d), _softmax_out(r, (2, 3, 4), d, 0, True), 0, d))],
           method=False, ember_fn=lambda e, g, y, dim, dt: e.ops.aten._log_softmax_backward_data(g, y, dim, getattr(e, dt)),
           torch_fn=lambda t, g, y, dim, dt: t.ops.aten._log_softmax_backward_data(g, y, dim, getattr(t, dt))))
add(OpInfo("gelu", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (5,), d),), dict(approximate="tanh"))],
           method=False, ember_fn=lambda e, a, **k: e.nn.functional.gelu(a, **k),
           torch_fn=lambda t, a, **k: t.nn.functional.gelu(a, **k), covers=("gelu_backward",)))
# the backward op itself, with its own derivatives (gelu's double backward): through torch.ops.aten
add(OpInfo("gelu_backward", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (3, 4), d))),
                                          Sample((arr(r, (5,), d), arr(r, (5,), d)), dict(approximate="tanh"))],
           method=False, ember_fn=lambda e, g, a, **k: e.ops.aten.gelu_backward(g, a, **k),
           torch_fn=lambda t, g, a, **k: t.ops.aten.gelu_backward(g, a, **k)))
# tanh's and sigmoid's backward ops, with their own derivatives (the double backward): through torch.ops.aten
for _name in ("tanh_backward", "sigmoid_backward"):
    add(OpInfo(_name, lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (3, 4), d, -0.9, 0.9))),
                                    Sample((arr(r, (4,), d), arr(r, (3, 1), d, -0.9, 0.9)))],
               method=False, ember_fn=lambda e, g, y, _n=_name: getattr(e.ops.aten, _n)(g, y),
               torch_fn=lambda t, g, y, _n=_name: getattr(t.ops.aten, _n)(g, y)))
add(OpInfo("layer_norm", lambda d, r: [Sample((arr(r, (2, 3, 4), d), arr(r, (4,), d), arr(r, (4,), d))),
                                       Sample((arr(r, (3, 2, 2), d), arr(r, (2, 2), d), arr(r, (2, 2), d)))],
           method=False, covers=("native_layer_norm", "native_layer_norm_backward"),
           ember_fn=lambda e, x, w, b: e.nn.functional.layer_norm(x, tuple(w.shape), w, b),
           torch_fn=lambda t, x, w, b: t.nn.functional.layer_norm(x, tuple(w.shape), w, b)))



def _batch_norm_call(lib, x, w=None, b=None, mode="train"):
    """F.batch_norm with running statistics made inside (they are state, not inputs): "train" updates them,
    "eval" normalises with them, "batch" has none (track_running_stats=False)."""
    c = x.shape[1]
    stats = np.linspace(-0.5, 0.5, c), np.linspace(0.5, 2.0, c)
    if mode == "batch":
        rm = rv = None
    else:
        rm, rv = (lib.tensor(a.astype(str(x.dtype).split(".")[-1])).to(x.device) for a in stats)
    out = lib.nn.functional.batch_norm(x, rm, rv, w, b, training=mode != "eval", momentum=0.3)
    return out if mode == "batch" else (out, rm, rv)


add(OpInfo("batch_norm", lambda d, r: [Sample((arr(r, (4, 3, 2, 2), d), arr(r, (3,), d), arr(r, (3,), d))),
                                       Sample((arr(r, (5, 2), d), arr(r, (2,), d), arr(r, (2,), d)), dict(mode="eval")),
                                       Sample((arr(r, (3, 2, 4), d),), dict(mode="batch"))],
           method=False, covers=("native_batch_norm", "native_batch_norm_backward"),
           ember_fn=_batch_norm_call, torch_fn=_batch_norm_call))


def _batch_norm_legit_call(lib, x, w, b, variant="legit"):
    """The forms of batch norm an exported program's core ATen graph has (``_native_batch_norm_legit``: running
    statistics updated in place; ``.no_stats``; ``_functional``: the new statistics returned; ``_no_training``),
    with their statistics made inside, returned with the outputs."""
    c = x.shape[1]
    rm, rv = (lib.tensor(a.astype(str(x.dtype).split(".")[-1])).to(x.device)
              for a in (np.linspace(-0.5, 0.5, c), np.linspace(0.5, 2.0, c)))
    aten = lib.ops.aten
    if variant == "legit":
        return tuple(aten._native_batch_norm_legit.default(x, w, b, rm, rv, True, 0.3, 1e-5)) + (rm, rv)
    if variant == "no_stats":
        return aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.3, 1e-5)
    if variant == "functional":
        return tuple(aten._native_batch_norm_legit_functional.default(x, w, b, rm, rv, True, 0.3, 1e-5)) + (rm, rv)
    return aten._native_batch_norm_legit_no_training.default(x, w, b, rm, rv, 0.3, 1e-5)[0]


add(OpInfo("_native_batch_norm_legit", lambda d, r: [
    Sample((arr(r, (4, 3, 2, 2), d), arr(r, (3,), d), arr(r, (3,), d))),
    Sample((arr(r, (5, 2), d), arr(r, (2,), d), arr(r, (2,), d)), dict(variant="no_stats")),
    Sample((arr(r, (3, 2, 4), d), arr(r, (2,), d), arr(r, (2,), d)), dict(variant="functional")),
    Sample((arr(r, (4, 3, 2), d), arr(r, (3,), d), arr(r, (3,), d)), dict(variant="no_training"))],
    method=False, covers=("_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training"),
    ember_fn=_batch_norm_legit_call, torch_fn=_batch_norm_legit_call, supports_gradgrad=False))


def _conv_call(lib, x, w, b, transposed=False, **k):
    f = lib.nn.functional
    fn = {(3, False): f.conv1d, (4, False): f.conv2d, (5, False): f.conv3d,
          (3, True): f.conv_transpose1d, (4, True): f.conv_transpose2d}[(x.dim(), transposed)]
    return fn(x, w, b, **k)


add(OpInfo("convolution", lambda d, r: [
    Sample((arr(r, (2, 4, 5, 5), d), arr(r, (6, 2, 3, 2), d), arr(r, (6,), d)),
           dict(stride=(2, 1), padding=1, dilation=(1, 2), groups=2)),
    Sample((arr(r, (1, 2, 6), d), arr(r, (3, 2, 3), d), arr(r, (3,), d)), dict(padding="same")),
    Sample((arr(r, (1, 2, 3, 3, 3), d), arr(r, (2, 2, 2, 2, 2), d), arr(r, (2,), d))),
    Sample((arr(r, (1, 4, 3, 3), d), arr(r, (4, 1, 3, 3), d), arr(r, (2,), d)),
           dict(transposed=True, stride=2, padding=1, output_padding=1, groups=2))],
    method=False, covers=("convolution_backward", "conv1d", "conv3d"), meta=False, ember_fn=_conv_call,
    torch_fn=_conv_call))


def _pool_call(lib, x, **k):
    f = lib.nn.functional
    fn = {3: f.max_pool1d, 4: f.max_pool2d, 5: f.max_pool3d}[x.dim()]
    out = fn(x, return_indices=True, **k)
    return out[0], out[1]


add(OpInfo("max_pool2d_with_indices", lambda d, r: [
    Sample((arr(r, (2, 3, 7, 6), d),), dict(kernel_size=3, stride=2, padding=1)),
    Sample((arr(r, (1, 2, 5, 5), d),), dict(kernel_size=2, ceil_mode=True, dilation=(1, 2))),
    Sample((arr(r, (1, 2, 9), d),), dict(kernel_size=3, stride=2))],
    method=False, meta=False, ember_fn=_pool_call, torch_fn=_pool_call, covers=("max_pool2d_with_indices_backward",)))
add(OpInfo("max_pool3d_with_indices", lambda d, r: [
    Sample((arr(r, (1, 2, 4, 5, 4), d),), dict(kernel_size=2, stride=(1, 2, 2), padding=(1, 0, 1))),
    Sample((arr(r, (1, 1, 3, 4, 3), d),), dict(kernel_size=2, stride=1, padding=(0, 1, 0)))],
    method=False, meta=False, ember_fn=_pool_call, torch_fn=_pool_call, covers=("max_pool3d_with_indices_backward",)))
def _avg_pool_errors(nd):
    x = np.ones((1, 2) + (5,) * nd)
    name = f"avg_pool{nd}d"
    errs = [_err((x, 3), dict(padding=2), RuntimeError, "pad should be at most half of effective kernel size, but got "
                 "pad=2, kernel_size=3 and dilation=1"),
            _err((x, 2), dict(stride=0), RuntimeError, "stride should not be zero")]
    if nd == 1:
        return errs + [_err((x, (2, 2)), {}, RuntimeError, r"avg_pool1d\(\) argument 'kernel_size' should contain one "
                            r"int \(got 2\)"),
                       _err((np.ones((1, 1, 2, 2)), 2), {}, RuntimeError, "Expected 2 to 3 dimensions, but got "
                            "4-dimensional tensor for argument #1 'self' \\(while checking arguments for avg_pool1d\\)")]
    either = "either " if nd == 2 else ""
    many = "two" if nd == 2 else "three"
    return errs + [_err((x, (2,) * (nd + 1)), {}, RuntimeError, f"{name}: kernel_size must {either}be a single int, or "
                        f"a tuple of {many} ints"),
                   _err((x, 2), dict(divisor_override=0), RuntimeError, "divisor must be not zero"),
                   _err((x, 7), {}, RuntimeError, "Output size is too small" if nd == 2 else "smaller than kernel size"),
                   _err((x, 2), dict(padding=-1), RuntimeError, "pad must be non-negative, but got pad: -1")]


def _avg_pool_samples(nd):
    def samples(d, r):
        sp = {1: (8,), 2: (5, 4), 3: (3, 4, 3)}[nd]
        out = [Sample((arr(r, (2, 2) + sp, d), 2)),
               Sample((arr(r, (2,) + sp, d), 3), dict(stride=2, padding=1)),
               Sample((arr(r, (1, 2) + sp, d), 3), dict(stride=2, padding=1, count_include_pad=False)),
               Sample((arr(r, (1, 2) + sp, d), 2), dict(ceil_mode=True)),
               Sample((arr(r, (1, 1) + sp, d), 3), dict(stride=2, padding=1, ceil_mode=True,
                                                        count_include_pad=False))]
        if nd > 1:
            out += [Sample((arr(r, (1, 2) + sp, d), (2,) + (1,) * (nd - 1)), dict(divisor_override=3)),
                    Sample((arr(r, (0, 2) + sp, d), 2))]
        return out
    return samples


add(OpInfo("avg_pool1d", _avg_pool_samples(1), method=False, torch_name="nn.functional.avg_pool1d",
           errors=lambda: _avg_pool_errors(1), covers=("avg_pool2d", "avg_pool2d_backward")))
add(OpInfo("avg_pool2d", _avg_pool_samples(2), method=False, torch_name="nn.functional.avg_pool2d",
           errors=lambda: _avg_pool_errors(2), covers=("avg_pool2d_backward",)))
add(OpInfo("avg_pool3d", _avg_pool_samples(3), method=False, torch_name="nn.functional.avg_pool3d",
           errors=lambda: _avg_pool_errors(3), covers=("avg_pool3d_backward",)))
def _upsample_entry(op, nd, interp):
    """An upsample op through ``torch.ops.aten`` / ``ember.ops.aten``: its base overload with and without scales,
    and its ``.vec`` overload (what F.interpolate calls) with an output size or scale factors."""
    def call(lib, x, *args, vec=False):
        fn = getattr(lib.ops.aten, op)
        return (fn.vec if vec else fn)(x, *args)
    sp = {1: (5,), 2: (4, 3), 3: (2, 3, 2)}[nd]
    osz = {1: (7,), 2: (6, 5), 3: (3, 4, 3)}[nd]  # tuples: the table's lists are lists of tensors
    ac = (False,) if interp else ()

    def samples(d, r):
        out = [Sample((arr(r, (1, 2) + sp, d), osz) + ac),
               Sample((arr(r, (2, 1) + sp, d), (2,) * nd) + ac),
               Sample((arr(r, (1, 2) + sp, d), osz) + ac + (1.7,) * nd),
               Sample((arr(r, (1, 1) + sp, d), None) + ac + ((1.5,) * nd,), dict(vec=True)),
               Sample((arr(r, (1, 1) + sp, d), osz) + ac + (None,), dict(vec=True))]
        if interp:
            out.append(Sample((arr(r, (1, 2) + sp, d), osz, True)))
        return out

    def errors():
        x = np.ones((1, 2) + sp)
        return [_err((x, (0,) + osz[1:]) + ac, {}, RuntimeError, "Input and output sizes should be greater than 0"),
                _err((x, osz + (3,)) + ac, {}, RuntimeError, f"It is expected output_size equals to {nd}, but got size "
                     f"{nd + 1}"),
                _err((np.ones((1, 0) + sp), osz) + ac, {}, RuntimeError, f"Non-empty {nd + 2}D data tensor expected"),
                _err((x, osz) + ac + ((2.0,) * nd,), dict(vec=True), RuntimeError,
                     "Must specify exactly one of output_size and scale_factors")]
    add(OpInfo(op, samples, method=False, ember_fn=call, torch_fn=call, errors=errors, covers=(op + "_backward",)))


for _nd in (1, 2, 3):
    _upsample_entry(f"upsample_nearest{_nd}d", _nd, False)
    _upsample_entry(f"_upsample_nearest_exact{_nd}d", _nd, False)
_upsample_entry("upsample_linear1d", 1, True)
_upsample_entry("upsample_bilinear2d", 2, True)
_upsample_entry("upsample_bicubic2d", 2, True)
for _filter in ("bilinear", "bicubic", "lanczos"):   # the antialiased (filtered) resampling ops
    _upsample_entry(f"_upsample_{_filter}2d_aa", 2, True)
_upsample_entry("upsample_trilinear3d", 3, True)
def _adaptive_entry(name, nd, indices):
    """F.adaptive_{avg,max}_pool{nd}d: exact and uneven windows, output 1 (the mean path for averages), None
    entries, unbatched inputs."""
    def call(lib, x, osz, **k):
        out = getattr(lib.nn.functional, name)(x, osz, **k)
        return tuple(out) if isinstance(out, tuple) else out
    sp = {1: (7,), 2: (7, 5), 3: (4, 5, 3)}[nd]

    def samples(d, r):
        out = [Sample((arr(r, (2, 2) + sp, d), (3,) * nd)), Sample((arr(r, (1, 2) + sp, d), (1,) * nd)),
               Sample((arr(r, (2,) + sp, d), tuple(s - 1 for s in sp))),
               Sample((arr(r, (1, 1) + sp, d), tuple(s + 2 for s in sp)))]
        if nd > 1:
            out.append(Sample((arr(r, (1, 2) + sp, d), (None,) + (2,) * (nd - 1))))
        if indices:
            out = [Sample(s.args, dict(return_indices=True)) for s in out]
        return out

    def errors():
        return [_err((np.ones((5,)), (2,) * nd), {}, RuntimeError, "Expected 2 to 3 dimensions, but got 1-dimensional")
                if nd == 1 else _err((np.ones((5,)), (2,) * nd), {}, ValueError, "Input dimension should be at least"),
                _err((np.ones((5,) * (nd + 3)), (2,) * nd), {}, RuntimeError, "Expected"),
                _err((np.ones((1, 2) + sp, "int64"), (2,) * nd), {}, NotImplementedError, "not implemented for 'Long'")]
    add(OpInfo(name, samples, method=False, ember_fn=call, torch_fn=call, errors=errors, noncontiguous=nd > 1,
               covers=(("_" + name, "_" + name + "_backward") if "avg" in name and nd > 1 else ())))


for _nd in (1, 2, 3):
    _adaptive_entry(f"adaptive_avg_pool{_nd}d", _nd, False)
    _adaptive_entry(f"adaptive_max_pool{_nd}d", _nd, True)
def _unfold_call(lib, x, **k):
    return lib.nn.functional.unfold(x, **k)


def _fold_call(lib, x, output_size, **k):
    return lib.nn.functional.fold(x, output_size, **k)


add(OpInfo("im2col", lambda d, r: [
    Sample((arr(r, (2, 3, 4, 5), d),), dict(kernel_size=2)),
    Sample((arr(r, (3, 4, 5), d),), dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(1, 2))),
    Sample((arr(r, (1, 2, 3, 3), d),), dict(kernel_size=3, padding=1, stride=2))],
    method=False, ember_fn=_unfold_call, torch_fn=_unfold_call,
    errors=lambda: [_err((np.ones((1, 2, 5, 5)),), dict(kernel_size=7), RuntimeError, "but its components must be at "
                         "least one"),
                    _err((np.ones((1, 2, 5, 5)),), dict(kernel_size=2, stride=0), RuntimeError,
                         "stride should be greater than zero, but got stride_height: 0 stride_width: 0"),
                    _err((np.ones((1, 0, 5, 5)),), dict(kernel_size=2), RuntimeError, "Expected 3D or 4D"),
                    _err((np.ones((1, 2, 5, 5), "int64"),), dict(kernel_size=2), NotImplementedError,
                         "\"im2col_out_cpu\" not implemented for 'Long'")]))
add(OpInfo("col2im", lambda d, r: [
    Sample((arr(r, (2, 12, 12), d), (4, 5)), dict(kernel_size=2)),
    Sample((arr(r, (18, 15), d), (4, 5)), dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(1, 2))),
    Sample((arr(r, (1, 18, 4), d), (3, 3)), dict(kernel_size=3, padding=1, stride=2)),
    Sample((arr(r, (1, 8, 4), d), (3, 3)), dict(kernel_size=2))],
    method=False, ember_fn=_fold_call, torch_fn=_fold_call,
    errors=lambda: [_err((np.ones((1, 7, 16)), (5, 5)), dict(kernel_size=2), RuntimeError, "divisible by the product "
                         "of kernel_size"),
                    _err((np.ones((1, 8, 15)), (5, 5)), dict(kernel_size=2), RuntimeError,
                         "to match the calculated number of sliding blocks 4 \\* 4 = 16, but got input.size\\(2\\)=15"),
                    _err((np.ones((1, 1, 8, 16)), (5, 5)), dict(kernel_size=2), RuntimeError, "Expected 2D or 3D")]))
def _embedding_bag_call(lib, inp, w, offsets=None, psw=None, **k):
    return lib.nn.functional.embedding_bag(inp, w, offsets, per_sample_weights=psw, **k)


add(OpInfo("embedding_bag", lambda d, r: [
    Sample((np.array([1, 2, 4, 5, 4, 3, 2, 0]), arr(r, (6, 3), d), np.array([0, 0, 3, 5])), dict(mode=m))
    for m in ("sum", "mean", "max")] + [
    Sample((np.array([[1, 2], [4, 5], [4, 3]]), arr(r, (6, 3), d)), dict(mode="mean", padding_idx=-2)),
    # (include_last_offset with entries after the last offset: PyTorch's float32 and float64 kernels disagree)
    Sample((np.array([1, 2, 4, 5, 4, 3, 2, 0]), arr(r, (6, 3), d), np.array([0, 2, 3, 5, 8])),
           dict(mode="mean", include_last_offset=True, scale_grad_by_freq=True)),
    Sample((np.array([1, 2, 4, 5, 4, 3, 2, 0]), arr(r, (6, 3), d), np.array([0, 2, 3, 5]), arr(r, (8,), d)),
           dict(mode="sum", padding_idx=4)),
    Sample((np.array([1, 2, 4, 5]), arr(r, (6, 3), d), np.array([0, 1]).astype("int32").astype("int64")),
           dict(mode="max", padding_idx=2))],
    method=False, ember_fn=_embedding_bag_call, torch_fn=_embedding_bag_call,
    covers=("embedding_bag", "_embedding_bag", "_embedding_bag_backward", "_embedding_bag_per_sample_weights_backward"),
    errors=lambda: [_err((np.array([1, 2]), np.ones((6, 3)), np.array([1])), {}, RuntimeError,
                         "offsets\\[0\\] has to be 0"),
                    _err((np.array([1, 2]), np.ones((6, 3)), np.array([0, 3])), {}, RuntimeError,
                         "offsets\\[-1\\] can not be greater than input's length 2 but got offsets\\[-1\\] of 3"),
                    _err((np.array([1, 20]), np.ones((6, 3)), np.array([0])), {}, RuntimeError,
                         "Index 1 of input takes value 20 which is not in the valid range \\[0, 6\\)"),
                    _err((np.array([1, 2]), np.ones((6, 3)), np.array([0])), dict(padding_idx=7), RuntimeError,
                         "padding_idx must be within the number of embeddings, -6 through 5, but got 7"),
                    _err((np.array([1, 2]), np.ones((6, 3)), np.array([0])), dict(mode="bad"), ValueError,
                         "mode has to be one of sum, mean or max"),
                    _err((np.array([1, 2]), np.ones((6, 3)), np.array([0]), np.ones(2)), dict(mode="mean"),
                         NotImplementedError, "per_sample_weights is only supported for mode='sum'")]))
def _grid_sample_call(lib, x, grid, **k):
    return lib.nn.functional.grid_sample(x, grid, **k)


def _grid_samples(d, r):
    out = []
    for mode in ("bilinear", "nearest"):
        for pad, ac in (("zeros", False), ("border", True), ("reflection", False), ("reflection", True)):
            out.append(Sample((arr(r, (1, 2, 3, 4), d), np.clip(arr(r, (1, 2, 3, 2), d), -1.2, 1.2)),
                              dict(mode=mode, padding_mode=pad, align_corners=ac)))
    out.append(Sample((arr(r, (1, 1, 2, 3, 2), d), np.clip(arr(r, (1, 2, 2, 1, 3), d), -1.2, 1.2)),
                      dict(align_corners=False)))
    out.append(Sample((arr(r, (1, 1, 2, 3, 2), d), np.clip(arr(r, (1, 2, 1, 2, 3), d), -1.2, 1.2)),
                      dict(mode="nearest", padding_mode="border", align_corners=True)))
    return out


add(OpInfo("grid_sampler", _grid_samples, method=False, ember_fn=_grid_sample_call, torch_fn=_grid_sample_call,
           covers=("grid_sampler_2d", "grid_sampler_2d_backward", "grid_sampler_3d", "grid_sampler_3d_backward"),
           errors=lambda: [_err((np.ones((1, 2, 3, 4)), np.ones((2, 2, 2, 2))), dict(align_corners=False),
                                RuntimeError, "expected grid and input to have same batch size"),
                           _err((np.ones((1, 2, 3, 4)), np.ones((1, 2, 2, 3))), dict(align_corners=False),
                                RuntimeError, "expected grid to have size 2 in last dimension"),
                           _err((np.ones((1, 2, 3, 4)), np.ones((1, 2, 2, 2))), dict(mode="cubic"), ValueError,
                                "expected mode to be 'bilinear', 'nearest' or 'bicubic'"),
                           _err((np.ones((1, 2, 3)), np.ones((1, 2, 2))), dict(align_corners=False), RuntimeError,
                                "expected 4D or 5D input and grid with same number of dimensions")]))


def _affine_grid_call(lib, theta, size, **k):
    return lib.nn.functional.affine_grid(theta, size, **k)


add(OpInfo("affine_grid_generator", lambda d, r: [
    Sample((arr(r, (2, 2, 3), d), (2, 3, 4, 5)), dict(align_corners=False)),
    Sample((arr(r, (1, 2, 3), d), (1, 1, 3, 1)), dict(align_corners=False)),
    Sample((arr(r, (2, 3, 4), d), (2, 1, 2, 3, 2)), dict(align_corners=True))],
    method=False, ember_fn=_affine_grid_call, torch_fn=_affine_grid_call, covers=("affine_grid_generator_backward",),
    errors=lambda: [_err((np.ones((2, 2, 3)), (2, 3, 4)), dict(align_corners=False), NotImplementedError,
                         "affine_grid only supports 4D and 5D sizes"),
                    _err((np.ones((2, 3, 3)), (2, 3, 4, 5)), dict(align_corners=False), ValueError,
                         "Expected a batch of 2D affine matrices of shape Nx2x3")]))
def _ctc_call(lib, logits, targets, il, tl, **k):
    """ctc_loss of log_softmax(logits): PyTorch's backward of _ctc_loss is the gradient with respect to the logits
    of a log_softmax, so that is what finite differences can check."""
    return lib.nn.functional.ctc_loss(logits.log_softmax(-1), targets, il, tl, **k)


add(OpInfo("ctc_loss", lambda d, r: [
    Sample((arr(r, (5, 2, 4), d), np.array([[1, 2, 2], [3, 1, 0]]), (5, 4), (3, 2)), dict(reduction=red))
    for red in ("mean", "sum", "none")] + [
    Sample((arr(r, (5, 3, 4), d), np.array([1, 2, 3, 3, 1]), (5, 5, 2), (2, 2, 1)), dict(zero_infinity=True)),
    Sample((arr(r, (4, 2, 3), d), np.array([[1, 1, 1], [2, 2, 2]]), (2, 4), (3, 0)), dict(reduction="none")),
    Sample((arr(r, (4, 2, 3), d), np.array([[1, 1, 1], [2, 2, 2]]), (2, 4), (3, 0)),
           dict(reduction="none", zero_infinity=True)),
    Sample((arr(r, (6, 4), d), np.array([1, 2]), (6,), (2,)), dict(blank=3))],
    method=False, ember_fn=_ctc_call, torch_fn=_ctc_call, covers=("_ctc_loss", "_ctc_loss_backward"),
    errors=lambda: [_err((np.ones((5, 2, 4)), np.array([[1, 2], [3, 3]]), (5, 5, 5), (2, 2)), {}, RuntimeError,
                         "input_lengths must be of size batch_size"),
                    _err((np.ones((5, 2, 4)), np.array([[1, 2], [3, 3]]), (6, 5), (2, 2)), {}, RuntimeError,
                         "Expected input_lengths to have value at most 5, but got value 6"),
                    _err((np.ones((5, 2, 4)), np.array([[1, 2], [3, 3]]), (5, 5), (3, 2)), {}, RuntimeError,
                         "Expected tensor to have size at least 3 at dimension 1, but got size 2 for argument #2 "
                         "'targets'"),
                    _err((np.ones((5, 2, 4)), np.array([[1, 2], [3, 3]]), (5, 5), (2, 2)), dict(blank=4),
                         RuntimeError, "blank must be in label range"),
                    _err((np.ones((5, 2, 4)), np.array([1, 2, 3]), (5, 5), (2, 2)), {}, RuntimeError,
                         "Expected tensor to have size 4 at dimension 0, but got size 3")]))
def _probs(r, shape, d):
    return (r.uniform(0.05, 0.95, shape)).astype(d)


add(OpInfo("smooth_l1_loss", lambda d, r: [
    Sample((arr(r, (3, 4), d), arr(r, (3, 4), d)), dict(reduction=red, beta=b))
    for red, b in (("mean", 1.0), ("sum", 0.5), ("none", 2.0))] + [Sample((arr(r, (3, 4), d), arr(r, (4,), d)))],
    method=False, torch_name="nn.functional.smooth_l1_loss", covers=("smooth_l1_loss_backward",),
    errors=lambda: [_err((np.ones(2), np.ones(2)), dict(beta=-1.0), RuntimeError,
                         "smooth_l1_loss does not support negative values for beta"),
                    _err((np.ones(2, "int64"), np.ones(2, "int64")), {}, NotImplementedError,
                         "\"smooth_l1_cpu\" not implemented for 'Long'")]))
add(OpInfo("huber_loss", lambda d, r: [
    Sample((arr(r, (3, 4), d), arr(r, (3, 4), d)), dict(reduction=red, delta=b))
    for red, b in (("mean", 1.0), ("sum", 0.5), ("none", 0.3))] + [
    Sample((arr(r, (3, 4), d), arr(r, (3, 4), d)), dict(weight=positive(r, (3, 4), d)))],
    method=False, torch_name="nn.functional.huber_loss", covers=("huber_loss_backward",),
    errors=lambda: [_err((np.ones(2), np.ones(2)), dict(delta=0.0), RuntimeError,
                         "huber_loss does not support non-positive values for delta")]))
add(OpInfo("binary_cross_entropy", lambda d, r: [
    Sample((_probs(r, (3, 4), d), _probs(r, (3, 4), d)), dict(reduction=red)) for red in ("mean", "sum", "none")] + [
    Sample((_probs(r, (3, 4), d), _probs(r, (3, 4), d)), dict(weight=positive(r, (4,), d)))],
    method=False, torch_name="nn.functional.binary_cross_entropy", covers=("binary_cross_entropy_backward",),
    errors=lambda: [_err((np.array([1.5]), np.array([1.0])), {}, RuntimeError,
                         "all elements of input should be between 0 and 1"),
                    _err((np.array([0.5]), np.array([1.5])), {}, RuntimeError,
                         "all elements of target should be between 0 and 1"),
                    _err((np.array([0.5]), np.array([1.0, 1.0])), {}, ValueError,
                         "Using a target size")]))
add(OpInfo("binary_cross_entropy_with_logits", lambda d, r: [
    Sample((arr(r, (3, 4), d), _probs(r, (3, 4), d)), dict(reduction=red)) for red in ("mean", "sum", "none")] + [
    Sample((arr(r, (3, 4), d), _probs(r, (3, 4), d)), dict(weight=positive(r, (4,), d), pos_weight=positive(r, (4,), d)))],
    method=False, torch_name="nn.functional.binary_cross_entropy_with_logits",
    errors=lambda: [_err((np.array([0.5]), np.array([1.0, 1.0])), {}, ValueError,
                         "must be the same as input size")]))
def _activation_entry(name, torch_name=None, kwargs=({},), shape=(3, 4), errors=None):
    """An activation through F (its ``inplace=`` form is the in-place op): values around the kinks too."""
    def samples(d, r):
        base = arr(r, shape, d) * 3
        return [Sample((base,), dict(k)) for k in kwargs] + [Sample((arr(r, (5,), d),))]
    add(OpInfo(name, samples, method=False, torch_name=torch_name or f"nn.functional.{name}", errors=errors,
               covers={"celu": (), "log_sigmoid": ("log_sigmoid_forward", "log_sigmoid_backward")}.get(
                   name, (name + "_backward",))))


for _name, _kw in (("silu", ({},)), ("mish", ({},)), ("hardswish", ({},)), ("hardsigmoid", ({},)),
                   ("leaky_relu", ({}, dict(negative_slope=0.2))), ("elu", ({}, dict(alpha=0.5))),
                   ("celu", ({}, dict(alpha=0.5))), ("hardtanh", ({}, dict(min_val=-2.0, max_val=0.5))),
                   ("softplus", ({}, dict(beta=2.0, threshold=3.0)))):
    _activation_entry(_name, kwargs=_kw)
_activation_entry("log_sigmoid", torch_name="nn.functional.logsigmoid")
_activation_entry("softshrink", kwargs=({}, dict(lambd=1.2)), errors=lambda: [
    _err((np.ones(2),), dict(lambd=-1.0), RuntimeError, "lambda must be in range"),
    _err((np.ones(2, "int64"),), {}, NotImplementedError, "\"softshrink_check\" not implemented for 'Long'")])
_activation_entry("hardshrink", kwargs=({}, dict(lambd=1.2)))
add(OpInfo("threshold", lambda d, r: [Sample((arr(r, (3, 4), d) * 3, 0.5, -2.0)), Sample((arr(r, (5,), d), 0, 7))],
           method=False, dtypes=FLOATS + INTS, torch_name="nn.functional.threshold", covers=("threshold_backward",)))
add(OpInfo("glu", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (4, 2, 3), d),), dict(dim=0))],
           method=False, torch_name="nn.functional.glu", covers=("glu_backward",),
           errors=lambda: [_err((np.ones((3, 3)),), {}, RuntimeError, "Halving dimension must be even, but dimension 1 "
                                "is size 3")]))
add(OpInfo("pixel_shuffle", lambda d, r: [Sample((arr(r, (1, 8, 2, 3), d), 2)), Sample((arr(r, (9, 2, 2), d), 3)),
                                          Sample((arr(r, (2, 1, 4, 1, 2), d), 2))],
           method=False, dtypes=FLOATS + INTS,
           errors=lambda: [_err((np.ones((1, 3, 2, 2)), 2), {}, RuntimeError, "is not divisible by 4"),
                           _err((np.ones((4, 2)), 2), {}, RuntimeError, "at least 3 dimensions")]))
add(OpInfo("pixel_unshuffle", lambda d, r: [Sample((arr(r, (1, 2, 4, 6), d), 2)), Sample((arr(r, (1, 3, 3), d), 3))],
           method=False, dtypes=FLOATS + INTS,
           errors=lambda: [_err((np.ones((1, 3, 3, 4)), 2), {}, RuntimeError, "expects height to be divisible"),
                           _err((np.ones((1, 3, 4, 3)), 2), {}, RuntimeError, "expects width to be divisible")]))
def _group_norm_call(lib, x, g, w=None, b=None, **k):
    return lib.nn.functional.group_norm(x, g, w, b, **k)


add(OpInfo("group_norm", lambda d, r: [
    Sample((arr(r, (2, 6, 3), d), 3, arr(r, (6,), d), arr(r, (6,), d))),
    Sample((arr(r, (2, 4, 2, 2), d), 2), dict(eps=1e-3)),
    Sample((arr(r, (3, 4), d), 2, arr(r, (4,), d)))],
    method=False, ember_fn=_group_norm_call, torch_fn=_group_norm_call,
    covers=("native_group_norm", "native_group_norm_backward"),
    errors=lambda: [_err((np.ones((2, 6, 3)), 4), {}, RuntimeError, "divisible by num_groups"),
                    _err((np.ones((2, 6, 3)), 3, np.ones(5)), {}, RuntimeError,
                         "Expected weight to be a vector of size equal to the number of channels"),
                    _err((np.ones((1, 2, 1)), 2), {}, ValueError, "Expected more than 1 value per channel")]))
add(OpInfo("constant_pad_nd", lambda d, r: [Sample((arr(r, (2, 3, 4), d), [1, 2, 0, 1])),
                                            Sample((arr(r, (2, 5), d), [-1, 2], 3.5)),
                                            Sample((arr(r, (2, 3, 4), d), [-2, 3, 1, -1, 1, 1])),
                                            Sample((arr(r, (2, 5), d), [-3, -2]))],
           method=False, noncontiguous=False, ember_fn=lambda e, x, p, v=0: e.nn.functional.pad(x, p, value=v),
           torch_fn=lambda t, x, p, v=0: t.nn.functional.pad(x, p, value=v),
           errors=lambda: [_err((np.ones((2, 5), np.float32), [-6, 2]), {}, RuntimeError, "length must be non-negative"),
                           _err((np.ones((2, 5), np.float32), [-3, -3]), {}, RuntimeError,
                                "length must be non-negative")]))
add(OpInfo("embedding", lambda d, r: [Sample((np.array([[0, 2, 2], [4, 1, 0]]), arr(r, (5, 3), d))),
                                      Sample((np.array([3, 0]), arr(r, (4, 2), d))),
                                      Sample((np.array([1, 1, 3]), arr(r, (4, 2), d)), dict(padding_idx=1)),
                                      Sample((np.array([1, 1, 3]), arr(r, (4, 2), d)), dict(scale_grad_by_freq=True))],
           method=False, ember_fn=lambda e, i, w, **k: e.nn.functional.embedding(i, w, **k),
           torch_fn=lambda t, i, w, **k: t.nn.functional.embedding(i, w, **k)))


# ------------------------------------------------------------------------------ recurrent ops
def _rnn_call(mode, batch_first=False, bidirectional=False, packed=None):
    """lstm / gru / rnn_* over flat arrays (x, h0[, c0], weights...), one layer; packed: batch sizes."""
    def f(lib, x, h, *rest):
        c, ws = (rest[0], list(rest[1:])) if mode == "lstm" else (None, list(rest))
        hx = [h, c] if mode == "lstm" else h
        op = getattr(lib, mode)
        flags = (True, 1, 0.0, True, bidirectional)
        if packed is not None:
            out = op(x, lib.tensor(packed, dtype=lib.int64), hx, ws, *flags)
        else:
            out = op(x, hx, ws, *flags, batch_first)
        return tuple(out)
    return f


def _rnn_samples(mode, bidirectional=False, packed=None, proj=0):
    G = {"lstm": 4, "gru": 3}.get(mode, 1)

    def f(d, r):
        H, I, D = 3, 2, 2 if bidirectional else 1
        Hr = proj or H
        x = arr(r, (sum(packed), I) if packed else (3, 2, I), d, -1, 1)
        B = packed[0] if packed else 2
        states = [arr(r, (D, B, Hr), d, -1, 1)] + ([arr(r, (D, B, H), d, -1, 1)] if mode == "lstm" else [])
        ws = []
        for _ in range(D):
            ws += [arr(r, (G * H, I), d, -1, 1), arr(r, (G * H, Hr), d, -1, 1), arr(r, (G * H,), d, -1, 1),
                   arr(r, (G * H,), d, -1, 1)] + ([arr(r, (proj, H), d, -1, 1)] if proj else [])
        return [Sample(tuple([x] + states + ws))]
    return f


for _mode, _covers in (("lstm", ("_rnn_layer", "_rnn_layer_backward")), ("gru", ()), ("rnn_tanh", ()),
                       ("rnn_relu", ())):
    add(OpInfo(_mode, _rnn_samples(_mode), method=False, covers=_covers, meta=False, noncontiguous=False,
               ember_fn=_rnn_call(_mode), torch_fn=_rnn_call(_mode)))
add(OpInfo("lstm", _rnn_samples("lstm", bidirectional=True, packed=[3, 2, 2, 1], proj=2), method=False, meta=False,
           noncontiguous=False, ember_fn=_rnn_call("lstm", bidirectional=True, packed=[3, 2, 2, 1]),
           torch_fn=_rnn_call("lstm", bidirectional=True, packed=[3, 2, 2, 1])))
add(OpInfo("gru", _rnn_samples("gru", bidirectional=True, packed=[2, 2, 1]), method=False, meta=False,
           noncontiguous=False, ember_fn=_rnn_call("gru", bidirectional=True, packed=[2, 2, 1]),
           torch_fn=_rnn_call("gru", bidirectional=True, packed=[2, 2, 1])))


def _cell_samples(G, lstm=False):
    def f(d, r):
        states = [arr(r, (2, 3), d, -1, 1)] * (2 if lstm else 1)
        return [Sample(tuple([arr(r, (2, 4), d, -1, 1)] + states + [arr(r, (G * 3, 4), d, -1, 1),
                                                                   arr(r, (G * 3, 3), d, -1, 1),
                                                                   arr(r, (G * 3,), d, -1, 1),
                                                                   arr(r, (G * 3,), d, -1, 1)]))]
    return f


add(OpInfo("lstm_cell", _cell_samples(4, lstm=True), method=False, meta=False,
           ember_fn=lambda e, x, h, c, *w: tuple(e.lstm_cell(x, [h, c], *w)),
           torch_fn=lambda t, x, h, c, *w: tuple(t.lstm_cell(x, [h, c], *w))))
for _name, _g in (("gru_cell", 3), ("rnn_tanh_cell", 1), ("rnn_relu_cell", 1)):
    add(OpInfo(_name, _cell_samples(_g), method=False, meta=False))
add(OpInfo("dropout", lambda d, r: [Sample((arr(r, (3, 4), d), 0.0, True)), Sample((arr(r, (3, 4), d), 0.5, False))],
           method=False))


# ------------------------------------------------------------------------------ random nn ops, seeded
def resolve_path(lib, path):
    obj = lib
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _seeded(path, *fixed):
    """Call ``path`` (a name under the library) after ``manual_seed(0)``: random ops become deterministic, so
    ember's draws are compared with PyTorch's and gradcheck's repeated calls see one function. An in-place
    call works on a copy of the input (a leaf that requires grad cannot be modified in place)."""
    def fn(lib, *args, **kwargs):
        if kwargs.get("inplace"):
            args = (args[0].clone(),) + args[1:]
        lib.manual_seed(0)
        return resolve_path(lib, path)(*args, *fixed, **kwargs)
    return fn


def _random_entry(name, path, shapes, fixed=(), kwargs=({},), covers=(), errors=None, **kw):
    add(OpInfo(name, lambda d, r: [Sample((arr(r, s, d),), dict(k)) for s in shapes for k in kwargs], method=False,
               ember_fn=_seeded(path, *fixed), torch_fn=_seeded(path, *fixed), covers=covers, errors=errors, **kw))


_random_entry("dropout_", "nn.functional.dropout", [(3, 4), (2, 3, 2)], kwargs=(dict(p=0.4, inplace=True),),
              errors=lambda: [_err((np.ones(3),), dict(p=1.5), ValueError, "dropout probability has to be between")])
_random_entry("feature_dropout", "nn.functional.dropout2d", [(2, 3, 2, 2)],
              kwargs=(dict(p=0.4), dict(p=0.4, inplace=True), dict(p=1.0)), covers=("feature_dropout_",))
_random_entry("dropout1d", "nn.functional.dropout1d", [(3, 4), (2, 3, 4)],
              kwargs=(dict(p=0.4), dict(p=0.4, inplace=True)), covers=("feature_dropout", "feature_dropout_"))
_random_entry("dropout3d", "nn.functional.dropout3d", [(2, 3, 2, 2), (2, 2, 3, 2, 2)],
              kwargs=(dict(p=0.4), dict(p=0.4, inplace=True)), covers=("feature_dropout", "feature_dropout_"))
_random_entry("alpha_dropout", "nn.functional.alpha_dropout", [(3, 4), (2, 3, 2)],
              kwargs=(dict(p=0.4, training=True), dict(p=0.4, training=True, inplace=True), dict(p=0.3)),
              covers=("alpha_dropout_",))
_random_entry("feature_alpha_dropout", "nn.functional.feature_alpha_dropout", [(2, 3, 2)],
              kwargs=(dict(p=0.4, training=True), dict(p=0.4, training=True, inplace=True)),
              covers=("feature_alpha_dropout_",),
              errors=lambda: [_err((np.ones(3),), dict(training=True), RuntimeError,
                                   "Feature dropout requires at least 2 dimensions in the input")])
_random_entry("native_dropout", "native_dropout", [(3, 4), (5,)], fixed=(0.3,),
              kwargs=(dict(train=True), dict(train=False), dict(train=None)), covers=("native_dropout_backward",))
_random_entry("rrelu", "nn.functional.rrelu", [(3, 4), (6,)],
              kwargs=({}, dict(training=True), dict(lower=0.2, upper=0.5, training=True),
                      dict(training=True, inplace=True)),
              covers=("rrelu_", "rrelu_with_noise", "rrelu_with_noise_backward"),
              errors=lambda: [_err((np.ones(3),), dict(lower=0.5, upper=0.2), RuntimeError,
                                   "Lower bound should be less than or equal to the upper bound")])


# ------------------------------------------------------------------------------ the losses PyTorch composes
def _signs(r, shape, d):
    return np.where(r.random(shape) > 0.4, 1.0, -1.0).astype(d)


def _loss_entry(name, samples, covers=(), errors=None, ember_fn=None, torch_fn=None, **kw):
    add(OpInfo(name, samples, method=False, torch_name=f"nn.functional.{name}", covers=covers, errors=errors,
               ember_fn=ember_fn, torch_fn=torch_fn, **kw))


_REDS = ("mean", "sum", "none")
_loss_entry("kl_div", lambda d, r: [
    Sample((arr(r, (3, 4), d), positive(r, (3, 4), d) / 3), dict(reduction=red)) for red in _REDS + ("batchmean",)] + [
    Sample((arr(r, (3, 4), d), arr(r, (3, 4), d)), dict(log_target=True, reduction="sum")),
    Sample((arr(r, (4,), d), np.array([0.0, 0.5, 0.25, 0.25], d)), dict(reduction="batchmean"))])
_loss_entry("poisson_nll_loss", lambda d, r: [
    Sample((arr(r, (3, 4), d), positive(r, (3, 4), d)), dict(reduction=red, full=full))
    for red in _REDS for full in (False, True)] + [
    Sample((positive(r, (3, 4), d), positive(r, (3, 4), d)), dict(log_input=False, eps=1e-3))],
    errors=lambda: [_err((np.ones(2), np.ones(2)), dict(reduction="avg"), ValueError,
                         "avg is not a valid value for reduction")])
_loss_entry("margin_ranking_loss", lambda d, r: [
    Sample((arr(r, (5,), d), arr(r, (5,), d), _signs(r, (5,), d)), dict(margin=m, reduction=red))
    for m, red in ((0.0, "mean"), (0.5, "sum"), (0.2, "none"))],
    errors=lambda: [_err((np.ones(2), np.ones(2), np.ones((2, 1))), {}, RuntimeError,
                         "All input tensors should have same dimension")])
_loss_entry("hinge_embedding_loss", lambda d, r: [
    Sample((arr(r, (3, 4), d), _signs(r, (3, 4), d)), dict(margin=m, reduction=red))
    for m, red in ((1.0, "mean"), (0.5, "sum"), (2.0, "none"))])
_loss_entry("cosine_embedding_loss", lambda d, r: [
    Sample((arr(r, (3, 4), d), arr(r, (3, 4), d), _signs(r, (3,), d)), dict(margin=m, reduction=red))
    for m, red in ((0.0, "mean"), (0.3, "sum"), (-0.2, "none"))] + [
    Sample((arr(r, (4,), d), arr(r, (4,), d), np.array(-1.0, d)), dict(reduction="none"))],
    errors=lambda: [_err((np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 1))), {}, RuntimeError,
                         "0D or 1D target tensor expected, multi-target not supported"),
                    _err((np.ones(3), np.ones(3), np.ones(2)), {}, RuntimeError,
                         "1D target tensor expects 2D input tensors")])
_loss_entry("triplet_margin_loss", lambda d, r: [
    Sample((arr(r, (3, 4), d), arr(r, (3, 4), d), arr(r, (3, 4), d)), dict(margin=m, p=p, swap=sw, reduction=red))
    for m, p, sw, red in ((1.0, 2, False, "mean"), (0.5, 1, True, "sum"), (2.0, 3, True, "none"))],
    covers=("pairwise_distance",),
    errors=lambda: [_err((np.ones((2, 3)), np.ones((2, 3)), np.ones(3)), {}, RuntimeError,
                         "expected to have the same number of dimensions"),
                    _err((np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))), dict(margin=0.0), ValueError,
                         "margin must be greater than 0")])


# (the targets PyTorch does not differentiate are passed by keyword: keyword tensors do not require grad)
_loss_entry("soft_margin_loss", lambda d, r: [
    Sample((arr(r, (3, 4), d),), dict(target=_signs(r, (3, 4), d), reduction=red)) for red in _REDS],
    covers=("soft_margin_loss_backward",),
    errors=lambda: [_err((np.ones(3),), dict(target=np.ones((2, 3))), RuntimeError,
                         "output with shape \\[3\\] doesn't match the broadcast shape \\[2, 3\\]")])
_loss_entry("multi_margin_loss", lambda d, r: [
    Sample((arr(r, (3, 4), d), np.array([0, 3, 1])), dict(p=p, margin=m, reduction=red))
    for p, m, red in ((1, 1.0, "mean"), (2, 0.5, "sum"), (1, 2.0, "none"))] + [
    Sample((arr(r, (3, 4), d), np.array([2, 2, 0])), dict(weight=positive(r, (4,), d), p=2)),
    Sample((arr(r, (5,), d), np.array([4])), dict(reduction="none"))],
    covers=("multi_margin_loss_backward",),
    errors=lambda: [_err((np.ones((2, 3)), np.array([0, 3])), {}, RuntimeError, "target out of range"),
                    _err((np.ones((2, 3)), np.array([0, 1, 1])), {}, RuntimeError,
                         "target tensor should be 1-D with size equal to the number of input samples"),
                    _err((np.ones((2, 3)), np.array([0, 1])), dict(weight=np.ones(2)), RuntimeError,
                         "inconsistent weight size, expected 3 but got \\[2\\]"),
                    _err((np.ones((2, 0)), np.array([0, 1])), {}, RuntimeError,
                         "Expected non-empty vector or matrix with optional 0-dim batch size"),
                    _err((np.ones((2, 3)), np.array([0, 1])), dict(p=3), ValueError,
                         "only p == 1 and p == 2 supported"),
                    _err((np.ones((2, 3), "int64"), np.array([0, 1])), {}, NotImplementedError,
                         "\"multi_margin_loss_cpu_kernel\" not implemented for 'Long'")])
_loss_entry("multilabel_margin_loss", lambda d, r: [
    Sample((arr(r, (3, 4), d), np.array([[0, 3, -1, 1], [2, 2, 1, -1], [-1, 0, 0, 0]])), dict(reduction=red))
    for red in _REDS] + [
    Sample((arr(r, (4,), d), np.array([3, 1, -1, 0])), dict(reduction="none")),
    Sample((arr(r, (2, 3), d), np.array([[0, 1, 2], [1, -1, 2]])), dict(reduction="sum"))],
    covers=("multilabel_margin_loss_forward", "multilabel_margin_loss_backward"),
    errors=lambda: [_err((np.ones((2, 3)), np.array([[0, 3, -1], [0, 1, 2]])), {}, RuntimeError,
                         "argument #2 'target' is out of range"),
                    _err((np.ones((2, 3)), np.array([[0, 1, -1]])), {}, RuntimeError,
                         "inconsistent target size: \\[1, 3\\] for input of size: \\[2, 3\\]"),
                    _err((np.ones((2, 3)), np.array([[0, 1, -1], [0, 1, 2]], "int32")), {}, RuntimeError,
                         "expected scalar type Long but found Int")])
add(OpInfo("cosine_similarity", lambda d, r: [
    Sample((arr(r, (3, 4), d), arr(r, (3, 4), d))), Sample((arr(r, (3, 4), d), arr(r, (4,), d)), dict(dim=-1)),
    Sample((arr(r, (2, 3), d), np.zeros((2, 3), d)), dict(dim=0, eps=1e-3))], method=False,
    torch_name="nn.functional.cosine_similarity"))
add(OpInfo("pairwise_distance", lambda d, r: [
    Sample((arr(r, (3, 4), d), arr(r, (3, 4), d))), Sample((arr(r, (3, 4), d), arr(r, (4,), d)), dict(p=1.0)),
    Sample((arr(r, (5,), d), arr(r, (5,), d)), dict(p=3.0, keepdim=True))], method=False,
    torch_name="nn.functional.pairwise_distance"))


# ------------------------------------------------------------------------------ more nn ops
def _instance_norm_call(lib, x, *stats, **kwargs):
    """With running statistics (fresh copies, updated in place) the result is (output, mean, var)."""
    if stats:
        rm, rv = (st.detach().clone() for st in stats)
        return lib.nn.functional.instance_norm(x, rm, rv, **kwargs), rm, rv
    return lib.nn.functional.instance_norm(x, **kwargs)


add(OpInfo("instance_norm", lambda d, r: [
    Sample((arr(r, (2, 3, 4), d),)), Sample((arr(r, (2, 3, 2, 2), d),), dict(weight=arr(r, (3,), d), bias=arr(r, (3,), d))),
    Sample((arr(r, (2, 3, 4), d), arr(r, (3,), d), positive(r, (3,), d)), dict(momentum=0.3)),
    Sample((arr(r, (2, 3, 4), d), arr(r, (3,), d), positive(r, (3,), d)), dict(use_input_stats=False))],
    method=False, ember_fn=_instance_norm_call, torch_fn=_instance_norm_call, noncontiguous=False,
    errors=lambda: [_err((np.ones((2, 3, 1)),), {}, ValueError, "Expected more than 1 spatial element when training"),
                    _err((np.ones((2, 3, 4)),), dict(use_input_stats=False), RuntimeError,
                         "Expected running_mean and running_var to be defined when use_input_stats is false")]))
add(OpInfo("rms_norm", lambda d, r: [
    Sample((arr(r, (2, 3, 4), d), (4,))), Sample((arr(r, (2, 3, 4), d), (3, 4)), dict(weight=arr(r, (3, 4), d))),
    Sample((arr(r, (5, 2), d), (2,)), dict(eps=0.1))],
    method=False, torch_name="nn.functional.rms_norm",
    errors=lambda: [_err((np.ones((2, 3)), (4,)), {}, RuntimeError, "Given normalized_shape=\\[4\\], expected input"),
                    _err((np.ones((2, 3)), (3,)), dict(weight=np.ones(2)), RuntimeError,
                         "Expected weight to be of same shape as normalized_shape")]))
def _pad_call(mode):
    def fn(lib, x, pad):
        return lib.nn.functional.pad(x, pad, mode=mode)
    return fn


for _mode, _kind in (("reflect", "reflection"), ("replicate", "replication"), ("circular", None)):
    add(OpInfo(f"pad_{_mode}", lambda d, r: [
        Sample((arr(r, (2, 5), d), (2, 1))), Sample((arr(r, (2, 3, 4), d), (1, -1))),
        Sample((arr(r, (2, 3, 4), d), (1, 2, 2, 0))), Sample((arr(r, (1, 2, 3, 3), d), (0, 1, 2, 1))),
        Sample((arr(r, (2, 2, 3, 2), d), (1, 1, 0, 1, 1, 1))), Sample((arr(r, (1, 2, 2, 3, 2), d), (1, 0, 1, 1, 1, 1)))],
        method=False, dtypes=FLOATS, ember_fn=_pad_call(_mode), torch_fn=_pad_call(_mode),
        covers=("pad",) + ((f"{_kind}_pad1d", f"{_kind}_pad2d", f"{_kind}_pad3d", f"{_kind}_pad1d_backward",
                            f"{_kind}_pad2d_backward", f"{_kind}_pad3d_backward") if _kind else ("_pad_circular",)),
        errors=lambda m=_mode: [
            _err((np.ones((2, 3, 4, 5)), (1, 2)), {}, NotImplementedError, "Padding size 2 is not supported for 4D"),
            _err((np.ones((2, 3)), (1,)), {}, RuntimeError, "Padding length must be divisible by 2")] + (
            [_err((np.ones((2, 3, 5)), (5, 2)), {}, RuntimeError,
                  "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding "
                  "\\(5, 2\\) at dimension 2 of input \\[2, 3, 5\\]"),
             _err((np.ones((2, 0, 4)), (1, 1)), {}, RuntimeError, "Expected 2D or 3D \\(batch mode\\) tensor")]
            if m == "reflect" else [_err((np.ones((2, 3, 4)), (6, 2)), {}, RuntimeError,
                                         "Padding value causes wrapping around more than once.")] if m == "circular"
            else [_err((np.ones((2, 3, 4)), (-5, 1)), {}, RuntimeError,
                       "input \\(W: 4\\) is too small. Calculated output W: 0")])))


def _unpool_samples(nd):
    def f(d, r):
        out = []
        for lead, ins, outs in (((2, 3), (2,) * nd, (4,) * nd), ((3,), (1,) + (2,) * (nd - 1), (3,) * nd)):
            n_in, n_out = int(np.prod(ins)), int(np.prod(outs))
            idx = np.stack([r.permutation(n_out)[:n_in] for _ in range(int(np.prod(lead)))]).reshape(lead + ins)
            out.append(Sample((arr(r, lead + ins, d), idx, (2,) * nd), dict(output_size=outs)))
        return out
    return f


add(OpInfo("max_unpool2d", _unpool_samples(2), method=False, torch_name="nn.functional.max_unpool2d",
           errors=lambda: [_err((np.ones((1, 1, 2, 2)), np.full((1, 1, 2, 2), 20), 2), {}, RuntimeError,
                                "Found an invalid max index: 20 \\(output volumes are of size 4x4")]))
add(OpInfo("max_unpool3d", _unpool_samples(3), method=False, torch_name="nn.functional.max_unpool3d"))
add(OpInfo("one_hot", lambda d, r: [Sample((np.array([0, 2, 1, 2]), 3)), Sample((np.array([[0, 3], [1, 1]]), 5)),
                                    Sample((np.zeros((0,), "int64"), 3)), Sample((np.array([1, 4]),))],
           method=False, dtypes=("int64",), torch_name="nn.functional.one_hot", supports_autograd=False,
           errors=lambda: [_err((np.array([0, 5]), 4), {}, RuntimeError, "Class values must be smaller than num_classes"),
                           _err((np.array([-1, 2]), 4), {}, RuntimeError, "Class values must be non-negative"),
                           _err((np.zeros((0,), "int64"),), {}, RuntimeError, "Can not infer total number of classes"),
                           _err((np.array([0.0, 1.0]), 4), {}, RuntimeError, "only applicable to index tensor")]))


def _renorm_call(lib, w, idx, max_norm, norm_type):
    w = w.detach().clone()
    lib.embedding_renorm_(w, idx, max_norm, norm_type)
    return w


add(OpInfo("embedding_renorm", lambda d, r: [
    Sample((arr(r, (5, 3), d), np.array([0, 3, 3, 1]), 1.5, 2.0)), Sample((arr(r, (4, 2), d), np.array([[2, 0]]), 1.0, 1.0)),
    Sample((arr(r, (4, 2), d), np.array([1, 2]), 0.5, float("inf"))), Sample((arr(r, (4, 2), d), np.array([3]), 0.5, 3.0))],
    method=False, ember_fn=_renorm_call, torch_fn=_renorm_call, supports_autograd=False, noncontiguous=False))
add(OpInfo("channel_shuffle", lambda d, r: [Sample((arr(r, (1, 6, 2), d), 2)), Sample((arr(r, (2, 4, 2, 3), d), 4))],
           method=False, dtypes=FLOATS + INTS, torch_name="nn.functional.channel_shuffle",
           errors=lambda: [_err((np.ones((1, 6, 2)), 4), {}, RuntimeError,
                                "Number of channels must be divisible by groups. Got 6 channels and 4 groups."),
                           _err((np.ones((6, 2)), 2), {}, RuntimeError, "at least 3 dimensions"),
                           _err((np.ones((1, 6, 2)), 0), {}, RuntimeError, "Number of groups to divide channels")]))
add(OpInfo("native_channel_shuffle", lambda d, r: [Sample((arr(r, (1, 6, 2), d), 2)),
                                                   Sample((arr(r, (2, 4, 2, 3), d), 4))],
           method=False, dtypes=FLOATS + INTS, supports_autograd=False))
add(OpInfo("prelu", lambda d, r: [
    Sample((arr(r, (2, 3, 4), d), positive(r, (3,), d) / 4)), Sample((arr(r, (2, 3), d), np.array([0.25], d))),
    Sample((arr(r, (5,), d), np.array(0.1, d))), Sample((arr(r, (2, 4, 2, 2), d), arr(r, (4,), d)))],
    torch_name="nn.functional.prelu", covers=("_prelu_kernel", "_prelu_kernel_backward"),
    errors=lambda: [_err((np.ones((2, 3)), np.ones(4)), {}, RuntimeError,
                         "Mismatch of parameter numbers and input channel size. Found parameter numbers = 4 and "
                         "channel size = 3."),
                    _err((np.ones((2, 3)), np.ones(3, "float32")), {}, RuntimeError,
                         "prelu: Type promoting not supported. Got Double and Float")]))


def _sdpa_call(lib, q, k, v, *mask, **kwargs):
    return lib.nn.functional.scaled_dot_product_attention(q, k, v, *mask, **kwargs)


add(OpInfo("scaled_dot_product_attention", lambda d, r: [
    Sample((arr(r, (2, 3, 4), d), arr(r, (2, 5, 4), d), arr(r, (2, 5, 3), d))),
    Sample((arr(r, (1, 2, 3, 4), d), arr(r, (1, 2, 3, 4), d), arr(r, (1, 2, 3, 2), d)), dict(is_causal=True)),
    Sample((arr(r, (2, 3, 4), d), arr(r, (2, 5, 4), d), arr(r, (2, 5, 3), d), arr(r, (3, 5), d)), dict(scale=0.7)),
    Sample((arr(r, (2, 3, 4), d), arr(r, (2, 5, 4), d), arr(r, (2, 5, 3), d),
            np.array([[True, False, True, True, False], [False] * 5, [True] * 5]))),
    Sample((arr(r, (1, 4, 3, 2), d), arr(r, (1, 2, 3, 2), d), arr(r, (1, 2, 3, 2), d)), dict(enable_gqa=True)),
    # 4-d, one head size: PyTorch and ember take the fused CPU op (causal; a bool mask made additive)
    Sample((arr(r, (1, 2, 4, 3), d), arr(r, (1, 2, 4, 3), d), arr(r, (1, 2, 4, 3), d)), dict(is_causal=True)),
    Sample((arr(r, (2, 1, 3, 2), d), arr(r, (2, 1, 4, 2), d), arr(r, (2, 1, 4, 2), d),
            np.array([[True, False, True, True], [False] * 4, [True] * 4])))],
    method=False, ember_fn=_sdpa_call, torch_fn=_sdpa_call, noncontiguous=False,
    covers=("_scaled_dot_product_attention_math", "_safe_softmax", "_scaled_dot_product_flash_attention_for_cpu"),
    errors=lambda: [_err((np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 2))), dict(is_causal=True),
                         RuntimeError, "Explicit attn_mask should not be set when is_causal=True"),
                    _err((np.ones((2, 3)), np.ones((2, 3), "float32"), np.ones((2, 3))), {}, RuntimeError,
                         "Expected query, key, and value to have the same dtype")]))


def _flash_call(lib, q, k, v, *mask, **kwargs):
    return lib.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, *mask[1:], attn_mask=mask[0] if mask
                                                                     else None, **kwargs)


# the fused op itself: (output, logsumexp); ember's first derivative is the fused backward op, its second the same
# products in ops (PyTorch's refuses a second derivative). Masks (which the table would make require grad, which
# the op refuses, as PyTorch's does) are checked through scaled_dot_product_attention and test_compiled_kernels.
add(OpInfo("_scaled_dot_product_flash_attention_for_cpu", lambda d, r: [
    Sample((arr(r, (1, 2, 4, 3), d), arr(r, (1, 2, 4, 3), d), arr(r, (1, 2, 4, 3), d)), dict(is_causal=True)),
    Sample((arr(r, (2, 1, 3, 2), d), arr(r, (2, 1, 5, 2), d), arr(r, (2, 1, 5, 2), d)), dict(scale=0.4))],
    method=False, ember_fn=_flash_call, torch_fn=_flash_call, noncontiguous=False,
    covers=("_scaled_dot_product_flash_attention_for_cpu_backward",),
    errors=lambda: [_err((np.ones((2, 3, 4)),) * 3, {}, RuntimeError, "Accept only 4 dims inputs shape"),
                    _err((np.ones((1, 1, 2, 3)), np.ones((1, 1, 2, 3)), np.ones((1, 1, 2, 4))), {}, RuntimeError,
                         "Q/K/V should have the same head size"),
                    _err((np.ones((1, 1, 2, 3)),) * 3, dict(dropout_p=0.5), RuntimeError,
                         "Currently do not support dropout > 0"),
                    _err((np.ones((1, 1, 2, 3), "int64"),) * 3, {}, RuntimeError,
                         "Expected data type in FP32, FP64, BF16, FP16, but got Long instead")]))

# set membership (TensorCompare.cpp): tensor or scalar on either side, inverted, mixed dtypes compared by value
add(OpInfo("isin", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (5,), d))),
                                 Sample((arr(r, (3, 4), d), arr(r, (2, 2), d)), dict(invert=True)),
                                 Sample((arr(r, (6,), d), 1)), Sample((arr(r, (), d), arr(r, (4,), d))),
                                 Sample((arr(r, (4,), d), np.array([0.0, 1.0, 2.0])))],
           dtypes=FLOATS + INTS, method=False, supports_autograd=False,
           errors=lambda: [_err((np.array([1, 2]), np.array([True])), {}, RuntimeError,
                                r"Unsupported input type encountered for isin\(\): Bool")]))

# integer and floating-point helpers (BinaryOps.cpp, UnaryOps.cpp)
for _name in ("gcd", "lcm"):
    add(OpInfo(_name, lambda d, r: [Sample((arr(r, (3, 4), d, -20, 20), arr(r, (3, 4), d, -20, 20))),
                                    Sample((arr(r, (3, 4), d, -20, 20), arr(r, (4,), d, -20, 20))),
                                    Sample((np.array([0, 0, 7, -6], d), np.array([0, 5, 0, 4], d)), name="zeros")],
               dtypes=INTS + ("int16",), inplace=True, out=True, supports_autograd=False,
               errors=lambda _n=_name: [_err((np.ones(2), np.ones(2)), {}, NotImplementedError,
                                             f'"{_n}_cpu" not implemented for \'Double\'')]))
add(OpInfo("heaviside", lambda d, r: [Sample((np.array([-1, 0, 2, 0], d), np.array([5, 7, 5, 3], d))),
                                      Sample((arr(r, (3, 4), d), arr(r, (4,), d)))],
           dtypes=FLOATS + INTS, inplace=True, out=True,
           errors=lambda: [_err((np.ones(2), np.ones(2, "float32")), {}, RuntimeError,
                                "heaviside is not yet implemented for tensors with different dtypes.")]))
add(OpInfo("frexp", lambda d, r: [Sample((np.array([8.0, 0.3, 0.0, -5.0, np.inf, -0.75], d),)),
                                  Sample((arr(r, (3, 4), d, -100, 100),))],
           errors=lambda: [_err((np.ones(2, "int64"),), {}, RuntimeError,
                                r"torch.frexp\(\) only supports floating-point dtypes")]))
# integer exponents >= 0 only: for negative ones PyTorch's backward takes an integer power of 2 (0), ember 2**e
add(OpInfo("ldexp", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (3, 4), "int64", 2, 4))),
                                  Sample((arr(r, (3, 4), d), arr(r, (4,), d, -2, 2)))],
           dtypes=FLOATS, inplace=True, out=True))
add(OpInfo("select_scatter", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (3,), d), 1, 2)),
                                           Sample((arr(r, (2, 3, 4), d), arr(r, (3, 4), d), 0, -1))],
           dtypes=FLOATS + INTS,
           errors=lambda: [_err((np.zeros((2, 3)), np.ones(3), 1, 0), {}, RuntimeError,
                                r"expected src to have a size equal to the slice of self. src size = \[3\], slice size "
                                r"= \[2\]")]))
add(OpInfo("slice_scatter", lambda d, r: [Sample((arr(r, (4, 3), d), arr(r, (2, 3), d), 0, 0, 4, 2)),
                                          Sample((arr(r, (4, 5), d), arr(r, (4, 2), d)), dict(dim=1, start=3)),
                                          Sample((arr(r, (4, 3), d), arr(r, (4, 3), d)))],
           dtypes=FLOATS + INTS))
add(OpInfo("diagonal_scatter", lambda d, r: [Sample((arr(r, (3, 3), d), arr(r, (2,), d), 1)),
                                             Sample((arr(r, (2, 3, 4), d), arr(r, (4, 2), d)), dict(dim1=0, dim2=1))],
           dtypes=FLOATS + INTS))

# fractional max pooling, with the random window placement given (the default draws it with rand: test_random)
add(OpInfo("fractional_max_pool2d", lambda d, r: [
    Sample((arr(r, (2, 3, 7, 8), d), (3, 2)), dict(output_size=(4, 5), _random_samples=r.random((2, 3, 2)).astype(d))),
    Sample((arr(r, (3, 7, 8), d), 2), dict(output_size=3, _random_samples=r.random((1, 3, 2)).astype(d),
                                          return_indices=True)),
    Sample((arr(r, (1, 2, 4, 5), d), 2), dict(output_size=(2, 3), _random_samples=r.random((1, 2, 2)).astype(d)))],
    method=False, torch_name="nn.functional.fractional_max_pool2d",
    errors=lambda: [_err((np.ones((1, 1, 4, 4)), 3), dict(output_size=3, _random_samples=np.full((1, 1, 2), 0.5)),
                         RuntimeError, "fractional_max_pool2d\\(\\): pool height 3 too large relative to input height 4")]))
add(OpInfo("fractional_max_pool3d", lambda d, r: [
    Sample((arr(r, (2, 2, 5, 6, 4), d), (2, 3, 2)),
           dict(output_size=(3, 2, 2), _random_samples=r.random((2, 2, 3)).astype(d))),
    Sample((arr(r, (1, 1, 4, 3, 4), d), 2), dict(output_size=(2, 1, 2), _random_samples=r.random((1, 1, 3)).astype(d)))],
    method=False, torch_name="nn.functional.fractional_max_pool3d"))

# the rest of torch.linalg written in other ops
def _near_identity(r, d, n, shape):
    return (np.eye(n).reshape(shape) * 3 + r.uniform(-0.5, 0.5, shape)).astype(d)


add(OpInfo("linalg.diagonal", lambda d, r: [Sample((arr(r, (2, 3, 4), d),)), Sample((arr(r, (3, 4), d),), dict(offset=1)),
                                            Sample((arr(r, (2, 3, 4), d),), dict(dim1=0, dim2=2, offset=-1))],
           method=False, torch_name="linalg.diagonal", dtypes=FLOATS + INTS))
add(OpInfo("linalg.matmul", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (4, 5), d))),
                                          Sample((arr(r, (2, 3, 4), d), arr(r, (4,), d)))],
           method=False, torch_name="linalg.matmul"))
add(OpInfo("linalg.vecdot", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (3, 4), d))),
                                          Sample((arr(r, (3, 4), d), arr(r, (4,), d))),
                                          Sample((arr(r, (3, 4), d), arr(r, (3, 4), d)), dict(dim=0))],
           method=False, torch_name="linalg.vecdot",
           errors=lambda: [_err((np.ones(2, "float32"), np.ones(2)), {}, RuntimeError,
                                "linalg.vecdot: Expected x and y to have the same dtype, but found x of type Float and "
                                "y of type Double instead")]))
add(OpInfo("linalg.multi_dot", lambda d, r: [
    Sample(([arr(r, (3, 4), d), arr(r, (4, 5), d), arr(r, (5, 2), d)],)),
    Sample(([arr(r, (3,), d), arr(r, (3, 4), d), arr(r, (4, 6), d), arr(r, (6,), d)],)),
    Sample(([arr(r, (2, 6), d), arr(r, (6, 2), d)],))],
    method=False, torch_name="linalg.multi_dot",
    errors=lambda: [_err(([np.ones((2, 2))],), {}, RuntimeError, "multi_dot\\(\\): expected at least 2 tensors but got 1"),
                    _err(([np.ones((2, 2)), np.ones(3)],), {}, RuntimeError,
                         r"multi_dot\(\): tensors 0 and 1 with shapes \[2, 2\] and \[3\] cannot be multiplied")]))
add(OpInfo("linalg.vander", lambda d, r: [Sample((arr(r, (4,), d),)), Sample((arr(r, (2, 3), d),), dict(N=5))],
           method=False, torch_name="linalg.vander", dtypes=FLOATS + INTS,
           errors=lambda: [_err((np.ones(3),), dict(N=1), RuntimeError, "N must be greater than 1."),
                           _err((np.ones(3, bool),), {}, RuntimeError,
                                "linalg.vander supports floating point, complex, and integer tensors, but got Bool")]))
add(OpInfo("linalg.tensorinv", lambda d, r: [Sample((_near_identity(r, d, 4, (4, 2, 2)), 1)),
                                             Sample((_near_identity(r, d, 6, (2, 3, 6)), 2))],
           method=False, torch_name="linalg.tensorinv",
           errors=lambda: [_err((np.ones((2, 3)), 1), {}, RuntimeError,
                                r"prod\(self.shape\[ind:\]\) == prod\(self.shape\[:ind\]\), but got 3 != 2"),
                           _err((np.ones((4, 2, 2)), 0), {}, RuntimeError,
                                "Expected a strictly positive integer for 'ind', but got 0")]))
add(OpInfo("linalg.tensorsolve", lambda d, r: [Sample((_near_identity(r, d, 6, (2, 3, 6)), arr(r, (2, 3), d))),
                                               Sample((_near_identity(r, d, 6, (6, 2, 3)), arr(r, (2, 3), d)),
                                                      dict(dims=(0,)))],
           method=False, torch_name="linalg.tensorsolve"))
add(OpInfo("linalg.matrix_rank", lambda d, r: [
    Sample((arr(r, (3, 4), d),)), Sample((np.ones((3, 3), d),)), Sample((np.eye(3, dtype=d),), dict(atol=1.0, rtol=0.0)),
    Sample((np.eye(3, dtype=d) * 2,), dict(hermitian=True)), Sample((arr(r, (2, 4, 3), d), 0.5)),
    Sample((arr(r, (2, 4, 3), d),), dict(atol=np.array([0.5, 4.0], d)))],
    method=False, torch_name="linalg.matrix_rank", supports_autograd=False))

# more of torch.special
add(OpInfo("special_entr", lambda d, r: [Sample((np.array([-1.0, 0.0, 0.5, np.nan, np.inf, 3.0], d),)),
                                         Sample((positive(r, (3, 4), d),))],
           method=False, torch_name="special.entr", out=True))
add(OpInfo("special_ndtr", lambda d, r: [Sample((np.array([-10.0, -1.0, 0.0, 0.3, 5.0], d),)),
                                         Sample((arr(r, (3, 4), d),))],
           method=False, torch_name="special.ndtr", out=True, dtypes=FLOATS + ("int64",)))
add(OpInfo("special_xlog1py", lambda d, r: [Sample((np.array([0.0, 2.0, 0.0, 1.5], d),
                                                     np.array([np.nan, 1.0, 3.0, 0.5], d))),
                                            Sample((arr(r, (3, 4), d), positive(r, (4,), d)))],
           method=False, torch_name="special.xlog1py", out=True))
add(OpInfo("special_multigammaln", lambda d, r: [Sample((positive(r, (3, 4), d) + 2.0, 3)),
                                                 Sample((np.array([2.5, 3.0], d), 1))],
           method=False, torch_name="special.multigammaln", aliases=("mvlgamma",)))
add(OpInfo("mvlgamma", lambda d, r: [Sample((positive(r, (4,), d) + 2.0, 2))], inplace=True))
add(OpInfo("special_softmax", lambda d, r: [Sample((arr(r, (3, 4), d), 1)),
                                            Sample((arr(r, (3, 4), d), 0), dict(dtype="float64"))],
           method=False, torch_name="special.softmax", rtol=1e-6, atol=1e-7))
add(OpInfo("special_log_softmax", lambda d, r: [Sample((arr(r, (3, 4), d), 1))],
           method=False, torch_name="special.log_softmax"))
add(OpInfo("special_round", lambda d, r: [Sample((arr(r, (3, 4), d, -10, 10),)),
                                          Sample((arr(r, (3, 4), d, -10, 10),), dict(decimals=1))],
           method=False, torch_name="special.round", supports_gradgrad=False))  # piecewise constant

# histograms (bins as a count over a range, or as edges), weighted, as densities
add(OpInfo("histogram", lambda d, r: [
    Sample((arr(r, (20,), d),), dict(bins=5)), Sample((arr(r, (4, 5), d), 3), dict(range=(-1.0, 2.0), density=True)),
    Sample((np.array([3.0, 3.0, 3.0], d), 2)), Sample((np.zeros(0, d), 2)),
    Sample((arr(r, (20,), d), np.array([-3.0, -1.0, 0.5, 3.0], d)), dict(weight=positive(r, (20,), d))),
    Sample((np.array([0.0, 2.0, 6.0, 7.0, np.nan], d), np.array([0.0, 2.0, 4.0, 6.0], d)), dict(density=True))],
    supports_autograd=False, noncontiguous=False, meta=False,
    errors=lambda: [_err((np.array([1, 2]), 3), {}, NotImplementedError,
                         "\"histogramdd\" not implemented for 'Long'"),
                    _err((np.ones(3), 2), dict(range=(3.0, 1.0)), RuntimeError, "min should not exceed max")]))

# more of the everyday API written in other ops
for _name, _shape, _arg in (("hsplit", (2, 6), 3), ("vsplit", (4, 2), (1, 3)), ("dsplit", (1, 2, 4), 2)):
    add(OpInfo(_name, lambda d, r, _s=_shape, _a=_arg: [Sample((arr(r, _s, d), _a)), Sample((arr(r, _s, d), (1,)))],
               dtypes=FLOATS + INTS,
               errors=lambda _n=_name: [_err((np.ones(3) if _n != "hsplit" else np.ones((2, 5)), 3), {}, RuntimeError,
                                             f"torch.{_n} ")]))
add(OpInfo("adjoint", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (2, 3, 4), d),))],
           dtypes=FLOATS + INTS))
add(OpInfo("diagflat", lambda d, r: [Sample((arr(r, (3,), d),)), Sample((arr(r, (2, 3), d), 1)),
                                     Sample((arr(r, (4,), d), -2))], dtypes=FLOATS + INTS))
add(OpInfo("fill_diagonal", lambda d, r: [Sample((arr(r, (3, 4), d), 5.0)), Sample((arr(r, (7, 3), d), 2.0, True)),
                                           Sample((arr(r, (7, 3), d), 2.0)), Sample((arr(r, (2, 2, 2), d), -1.0))],
           function=False, dtypes=FLOATS + INTS, noncontiguous=False,
           ember_fn=lambda L, x, v, wrap=False: x.clone().fill_diagonal_(v, wrap),
           torch_fn=lambda L, x, v, wrap=False: x.clone().fill_diagonal_(v, wrap)))
add(OpInfo("dist", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (3, 4), d))),
                                 Sample((arr(r, (3, 4), d), arr(r, (4,), d), 1)),
                                 Sample((arr(r, (3, 4), d), arr(r, (3, 4), d), float("inf")))]))
add(OpInfo("logdet", lambda d, r: [Sample((_near_identity(r, d, 3, (3, 3)),)),
                                   Sample((np.array([[-1.0, 0.0], [0.0, 1.0]], d),)),
                                   Sample((_near_identity(r, d, 3, (3, 3))[None].repeat(2, 0),))]))
add(OpInfo("matrix_power", lambda d, r: [Sample((arr(r, (3, 3), d), 3)), Sample((_near_identity(r, d, 3, (3, 3)), -2)),
                                         Sample((arr(r, (2, 3, 3), d), 0))]))
add(OpInfo("addr", lambda d, r: [Sample((arr(r, (2, 3), d), arr(r, (2,), d), arr(r, (3,), d))),
                                 Sample((arr(r, (2, 3), d), arr(r, (2,), d), arr(r, (3,), d)), dict(beta=0.5, alpha=2)),
                                 Sample((arr(r, (3,), d), arr(r, (2,), d), arr(r, (3,), d)), dict(beta=0))],
           inplace=True))

# complex numbers and torch.fft
add(*op_db_spectral.ops)

# ------------------------------------------------------------------------------ autograd support
# no differentiable output: indices, masks, counts, comparisons, histograms
NO_AUTOGRAD = {"linalg.matrix_rank", "histogram", "all", "any", "argmax", "argmin", "argsort", "argwhere", "bucketize", "count_nonzero", "eq", "ne", "lt",
               "le", "gt", "ge", "histc", "isfinite", "isinf", "isnan", "isneginf", "isposinf", "signbit", "logical_and",
               "logical_not", "logical_or", "logical_xor", "nonzero", "searchsorted",
               # no derivative in PyTorch either: backward raises "derivative for aten::floor_divide is not
               # implemented" / "the derivative for '_unique2' is not implemented." in both libraries
               "floor_divide", "unique", "heaviside"}
# non-smooth or piecewise ops whose second derivative finite differences cannot check
NO_GRADGRAD = {"abs", "l1_loss", "relu", "clamp", "clamp_min", "clamp_max", "clip", "maximum", "minimum", "max", "min",
               "amax", "amin", "sort", "topk", "kthvalue", "median", "mode", "cummax", "cummin", "fmax", "fmin",
               "sgn", "sign", "floor", "ceil", "trunc", "round", "frac", "remainder", "fmod", "floor_divide",
               "div", "where", "masked_fill", "relu6", "copysign", "nan_to_num", "logit", "cdist", "linalg.vector_norm",
               "cumprod", "prod",
               "convolution",  # convolution_backward has no formula yet (double backward of conv)
               # _rnn_layer_backward (BPTT in one kernel) has no formula, as PyTorch's cuDNN RNNs have none;
               # the cells (lstm_cell, ...) are composite and do support double backward
               "lstm", "gru", "rnn_tanh", "rnn_relu",
               "polygamma",  # its sample's first argument is an int (gradgradcheck needs tensor inputs)
               "grid_sampler",  # grid_sampler_2d/3d_backward have no derivative, in PyTorch either
               "ctc_loss"}  # nor has _ctc_loss_backward
for _op in op_db:
    _op.supports_autograd = _op.supports_autograd and _op.name not in NO_AUTOGRAD
    _op.supports_gradgrad = _op.supports_gradgrad and _op.name not in NO_GRADGRAD
assert NO_AUTOGRAD | NO_GRADGRAD <= {o.name for o in op_db}, "a name of NO_AUTOGRAD / NO_GRADGRAD has no entry"

# the reparameterised gradients of Gamma and Dirichlet samples (tests/test_distributions.py samples through them)
_GAMMA_ALPHAS = np.array([0.1, 0.5, 2.0, 7.0, 9.0, 30.0, 200.0])
add(OpInfo("_standard_gamma_grad", lambda d, r: [
    Sample((np.repeat(_GAMMA_ALPHAS, 6).astype(d),
            np.random.default_rng(0).gamma(np.repeat(_GAMMA_ALPHAS, 6)).astype(d)))],
    method=False, supports_autograd=False, rtol=1e-5, atol=1e-6))
add(OpInfo("_dirichlet_grad", lambda d, r: [
    Sample(tuple(v.astype(d) for v in (np.clip(r.beta(a, b), 1e-4, 1 - 1e-4), a, a + b)))
    for a, b in [(r.uniform(0.1, 15, 60), r.uniform(0.1, 15, 60)), (r.uniform(6, 40, (3, 4)), r.uniform(6, 40, (3, 4)))]],
    method=False, supports_autograd=False, rtol=1e-4, atol=1e-6))

# the regularised incomplete gamma functions (derivative in ``other`` only: tests/test_distributions_all.py)
for _name, _alias in (("igamma", "special.gammainc"), ("igammac", "special.gammaincc")):
    add(OpInfo(_name, lambda d, r: [Sample((positive(r, (3, 4), d) * 4, positive(r, (3, 4), d) * 4)),
                                    Sample((np.array([0.0, 0.5, 2.0, 30.0, 1.0], d), np.array([1.0, 0.0, 2.5, 28.0, np.inf], d))),
                                    Sample((positive(r, (4,), d), positive(r, (2, 1), d)))],
               inplace=True, out=True, aliases=(_alias,), supports_autograd=False, rtol=1e-5, atol=1e-7))
add(OpInfo("cholesky_solve", lambda d, r: [
    Sample((arr(r, (4, 2), d), np.linalg.cholesky(_spd(r, 4, "float64")).astype(d))),
    Sample((arr(r, (2, 3, 1), d), np.linalg.cholesky(_spd(r, 3, "float64")).T.copy().astype(d), True))],
    rtol=1e-4, atol=1e-5))
add(OpInfo("cholesky_inverse", lambda d, r: [
    Sample((np.linalg.cholesky(_spd(r, 4, "float64")).astype(d),)),
    Sample((np.linalg.cholesky(_spd(r, 3, "float64")).T.copy().astype(d), True))], rtol=1e-4, atol=1e-5))


# LU factorizations and the _ex forms (samples factor well-conditioned matrices; pivots are LAPACK's)
_LU_ERRORS = {
    "linalg.lu_factor": lambda: [
        _err((_SINGULAR,), {}, RuntimeError, "torch.linalg.lu_factor: \\(Batch element 1\\): U\\[2,2\\] is zero"),
        _err((np.ones(3),), {}, RuntimeError, "Expected tensor with 2 or more dimensions. Got size: \\[3\\]"),
        _err((np.eye(2),), dict(pivot=False), RuntimeError, "LU without pivoting is not implemented on the CPU")],
    "linalg.lu_factor_ex": lambda: [
        _err((_SINGULAR[1],), dict(check_errors=True), RuntimeError, "torch.linalg.lu_factor_ex: U\\[2,2\\] is zero")],
    "linalg.inv_ex": lambda: [
        _err((np.zeros((2, 2)),), dict(check_errors=True), RuntimeError, "linalg.inv_ex: The diagonal element 1 is "
                                                                          "zero"),
        _err((np.ones((2, 3)),), {}, RuntimeError, "A must be batches of square matrices, but they are 2 by 3")],
    "linalg.cholesky_ex": lambda: [
        _err((np.array([[1.0, 2.0], [2.0, 1.0]]),), dict(check_errors=True), RuntimeError,
             "linalg.cholesky_ex: The factorization could not be completed because the input is not positive-definite "
             "\\(the leading minor of order 2 is not positive-definite\\).")],
    "linalg.solve_ex": lambda: [
        _err((_SINGULAR[1], np.ones(2)), dict(check_errors=True), RuntimeError,
             "torch.linalg.solve_ex: The solver failed because the input matrix is singular.")],
}
def _lu_of(r, shape, d):
    import torch
    a = r.uniform(-1, 1, shape) + 3 * np.eye(shape[-2], shape[-1])
    LU, piv = torch.linalg.lu_factor(torch.from_numpy(a))
    return LU.numpy().astype(d), piv.numpy()


for name, fn, kw in [
    ("linalg.lu_factor", lambda d, r: [Sample((arr(r, (4, 4), d),)), Sample((arr(r, (2, 3, 5), d),)),
                                       Sample((arr(r, (5, 3), d),))], {}),
    ("linalg.lu_factor_ex", lambda d, r: [Sample((arr(r, (4, 4), d),)), Sample((arr(r, (2, 5, 3), d),))], {}),
    ("linalg.lu", lambda d, r: [Sample((arr(r, (4, 4), d),)), Sample((arr(r, (2, 3, 5), d),)),
                                Sample((arr(r, (5, 3), d),))], {}),
    ("lu_unpack", lambda d, r: [Sample(_lu_of(r, (4, 4), d)), Sample(_lu_of(r, (2, 3, 5), d)),
                                Sample(_lu_of(r, (5, 3), d), dict(unpack_pivots=False))], {}),
    ("linalg.lu_solve", lambda d, r: [Sample(_lu_of(r, (4, 4), d) + (arr(r, (4, 2), d),)),
                                      Sample(_lu_of(r, (3, 3), d) + (arr(r, (2, 3, 1), d),), dict(adjoint=True)),
                                      Sample(_lu_of(r, (3, 3), d) + (arr(r, (2, 3), d),), dict(left=False)),
                                      Sample(_lu_of(r, (3, 3), d) + (arr(r, (1, 3), d),), dict(left=False,
                                                                                                 adjoint=True))], {}),
    ("linalg.inv_ex", lambda d, r: [Sample((_spd(r, 4, d),)), Sample((np.stack([_spd(r, 3, d)] * 2),))], {}),
    ("linalg.cholesky_ex", lambda d, r: [Sample((_spd(r, 4, d),)), Sample((_spd(r, 3, d),), dict(upper=True))], {}),
    ("linalg.solve_ex", lambda d, r: [Sample((_spd(r, 4, d), arr(r, (4, 2), d))), Sample((_spd(r, 3, d), arr(r, (3,), d))),
                                      Sample((_spd(r, 3, d), arr(r, (2, 3), d)), dict(left=False))], {}),
]:
    add(OpInfo(name, fn, dtypes=FLOATS, method=False, rtol=1e-4, atol=1e-5, errors=_LU_ERRORS.get(name), **kw))
add(OpInfo("lu_solve", lambda d, r: [Sample((arr(r, (4, 2), d),) + _lu_of(r, (4, 4), d))], dtypes=FLOATS, rtol=1e-4,
           atol=1e-5))
add(OpInfo("cholesky", lambda d, r: [Sample((_spd(r, 4, d),)), Sample((_spd(r, 3, d), True))], dtypes=FLOATS,
           rtol=1e-4, atol=1e-5))
add(OpInfo("_lu_with_info", lambda d, r: [Sample((arr(r, (4, 4), d),)), Sample((arr(r, (2, 3, 5), d), True, False))],
           dtypes=FLOATS, method=False, rtol=1e-4, atol=1e-5))

# the matrix exponential, and eig / eigvals (eigenvectors compared through their moduli: their phase is free)
for _n in ("linalg.matrix_exp", "matrix_exp"):
    add(OpInfo(_n, lambda d, r: [Sample((arr(r, (3, 3), d) / 2,)), Sample((arr(r, (2, 4, 4), d) * 2,)),
                                 Sample((np.zeros((2, 2), d),))], dtypes=FLOATS, method=_n == "matrix_exp",
               rtol=1e-4, atol=1e-5, errors=lambda: [
                   _err((np.ones((2, 3)),), {}, RuntimeError, "A must be batches of square matrices, but they are 2 by 3"),
                   _err((np.ones((2, 2), np.int64),), {}, RuntimeError, "Expected a floating point or complex tensor")]))
def _eig_sorted(lib, a, vectors=True):
    """Eigenvalues ordered by (real part, imaginary part) with their eigenvectors' moduli: LAPACK's order
    depends on the library (OpenBLAS or MKL) and precision, the phases are free."""
    w, v = lib.linalg.eig(a)
    idx = (w.real.detach() * 1000 + w.imag.detach()).argsort(-1)
    w = w.gather(-1, idx)
    if not vectors:
        return lib.view_as_real(w)
    return lib.view_as_real(w), v.abs().gather(-1, idx.unsqueeze(-2).expand(v.shape))


add(OpInfo("linalg.eig", lambda d, r: [Sample((arr(r, (4, 4), d),)), Sample((arr(r, (2, 3, 3), d),))], dtypes=FLOATS,
           method=False, ember_fn=_eig_sorted, torch_fn=_eig_sorted, rtol=1e-4, atol=1e-5, supports_gradgrad=False))
add(OpInfo("linalg.eigvals", lambda d, r: [Sample((arr(r, (4, 4), d),)), Sample((arr(r, (2, 3, 3), d),))],
           dtypes=FLOATS, method=False, ember_fn=lambda e, a: _eig_sorted(e, a, False),
           torch_fn=lambda t, a: _eig_sorted(t, a, False), covers=("linalg_eig",), rtol=1e-4, atol=1e-5,
           supports_gradgrad=False))

# more of torch.special: erfcx, log_ndtr, ndtri, zeta and the orthogonal polynomials (no derivative in PyTorch)
add(OpInfo("special_erfcx", lambda d, r: [Sample((np.array([-3.0, -0.5, 0.0, 0.5, 4.9, 5.1, 30.0, 1e5], d),)),
                                          Sample((arr(r, (3, 4), d),))],
           method=False, torch_name="special.erfcx", out=True, dtypes=FLOATS + ("int64",), rtol=1e-6, atol=1e-7))
add(OpInfo("special_log_ndtr", lambda d, r: [Sample((np.array([-40.0, -5.0, -1.0, -0.5, 0.0, 3.0, 10.0], d),)),
                                             Sample((arr(r, (3, 4), d),))],
           method=False, torch_name="special.log_ndtr", out=True, dtypes=FLOATS + ("int64",), rtol=1e-6, atol=1e-7))
add(OpInfo("special_ndtri", lambda d, r: [Sample((np.array([0.0, 1e-12, 0.02, 0.3, 0.5, 0.9, 1.0], d),)),
                                          Sample((r.uniform(0.05, 0.95, (3, 4)).astype(d),))],
           method=False, torch_name="special.ndtri", out=True, rtol=1e-5, atol=1e-6))
add(OpInfo("special_zeta", lambda d, r: [Sample((positive(r, (3, 4), d) + 1.5, positive(r, (3, 4), d))),
                                         Sample((np.array([1.0, 0.5, 2.0, 3.0, 2.0], d), np.array([1.0, 1.0, 0.0, -2.0, -2.5], d))),
                                         Sample((3.0, positive(r, (4,), d))), Sample((positive(r, (4,), d) + 1.5, 2.0))],
           method=False, torch_name="special.zeta", out=True, rtol=1e-6, atol=1e-8, supports_gradgrad=False))
for _p in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
           "legendre_polynomial_p"):
    add(OpInfo("special_" + _p, lambda d, r, _s=_p.startswith("shifted"): [
        Sample((((r.uniform(-1, 1, (3, 4)) + (1 if _s else 0)) / (2 if _s else 1)).astype(d),
                r.integers(-1, 12, (3, 4)).astype(d))),
        Sample((np.array([1.0, -1.0, 0.0, 0.5, 2.0] if not _s else [1.0, 0.0, 0.5, 0.75, 1.5], d),
                np.array([5, 5, 3, 40, 7], d))),
        Sample((0.3, r.integers(0, 9, (4,)).astype(d))), Sample((arr(r, (4,), d) / 3, 6))],
        method=False, torch_name="special." + _p, out=True, dtypes=FLOATS + ("int64",), supports_autograd=False,
        rtol=1e-5, atol=1e-6))
# the Bessel and Airy functions (no derivative in PyTorch; float32 is computed in float64 and rounded, where
# PyTorch evaluates in float32: agreement to about 1e-6 absolute near the zeros)
for _b in ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "spherical_bessel_j0"):
    add(OpInfo("special_" + _b, lambda d, r: [
        Sample((np.array([-30.0, -3.0, -0.5, 0.0, 1e-6, 0.5, 2.0, 2.09, 5.0, 7.9, 8.0, 8.5, 25.0, 110.0], d),)),
        Sample((arr(r, (3, 4), d) * 4,))],
        method=False, torch_name="special." + _b, out=True, dtypes=FLOATS + ("int64",), supports_autograd=False,
        rtol=1e-5, atol=1e-5))

# Householder QR: geqrf's packed form, and the products of its reflectors
def _geqrf_of(r, shape, d):
    import torch
    a, tau = torch.geqrf(torch.from_numpy(r.uniform(-1, 1, shape)))
    return a.numpy().astype(d), tau.numpy().astype(d)


add(OpInfo("geqrf", lambda d, r: [Sample((arr(r, (4, 3), d),)), Sample((arr(r, (2, 3, 5), d),))], dtypes=FLOATS,
           supports_autograd=False, rtol=1e-4, atol=1e-5,
           errors=lambda: [_err((np.ones(3),), {}, RuntimeError, "torch.geqrf: input must have at least 2 dimensions.")]))
add(OpInfo("linalg.householder_product", lambda d, r: [Sample(_geqrf_of(r, (4, 3), d)), Sample(_geqrf_of(r, (2, 3, 3), d))],
           dtypes=FLOATS, method=False, rtol=1e-4, atol=1e-5, errors=lambda: [
               _err((np.ones((2, 3)), np.ones(2)), {}, RuntimeError, "input.shape\\[-2\\] must be greater than or equal "
                                                                      "to input.shape\\[-1\\]"),
               _err((np.ones((3, 2)), np.ones(3)), {}, RuntimeError, "input.shape\\[-1\\] must be greater than or equal "
                                                                      "to tau.shape\\[-1\\]")]))
add(OpInfo("orgqr", lambda d, r: [Sample(_geqrf_of(r, (4, 3), d))], dtypes=FLOATS, rtol=1e-4, atol=1e-5))
add(OpInfo("ormqr", lambda d, r: [Sample(_geqrf_of(r, (4, 3), d) + (arr(r, (4, 2), d),)),
                                  Sample(_geqrf_of(r, (3, 3), d) + (arr(r, (3, 2), d),), dict(transpose=True)),
                                  Sample(_geqrf_of(r, (4, 3), d) + (arr(r, (2, 4), d), False)),
                                  Sample(_geqrf_of(r, (4, 3), d) + (arr(r, (2, 4), d), False, True))],
           dtypes=FLOATS, rtol=1e-4, atol=1e-5))
def _torch_cond(t, a, p=None):
    """PyTorch's linalg.cond; for the norm orders, its formula written out (PyTorch's own backward for those
    modifies a saved inverse in place and cannot be run)."""
    if p is None or p in (2, -2):
        return t.linalg.cond(a, p)
    inverse, info = t.linalg.inv_ex(a)
    r = t.linalg.matrix_norm(a, p) * t.linalg.matrix_norm(inverse, p)
    return t.where(info > 0, t.full_like(r, float("inf")), r)


add(OpInfo("linalg.cond", lambda d, r: [Sample((_spd(r, 3, d),)), Sample((_spd(r, 3, d), 1)), Sample((_spd(r, 3, d), "fro")),
                                        Sample((_spd(r, 3, d), -2)), Sample((arr(r, (2, 4, 3), d),)),
                                        Sample((np.array([[1.0, 2.0], [2.0, 4.0]], d), float("inf")))],
           dtypes=FLOATS, method=False, rtol=1e-4, atol=1e-5, torch_fn=_torch_cond, errors=lambda: [
               _err((np.ones((2, 3)), 1), {}, RuntimeError, "linalg.cond\\(ord=1\\): A must be batches of square "
                                                            "matrices, but they are 2 by 3 matrices")]))

# the *_copy ops: a view's values in a new contiguous tensor (functionalization's forms)
_A3 = lambda d, r: arr(r, (2, 3, 4), d)  # noqa: E731
for _n, _fn in [
        ("alias_copy", lambda d, r: [Sample((_A3(d, r),))]),
        ("as_strided_copy", lambda d, r: [Sample((_A3(d, r), (2, 2), (1, 2))), Sample((_A3(d, r), (3,), (2,), 1))]),
        ("diagonal_copy", lambda d, r: [Sample((_A3(d, r),)), Sample((_A3(d, r), 1, 1, 2))]),
        ("expand_copy", lambda d, r: [Sample((arr(r, (1, 3), d), (2, 3))), Sample((arr(r, (3, 1), d), (2, -1, 4)))]),
        ("narrow_copy", lambda d, r: [Sample((_A3(d, r), 2, 1, 2)), Sample((_A3(d, r), 0, 1, 1))]),
        ("permute_copy", lambda d, r: [Sample((_A3(d, r), (2, 0, 1)))]),
        ("select_copy", lambda d, r: [Sample((_A3(d, r), 1, 2)), Sample((_A3(d, r), -1, 0))]),
        ("slice_copy", lambda d, r: [Sample((_A3(d, r), 2, 1, 4, 2)), Sample((_A3(d, r),))]),
        ("split_copy", lambda d, r: [Sample((_A3(d, r), 2, 2))]),
        ("split_with_sizes_copy", lambda d, r: [Sample((_A3(d, r), (1, 3), 2))]),
        ("squeeze_copy", lambda d, r: [Sample((arr(r, (1, 3, 1), d),)), Sample((arr(r, (1, 3, 1), d), 0)),
                                       Sample((arr(r, (1, 3, 1), d), (0, 2)))]),
        ("t_copy", lambda d, r: [Sample((arr(r, (3, 4), d),))]),
        ("transpose_copy", lambda d, r: [Sample((_A3(d, r), 0, 2))]),
        ("unbind_copy", lambda d, r: [Sample((_A3(d, r), 1))]),
        ("unfold_copy", lambda d, r: [Sample((_A3(d, r), 2, 2, 1))]),
        ("unsqueeze_copy", lambda d, r: [Sample((_A3(d, r), 1))]),
        ("view_copy", lambda d, r: [Sample((_A3(d, r), (6, 4))), Sample((_A3(d, r), (-1,)))])]:
    add(OpInfo(_n, _fn, dtypes=FLOATS, method=_n == "narrow_copy", out=_n not in ("split_copy", "split_with_sizes_copy",
                                                                                "unbind_copy"),
               noncontiguous=_n != "as_strided_copy"))  # as_strided reads the storage: layouts differ

# torch.* functions that are nn.functional's (PyTorch binds the same builtins in both places)
add(OpInfo("pdist", lambda d, r: [Sample((arr(r, (5, 3), d),)), Sample((arr(r, (4, 2), d), 1.0)),
                                  Sample((arr(r, (4, 2), d), float("inf"))), Sample((arr(r, (1, 3), d),))],
           method=False, rtol=1e-5, atol=1e-6, errors=lambda: [
               _err((np.ones((2, 2, 2)),), {}, RuntimeError, "pdist only supports 2D tensors, got: 3D"),
               _err((np.ones((2, 2)), -1.0), {}, RuntimeError, "pdist only supports non-negative p values")]))
add(OpInfo("conv2d", lambda d, r: [Sample((arr(r, (1, 2, 5, 5), d), arr(r, (3, 2, 3, 3), d), arr(r, (3,), d), 1, 1)),
                                   Sample((arr(r, (2, 5, 5), d), arr(r, (3, 2, 2, 2), d)), dict(stride=2))],
           method=False, rtol=1e-4, atol=1e-5, supports_gradgrad=False))  # convolution's double backward: README
add(OpInfo("conv_transpose1d", lambda d, r: [Sample((arr(r, (1, 2, 5), d), arr(r, (2, 3, 3), d)))], method=False,
           rtol=1e-4, atol=1e-5, supports_gradgrad=False))
add(OpInfo("max_pool2d", lambda d, r: [Sample((arr(r, (1, 2, 6, 6), d), 2)), Sample((arr(r, (2, 5, 5), d), 3, 2, 1))],
           method=False, meta=False))
add(OpInfo("max_pool1d_with_indices", lambda d, r: [Sample((arr(r, (1, 2, 8), d), 2))], method=False, meta=False))

# the trapezoidal rule, combinations, renorm and the deprecated norms / chain_matmul / unsafe_* forms
_X5 = np.array([0.0, 0.3, 1.1, 1.5, 2.6])
for _n in ("trapezoid", "trapz", "cumulative_trapezoid"):
    add(OpInfo(_n, lambda d, r: [Sample((arr(r, (3, 5), d), _X5.astype(d))), Sample((arr(r, (3, 5), d), arr(r, (3, 5), d))),
                                 Sample((arr(r, (4, 3), d),), dict(dx=0.5, dim=0)), Sample((arr(r, (5,), d),)),
                                 Sample((np.zeros((2, 0), d),))],
               method=False, rtol=1e-5, atol=1e-6, errors=lambda _n=_n: [
                   _err((np.ones(3), np.ones(2)), {}, RuntimeError, "There must be one `x` value for each sample point")]))
add(OpInfo("combinations", lambda d, r: [Sample((arr(r, (4,), d),)), Sample((arr(r, (4,), d), 3, True)),
                                         Sample((arr(r, (3,), d), 0)), Sample((arr(r, (2,), d), 3))],
           method=False, dtypes=FLOATS + ("int64",),
           meta=False,  # PyTorch builds the result with masked_select and has no Meta kernel for it
           errors=lambda: [
               _err((np.ones((2, 2)),), {}, RuntimeError, "Expect a 1D vector, but got shape \\[2, 2\\]"),
               _err((np.ones(3), -1), {}, RuntimeError, "Expect a non-negative number, but got -1")]))
add(OpInfo("chain_matmul", lambda d, r: [Sample((arr(r, (2, 3), d), arr(r, (3, 4), d), arr(r, (4, 2), d))),
                                         Sample((arr(r, (2, 3), d),))],
           method=False, rtol=1e-5, atol=1e-6))
for _n in ("unsafe_chunk", "unsafe_split"):
    add(OpInfo(_n, lambda d, r: [Sample((arr(r, (5, 3), d), 2)), Sample((arr(r, (5, 3), d), 2, 1))]))
add(OpInfo("unsafe_split_with_sizes", lambda d, r: [Sample((arr(r, (5, 3), d), (2, 3))), Sample((arr(r, (5, 3), d), (1, 2), 1))]))
add(OpInfo("renorm", lambda d, r: [Sample((arr(r, (3, 4), d), 2, 0, 1.5)), Sample((arr(r, (2, 3, 4), d), 1, 1, 2.0)),
                                   Sample((arr(r, (3, 4), d), float("inf"), 1, 0.5))],
           inplace=True, out=True, rtol=1e-5, atol=1e-6, errors=lambda: [
               _err((np.ones((2, 2)), 1, 0, -1), {}, RuntimeError, "renorm: expected maxnorm to be >= 0 but got -1"),
               _err((np.ones((2, 2)), 0, 0, 1), {}, RuntimeError, "renorm: non-positive-norm not supported")]))
add(OpInfo("frobenius_norm", lambda d, r: [Sample((arr(r, (3, 4), d), (0, 1))), Sample((arr(r, (2, 3, 4), d), (2,), True))],
           method=False, out=True, rtol=1e-5, atol=1e-6))
add(OpInfo("nuclear_norm", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (2, 3, 4), d), (0, 2)))],
           method=False, out=True, rtol=1e-4, atol=1e-5))

# the rest of the everyday API: nan-aware median, runs, d-dimensional histograms, put / index_reduce, the
# deprecated svd / qr / triangular_solve, vander, as_strided_scatter, nonzero_static, the in-place polygamma_ and
# float_power_
# (an all-NaN row's index is where libstdc++'s nth_element leaves it in PyTorch: ember returns the row's first)
_NAN_ROWS = np.array([[1.0, np.nan, 3.0, 0.5], [np.nan, 5.0, np.nan, np.nan], [2.0, 1.0, np.nan, 4.0]])
add(OpInfo("nanmedian", lambda d, r: [Sample((_NAN_ROWS.astype(d),)), Sample((_NAN_ROWS.astype(d), 1)),
                                      Sample((_NAN_ROWS.astype(d), 0, True)), Sample((np.full((2, 3), np.nan, d),)),
                                      Sample((r.permutation(20).reshape(4, 5).astype(d),)),
                                      Sample((r.permutation(20).reshape(4, 5).astype(d), 1))],
           dtypes=FLOATS, errors=lambda: [_err((np.zeros((2, 0)), 1), {}, IndexError,
                                               "Expected reduction dim 1 to have non-zero size")]))
add(OpInfo("nanmedian", lambda d, r: [Sample((r.permutation(20).reshape(4, 5).astype(d), 1)),
                                      Sample((r.permutation(20).reshape(4, 5).astype(d),))], dtypes=INTS))
_RUNS = np.array([1, 1, 2, 2, 3, 1, 1, 2])
add(OpInfo("unique_consecutive", lambda d, r: [
    Sample((_RUNS.astype(d),)), Sample((_RUNS.astype(d),), dict(return_inverse=True, return_counts=True)),
    Sample((_RUNS.reshape(4, 2).astype(d),), dict(return_counts=True)),
    Sample((np.array([[1, 1], [1, 1], [2, 3], [2, 3]], d),), dict(dim=0, return_inverse=True, return_counts=True)),
    Sample((np.array([[1, 1, 2], [1, 1, 3]], d),), dict(dim=1, return_counts=True)), Sample((np.zeros(0, d),))],
    dtypes=FLOATS + INTS, noncontiguous=False, meta=False, supports_autograd=False))
add(OpInfo("histogramdd", lambda d, r: [
    Sample((arr(r, (20, 2), d),), dict(bins=[3, 4])), Sample((arr(r, (5, 4, 3), d), 2), dict(density=True)),
    Sample((arr(r, (20, 2), d),), dict(bins=3, range=[-1.0, 1.0, 0.0, 2.0], weight=positive(r, (20,), d))),
    Sample((arr(r, (20, 2), d), [np.array([-3.0, 0.0, 0.5, 3.0], d), np.array([-1.0, 1.0], d)]), dict(density=True)),
    Sample((np.array([[3.0, 3.0], [3.0, 3.0]], d), [2, 1])), Sample((np.zeros((0, 2), d), 2))],
    method=False, supports_autograd=False, noncontiguous=False, meta=False,
    covers=("_histogramdd_bin_edges", "_histogramdd_from_bin_cts", "_histogramdd_from_bin_tensors"),
    errors=lambda: [_err((np.ones((3, 2)), [3]), {}, RuntimeError, "The size of bins must be equal to the innermost"),
                    _err((np.ones((3, 2)), 3), dict(range=[0.0, 1.0]), RuntimeError,
                         "range should have 4 elements, but got 2"),
                    _err((np.ones((3, 2)), [np.array([0.0, 1.0], np.float32), np.array([0.0, 1.0])]), {}, RuntimeError,
                         "input tensor and bins tensors should have the same dtype")]))
add(OpInfo("put", lambda d, r: [Sample((arr(r, (3, 4), d), np.array([[0, 7], [-1, 3]]), arr(r, (2, 2), d))),
                                Sample((arr(r, (3, 4), d), np.array([1, 5, 1]), arr(r, (3,), d), True))],
           dtypes=FLOATS + INTS, inplace=True, errors=lambda: [
               _err((np.ones((2, 3)), np.array([7]), np.ones(1)), {}, IndexError,
                    "out of range: tried to access index 7 on a tensor of 6 elements"),
               _err((np.ones((2, 3)), np.array([1, 2]), np.ones(1)), {}, IndexError,
                    "Expected source and index to have the same number of elements"),
               _err((np.ones((2, 3)), np.array([1], np.int32), np.ones(1)), {}, RuntimeError,
                    "Expected a long tensor for index, but got Int")]))
add(OpInfo("index_reduce", lambda d, r: [
    Sample((arr(r, (4, 3), d), 0, np.array([0, 2, 0, 3, 2]), arr(r, (5, 3), d), red), dict(include_self=inc))
    for red in ("prod", "mean", "amax", "amin") for inc in (True, False)] + [
    Sample((arr(r, (2, 4), d), 1, np.array([3, 3], np.int32), arr(r, (2, 2), d), "mean"))],
    dtypes=FLOATS, inplace=True, errors=lambda: [
        _err((np.ones((2, 3)), 0, np.array([0]), np.ones((1, 3)), "sum"), {}, RuntimeError,
             "Expected reduce to be one of prod, mean, amax or amin but got sum"),
        _err((np.ones((2, 3)), 0, np.array([5]), np.ones((1, 3)), "prod"), {}, IndexError, "index out of range in self"),
        _err((np.ones((2, 3)), 0, np.array([0, 1]), np.ones((1, 3)), "prod"), {}, RuntimeError,
             "Number of indices \\(2\\) should be equal to source.size\\(dim\\): \\(1\\), for dim: 0")]))
add(OpInfo("index_reduce", lambda d, r: [
    Sample((np.arange(6).reshape(3, 2).astype(d), 0, np.array([0, 0, 2]), np.array([[3, 4], [5, 6], [7, 8]], d), red),
           dict(include_self=inc)) for red in ("prod", "mean", "amax", "amin") for inc in (True, False)] + [
    Sample((-np.arange(6).reshape(3, 2).astype(d), 0, np.array([0, 0, 2]), -np.array([[3, 4], [5, 6], [7, 8]], d),
            "mean"))], dtypes=INTS, inplace=True))
add(OpInfo("nonzero_static", lambda d, r: [Sample((np.array([[1, 0, 2], [0, 3, 0]], d),), dict(size=5)),
                                           Sample((np.array([1, 0, 2, 4], d),), dict(size=2, fill_value=7)),
                                           Sample((np.zeros(3, d),), dict(size=0))],
           dtypes=FLOATS + INTS + BOOL, supports_autograd=False, meta=False,
           errors=lambda: [_err((np.ones(3),), dict(size=-1), RuntimeError, "'size' must be an non-negative integer")]))
add(OpInfo("as_strided_scatter", lambda d, r: [Sample((arr(r, (3, 4), d), arr(r, (2, 2), d), (2, 2), (4, 1), 1)),
                                               Sample((arr(r, (3, 4), d), arr(r, (3,), d), (3,), (5,))),
                                               Sample((arr(r, (2, 3), d), arr(r, (2,), d), (2,), (2,)))],
           dtypes=FLOATS + INTS, noncontiguous=False, errors=lambda: [
               _err((np.ones((2, 3)), np.ones(4), (4,), (2,)), {}, RuntimeError,
                    "sizes \\[4\\], strides \\[2\\], storage offset 0, and itemsize 8 requiring a storage size of 56 are "
                    "out of bounds for storage of size 48")]))
add(OpInfo("fill", lambda d, r: [Sample((arr(r, (3, 4), d), 2.5)), Sample((arr(r, (3, 4), d), np.array(1.5, d)))],
           dtypes=FLOATS, method=False,
           supports_gradgrad=False,  # the gradients (zeros, a sum of the incoming gradient) are constant
           errors=lambda: [
               _err((np.ones(3), np.ones(2)), {}, RuntimeError, "fill_ only supports 0-dimension value tensor")]))
add(OpInfo("vander", lambda d, r: [Sample((arr(r, (4,), d),)), Sample((arr(r, (3,), d), 5)),
                                   Sample((arr(r, (3,), d),), dict(N=3, increasing=True)), Sample((arr(r, (3,), d), 0)),
                                   Sample((arr(r, (3,), d), 1))],
           dtypes=FLOATS + ("int64", "int32"), method=False, rtol=1e-5, atol=1e-6,
           supports_autograd=False,  # PyTorch's backward fails (cumprod's saved input is overwritten): see
           # tests/test_linalg_factors.py
           errors=lambda: [
               _err((np.ones((2, 2)),), {}, RuntimeError, "x must be a one-dimensional tensor"),
               _err((np.ones(2), -1), {}, RuntimeError, "N must be non-negative")]))
add(OpInfo("svd", lambda d, r: [Sample((arr(r, (4, 3), d),)), Sample((arr(r, (2, 3, 4), d), True))],
           ember_fn=lambda e, a, *rest: _svd_invariants(e, a, *rest), torch_fn=lambda t, a, *rest: _svd_invariants(t, a, *rest),
           rtol=1e-4, atol=1e-5, supports_gradgrad=False, noncontiguous=False, meta=False))
# full U / V, and S alone: not differentiable in U, V in PyTorch either (inputs detached, values compared)
add(OpInfo("svd", lambda d, r: [Sample((arr(r, (2, 3, 4), d), False)), Sample((arr(r, (3, 3), d), True, False))],
           ember_fn=lambda e, a, *rest: _svd_invariants(e, a.detach(), *rest),
           torch_fn=lambda t, a, *rest: _svd_invariants(t, a.detach(), *rest),
           rtol=1e-4, atol=1e-5, supports_autograd=False, noncontiguous=False, meta=False))
add(OpInfo("qr", lambda d, r: [Sample((arr(r, (4, 3), d),)), Sample((arr(r, (2, 3, 3), d),))],
           ember_fn=lambda e, a, *rest: _qr_invariants(a, *rest), torch_fn=lambda t, a, *rest: _qr_invariants(a, *rest),
           rtol=1e-4, atol=1e-5, meta=False))
add(OpInfo("qr", lambda d, r: [Sample((arr(r, (4, 3), d), False))], supports_autograd=False,
           ember_fn=lambda e, a, *rest: _qr_invariants(a.detach(), *rest),
           torch_fn=lambda t, a, *rest: _qr_invariants(a.detach(), *rest), rtol=1e-4, atol=1e-5, meta=False))
add(OpInfo("triangular_solve", lambda d, r: [
    Sample((arr(r, (3, 2), d), np.triu(arr(r, (3, 3), d)) + 3 * np.eye(3, dtype=d))),
    Sample((arr(r, (2, 3, 2), d), np.tril(arr(r, (3, 3), d)) + 3 * np.eye(3, dtype=d), False, True)),
    Sample((arr(r, (3, 1), d), np.triu(arr(r, (2, 3, 3), d)) + 3 * np.eye(3, dtype=d)), dict(unitriangular=True))],
    rtol=1e-4, atol=1e-5, meta=False, errors=lambda: [
        _err((np.ones(3), np.eye(3)), {}, RuntimeError, "Expected b to have at least 2 dimensions, but it has 1"),
        _err((np.ones((3, 2)), np.ones((3, 2))), {}, RuntimeError,
             "A must be batches of square matrices, but they are 3 by 2 matrices")]))
add(OpInfo("polygamma", lambda d, r: [Sample((positive(r, (3, 4), d), 1)), Sample((positive(r, (3, 4), d), 2))],
           dtypes=FLOATS, function=False, inplace=True,
           ember_fn=lambda e, x, n: x.polygamma(n), torch_fn=lambda t, x, n: x.polygamma(n)))
add(OpInfo("float_power", lambda d, r: [Sample((positive(r, (3, 4), d), arr(r, (3, 4), d, -2, 2))),
                                        Sample((positive(r, (3, 4), d), 2))],
           dtypes=("float64",), function=False, method=False, inplace=True))  # errors: tests/test_everyday_api.py


def _svd_invariants(lib, a, some=True, compute_uv=True):
    """U, S, V up to the signs of singular vectors: S, U diag(S) V^H, and |U|, |V| (the zero matrices too)."""
    U, S, V = lib.svd(a, some, compute_uv)
    if not compute_uv:
        return S, U, V
    k = S.shape[-1]
    return S, (U[..., :k] * S.unsqueeze(-2)) @ V[..., :k].mH, U.abs(), V.abs()


def _qr_invariants(a, some=True):
    Q, R = a.qr(some)
    return Q @ R, R.abs(), Q.abs()

# torch.gradient: central differences inside, one-sided ones of order 1 or 2 at the ends, uniform or given spacing
_COORDS = np.array([0.0, 0.7, 1.5, 2.0, 3.6])
add(OpInfo("gradient", lambda d, r: [
    Sample((arr(r, (5,), d),)), Sample((arr(r, (4, 5), d),), dict(spacing=2.0, edge_order=2)),
    Sample((arr(r, (4, 5), d),), dict(dim=1, spacing=[0.5])), Sample((arr(r, (4, 5), d),), dict(dim=(1, 0))),
    Sample((arr(r, (3, 5), d),), dict(dim=1, spacing=(_COORDS.astype(d),), edge_order=2)),
    Sample((arr(r, (5, 3), d),), dict(dim=0, spacing=(_COORDS.astype(d),)))],
    dtypes=FLOATS + ("int64",), method=False, noncontiguous=False, meta=False, rtol=1e-5, atol=1e-6, errors=lambda: [
        _err((np.ones(4),), dict(edge_order=3), RuntimeError, "only supports edge_order=1 and edge_order=2"),
        _err((np.ones(2),), dict(edge_order=2), RuntimeError, "expected each dimension size to be at least"),
        _err((np.ones(4),), dict(spacing=[1.0, 2.0]), RuntimeError, "but got a list of length 2"),
        _err((np.ones((2, 4)),), dict(dim=[0, 0]), RuntimeError, "dim 0 appears multiple times in the list of dims")]))

# conv_tbc (time, batch, channel), norm_except_dim (weight normalization's g), hash_tensor (xor of 64-bit patterns)
add(OpInfo("conv_tbc", lambda d, r: [Sample((arr(r, (5, 2, 3), d), arr(r, (3, 3, 4), d), arr(r, (4,), d))),
                                     Sample((arr(r, (4, 1, 2), d), arr(r, (2, 2, 3), d), arr(r, (3,), d), 1))],
           method=False, rtol=1e-5, atol=1e-6, supports_gradgrad=False,  # convolution's double backward: README
           aliases=("nn.functional.conv_tbc",), errors=lambda: [
               _err((np.ones((2, 3)), np.ones((1, 3, 2)), np.ones(2)), {}, RuntimeError,
                    "Input must have 3 dims: time, batch, in_channel"),
               _err((np.ones((2, 1, 3)), np.ones((1, 2, 2)), np.ones(2)), {}, RuntimeError,
                    "Input dim 2 \\(input channels\\) is not == dim 1 in the weight tensor"),
               _err((np.ones((2, 1, 3)), np.ones((1, 3, 2)), np.ones((1, 2))), {}, RuntimeError, "Bias must be 1-D")]))
add(OpInfo("norm_except_dim", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (3, 4, 5), d), 2, 1)),
                                            Sample((arr(r, (3, 4), d), 3, -1)), Sample((arr(r, (3, 4), d), 1, 1))],
           method=False, rtol=1e-5, atol=1e-6))
add(OpInfo("hash_tensor", lambda d, r: [Sample((arr(r, (3, 4), d),)), Sample((arr(r, (3, 4), d), 1)),
                                        Sample((arr(r, (3, 4), d), (0, 1)), dict(keepdim=True)),
                                        Sample((np.zeros((2, 0), d), 0))],
           dtypes=FLOATS + INTS + BOOL + ("uint8", "float16"), supports_autograd=False, meta=False, errors=lambda: [
               _err((np.zeros(0),), {}, RuntimeError, "Expected reduction dim to be specified for input.numel\\(\\) == 0"),
               _err((np.zeros((2, 0)), 1), {}, IndexError, "Expected reduction dim 1 to have non-zero size")]))

# LDL (Bunch-Kaufman): LAPACK's packed factors and pivots, info, and the solve; no derivatives (as in PyTorch)
def _sym(r, shape, d, zero_diag=False):
    a = arr(r, shape, d)
    a = a + np.swapaxes(a, -1, -2)
    if zero_diag:
        a[..., 0, 0] = a[..., 1, 1] = 0
    return a


add(OpInfo("linalg.ldl_factor_ex", lambda d, r: [Sample((_sym(r, (4, 4), d),)), Sample((_sym(r, (2, 5, 5), d, True),)),
                                                 Sample((np.zeros((3, 3), d),)), Sample((_sym(r, (1, 1), d),))],
           method=False, supports_autograd=False, rtol=1e-5, atol=1e-6, covers=("linalg_ldl_factor_ex",),
           errors=lambda: [_err((np.ones((2, 3)),), {}, RuntimeError, "A must be batches of square matrices, but they "
                                                                         "are 2 by 3 matrices"),
                           _err((np.ones((2, 2), np.int64),), {}, RuntimeError,
                                "Expected a floating point or complex tensor as input. Got Long"),
                           _err((np.zeros((2, 2)),), dict(check_errors=True), RuntimeError, "Unknown error code: 1")]))
add(OpInfo("linalg.ldl_factor", lambda d, r: [Sample((_sym(r, (4, 4), d, True),)), Sample((_sym(r, (3, 3, 3), d),))],
           method=False, supports_autograd=False, rtol=1e-5, atol=1e-6, covers=("linalg_ldl_factor",),
           errors=lambda: [_err((np.zeros((2, 3, 3)),), {}, RuntimeError,
                                "torch.linalg.ldl_factor: Unknown error code: 1")]))


def _ldl_solve(lib, a, b, hermitian=False):
    LD, piv = lib.linalg.ldl_factor(a, hermitian=hermitian)
    return lib.linalg.ldl_solve(LD, piv, b, hermitian=hermitian)


add(OpInfo("linalg.ldl_solve", lambda d, r: [Sample((_sym(r, (4, 4), d, True), arr(r, (4, 2), d))),
                                             Sample((_sym(r, (2, 3, 3), d), arr(r, (3, 1), d)))],
           method=False, supports_autograd=False, rtol=1e-4, atol=1e-5, covers=("linalg_ldl_solve",), meta=False,
           ember_fn=_ldl_solve, torch_fn=_ldl_solve,
           errors=lambda: [_err((np.eye(3), np.ones(3)), {}, IndexError, "Dimension out of range"),
                           _err((np.eye(3), np.ones((4, 2))), {}, RuntimeError,
                                "Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is 3 by 3 but each "
                                "b matrix is 4 by 2")]))
