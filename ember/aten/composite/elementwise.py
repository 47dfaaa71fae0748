"""Elementwise ops written in other ops: unary plus, binary max / min, ``where`` with Python numbers
(wrapped as PyTorch wraps them), and the ``torch.special`` aliases of the base ops (``UnaryOps.cpp``)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember._generated import aten
from ember.aten.wrap import new_tensor
from ember.c10.device import CPU
from ember.c10.dispatch_key import KS_CPU, DispatchKey
from ember.c10.memory_format import strided
from ember.c10.dtype import scalar_type_name
from ember.c10.dtype import bool_, complex128, float64, get_default_dtype, int64, scalar_dtype


def positive(self: Any) -> Any:
    if self.dtype is bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


def max_other(self: Any, other: Any) -> Any:
    return aten.maximum(self, other)


def min_other(self: Any, other: Any) -> Any:
    return aten.minimum(self, other)


def _wrapped_dtype(value: Any, like: Any) -> Any:
    """The dtype of a number wrapped next to ``like`` so that it promotes as PyTorch's wrapped numbers do: the
    number's own category's default when that is higher than ``like``'s, else ``like``'s dtype -- its real
    counterpart for a real number next to a complex tensor, so that the number's conjugate stays itself."""
    ld = like.dtype
    cat = _NUMBER_CATEGORY.get(type(value))
    if cat is None:                     # a NumPy scalar
        cat = scalar_dtype(value)._cat
    if cat > ld._cat:
        return scalar_dtype(value)
    return ld.to_real() if ld.is_complex and cat < ld._cat else ld


_NUMBER_CATEGORY = {bool: bool_._cat, int: int64._cat, float: float64._cat, complex: complex128._cat}


def wrapped_number(value: Any, like: Any) -> Any:
    """A Python number as a 0-dim tensor that promotes like a wrapped number next to ``like`` (PyTorch's
    ``wrapped_scalar_tensor``)."""
    return aten.scalar_tensor(value, dtype=_wrapped_dtype(value, like), layout=strided, device=like.device)


def scalar_to_tensor(value: Any, like: Any) -> Any:
    """A Python number where an operator takes a tensor, as PyTorch's bindings wrap it (``scalar_to_tensor``): of
    ``wrapped_number``'s dtype, made directly rather than through the dispatcher (a dispatch mode sees no
    ``scalar_tensor`` call), and marked so that the Python key shows it as the number (``ember/_ops.py``'s
    ``_unbox``)."""
    if like.device.type == "cpu" and not like._ks & _PYTHON_BIT:
        t = new_tensor(np.asarray(value, dtype=_wrapped_dtype(value, like).np), KS_CPU, CPU)
    else:
        t = wrapped_number(value, like)
    t.__dict__["_wrapped_number"] = value
    return t


_PYTHON_BIT = 1 << DispatchKey.Python


def where_scalar_self(condition: Any, self: Any, other: Any) -> Any:
    return aten.where_self(condition, wrapped_number(self, other), other)


def where_scalar_other(condition: Any, self: Any, other: Any) -> Any:
    return aten.where_self(condition, self, wrapped_number(other, self))


def _alias(name: Any, base: Any) -> Any:
    base_op = getattr(aten, base)

    def fn(*args: Any) -> Any:
        return base_op(*args)
    fn.__name__ = fn.__qualname__ = name
    globals()[name] = fn


for _name, _base in {"special_polygamma": "polygamma", "special_erf": "erf", "special_erfc": "erfc",
                     "special_erfinv": "erfinv", "special_expm1": "expm1", "special_exp2": "exp2",
                     "special_gammaln": "lgamma", "special_digamma": "digamma", "special_psi": "digamma",
                     "special_expit": "sigmoid", "special_i0": "i0", "special_sinc": "sinc",
                     "special_log1p": "log1p", "special_xlogy": "xlogy_Tensor", "special_logit": "logit",
                     "special_logsumexp": "logsumexp"}.items():
    _alias(_name, _base)


# ------------------------------------------------------------------------------ nn



def conj_physical(self: Any) -> Any:
    """The conjugate in memory (a real tensor is returned as it is, as PyTorch's)."""
    return aten._conj_physical(self) if self.is_complex() else self


def special_ndtr(self: Any) -> Any:
    """The standard normal CDF, ``(1 + erf(x / sqrt 2)) / 2``."""
    return ((self * 0.7071067811865476).erf() + 1) * 0.5


def mvlgamma(self: Any, p: int) -> Any:
    """The log of the multivariate gamma function of dimension ``p``: ``sum_i lgamma(x - i/2) + p(p-1)/4 log pi``
    (an integer input in the default dtype)."""
    if self.dtype == bool_:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    dtype = self.dtype if self.is_floating_point() or self.is_complex() else get_default_dtype()
    args = aten.arange_start_step(-p * 0.5 + 0.5, 0.5, 0.5, dtype=dtype, device=self.device)
    return args.add(self.unsqueeze(-1)).lgamma_().sum(-1).add_(p * (p - 1) * math.log(math.pi) * 0.25)


