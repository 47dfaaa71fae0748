"""The ``_foreach_*`` ops (``ForeachOpsKernels.cpp``): one op over a list of tensors. PyTorch runs a fused
multi-tensor kernel on the GPU and, on the CPU, its "slow path": the per-tensor op on each tensor in turn. ember
does the latter everywhere, so each function here is the per-tensor op in a loop, with the list checks of
``ForeachUtils.h``; autograd records the per-tensor ops (their gradients are the foreach op's).

Overloads follow PyTorch's: ``.Scalar`` (one number for every tensor), ``.ScalarList`` (a number per tensor),
``.List`` (a tensor per tensor), ``.Tensor`` (one 0-dim tensor for every tensor); a name ending in ``_`` updates
the tensors of ``self`` in place and returns nothing. The functions are made from three tables below rather
than written out one by one: what differs between ``_foreach_mul_.ScalarList`` and ``_foreach_div.List`` is only
the per-tensor method and how its second argument is picked.
"""
from __future__ import annotations

from typing import Any, Callable

from ember._generated import aten

__all__: list[str] = []


# ------------------------------------------------------------------------------ checks (ForeachUtils.h)
def _check_nonempty(tensors: Any) -> Any:
    if len(tensors) == 0:
        raise RuntimeError("Tensor list must have at least one tensor.")


def _check_same_length(a: Any, b: Any) -> Any:
    _check_nonempty(a)
    if len(a) != len(b):
        raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(a)} and {len(b)}")


def _check_scalars(tensors: Any, scalars: Any) -> Any:
    _check_nonempty(tensors)
    if len(tensors) != len(scalars):
        raise RuntimeError("Tensor list must have same number of elements as scalar list.")


def _check_scalar_tensor(other: Any) -> Any:
    if other.dim() != 0 or other.numel() != 1:
        raise RuntimeError(f"scalar tensor expected to be 0 dim but it has {other.dim()} dimensions and "
                           f"{other.numel()} elements.")


def _unpack_scalars(tensors: Any, scalars: Any) -> Any:
    """A packed 1-D tensor of scalars (the ``.Tensor`` overloads of addcmul / addcdiv) as a list of numbers."""
    if scalars.dim() != 1:
        raise RuntimeError(f"Expected packed scalar Tensor to be of dimension 1. Got {scalars.dim()} instead.")
    if scalars.numel() != len(tensors):
        raise RuntimeError(f"Expected length of scalars to match input of length {len(tensors)} but got "
                           f"{scalars.numel()} instead.")
    return scalars.tolist()


# ------------------------------------------------------------------------------ how the second argument is picked
def _seconds(overload: Any, self: Any, second: Any) -> Any:
    """The per-tensor second argument of each tensor of ``self``, for a binary op's overload."""
    if overload == "Scalar":
        _check_nonempty(self)
        return [second] * len(self)
    if overload == "ScalarList":
        _check_scalars(self, second)
        return list(second)
    if overload == "List":
        _check_same_length(self, second)
        return list(second)
    _check_nonempty(self)                                   # .Tensor: one 0-dim tensor for all
    _check_scalar_tensor(second)
    return [second] * len(self)


def _define(name: Any, fn: Any) -> Any:
    fn.__name__ = fn.__qualname__ = name
    globals()[name] = fn
    __all__.append(name)


def _result(tensors: Any, inplace: Any) -> Any:
    return None if inplace else tensors


# ------------------------------------------------------------------------------ unary ops: t.op() / t.op_()
_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
          "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sin",
          "sinh", "sqrt", "tan", "tanh", "trunc")


def _unary(method: Any, inplace: Any) -> Any:
    def fn(self: Any) -> Any:
        _check_nonempty(self)
        return _result([getattr(t, method)() for t in self], inplace)
    return fn


for _op in _UNARY:
    _define(f"_foreach_{_op}", _unary(_op, False))
    _define(f"_foreach_{_op}_", _unary(_op + "_", True))


# ------------------------------------------------------------------------------ binary ops
# op -> {overload: per-tensor method}, the in-place method being the same name + "_"; PyTorch's slow path
# computes maximum / minimum with a scalar as clamp_min / clamp_max, and their in-place list forms likewise.
_BINARY = {
    "add": {"Scalar": "add", "ScalarList": "add", "List": "add", "Tensor": "add"},
    "sub": {"Scalar": "sub", "ScalarList": "sub", "List": "sub"},
    "mul": {"Scalar": "mul", "ScalarList": "mul", "List": "mul", "Tensor": "mul"},
    "div": {"Scalar": "div", "ScalarList": "div", "List": "div", "Tensor": "div"},
    "clamp_min": {"Scalar": "clamp_min", "ScalarList": "clamp_min", "List": "clamp_min"},
    "clamp_max": {"Scalar": "clamp_max", "ScalarList": "clamp_max", "List": "clamp_max"},
    "maximum": {"Scalar": "clamp_min", "ScalarList": "clamp_min", "List": "maximum"},
    "minimum": {"Scalar": "clamp_max", "ScalarList": "clamp_max", "List": "minimum"},
    "pow": {"Scalar": "pow", "ScalarList": "pow", "List": "pow"},
}
_WITH_ALPHA = {("add", "List"), ("add", "Tensor"), ("sub", "List")}


