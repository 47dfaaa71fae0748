"""dtypes and PyTorch's promotion rules, checked against PyTorch for every pair."""
import itertools

import re

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
         "complex64", "complex128"]


def E(n):
    return getattr(ember, n)


def T(n):
    return getattr(torch, n)


@pytest.mark.parametrize("a,b", list(itertools.product(NAMES, NAMES)))
def test_promote_types_matches_pytorch(a, b):
    assert ember.promote_types(E(a), E(b)).name == str(torch.promote_types(T(a), T(b))).split(".")[-1]


@pytest.mark.parametrize("a,b", list(itertools.product(NAMES, NAMES)))
def test_can_cast_matches_pytorch(a, b):
    assert ember.can_cast(E(a), E(b)) == torch.can_cast(T(a), T(b))


SCALARS = [True, 2, 2.5, 1 + 2j]


@pytest.mark.parametrize("a", NAMES)
@pytest.mark.parametrize("scalar", SCALARS, ids=["bool", "int", "float", "complex"])
@pytest.mark.parametrize("zero_dim", [False, True])
def test_result_type_with_weak_operands(a, scalar, zero_dim):
    if a == "float16" and isinstance(scalar, complex):
        pytest.skip("PyTorch gives complex32 (ComplexHalf), a dtype ember does not have; ember gives complex64")
    shape = () if zero_dim else (2,)
    et = ember.zeros(shape, dtype=E(a))
    tt = torch.zeros(shape, dtype=T(a))
    assert ember.result_type(et, scalar).name == str(torch.result_type(tt, scalar)).split(".")[-1]


@pytest.mark.parametrize("a,b", list(itertools.product(NAMES, NAMES)))
def test_result_type_dim_with_zero_dim_tensor(a, b):
    if a == "float16" and b.startswith("complex"):
        pytest.skip("PyTorch gives complex32 (ComplexHalf), a dtype ember does not have; ember gives complex64")
    e = ember.result_type(ember.zeros(2, dtype=E(a)), ember.zeros((), dtype=E(b)))
    t = torch.result_type(torch.zeros(2, dtype=T(a)), torch.zeros((), dtype=T(b)))
    assert e.name == str(t).split(".")[-1]


def test_dtype_attributes_and_repr():
    assert repr(ember.float32) == "ember.float32"
    assert ember.float is ember.float32 and ember.double is ember.float64 and ember.long is ember.int64
    assert ember.float16.itemsize == 2 and ember.bfloat16.itemsize == 2 and ember.complex128.itemsize == 16
    assert ember.float32.is_floating_point and not ember.int32.is_floating_point
    assert ember.complex64.is_complex and ember.int8.is_signed and not ember.uint8.is_signed


@pytest.mark.parametrize("n", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_pytorch(n):
    e, t = ember.finfo(E(n)), torch.finfo(T(n))
    for attr in ("bits", "eps", "max", "min", "tiny", "resolution"):
        assert getattr(e, attr) == getattr(t, attr), attr


@pytest.mark.parametrize("n", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_pytorch(n):
    e, t = ember.iinfo(E(n)), torch.iinfo(T(n))
    assert (e.bits, e.min, e.max) == (t.bits, t.min, t.max)


def test_finfo_refuses_integers():
    with pytest.raises(TypeError):
        ember.finfo(ember.int32)
    with pytest.raises(TypeError):
        ember.iinfo(ember.float32)


def test_default_dtype_governs_python_floats():
    assert ember.get_default_dtype() is ember.float32
    assert ember.tensor([1.5]).dtype is ember.float32
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor([1.5]).dtype is ember.float64
        assert (ember.tensor([1, 2]) + 1.5).dtype is ember.float64
        assert ember.tensor(1j).dtype is ember.complex128
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(TypeError):
        ember.set_default_dtype(ember.int32)


def test_bfloat16_round_trips_through_ml_dtypes():
    x = ember.tensor([1.0, 2.5, -3.25], dtype=ember.bfloat16)
    assert x.dtype is ember.bfloat16
    assert x.tolist() == [1.0, 2.5, -3.25]
    assert str(x.numpy().dtype) == "bfloat16"
    assert (x + x).dtype is ember.bfloat16
    assert (x.float() * 2).tolist() == [2.0, 5.0, -6.5]


def test_from_numpy_dtype_refuses_unsupported():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type"):
        ember.from_numpy(np.zeros(2, np.float128 if hasattr(np, "float128") else np.object_))
    with pytest.raises(TypeError, match="can't convert np.ndarray of type"):
        ember.from_numpy(np.zeros(2, "U1"))


LIMITED = ["uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
           "float8_e8m0fnu"]


@pytest.mark.parametrize("name", LIMITED)
def test_the_limited_dtypes_promote_convert_and_describe_themselves_as_pytorchs(name):
    """Note [Limited dtypes]: stored and converted, refused by promotion except the wide unsigned types with a
    floating type; finfo / iinfo, ``.type()`` and the error messages as PyTorch's."""
    torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
    e, t = getattr(ember, name), getattr(torch, name)
    for other in ("float32", "int32", "uint8", "bool", "float64", name):
        try:
            want = str(torch.promote_types(t, getattr(torch, other))).split(".")[-1]
        except RuntimeError as exc:
            with pytest.raises(RuntimeError, match=re.escape(str(exc))):
                ember.promote_types(e, getattr(ember, other))
            continue
        assert ember.promote_types(e, getattr(ember, other)).name == want
    src = [0.5, 2.0, 3.0] if e.is_floating_point else [1, 2, 300]
    xt, xe = torch.tensor(src).to(t), ember.tensor(src).to(e)
    assert xe.type() == xt.type() and xe.dtype.itemsize == xt.element_size()
    np.testing.assert_array_equal(xe.double().numpy(), xt.double().numpy())
    info_e, info_t = (ember.finfo(e), torch.finfo(t)) if e.is_floating_point else (ember.iinfo(e), torch.iinfo(t))
    assert (info_e.bits, float(info_e.max), float(info_e.min)) == (info_t.bits, float(info_t.max), float(info_t.min))