def special_multigammaln(self: Any, p: int) -> Any:
    return aten.mvlgamma(self, p)


def mvlgamma_(self: Any, p: int) -> Any:
    return self.copy_(aten.mvlgamma(self, p))


def special_softmax(self: Any, dim: int, dtype: Any = None) -> Any:
    return aten.softmax_int(self, dim, dtype)


def special_log_softmax(self: Any, dim: int, dtype: Any = None) -> Any:
    return aten.log_softmax_int(self, dim, dtype)


def special_xlogy_other_scalar(self: Any, other: Any) -> Any:
    return aten.xlogy_Scalar_Other(self, other)


def special_xlogy_self_scalar(self: Any, other: Any) -> Any:
    return aten.xlogy_Scalar_Self(self, other)


def special_round(self: Any, decimals: int = 0) -> Any:
    return aten.round_decimals(self, decimals=decimals)


def square(self: Any) -> Any:
    """``pow(self, 2)`` (PyTorch's ``square`` is written so: a dispatch handler sees ``pow.Tensor_Scalar``)."""
    return aten.pow_Tensor_Scalar(self, 2)


def square_(self: Any) -> Any:
    return aten.pow__Scalar(self, 2)


def isfinite(self: Any) -> Any:
    """PyTorch's ``isfinite``: all true for integers and bools, both parts finite for complex numbers, else
    ``(self == self) * (self.abs() != inf)`` (the right factor evaluated first, as C++ does)."""
    if not (self.is_floating_point() or self.is_complex()):     # bool and integer types
        return aten.ones_like(self, dtype=bool_)
    if self.is_complex():
        return aten.bitwise_and_Tensor(isfinite(aten.real(self)), isfinite(aten.imag(self)))
    finite = aten.ne_Scalar(aten.abs(self), float("inf"))
    return aten.mul_Tensor(aten.eq_Tensor(self, self), finite)


def clip(self: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    return aten.clamp(self, min, max)


def clip_Tensor(self: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    return aten.clamp_Tensor(self, min, max)


def clip_(self: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    return aten.clamp_(self, min, max)


def special_gammainc(self: Any, other: Any, out: Any = None) -> Any:
    """The regularised lower incomplete gamma function (``igamma``)."""
    return aten.igamma(self, other) if out is None else aten.igamma_out(self, other, out=out)


def special_gammaincc(self: Any, other: Any, out: Any = None) -> Any:
    """The regularised upper incomplete gamma function (``igammac``)."""
    return aten.igammac(self, other) if out is None else aten.igammac_out(self, other, out=out)


def polygamma_(self: Any, n: Any) -> Any:
    return self.copy_(aten.polygamma(n, self))


def _float_power_dtype(*operands: Any) -> Any:
    """double, or complex double when an operand is complex (a tensor or a number)."""
    complex_ = any(x.is_complex() if hasattr(x, "is_complex") else isinstance(x, complex) for x in operands)
    return complex128 if complex_ else float64


def float_power_Tensor_Tensor(self: Any, exponent: Any) -> Any:
    """``pow`` in double (complex double): both operands converted first (Pow.cpp)."""
    dtype = _float_power_dtype(self, exponent)
    return aten.pow_Tensor_Tensor(self.to(dtype), exponent.to(dtype))


def float_power_Tensor_Scalar(self: Any, exponent: Any) -> Any:
    dtype = _float_power_dtype(self, exponent)
    return aten.pow_Tensor_Scalar(self.to(dtype), complex(exponent) if isinstance(exponent, complex) else
                                  float(exponent))


def float_power_Scalar(self: Any, exponent: Any) -> Any:
    dtype = _float_power_dtype(self, exponent)
    return aten.pow_Scalar(complex(self) if isinstance(self, complex) else float(self), exponent.to(dtype))


def _float_power_check(self: Any, exponent: Any) -> None:
    exp_complex = exponent.is_complex() if hasattr(exponent, "is_complex") else isinstance(exponent, complex)
    want = complex128 if (self.is_complex() or exp_complex) else float64
    if self.dtype != want:
        raise RuntimeError(f"the base given to float_power_ has dtype {scalar_type_name(self.dtype)} but the "
                           "operation's "
                           f"result requires dtype {scalar_type_name(want)}")


def float_power__scalar(self: Any, exponent: Any) -> Any:
    """In place only into a double (complex double) base: ``pow_`` with the exponent in double."""
    _float_power_check(self, exponent)
    return self.pow_(complex(exponent) if self.is_complex() else float(exponent))


def float_power__tensor(self: Any, exponent: Any) -> Any:
    _float_power_check(self, exponent)
    return self.pow_(exponent.to(self.dtype))
