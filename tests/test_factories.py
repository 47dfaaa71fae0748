"""Factories against PyTorch: values, dtypes, shapes, devices and errors."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def same(e, t):
    assert e.dtype.name == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.numpy().astype(np.float64), t.numpy().astype(np.float64), rtol=1e-6, atol=1e-7)


CALLS = [
    lambda L: L.zeros(2, 3), lambda L: L.zeros((2, 3), dtype=L.int32), lambda L: L.ones(4),
    lambda L: L.ones([2, 2], dtype=L.float64), lambda L: L.full((2, 3), 7), lambda L: L.full((2,), 1.5),
    lambda L: L.full((2,), True), lambda L: L.full((3,), 2, dtype=L.float16), lambda L: L.zeros(0, 3),
    lambda L: L.arange(5), lambda L: L.arange(1, 4), lambda L: L.arange(0, 1, 0.1), lambda L: L.arange(10, 0, -3),
    lambda L: L.arange(5.0), lambda L: L.arange(0, 5, dtype=L.float64), lambda L: L.arange(-1.5, 2.5, 0.5),
    lambda L: L.linspace(0, 1, 5), lambda L: L.linspace(-3, 7, 11), lambda L: L.linspace(0, 1, 1),
    lambda L: L.linspace(0, 10, 7, dtype=L.float64), lambda L: L.linspace(0, 10, 5, dtype=L.int64),
    lambda L: L.logspace(0, 2, 3), lambda L: L.logspace(0, 3, 4, base=2.0),
    lambda L: L.eye(3), lambda L: L.eye(2, 4), lambda L: L.eye(3, dtype=L.int64),
    lambda L: L.tril_indices(3, 3), lambda L: L.triu_indices(4, 3, 1), lambda L: L.tril_indices(3, 4, -1),
    lambda L: L.zeros_like(L.ones(2, 3)), lambda L: L.ones_like(L.ones(2, dtype=L.int8)),
    lambda L: L.full_like(L.ones(2, 3), 4.5), lambda L: L.zeros_like(L.ones(2), dtype=L.float64),
    lambda L: L.empty(2, 3).fill_(1.25), lambda L: L.empty_like(L.ones(3)).zero_(),
    lambda L: L.ones(2, 3).new_zeros(4), lambda L: L.ones(2, dtype=L.int32).new_ones((2, 2)),
    lambda L: L.ones(2).new_full((3,), 9), lambda L: L.ones(2).new_empty((2, 5)).fill_(0),
    lambda L: L.ones(2, dtype=L.float64).new_tensor([1, 2]),
    lambda L: L.scalar_tensor(3), lambda L: L.scalar_tensor(2.5, dtype=L.float64),
]


@pytest.mark.parametrize("make", CALLS)
def test_factory_matches_pytorch(make):
    same(make(ember), make(torch))


@pytest.mark.parametrize("data", [
    [1, 2, 3], [1.0, 2.0], [[1, 2], [3, 4]], [True, False], [1, 2.5], [1, True], 3, 2.5, True, 1 + 2j,
    [[1.5]], [], [[], []], np.float64(2.0), np.int32(3), [np.float32(1.0), np.float32(2.0)],
])
def test_tensor_infers_dtype_like_pytorch(data):
    same(ember.tensor(data), torch.tensor(data))


@pytest.mark.parametrize("arr", [np.arange(6.0).reshape(2, 3), np.arange(4, dtype=np.int32),
                                 np.array([True, False]), np.zeros((2, 0)), np.ones(3, np.float16)])
def test_numpy_arrays_keep_their_dtype(arr):
    same(ember.tensor(arr), torch.tensor(arr))
    same(ember.as_tensor(arr), torch.as_tensor(arr))
    same(ember.from_numpy(arr), torch.from_numpy(arr))


def test_tensor_with_explicit_dtype_and_device():
    x = ember.tensor([1, 2], dtype=ember.float64, device="cpu")
    assert x.dtype is ember.float64 and x.device.type == "cpu"
    m = ember.tensor([1.0, 2.0], device="meta")
    assert m.is_meta and m.shape == (2,)
    assert ember.tensor([[0.0]]).dtype is ember.float32


def test_tensor_from_tensors_and_lists_of_tensors():
    a = ember.tensor([ember.tensor(1.0), ember.tensor(2.0)])
    assert a.tolist() == [1.0, 2.0]
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        b = ember.tensor(a)
    assert b.data_ptr() != a.data_ptr()


@pytest.mark.parametrize("bad,exc,match", [
    ([[1, 2], [3]], ValueError, "expected sequence of length 2 at dim 1 \\(got 1\\)"),
    ("abc", TypeError, "invalid data type 'str'"),
    ([1, "a"], TypeError, "invalid data type 'str'"),
])
def test_tensor_bad_data(bad, exc, match):
    with pytest.raises(exc):
        torch.tensor(bad)
    with pytest.raises(exc, match=match):
        ember.tensor(bad)


def test_as_tensor_and_from_numpy_share_memory():
    a = np.zeros(3)
    t = ember.as_tensor(a)
    a[0] = 5
    assert t[0].item() == 5.0
    assert ember.as_tensor(t) is t
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(np.arange(3)[::-1])


@pytest.mark.parametrize("call,exc", [
    (lambda L: L.zeros(-1), RuntimeError),
    (lambda L: L.arange(0, 10, 0), RuntimeError),
    (lambda L: L.arange(10, 0, 1), RuntimeError),
    (lambda L: L.linspace(0, 1, -1), RuntimeError),
    (lambda L: L.eye(-2), RuntimeError),
    (lambda L: L.zeros(2, dtype="float32"), TypeError),
])
def test_factory_errors(call, exc):
    with pytest.raises(exc):
        call(torch)
    with pytest.raises(exc):
        call(ember)


def test_factories_on_meta_allocate_nothing():
    m = ember.zeros(10 ** 9, device="meta")
    assert m.shape == (10 ** 9,) and m.dtype is ember.float32 and m.is_meta
    assert ember.arange(10, device="meta").dtype is ember.int64
    assert ember.full((2, 3), 1.5, device="meta").stride() == (3, 1)


def test_default_device_context():
    with ember.device("meta"):
        assert ember.zeros(3).is_meta
    assert ember.zeros(3).is_cpu


def test_size_object():
    s = ember.zeros(2, 3).shape
    assert s == (2, 3) and isinstance(s, ember.Size) and repr(s) == "ember.Size([2, 3])"
    assert s.numel() == 6 and isinstance(s[1:], ember.Size)
    assert ember.zeros(2, 3).size(1) == 3 and ember.zeros(2, 3).size(-1) == 3
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.zeros(2, 3).size(2)


def test_tensor_converts_python_numbers_straight_to_the_requested_dtype():
    torch = pytest.importorskip("torch")
    for data, name in [([1 / 3, 2 / 3], "float64"), (1 / 3, "float64"), ([[1, 2 ** 40]], "float64"),
                       ([1.7, -2.5], "int64"), ([0.1], "complex128")]:
        e = ember.tensor(data, dtype=getattr(ember, name))
        t = torch.tensor(data, dtype=getattr(torch, name))
        assert np.array_equal(e.numpy(), t.numpy()), (data, name)


def test_empty_strided_frombuffer_and_dlpack_match_pytorch():
    import warnings
    torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed")
    for L in (torch, ember):
        t = L.empty_strided((2, 3), (1, 2), dtype=L.float64)
        assert t.stride() == (1, 2) and t.dtype is L.float64 and t._base is None
        assert L.ones(2).new_empty_strided((2, 2), (1, 2)).stride() == (1, 2)
        assert L.frombuffer(bytearray(b"\x01\x02\x03\x04"), dtype=L.int16).tolist() == [513, 1027]
        buf = bytearray(8)
        L.frombuffer(buf, dtype=L.uint8, count=2, offset=3)[0] = 7  # shares the buffer
        assert buf[3] == 7
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert L.frombuffer(b"\x00\x00\x80\x3f", dtype=L.float32).tolist() == [1.0]
        assert any("not writable" in str(w.message) for w in caught)
        with pytest.raises(ValueError, match="must be a multiple of element size"):
            L.frombuffer(bytearray(3), dtype=L.int16)
        a = np.arange(3.0)
        L.from_dlpack(a)[0] = 5  # shares NumPy's memory
        assert a[0] == 5
        assert np.from_dlpack(L.ones(2)).tolist() == [1.0, 1.0]
        assert L.from_dlpack(L.utils.dlpack.to_dlpack(L.arange(3))).tolist() == [0, 1, 2]


# -- memory formats of new tensors: empty_like's rule (preserve_format: the same strides where they are dense, the
# same order of strides made dense where they are not), channels_last, and Tensor.to / _to_copy
def _layouts(L):
    g = np.arange(120.0)
    return {
        "transposed": L.tensor(g[:12].reshape(3, 4)).t(),
        "channels_last": L.tensor(g.reshape(2, 3, 4, 5)).to(memory_format=L.channels_last),
        "sliced": L.tensor(g.reshape(2, 3, 4, 5))[:, :, ::2],
        "expanded": L.tensor(g[:6].reshape(3, 1, 2)).expand(3, 4, 2),
        "permuted with a size-1 dim": L.tensor(g[:12].reshape(4, 1, 3)).permute(2, 1, 0),
        "channels_last, size-1 spatial dims": L.tensor(g[:6].reshape(2, 3, 1, 1)).to(memory_format=L.channels_last),
        "sliced, then permuted": L.tensor(g.reshape(4, 5, 6))[:, 1:4].permute(1, 2, 0),
        "contiguous": L.tensor(g[:24].reshape(2, 3, 4)),
    }


LIKE = {
    "empty_like": lambda L, t: L.empty_like(t), "zeros_like": lambda L, t: L.zeros_like(t),
    "ones_like": lambda L, t: L.ones_like(t), "full_like": lambda L, t: L.full_like(t, 2.5),
    "empty_like(contiguous_format)": lambda L, t: L.empty_like(t, memory_format=L.contiguous_format),
    "to(float32)": lambda L, t: t.to(L.float32), "double()": lambda L, t: t.double(), "clone()": lambda L, t: t.clone(),
    "half(memory_format=contiguous_format)": lambda L, t: t.half(memory_format=L.contiguous_format),
    "to(memory_format=contiguous_format)": lambda L, t: t.to(memory_format=L.contiguous_format),
    "to(copy=True)": lambda L, t: t.to(copy=True),
}


@pytest.mark.parametrize("layout", list(_layouts(torch)))
@pytest.mark.parametrize("make", list(LIKE))
def test_tensors_made_like_another_take_pytorchs_strides(layout, make):
    e, t = LIKE[make](ember, _layouts(ember)[layout]), LIKE[make](torch, _layouts(torch)[layout])
    assert (tuple(e.shape), e.stride(), e.dtype.name) == (tuple(t.shape), t.stride(), str(t.dtype)[6:])
    if "empty" not in make:
        np.testing.assert_array_equal(e.float().numpy(), t.float().numpy())


@pytest.mark.parametrize("make", [
    lambda L: L.empty(2, 3, 4, 5, memory_format=L.channels_last),
    lambda L: L.empty(2, 3, 4, 5, 6, memory_format=L.channels_last_3d),
    lambda L: L.ones(2, 3, 4, 5).to(L.float64, memory_format=L.channels_last),
    lambda L: L.ones(2, 3, 4, 5).cpu(memory_format=L.channels_last),
    lambda L: L.zeros_like(L.ones(2, 3, 4, 5), memory_format=L.channels_last),
    lambda L: L.ones(2, 3, 4, 5).float(memory_format=L.channels_last).float(memory_format=L.contiguous_format),
])
def test_channels_last_tensors_as_pytorchs(make):
    e, t = make(ember), make(torch)
    assert (tuple(e.shape), e.stride()) == (tuple(t.shape), t.stride())
    assert e.is_contiguous(memory_format=ember.channels_last) == t.is_contiguous(memory_format=torch.channels_last)


def test_to_aliases_where_pytorch_does():
    for L in (torch, ember):
        c = L.ones(2, 3, 4, 5).to(memory_format=L.channels_last)
        x = L.ones(3, 4).t()
        assert c.to(memory_format=L.channels_last) is c and c.to(memory_format=L.preserve_format) is c
        assert c.to(memory_format=L.contiguous_format) is not c
        assert x.to(memory_format=L.contiguous_format) is x      # (what suggest_memory_format says of a transpose)
        assert L.ones(2, 3, 4, 5).to(memory_format=L.contiguous_format).stride() == (60, 20, 5, 1)


@pytest.mark.parametrize("make", [
    lambda L: L.empty(2, 3, 4, memory_format=L.channels_last),
    lambda L: L.empty(2, 3, 4, 5, memory_format=L.channels_last_3d),
    lambda L: L.empty(2, 3, memory_format=L.preserve_format),
    lambda L: L.zeros_like(L.ones(2, 3), memory_format=L.channels_last),
    lambda L: L.ones(2, 3).to(memory_format=L.channels_last),
])
def test_memory_format_errors_are_pytorchs(make):
    with pytest.raises(RuntimeError) as t:
        make(torch)
    with pytest.raises(RuntimeError, match=str(t.value).splitlines()[0]):
        make(ember)
