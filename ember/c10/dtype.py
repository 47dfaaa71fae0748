"""Scalar types and PyTorch's type-promotion rules (mirrors ``c10/core/ScalarType.h``).

Every ember dtype maps one-to-one to a NumPy dtype (bfloat16 through ``ml_dtypes``); kernels work on
NumPy (or CuPy) arrays, and this module answers "which ember dtype is this array" and "what dtype
does PyTorch give this combination of operands".

Note [Type promotion]
PyTorch promotes by *category* (bool < integral < floating < complex) and lets operands of three
priorities take part: tensors with at least one dimension, zero-dimensional tensors, and Python
scalars ("wrapped numbers").  A lower-priority operand only changes the result when its category is
higher: ``int32 tensor + 1.5 -> float32`` (the default dtype), ``uint8 tensor + int64 0-dim -> uint8``,
``int32 tensor + float64 0-dim -> float64``.  This differs from NumPy; see ``result_type``.
"""
from __future__ import annotations

import builtins
from typing import Any, Iterable

import ml_dtypes
import numpy as np
from ember.c10 import naming

__all__ = [
    "dtype", "float16", "half", "bfloat16", "float32", "float", "float64", "double", "int8", "int16",
    "short", "int32", "int", "int64", "long", "uint8", "bool", "complex64", "cfloat", "complex128",
    "cdouble", "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e8m0fnu", "qint8", "quint8", "qint32",
    "promote_types", "can_cast", "result_type_of", "get_default_dtype", "set_default_dtype",
    "finfo", "iinfo", "from_numpy_dtype",
]

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type, printed ``ember.float32``."""
    __module__ = "ember"      # where it is public (Note [Printed module name])

    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_complex", "is_signed", "_cat", "_limited",
                 "__weakref__")

    def __init__(self, name: str, np_dtype: Any, cat: int, signed: bool, limited: str = "") -> None:
        self.name = name
        self._limited = limited  # "float8" / "unsigned": types PyTorch stores and converts but hardly computes in
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.is_floating_point = cat == _FLOAT
        self.is_complex = cat == _COMPLEX
        self.is_signed = signed
        self._cat = cat

    def __repr__(self) -> str:
        return f"{naming.prefix}.{self.name}"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (_dtype_by_name, (self.name,))

    def to_real(self) -> dtype:
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    def to_complex(self) -> dtype:
        return {"float64": complex128, "complex128": complex128}.get(self.name, complex64)


float16 = half = dtype("float16", np.float16, _FLOAT, True)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, _FLOAT, True)
float32 = dtype("float32", np.float32, _FLOAT, True)
float64 = double = dtype("float64", np.float64, _FLOAT, True)
int8 = dtype("int8", np.int8, _INT, True)
int16 = short = dtype("int16", np.int16, _INT, True)
int32 = dtype("int32", np.int32, _INT, True)
int64 = long = dtype("int64", np.int64, _INT, True)
uint8 = dtype("uint8", np.uint8, _INT, False)
bool_ = dtype("bool", np.bool_, _BOOL, False)
complex64 = cfloat = dtype("complex64", np.complex64, _COMPLEX, True)
complex128 = cdouble = dtype("complex128", np.complex128, _COMPLEX, True)

# Note [Limited dtypes]: PyTorch has these for storage and conversion (float8 for quantized matmuls, the wide
# unsigned types for interchange); they do not promote with other dtypes (see promote_types) and few CPU kernels
# take them. ember keeps them as NumPy / ml_dtypes arrays, so what NumPy can compute on them works.
uint16 = dtype("uint16", np.uint16, _INT, False, "unsigned")
uint32 = dtype("uint32", np.uint32, _INT, False, "unsigned")
uint64 = dtype("uint64", np.uint64, _INT, False, "unsigned")
float8_e4m3fn = dtype("float8_e4m3fn", ml_dtypes.float8_e4m3fn, _FLOAT, True, "float8")
float8_e5m2 = dtype("float8_e5m2", ml_dtypes.float8_e5m2, _FLOAT, True, "float8")
float8_e4m3fnuz = dtype("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, _FLOAT, True, "float8")
float8_e5m2fnuz = dtype("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, _FLOAT, True, "float8")
float8_e8m0fnu = dtype("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, _FLOAT, False, "float8")
# Note [Quantized dtypes]: a quantized tensor's elements are integers that stand for ``(q - zero_point) * scale``;
# its array holds them in a one-field structured NumPy dtype (``[("qint8", "i1")]``), so that the array's dtype
# says "quantized" everywhere (views, copies, storages) while ``arr.view(np.int8)`` reads the integers. No NumPy
# arithmetic applies to such an array: only the QuantizedCPU kernels (ember/aten/quantized) touch it.
qint8 = dtype("qint8", np.dtype([("qint8", np.int8)]), _INT, True, "quantized")
quint8 = dtype("quint8", np.dtype([("quint8", np.uint8)]), _INT, False, "quantized")
qint32 = dtype("qint32", np.dtype([("qint32", np.int32)]), _INT, True, "quantized")
QUANTIZED_DTYPES = (qint8, quint8, qint32)
LIMITED_DTYPES = (uint16, uint32, uint64, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz,
                  float8_e8m0fnu) + QUANTIZED_DTYPES
# PyTorch's C++ ScalarType names (``Float``, ``Float8_e4m3fn``), for messages
SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                     "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
                     "complex64": "ComplexFloat", "complex128": "ComplexDouble", "uint16": "UInt16", "uint32": "UInt32",
                     "uint64": "UInt64", "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2": "Float8_e5m2",
                     "float8_e4m3fnuz": "Float8_e4m3fnuz",
                     "float8_e5m2fnuz": "Float8_e5m2fnuz", "float8_e8m0fnu": "Float8_e8m0fnu", "qint8": "QInt8",
                     "quint8": "QUInt8", "qint32": "QInt32"}
# the C++ element types' names (``float``, ``long int``, ``c10::Half``), as c10's ``toString`` of a TypeMeta prints
CPP_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                  "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                  "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
                  "complex128": "c10::complex<double>"}


def cpp_type_name(name: str) -> str:
    """The C++ element type's name of the dtype called ``name`` (its own name when c10 has none)."""
    return CPP_TYPE_NAMES.get(name, name)


