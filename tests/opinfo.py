"""An OpInfo-like table (PyTorch's ``torch/testing/_internal/opinfo``, compacted): one entry per public op,
with its sample inputs, the dtypes it claims, its variants and its error inputs.  ``test_ops.py`` turns
each entry into tests against PyTorch.

Samples are NumPy arrays and Python values; ``to_framework`` turns them into ember or torch tensors, so
both libraries see the very same inputs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FLOATS = ("float64", "float32")
INTS = ("int64", "int32")
ALL_REAL = FLOATS + INTS + ("uint8", "int8", "int16")
BOOL = ("bool",)


@dataclass
class Sample:
    args: tuple
    kwargs: dict = field(default_factory=dict)
    name: str = ""


@dataclass
class ErrorInput:
    sample: Sample
    error_type: type
    match: str


@dataclass
class OpInfo:
    name: str
    samples: object                    # (dtype: str, rng) -> list[Sample]
    dtypes: tuple = FLOATS
    method: bool = True
    function: bool = True
    inplace: bool = False
    out: bool = False
    torch_name: str | None = None
    aliases: tuple = ()                # other public names of the same op ("special.erf"): each is called too
    covers: tuple = ()                 # ops of the YAML this entry's calls dispatch to ("_softmax"): checked
    rtol: float | None = None
    atol: float | None = None
    errors: object = None              # () -> list[ErrorInput]
    meta: bool = True
    noncontiguous: bool = True
    ember_fn: object = None            # override callables (ember, torch) for ops with unusual calls
    torch_fn: object = None
    exact_dtype: bool = True
    supports_autograd: bool = True     # False: no output is differentiable (indices, masks, counts)
    supports_gradgrad: bool = True     # False: second derivatives are not checked (see the reason where set)

    @property
    def variant(self) -> str:
        """How the op is called by default: as a function, or as a method when it has no function form."""
        return "function" if self.function else "method"


def arr(rng, shape, dtype, low=-3.0, high=3.0):
    if dtype == "bool":
        return np.asarray(rng.random(shape) > 0.5)
    if dtype in ("uint8",):
        return np.asarray(rng.integers(0, 10, shape).astype(dtype))
    if np.dtype(dtype).kind in "iu":
        return np.asarray(rng.integers(int(low) - 2, int(high) + 3, shape).astype(dtype))
    return np.asarray(rng.uniform(low, high, shape).astype(dtype))


def positive(rng, shape, dtype):
    if np.dtype(dtype).kind in "iub":
        return np.asarray(rng.integers(1, 6, shape).astype(dtype))
    return np.asarray(rng.uniform(0.1, 3.0, shape).astype(dtype))


# ------------------------------------------------------------------------------ sample generators
UNARY_SHAPES = [(), (6,), (3, 4), (2, 0, 3)]
BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((5,), ()), ((), ())]


def unary_samples(low=-3.0, high=3.0, pos=False):
    def f(dtype, rng):
        out = []
        for s in UNARY_SHAPES:
            a = positive(rng, s, dtype) if pos else arr(rng, s, dtype, low, high)
            out.append(Sample((a,)))
        return out
    return f


def binary_samples(scalar=True, pos_other=False, low=-3.0, high=3.0):
    def f(dtype, rng):
        out = []
        for sa, sb in BINARY_SHAPES:
            a = arr(rng, sa, dtype, low, high)
            b = positive(rng, sb, dtype) if pos_other else arr(rng, sb, dtype, low, high)
            out.append(Sample((a, b)))
        if scalar and dtype != "bool":
            out.append(Sample((arr(rng, (3, 4), dtype, low, high), 2), name="scalar"))
            if np.dtype(dtype).kind == "f":
                out.append(Sample((arr(rng, (3, 4), dtype, low, high), 1.5), name="float scalar"))
        return out
    return f


def reduction_samples(dims=(None, 0, -1, (0, 2)), keepdim=True, extra=None):
    def f(dtype, rng):
        out = []
        a = arr(rng, (3, 4, 5), dtype)
        for d in dims:
            if d is None:
                out.append(Sample((a,), dict(extra or {})))
            else:
                out.append(Sample((a, d), dict(extra or {})))
                if keepdim:
                    out.append(Sample((a, d), dict(keepdim=True, **(extra or {}))))
        return out
    return f


def dim_samples(shape=(3, 4, 5), dims=(0, -1, 1), kw=None):
    def f(dtype, rng):
        a = arr(rng, shape, dtype)
        return [Sample((a, d), dict(kw or {})) for d in dims]
    return f
