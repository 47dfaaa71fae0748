"""Tensor indexing and index assignment against PyTorch (basic views, advanced copies, masks)."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

A = np.arange(60.0).reshape(3, 4, 5)

INDICES = [
    0, -1, (1, 2), (1, 2, 3), slice(1, None), (slice(None), 1), (Ellipsis, 2), (None, 1), (1, None, slice(None, 2)),
    (slice(None, None, 2), slice(1, 3)), (slice(5, 10),), [0, 2], ([0, 2], [1, 3]), (slice(None), [1, 3]),
    (0, slice(None), [0, 4]), (0, [1, 2], slice(None)), ([[0], [2]], [1, 3]), "mask", "mask2d", (1, "mask1d"),
    (Ellipsis, None), (True,), (slice(None), [-1]), ([0, 0, 1],), (slice(1, 2), [0, 3], [1, 1]),
    (Ellipsis, 1, None), (None, Ellipsis), (None, None, 0), (Ellipsis, slice(1, None)),
    (1, Ellipsis, None, slice(2, 4)), (None, 1, None, Ellipsis, 2), (Ellipsis, 0, 1, 2), (0, 1, 2, Ellipsis),
    (Ellipsis,), (None,),
]


def materialize(idx, lib):
    def conv(i):
        if i == "mask":
            return lib.tensor(A > 30)
        if i == "mask2d":
            return lib.tensor(A[..., 0] > 20)
        if i == "mask1d":
            return lib.tensor(np.array([True, False, True, True]))
        return i
    if isinstance(idx, tuple):
        return tuple(conv(i) for i in idx)
    return conv(idx)


@pytest.mark.parametrize("idx", INDICES, ids=[str(i) for i in INDICES])
def test_getitem_matches_pytorch(idx):
    e = ember.tensor(A)[materialize(idx, ember)]
    t = torch.tensor(A)[materialize(idx, torch)]
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert e._is_view() == t._is_view() and (not t._is_view() or e.stride() == t.stride())


@pytest.mark.parametrize("idx", [(Ellipsis, 0, 0, 0, 0), (0, 0, 0, 0)])
def test_bad_basic_indices_match_pytorch(idx):
    with pytest.raises(IndexError) as te:
        torch.zeros(3, 4, 5)[idx]
    with pytest.raises(IndexError) as ee:
        ember.zeros(3, 4, 5)[idx]
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("idx", INDICES, ids=[str(i) for i in INDICES])
def test_setitem_matches_pytorch(idx):
    e, t = ember.tensor(A), torch.tensor(A)
    e[materialize(idx, ember)] = -1.0
    t[materialize(idx, torch)] = -1.0
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert e._version == 1


def test_basic_indexing_returns_views():
    x = ember.tensor(A)
    v = x[1, :, 2:4]
    assert v.data_ptr() != 0 and v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    v.fill_(0)
    assert x[1, 0, 2].item() == 0
    assert x[1, 0, 0].item() == A[1, 0, 0]


def test_advanced_indexing_copies():
    x = ember.tensor(A)
    c = x[[0, 1]]
    c.fill_(-5)
    assert x[0, 0, 0].item() == 0.0


def test_setitem_with_tensor_values_broadcasts():
    e, t = ember.zeros(3, 4), torch.zeros(3, 4)
    e[:, 1] = ember.tensor([1.0, 2.0, 3.0])
    t[:, 1] = torch.tensor([1.0, 2.0, 3.0])
    e[e > 1] = ember.tensor(9.0)
    t[t > 1] = torch.tensor(9.0)
    e[[0, 2], :] = ember.arange(4.0)
    t[[0, 2], :] = torch.arange(4.0)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_index_errors():
    x = ember.zeros(3, 4)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[5]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        x[ember.tensor([0.5])]
    with pytest.raises(IndexError):
        x[[0, 7]]


def test_0d_integer_tensor_index_and_tensor_index_into_list():
    x = ember.arange(5)
    i = ember.tensor(3)
    assert x[i].item() == 3
    data = list(range(10))
    assert data[ember.tensor(2):ember.tensor(5)] == [2, 3, 4]


def test_zero_dim_boolean_masks_read_and_write_as_in_pytorch():
    """``x[mask]`` with a 0-d mask adds a dimension of size 1 (True) or 0 (False); Wishart's sampler writes
    through such masks."""
    e_x, t_x = ember.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    for m in (True, False):
        em, tm = ember.tensor(m), torch.tensor(m)
        for key in (lambda k: k, lambda k: (slice(None), k), lambda k: (k, 1)):
            assert tuple(e_x[key(em)].shape) == tuple(t_x[key(tm)].shape)
        e_y, t_y = e_x.clone(), t_x.clone()
        e_y[em] = 5.0
        t_y[tm] = 5.0
        np.testing.assert_array_equal(e_y.numpy(), t_y.numpy())
    s = ember.tensor(True)
    assert s[s].tolist() == [True]


INDEX_OP_CASES = [
    lambda L: L.zeros(3).index_add(0, L.tensor([-1]), L.ones(1)),
    lambda L: L.zeros(3).index_add(0, L.tensor([1, 7, -2]), L.ones(3)),
    lambda L: L.zeros(3, 2).index_add(0, L.tensor([-1]), L.ones(1, 2)),
    lambda L: L.zeros(2, 3).index_add(1, L.tensor([1, 5, -1]), L.ones(2, 3)),
    lambda L: L.zeros(4, 2).index_add(0, L.tensor([3, 0, 3]), L.ones(3, 2), alpha=2),
    lambda L: L.zeros(3).index_copy(0, L.tensor([1, 5, -1]), L.ones(3)),
    lambda L: L.zeros(3).index_copy(0, L.tensor([1, -1, 5]), L.ones(3)),
    lambda L: L.zeros(2, 3).index_copy(1, L.tensor([3]), L.ones(2, 1)),
    lambda L: L.zeros(3).index_fill(0, L.tensor([-1]), 1.0),
    lambda L: L.zeros(3).index_fill(0, L.tensor([-5, 4]), 1.0),
    lambda L: L.zeros(2, 3).index_fill(1, L.tensor([-4]), 1.0),
]


@pytest.mark.parametrize("i", range(len(INDEX_OP_CASES)))
def test_index_add_copy_fill_range_checks_as_pytorch(i):
    """Each of PyTorch's CPU kernels has its own rule for an index outside the dim: index_fill wraps negative
    indices, index_add and index_copy refuse them; the error class and text name the first bad index."""
    results = []
    for L in (torch, ember):
        try:
            results.append(("ok", np.asarray(INDEX_OP_CASES[i](L).tolist())))
        except (IndexError, RuntimeError) as e:
            results.append((type(e).__name__, str(e)))
    (tk, tv), (ek, ev) = results
    assert tk == ek
    if tk == "ok":
        np.testing.assert_array_equal(ev, tv)
    else:
        assert ev == tv


# what a dispatch mode sees for an index read / write, with the arguments that are not tensors: PyTorch skips a
# slice that keeps a whole dimension (except in x[a:b] alone), returns x[...] / x[:, :] as an alias, spells an
# omitted start / stop as 0 / INT64_MAX, wraps a Python value (lift_fresh) before indexing and writes a value of
# another shape through copy_to's view + expand
SEEN_READS = ["x[:3]", "x[:]", "x[0:3:1]", "x[:, :4]", "x[0:3, :]", "x[..., :4]", "x[0:, 0:10]", "x[:10]",
              "x[...]", "x[()]", "x[(slice(None),)]", "x[None]", "x[1, :]", "x[:, 0:4:2]", "x[-3:, :]", "x[0:3, ...]",
              "x[..., 0:4, None]", "x[:, 1:][:, :3]", "x[True]", "x[False]", "x[i, 1:]", "x[:, i]", "x[[0, 1], :]"]
SEEN_WRITES = ["x[:] = 1", "x[:, :] = 1", "x[...] = 2.5", "x[0:3, 1:] = 2", "x[:] = v", "x[:] = s", "x[:] = r",
               "x[1:, :] = r", "x[0] = r", "x[1] = 0", "x[0, 0] = 3", "x[0] = True", "x[i] = 1", "x[i] = r",
               "x[:, i] = 0.5"]


def _seen_by_mode(lib, code):
    from tests.test_torch_dispatch import _mod
    base = _mod(lib, ".utils._python_dispatch").TorchDispatchMode
    seen = []

    class Log(base):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            plain = [repr(a).replace("ember.", "torch.") for a in args[1:] if not isinstance(a, (lib.Tensor, list))]
            seen.append((str(func), plain, sorted((kwargs or {}).keys())))
            return func(*args, **(kwargs or {}))
    x, v, s = lib.tensor(A[0, :3, :4].copy()), lib.tensor(A[1, :3, :4].copy()), lib.tensor(2.0, dtype=lib.float64)
    r, i = lib.tensor(A[2, 0, :4].copy()), lib.tensor([0, 2])
    with Log():
        exec(code, {"x": x, "v": v, "s": s, "r": r, "i": i})
    return seen, x.numpy()


@pytest.mark.parametrize("code", SEEN_READS + SEEN_WRITES)
def test_a_dispatch_mode_sees_pytorchs_indexing_ops(code):
    e_seen, e_x = _seen_by_mode(ember, code)
    t_seen, t_x = _seen_by_mode(torch, code)
    assert e_seen == t_seen
    np.testing.assert_array_equal(e_x, t_x)


# a Python value assigned, filled or used as full's value is converted to the dtype as c10's checked_convert does
CONVERSIONS = [("int8", float("nan")), ("float16", 1e300), ("int8", 300.5), ("int8", -128), ("int8", 127.9),
               ("float32", 1e300), ("float32", float("inf")), ("float16", 70000.0), ("bfloat16", 1e300), ("uint8", -1),
               ("bool", 2.5),
               ("int64", 2 ** 63), ("int32", 1 + 0j), ("int32", 1 + 2j), ("complex64", 1e300), ("int64", float("inf"))]


def _converted(lib, dtype, value):
    outcomes = []
    for how, n in (("fill_", 2), ("fill_", 1), ("setitem", 2), ("full", 2), ("full", 1)):
        x = lib.zeros(n, dtype=getattr(lib, dtype))
        try:
            if how == "fill_":
                x.fill_(value)
            elif how == "setitem":
                x[0] = value
            else:
                x = lib.full((n,), value, dtype=getattr(lib, dtype))
            outcomes.append(repr(x[0].item()))
        except RuntimeError as e:
            outcomes.append(f"{type(e).__name__}: {e}")
        except ValueError:  # (PyTorch's binding refuses 2 ** 63 before converting it: "Overflow when unpacking")
            outcomes.append("refused")
    return outcomes


@pytest.mark.parametrize("dtype,value", CONVERSIONS, ids=[f"{d}-{v}" for d, v in CONVERSIONS])
def test_a_python_value_is_converted_as_pytorch_converts_it(dtype, value):
    assert _converted(ember, dtype, value) == _converted(torch, dtype, value)


@pytest.mark.parametrize("value", [[1.0, 2.0, 3.0, 4.0], np.float32(2.5), np.array([1.0, 2.0, 3.0, 4.0]), "a", None,
                                   (1, 2, 3, 4)], ids=["list", "np.float32", "ndarray", "str", "None", "tuple"])
def test_assigning_what_is_not_a_value_raises_pytorchs_type_error(value):
    with pytest.raises(TypeError) as t:
        torch.zeros(3, 4)[0] = value
    with pytest.raises(TypeError) as e:
        ember.zeros(3, 4)[0] = value
    assert str(e.value).replace("ember.", "torch.") == str(t.value)


@pytest.mark.parametrize("index,dim", [([-1], 0), ([5, -1], 0), ([-9, 1], 0), ([[0, -1], [3, 0]], 0),
                                       ([[0, -1], [3, 0]], 1), ([[0, 0], [3, -1]], 1), ([[0, 5], [-1, 0]], 1)])
def test_gather_and_scatter_refuse_negative_and_large_indices_as_pytorch(index, dim):
    """PyTorch's gather / scatter kernels take indices in [0, size) only and name the first bad one in order; a
    negative index is refused, not counted from the end (NumPy's reading, which gave a silent wrong answer)."""
    for op in ("gather", "scatter", "scatter_add", "scatter_reduce"):
        messages = []
        for lib in (ember, torch):
            t = lib.tensor(index)
            z = lib.zeros((3, 3) if t.dim() == 2 else (3,))
            call = {"gather": lambda: z.gather(dim, t), "scatter": lambda: z.scatter(dim, t, 1.0),
                    "scatter_add": lambda: z.scatter_add(dim, t, lib.ones(tuple(t.shape))),
                    "scatter_reduce": lambda: z.scatter_reduce(dim, t, lib.ones(tuple(t.shape)), "amax")}[op]
            with pytest.raises(RuntimeError) as err:
                call()
            messages.append(str(err.value))
        assert messages[0] == messages[1], op
