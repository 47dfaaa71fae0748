"""Observers, fake quantization and qconfigs against PyTorch: quantization parameters equal, fake-quantized values
and their straight-through gradients equal, reprs and state_dicts interchangeable."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
warnings.filterwarnings("ignore", message=".*reduce_range will be deprecated.*")


def _batches(seed=0, shape=(8, 16)):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * s + o).astype(np.float32) for s, o in ((1, 0), (3, 1), (0.5, -2), (2, 0.5))]


def _same_qparams(e, t):
    es, ez = e
    ts, tz = t
    np.testing.assert_array_equal(es.numpy(), ts.numpy())
    np.testing.assert_array_equal(ez.numpy(), tz.numpy())
    assert str(ez.dtype).split(".")[-1] == str(tz.dtype).split(".")[-1]


OBSERVERS = [
    ("MinMaxObserver", {}),
    ("MinMaxObserver", dict(dtype="qint8", qscheme="per_tensor_symmetric")),
    ("MinMaxObserver", dict(quant_min=0, quant_max=127)),
    ("MinMaxObserver", dict(reduce_range=True)),
    ("MovingAverageMinMaxObserver", dict(averaging_constant=0.1)),
    ("MovingAverageMinMaxObserver", dict(dtype="qint8", qscheme="per_tensor_symmetric")),
    ("PerChannelMinMaxObserver", dict(ch_axis=1, dtype="qint8", qscheme="per_channel_symmetric")),
    ("PerChannelMinMaxObserver", dict(ch_axis=0)),
    ("PerChannelMinMaxObserver", dict(ch_axis=0, qscheme="per_channel_affine_float_qparams")),
    ("MovingAveragePerChannelMinMaxObserver", dict(ch_axis=1, averaging_constant=0.2)),
    ("HistogramObserver", {}),
    ("HistogramObserver", dict(reduce_range=True)),
    ("HistogramObserver", dict(dtype="qint8", qscheme="per_tensor_symmetric", bins=256)),
]


def _make(lib, name, kw):
    kw = {k: getattr(lib, v) if k in ("dtype", "qscheme") else v for k, v in kw.items()}
    return getattr(lib.ao.quantization, name)(**kw)


@pytest.mark.parametrize("name,kw", OBSERVERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OBSERVERS)])
def test_observer_qparams_match_pytorch(name, kw):
    e, t = _make(ember, name, kw), _make(torch, name, kw)
    for x in _batches():
        assert e(ember.tensor(x)).shape == t(torch.from_numpy(x)).shape
        _same_qparams(e.calculate_qparams(), t.calculate_qparams())
    assert repr(e).replace("ember.", "torch.") == repr(t)
    sd_e, sd_t = e.state_dict(), t.state_dict()
    assert list(sd_e) == list(sd_t)
    for k in sd_t:
        np.testing.assert_array_equal(sd_e[k].numpy(), sd_t[k].numpy())
    fresh = _make(ember, name, kw)
    fresh.load_state_dict({k: ember.tensor(v.numpy()) for k, v in sd_t.items()})
    _same_qparams(fresh.calculate_qparams(), t.calculate_qparams())


def test_unobserved_and_degenerate_inputs_match_pytorch():
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="must run observer before calling calculate_qparams"):
            s, z = lib.ao.quantization.MinMaxObserver().calculate_qparams()
        assert (s.tolist(), z.tolist()) == ([1.0], [0])
    for x in (np.zeros(5, np.float32), np.full(5, 3.0, np.float32), np.array([np.inf, 1.0, -2.0], np.float32)):
        for name in ("MinMaxObserver", "HistogramObserver"):
            e, t = _make(ember, name, {}), _make(torch, name, {})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                e(ember.tensor(x))
                t(torch.from_numpy(x))
                _same_qparams(e.calculate_qparams(), t.calculate_qparams())


def test_observer_errors_match_pytorch():
    for lib in (torch, ember):
        q = lib.ao.quantization
        with pytest.raises(NotImplementedError, match="MinMaxObserver's qscheme only support"):
            q.MinMaxObserver(qscheme=lib.per_channel_affine)
        with pytest.raises(AssertionError, match="Used-specified quantization range must include 0"):
            q.MinMaxObserver(quant_min=1, quant_max=10)
        with pytest.raises(NotImplementedError, match="Cannot reduce range for symmetric"):
            q.MinMaxObserver(qscheme=lib.per_tensor_symmetric, reduce_range=True)
        with pytest.raises(ValueError, match="QConfig received observer instance"):
            q.QConfig(activation=q.MinMaxObserver(), weight=q.default_weight_observer)


@pytest.mark.parametrize("per_channel", [False, True])
def test_fake_quantize_ops_and_gradients_match_pytorch(per_channel):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((4, 300)) * 3).astype(np.float32)
    x[0, :4] = [np.inf, -np.inf, 0.0, 1e9]
    out = {}
    for lib in (torch, ember):
        a = lib.tensor(x, requires_grad=True)
        if per_channel:
            y = lib.fake_quantize_per_channel_affine(a, lib.tensor([0.1, 0.05, 0.2, 1 / 3]),
                                                     lib.tensor([0, 3, -2, 5], dtype=lib.int32), 0, -128, 127)
        else:
            y = lib.fake_quantize_per_tensor_affine(a, 0.05, 3, 0, 255)
        g = lib.tensor(rng.standard_normal(x.shape).astype(np.float32)) if lib is torch else \
            ember.tensor(out["torch"][2])
        y.backward(g)
        out[lib.__name__] = (y.detach().numpy(), a.grad.numpy(), g.numpy(), type(y.grad_fn).__name__)
    np.testing.assert_array_equal(out["ember"][0], out["torch"][0])
    np.testing.assert_array_equal(out["ember"][1], out["torch"][1])
    assert out["ember"][3] == out["torch"][3]
    for lib in (torch, ember):
        t = lib.tensor(x)
        a = lib.fake_quantize_per_tensor_affine(t, lib.tensor(0.05), lib.tensor(3, dtype=lib.int32), 0, 255)
        b = lib.fake_quantize_per_tensor_affine(t, 0.05, 3, 0, 255)
        assert lib.equal(a, b)
        with pytest.raises(RuntimeError, match="`quant_min` should be less than or\\s+equal to `quant_max`"):
            lib.fake_quantize_per_tensor_affine(t, 0.1, 0, 10, 5)
        with pytest.raises(RuntimeError, match="`zero_point` must be between `quant_min` and `quant_max`"):
            lib.fake_quantize_per_tensor_affine(t, 0.1, 300, 0, 255)


@pytest.mark.parametrize("which", ["default_fake_quant", "default_weight_fake_quant",
                                   "default_per_channel_weight_fake_quant", "default_fused_act_fake_quant",
                                   "default_fused_per_channel_wt_fake_quant"])
def test_fake_quantize_modules_match_pytorch(which):
    e = getattr(ember.ao.quantization, which)()
    t = getattr(torch.ao.quantization, which)()
    for i, x in enumerate(_batches(2, (6, 5))):
        if i == 3:
            e.disable_observer()
            t.disable_observer()
        xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ye, yt = e(xe), t(xt)
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-6, atol=1e-6)
        ye.sum().backward()
        yt.sum().backward()
        np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())
    _same_qparams((e.scale, e.zero_point), (t.scale, t.zero_point))
    assert repr(e).replace("ember.", "torch.") == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    e.apply(ember.ao.quantization.disable_fake_quant)
    x = ember.tensor(_batches(3)[0])
    assert ember.equal(e(x), x)


def test_default_qconfigs_match_pytorch():
    for backend in ("x86", "fbgemm", "qnnpack", "onednn"):
        for version in (0, 1):
            e = ember.ao.quantization.get_default_qat_qconfig(backend, version)
            t = torch.ao.quantization.get_default_qat_qconfig(backend, version)
            assert repr(e).replace("ember.", "torch.") == repr(t)
        e = ember.ao.quantization.get_default_qconfig(backend)
        t = torch.ao.quantization.get_default_qconfig(backend)
        assert repr(e).replace("ember.", "torch.") == repr(t)
    assert (repr(ember.ao.quantization.default_dynamic_qconfig).replace("ember.", "torch.")
            == repr(torch.ao.quantization.default_dynamic_qconfig))
    with pytest.raises(AssertionError, match="backend: tpu not supported"):
        ember.ao.quantization.get_default_qconfig("tpu")