def _binary(method: Any, overload: Any, inplace: Any, alpha: Any) -> Any:
    if inplace and method in ("maximum", "minimum"):
        method = {"maximum": "clamp_min", "minimum": "clamp_max"}[method]
    if inplace:
        method += "_"
    fn: Callable[..., Any]
    if alpha:
        def fn(self: Any, second: Any, alpha: Any = 1) -> Any:
            seconds = _seconds(overload, self, second)
            return _result([getattr(t, method)(s, alpha=alpha) for t, s in zip(self, seconds)], inplace)
    else:
        def fn(self: Any, second: Any) -> Any:
            seconds = _seconds(overload, self, second)
            return _result([getattr(t, method)(s) for t, s in zip(self, seconds)], inplace)
    return fn


for _op, _overloads in _BINARY.items():
    for _ov, _method in _overloads.items():
        _alpha = (_op, _ov) in _WITH_ALPHA
        _define(f"_foreach_{_op}_{_ov}", _binary(_method, _ov, False, _alpha))
        if (_op, _ov) != ("add", "Scalar"):  # _foreach_add_.Scalar is the optimizers' (aten/composite/optim.py)
            _define(f"_foreach_{_op}__{_ov}", _binary(_method, _ov, True, _alpha))


def _foreach_pow_ScalarAndTensor(self: Any, exponent: Any) -> Any:
    """``self ** e`` for a number ``self`` and each tensor ``e``."""
    _check_nonempty(exponent)
    return [aten.pow_Scalar(self, e) for e in exponent]


__all__.append("_foreach_pow_ScalarAndTensor")


# ------------------------------------------------------------------------------ pointwise ops with two tensor lists
def _pointwise(method: Any, overload: Any, inplace: Any) -> Any:
    """addcmul / addcdiv: ``t + value * t1 (*|/) t2`` with ``value`` one number, a number per tensor, or a packed
    1-D tensor of them."""
    method = method + "_" if inplace else method

    def fn(self: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> Any:
        _check_same_length(self, tensor1)
        _check_same_length(self, tensor2)
        if overload == "Scalar":
            values = [value] * len(self)
        elif overload == "ScalarList":
            _check_scalars(self, value)
            values = list(value)
        else:
            values = _unpack_scalars(self, value)
        return _result([getattr(t, method)(a, b, value=v) for t, a, b, v in zip(self, tensor1, tensor2, values)],
                       inplace)
    return fn


def _lerp(overload: Any, inplace: Any) -> Any:
    """``t + w (t1 - t)`` with ``w`` one number, a number per tensor, or a tensor per tensor."""
    method = "lerp_" if inplace else "lerp"

    def fn(self: Any, tensors1: Any, weight: Any) -> Any:
        _check_same_length(self, tensors1)
        if overload == "Scalar":
            weights = [weight] * len(self)
        elif overload == "ScalarList":
            _check_scalars(self, weight)
            weights = list(weight)
        else:
            _check_same_length(self, weight)
            weights = list(weight)
        return _result([getattr(t, method)(e, w) for t, e, w in zip(self, tensors1, weights)], inplace)
    return fn


for _ov in ("Scalar", "ScalarList", "Tensor"):
    for _op in ("addcmul", "addcdiv"):
        _define(f"_foreach_{_op}_{_ov}", _pointwise(_op, _ov, False))
        _define(f"_foreach_{_op}__{_ov}", _pointwise(_op, _ov, True))
for _ov in ("Scalar", "ScalarList", "List"):
    _define(f"_foreach_lerp_{_ov}", _lerp(_ov, False))
    _define(f"_foreach_lerp__{_ov}", _lerp(_ov, True))


# ------------------------------------------------------------------------------ the rest
def _foreach_norm_Scalar(self: Any, ord: Any = 2, dtype: Any = None) -> Any:  # noqa: A002
    """The vector norm of each tensor (a list of 0-dim tensors), as ``clip_grad_norm_`` uses it."""
    _check_nonempty(self)
    return [aten.linalg_vector_norm(t, ord, None, False, dtype=dtype) for t in self]


def _foreach_max(self: Any) -> Any:
    _check_nonempty(self)
    return [t.max() for t in self]


def _foreach_clone(self: Any, memory_format: Any = None) -> Any:
    return [t.clone(memory_format=memory_format) for t in self]


def _foreach_copy_(self: Any, src: Any, non_blocking: Any = False) -> Any:
    _check_same_length(self, src)
    for t, s in zip(self, src):
        t.copy_(s, non_blocking)


def _foreach_zero_(self: Any) -> Any:
    _check_nonempty(self)
    for t in self:
        t.zero_()


def _foreach_mm(self: Any, mat2: Any) -> Any:
    _check_same_length(self, mat2)
    return [t.mm(m) for t, m in zip(self, mat2)]


__all__ += ["_foreach_norm_Scalar", "_foreach_max", "_foreach_clone", "_foreach_copy_", "_foreach_zero_",
            "_foreach_mm"]