BF16_NP = bfloat16.np  # compare dtypes with this: ``np.dtype.name`` costs microseconds
# ``ember.float`` / ``ember.int`` / ``ember.bool`` are set in ember/__init__.py (they shadow builtins).
ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64,
              complex128) + LIMITED_DTYPES
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NP = {d.np: d for d in ALL_DTYPES}
# aliases PyTorch accepts in ``Tensor.type(...)`` and friends
_BY_NAME.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64,
                cfloat=complex64, cdouble=complex128)


def _dtype_by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype: Any) -> dtype:
    """The ember dtype of a NumPy dtype; TypeError for dtypes ember does not have."""
    try:
        return _BY_NP[np_dtype]
    except KeyError:
        d = _BY_NP.get(np.dtype(np_dtype))
        if d is None:
            raise TypeError(
                f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
                "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, "
                "uint16, uint8, and bool.") from None
        return d


# --------------------------------------------------------------------------- promotion
_INT_ORDER = {uint8: 0, int8: 1, int16: 2, int32: 3, int64: 4}


def _promote_uncached(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a._cat == _BOOL:
        return b
    if b._cat == _BOOL:
        return a
    if a._cat == _INT and b._cat == _INT:
        if {a, b} == {uint8, int8}:
            return int16
        return a if _INT_ORDER[a] > _INT_ORDER[b] else b
    if a._cat != b._cat:  # the higher category wins; a float with a complex keeps its precision
        hi, lo = (a, b) if a._cat > b._cat else (b, a)
        if hi._cat == _COMPLEX and lo is float64:
            return complex128
        return hi
    if a._cat == _FLOAT:
        if {a, b} == {float16, bfloat16}:
            return float32
        order = {float16: 0, bfloat16: 0, float32: 1, float64: 2}
        return a if order[a] > order[b] else b
    return a if a.itemsize > b.itemsize else b  # complex


def scalar_type_name(d: dtype) -> str:
    """PyTorch's C++ ScalarType name of a dtype (``Float``, ``Long``), as its messages print it."""
    return SCALAR_TYPE_NAMES[d.name]


def _promotion_error(a: dtype, b: dtype) -> str | None:
    """PyTorch refuses to promote the limited dtypes (Note [Limited dtypes]) with any other, save the wide
    unsigned types with a floating type."""
    if a is b:
        return None
    if a._limited == "quantized" or b._limited == "quantized":
        return ("promoteTypes with quantized numbers is not handled yet; figure out what the correct rules should "
                f"be, offending types: {scalar_type_name(a)} {scalar_type_name(b)}")
    if a._limited == "float8" or b._limited == "float8":
        return (f"Promotion for Float8 Types is not supported, attempted to promote {scalar_type_name(a)} and "
                f"{scalar_type_name(b)}")
    if a._limited or b._limited:
        if (a.is_floating_point and not a._limited) or (b.is_floating_point and not b._limited):
            return None
        return ("Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                f"{scalar_type_name(a)} and {scalar_type_name(b)}")
    return None


def _promote_limited(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    return a if a.is_floating_point else b


_PROMOTE = {(a, b): (_promote_limited(a, b) if a._limited or b._limited else _promote_uncached(a, b))
            for a in ALL_DTYPES for b in ALL_DTYPES if _promotion_error(a, b) is None}


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype to which both can be converted (``torch.promote_types``)."""
    try:
        return _PROMOTE[(type1, type2)]
    except KeyError:
        raise RuntimeError(_promotion_error(type1, type2)) from None


def can_cast(from_: dtype, to: dtype) -> builtins.bool:
    """PyTorch's same-kind rule: no complex -> real, no floating -> integral, no non-bool -> bool."""
    if from_._cat > to._cat:
        return False
    return True


_default = float32


def get_default_dtype() -> dtype:
    return _default


def set_default_dtype(d: dtype) -> None:
    global _default
    if not isinstance(d, dtype) or d not in (float16, bfloat16, float32, float64):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default = d


def default_complex_dtype() -> dtype:
    return complex128 if _default is float64 else complex64


def scalar_dtype(value: object) -> dtype:
    """The dtype PyTorch gives a Python scalar on its own (``torch.tensor(1.5).dtype``)."""
    t = type(value)
    if t is builtins.bool or t is np.bool_:
        return bool_
    if t is builtins.int or isinstance(value, np.integer):
        return int64
    if t is builtins.float or isinstance(value, np.floating):
        return _default
    if t is builtins.complex or isinstance(value, np.complexfloating):
        return default_complex_dtype()
    raise TypeError(f"expected a number, got {type(value).__name__}")


def _combine_categories(higher: dtype | None, lower: dtype | None) -> dtype | None:
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher._cat == _COMPLEX:
        return higher
    if lower._cat == _COMPLEX:
        return higher.to_complex() if higher._cat == _FLOAT else lower
    if higher._cat == _FLOAT:
        return higher
    if higher._cat == _BOOL or lower._cat == _FLOAT:
        return promote_types(higher, lower)
    return higher


def result_type_of(operands: Iterable[Any]) -> dtype:
    """Result dtype of an elementwise op over arrays and Python scalars (Note [Type promotion]).

    ``operands`` are NumPy/CuPy arrays (a 0-d array stands for a 0-dim tensor) or Python numbers.
    """
    dim = zero = wrapped = None
    for op in operands:
        nd = getattr(op, "ndim", None)
        if nd is None:
            d = scalar_dtype(op)
            wrapped = d if wrapped is None else promote_types(wrapped, d)
        else:
            d = _BY_NP[op.dtype]
            if nd:
                dim = d if dim is None else promote_types(dim, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
    r = _combine_categories(dim, _combine_categories(zero, wrapped))
    if r is None:
        raise TypeError("result_type_of() needs at least one operand")
    return r


# --------------------------------------------------------------------------- finfo / iinfo
class finfo:
    """Machine limits of a floating-point dtype (``torch.finfo``)."""
    __module__ = "ember"      # where it is public (Note [Printed module name])

    def __init__(self, type: dtype | None = None) -> None:  # noqa: A002
        type = type or _default
        if not (type.is_floating_point or type.is_complex):
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to "
                            "handle 'torch.finfo'")
        info: Any = ml_dtypes.finfo(type.to_real().np) if (type is bfloat16 or type._limited) else np.finfo(  # type: ignore[no-untyped-call]
            type.to_real().np)
        self.bits = info.bits
        self.eps = builtins.float(info.eps)
        self.max = builtins.float(info.max)
        self.min = builtins.float(info.min)
        self.tiny = self.smallest_normal = builtins.float(info.tiny)
        self.resolution = 10.0 ** -builtins.int(-np.log10(builtins.float(info.eps)))
        self.dtype = type.to_real().name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Machine limits of an integral dtype (``torch.iinfo``)."""
    __module__ = "ember"      # where it is public (Note [Printed module name])

    def __init__(self, type: dtype):
        if type.is_floating_point or type.is_complex:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                            "'torch.iinfo'")
        if type is bool_:
            self.bits, self.min, self.max = 8, 0, 1
        else:   # a quantized dtype: the limits of its integers (Note [Quantized dtypes])
            info = np.iinfo(type.np[0] if type._limited == "quantized" else type.np)
            self.bits, self.min, self.max = info.bits, builtins.int(info.min), builtins.int(info.max)
        self.dtype = type.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
