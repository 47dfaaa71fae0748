"""Quantized tensors against PyTorch: quantize / dequantize / int_repr bit for bit (per tensor, per channel,
dynamic), parameters, reprs, views and copies, errors, and checkpoints both ways."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*")

QDTYPES = ["qint8", "quint8", "qint32"]


def _values(rng, n=4000):
    """Normal values, exact ties for the scales below, and the special values."""
    ties = rng.integers(-1000, 1000, n) * 0.05 + rng.choice([0, 0.025], n)
    x = np.concatenate([rng.standard_normal(n) * 3, ties, [np.nan, np.inf, -np.inf, 1e30, -1e30, 0.0, -0.0, 3e9]])
    return x.astype(np.float32)


def _ints(t):
    return t.int_repr().numpy()


@pytest.mark.parametrize("qdtype", QDTYPES)
def test_quantize_per_tensor_is_bit_exact(qdtype):
    x = _values(np.random.default_rng(0))
    for scale, zp in [(0.05, 3), (0.1, -7), (1 / 3, 0), (0.0123, 5), (2.5e-3, 100), (1.0, 0)]:
        if qdtype == "quint8":
            zp = abs(zp)
        e = ember.quantize_per_tensor(ember.tensor(x), scale, zp, getattr(ember, qdtype))
        t = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, getattr(torch, qdtype))
        np.testing.assert_array_equal(_ints(e), _ints(t))
        assert e.int_repr().dtype == getattr(ember, {"qint8": "int8", "quint8": "uint8", "qint32": "int32"}[qdtype])
        np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())
        assert (e.q_scale(), e.q_zero_point(), e.dtype, e.qscheme()) == (t.q_scale(), t.q_zero_point(),
                                                                          getattr(ember, qdtype),
                                                                          ember.per_tensor_affine)


@pytest.mark.parametrize("qdtype", QDTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_quantize_per_channel_is_bit_exact(qdtype, axis):
    rng = np.random.default_rng(axis)
    x = _values(rng)[:2 * 3 * 1000].reshape(2, 3, 1000) if axis != 2 else _values(rng)[:4000].reshape(20, 50, 4)
    n = x.shape[axis]
    scales = rng.uniform(0.01, 0.5, n)
    zps = rng.integers(0 if qdtype == "quint8" else -20, 20, n)
    e = ember.quantize_per_channel(ember.tensor(x), ember.tensor(scales), ember.tensor(zps), axis,
                                   getattr(ember, qdtype))
    t = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(scales), torch.from_numpy(zps), axis,
                                   getattr(torch, qdtype))
    np.testing.assert_array_equal(_ints(e), _ints(t))
    np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())
    np.testing.assert_array_equal(e.q_per_channel_scales().numpy(), t.q_per_channel_scales().numpy())
    np.testing.assert_array_equal(e.q_per_channel_zero_points().numpy(), t.q_per_channel_zero_points().numpy())
    assert e.q_per_channel_axis() == axis and e.qscheme() is ember.per_channel_affine
    assert e.q_per_channel_scales().dtype == ember.float64 and e.q_per_channel_zero_points().dtype == ember.int64


@pytest.mark.parametrize("reduce_range", [False, True])
@pytest.mark.parametrize("qdtype", ["qint8", "quint8"])
def test_quantize_per_tensor_dynamic_chooses_pytorchs_parameters(qdtype, reduce_range):
    rng = np.random.default_rng(3)
    cases = [rng.standard_normal(50), rng.uniform(0, 5, 50), -rng.uniform(0, 5, 50), np.zeros(4),
             rng.standard_normal(50) * 1e-6, np.array([0.1, 0.5, -1.0]), rng.uniform(1e-3, 2e-3, 20)]
    for x in cases:
        x = x.astype(np.float32)
        e = ember.quantize_per_tensor_dynamic(ember.tensor(x), getattr(ember, qdtype), reduce_range)
        t = torch.quantize_per_tensor_dynamic(torch.from_numpy(x), getattr(torch, qdtype), reduce_range)
        assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())
        np.testing.assert_array_equal(_ints(e), _ints(t))
    assert ember.quantize_per_tensor_dynamic(ember.ones(2), ember.float16, False).dtype == ember.float16


def test_other_ways_to_make_quantized_tensors_match_pytorch():
    for lib in (torch, ember):
        a = lib._make_per_tensor_quantized_tensor(lib.tensor([1, 2, -3], dtype=lib.int8), 0.5, 1)
        assert (a.dtype, a.int_repr().tolist(), a.dequantize().tolist()) == (lib.qint8, [1, 2, -3], [0.0, 0.5, -2.0])
        assert lib._make_per_tensor_quantized_tensor(lib.tensor([1], dtype=lib.uint8), 0.5, 1).dtype == lib.quint8
        assert lib._make_per_tensor_quantized_tensor(lib.tensor([1], dtype=lib.int32), 0.5, 1).dtype == lib.qint32
        c = lib._make_per_channel_quantized_tensor(lib.tensor([[1, 2], [3, 4]], dtype=lib.uint8),
                                                   lib.tensor([0.5, 2.0], dtype=lib.float64), lib.tensor([0, 1]), 0)
        assert c.dequantize().tolist() == [[0.5, 1.0], [4.0, 6.0]]
        q = lib.quantize_per_tensor(lib.tensor([1.0, 2.0]), lib.tensor(0.1), lib.tensor(1), lib.qint8)
        assert q.q_scale() == np.float64(np.float32(0.1)) and q.q_zero_point() == 1
        qs = lib.quantize_per_tensor([lib.tensor([1.0]), lib.tensor([2.0])], lib.tensor([0.1, 0.2]),
                                     lib.tensor([1, 2]), lib.qint8)
        assert [(t.int_repr().tolist(), t.q_zero_point()) for t in qs] == [([11], 1), ([12], 2)]
        assert [t.tolist() for t in lib.dequantize(qs)] == [[t.dequantize().item()] for t in qs]
        e = lib._empty_affine_quantized([2, 3], scale=0.5, zero_point=2, dtype=lib.qint8)
        assert (tuple(e.shape), e.q_scale(), e.q_zero_point(), e.dtype) == ((2, 3), 0.5, 2, lib.qint8)
        assert lib.tensor([1.0], dtype=lib.float64).dequantize().dtype == lib.float32


def _text(lib, t):
    return repr(t).replace("torch.", "ember.")


def test_reprs_match_pytorch():
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    outs = []
    for lib in (torch, ember):
        outs.append([
            _text(lib, lib.quantize_per_tensor(lib.tensor(x), 0.05, 3, lib.qint8)),
            _text(lib, lib.quantize_per_tensor(lib.tensor([0.1, 0.5, -1.0]), 0.1, 10, lib.quint8)),
            _text(lib, lib.quantize_per_channel(lib.tensor(x), lib.tensor([0.1, 0.2, 0.3], dtype=lib.float64),
                                                lib.tensor([1, 2, 3]), 0, lib.qint8)),
            _text(lib, lib.quantize_per_tensor(lib.tensor(1.5), 0.1, 2, lib.qint8)),
            _text(lib, lib.quantize_per_tensor(lib.zeros(2, 0), 0.1, 2, lib.qint8)),
            _text(lib, lib.quantize_per_tensor_dynamic(lib.tensor(np.linspace(-3, 3, 2000, dtype=np.float32)),
                                                       lib.quint8, False)),
            str(lib.per_tensor_affine).replace("torch.", "ember."),
        ])
    assert outs[0] == outs[1]


def test_views_and_copies_keep_the_quantizer():
    x = np.random.default_rng(6).standard_normal((4, 6)).astype(np.float32)
    for fn in [lambda q: q[1:, ::2], lambda q: q.t(), lambda q: q.view(24), lambda q: q.reshape(6, 4),
               lambda q: q[2], lambda q: q.transpose(0, 1).contiguous(), lambda q: q.flatten(),
               lambda q: q.unsqueeze(0).squeeze(0), lambda q: q[:1].expand(3, 6), lambda q: q.clone(),
               lambda q: q.permute(1, 0), lambda q: q.chunk(2, 1)[1], lambda q: q.detach(),
               lambda q: q.narrow(1, 2, 3)]:
        e = fn(ember.quantize_per_tensor(ember.tensor(x), 0.1, 3, ember.quint8))
        t = fn(torch.quantize_per_tensor(torch.from_numpy(x), 0.1, 3, torch.quint8))
        assert e.is_quantized and (e.q_scale(), e.q_zero_point(), e.dtype) == (0.1, 3, ember.quint8)
        assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
        np.testing.assert_array_equal(_ints(e), _ints(t))
    q = ember.quantize_per_tensor(ember.tensor(x), 0.1, 3, ember.quint8)
    v = q[1:]
    q.copy_(ember.zeros(4, 6))              # a write through the base shows in the view (one storage)
    assert v.int_repr().tolist() == [[3] * 6] * 3 and q._version == v._version == 1
    c = ember.quantize_per_channel(ember.tensor(x), ember.ones(4, dtype=ember.float64), ember.zeros(4,
                                   dtype=ember.int64), 0, ember.qint8)
    assert c.view(24).q_per_channel_axis() == 0 and c[:, 1:].is_quantized
    tc = torch.quantize_per_channel(torch.from_numpy(x), torch.ones(4, dtype=torch.float64),
                                    torch.zeros(4, dtype=torch.int64), 0, torch.qint8)
    for cc in (c, tc):
        with pytest.raises(RuntimeError, match="Setting strides is possible only on uniformly quantized tensor"):
            cc.t()


def test_copy_and_equal_match_pytorch():
    for lib in (torch, ember):
        a = lib.quantize_per_tensor(lib.tensor([0.1, 0.5, -1.0]), 0.1, 10, lib.quint8)
        b = lib.quantize_per_tensor(lib.tensor([1., 2., 3.]), 0.2, 0, lib.quint8)
        c = a.clone()
        c.copy_(b)
        assert (c.q_scale(), c.int_repr().tolist()) == (0.2, [5, 10, 15])
        c = a.clone()
        c.copy_(lib.tensor([0.33, 0.66, 1.0]))
        assert c.int_repr().tolist() == [13, 17, 20] and c.q_scale() == 0.1
        with pytest.raises(RuntimeError, match="Copying from quantized Tensor to non-quantized Tensor is not allowed"):
            lib.zeros(3).copy_(a)
        assert lib.equal(a, a.clone()) and not lib.equal(a, b) and not lib.equal(a, lib.tensor([0.1, 0.5, -1.0]))


def test_errors_match_pytorch():
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0])
        q = lib.quantize_per_tensor(x, 0.1, 0, lib.qint8)
        cases = [
            (lambda: lib.quantize_per_tensor(x, 0.1, 300, lib.quint8), RuntimeError, "zero_point 300 is above upper"),
            (lambda: lib.quantize_per_tensor(x, 0.1, -200, lib.qint8), RuntimeError, "zero_point -200 is below lower"),
            (lambda: lib.quantize_per_tensor(x, 0.1, 0, lib.float32), RuntimeError,
             "ScalarType Float is not supported in new_qtensor"),
            (lambda: lib.quantize_per_tensor(x.double(), 0.1, 0, lib.qint8), RuntimeError,
             "Quantize only works on Float Tensor, got Double"),
            (lambda: lib.quantize_per_tensor(lib.tensor([1]), 0.1, 0, lib.qint8), RuntimeError,
             "Quantize only works on Float Tensor, got Long"),
            (lambda: lib.quantize_per_channel(lib.ones(2, 3), lib.tensor([0.1, 0.2, 0.3]), lib.tensor([1, 2]), 0,
                                              lib.qint8), RuntimeError, "number of elements in scales and zero_points"),
            (lambda: lib.quantize_per_channel(lib.ones(2, 3), lib.tensor([0.1, 0.2]), lib.tensor([1, 2]), 2,
                                              lib.qint8), RuntimeError, "Channel axis out of range"),
            (lambda: q + q, NotImplementedError, "Could not run 'aten::add"),
            (lambda: q.sum(), NotImplementedError, "with arguments from the 'QuantizedCPU' backend"),
            (lambda: q.q_per_channel_scales(), RuntimeError, "kPerChannelAffine"),
            (lambda: x.int_repr(), NotImplementedError, "Could not run 'aten::int_repr' with arguments from the 'CPU'"),
            (lambda: x.q_scale(), NotImplementedError, "Could not run 'aten::q_scale' with arguments from the 'CPU'"),
            (lambda: q.numpy(), TypeError, "Got unsupported ScalarType QInt8"),
            (lambda: q.tolist(), RuntimeError, "load_scalar: invalid type"),
            (lambda: lib.promote_types(lib.qint8, lib.float32), RuntimeError,
             "promoteTypes with quantized numbers is not handled yet"),
            (lambda: lib._make_per_tensor_quantized_tensor(lib.tensor([1]), 0.5, 1), RuntimeError,
             "Creation of quantized tensor requires quantized dtype like torch.quint8"),
        ]
        for fn, etype, match in cases:
            with pytest.raises(etype, match=match.replace("torch.", "(torch|ember)\\.")):
                fn()
        assert q.is_quantized and not x.is_quantized
        assert not q.dtype.is_floating_point and q.dtype.itemsize == 1 and lib.qint32.itemsize == 4


def test_checkpoints_load_across_ember_and_pytorch(tmp_path):
    x = np.random.default_rng(7).standard_normal((3, 4)).astype(np.float32)
    sc, zp = np.array([0.1, 0.2, 0.05]), np.array([1, 2, -3])

    def make(lib):
        q = lib.quantize_per_tensor(lib.tensor(x), 0.05, 3, lib.qint8)
        c = lib.quantize_per_channel(lib.tensor(x), lib.tensor(sc), lib.tensor(zp), 0, lib.qint8)
        u = lib.quantize_per_tensor(lib.tensor(x), 0.02, 128, lib.quint8)
        return {"q": q, "c": c, "view": q[1:, ::2], "u": u, "i32": lib.quantize_per_tensor(lib.tensor(x), 0.01, 0,
                                                                                          lib.qint32),
                "scheme": lib.per_channel_affine, "dtype": lib.quint8}

    for src, dst in ((torch, ember), (ember, torch)):
        path = str(tmp_path / f"{src.__name__}.pt")
        made = make(src)
        src.save(made, path)
        for weights_only in (True, False):
            got = dst.load(path, weights_only=weights_only)
            for k in ("q", "c", "view", "u", "i32"):
                a, b = got[k], made[k]
                assert a.is_quantized and str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
                assert tuple(a.shape) == tuple(b.shape) and a.stride() == b.stride()
                np.testing.assert_array_equal(a.int_repr().numpy(), b.int_repr().numpy())
                np.testing.assert_array_equal(a.dequantize().numpy(), b.dequantize().numpy())
            assert got["c"].q_per_channel_axis() == 0 and got["q"].q_scale() == 0.05
            assert str(got["scheme"]).endswith("per_channel_affine") and str(got["dtype"]).endswith("quint8")


def test_storages_of_quantized_tensors():
    q = ember.quantize_per_tensor(ember.tensor([0.1, 0.5, -1.0]), 0.1, 10, ember.quint8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = q.storage()
        assert isinstance(s, ember.QUInt8Storage) and s.tolist() == [11, 15, 0]
    assert q.untyped_storage().nbytes() == 3 and q.element_size() == 1


def test_pickle_and_deepcopy_keep_quantized_tensors():
    import copy
    import pickle
    q = ember.quantize_per_channel(ember.randn(3, 4), ember.tensor([0.1, 0.2, 0.3], dtype=ember.float64),
                                   ember.tensor([0, 1, -1]), 0, ember.qint8)
    for r in (pickle.loads(pickle.dumps(q)), copy.deepcopy(q)):
        assert r.is_quantized and ember.equal(r, q) and r.q_per_channel_axis() == 0


@pytest.mark.parametrize("qdtype", ["qint8", "quint8", "qint32"])
def test_fill_and_index_assignment_quantize_the_value_as_pytorch(qdtype):
    """fill_ (Scalar or 0-dim tensor) and ``q[i] = v`` on a quantized tensor quantize v with its parameters
    (PyTorch's fill_quantized_: a float tensor of v copied in)."""
    ints = []
    for lib in (ember, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = lib.quantize_per_tensor(lib.tensor([0.5, -1.0, 2.0, 0.0]), 0.1, 3, getattr(lib, qdtype))
        q[0] = 1.0
        q[1:3] = 0.33
        step = [q.int_repr().tolist()]
        q.fill_(lib.tensor(-0.2))
        q[2] = lib.tensor(0.7)
        step.append(q.int_repr().tolist())
        with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor"):
            q.fill_(lib.ones(2))
        ints.append(step)
    assert ints[0] == ints[1]
