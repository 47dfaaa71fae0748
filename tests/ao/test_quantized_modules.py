"""Quantized layers and the eager-mode workflow against PyTorch's x86 (fbgemm) backend: quantized Linear / Conv2d /
ReLU / pooling / cat / add within one quantization step, fusion, prepare / calibrate / convert of a CNN, dynamic
quantization of Linear / LSTM / GRU, module reprs and state_dicts across the two."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")


def _ints(t):
    return t.int_repr().numpy().astype(np.int64)


def _q(lib, x, scale, zp, dtype="quint8"):
    return lib.quantize_per_tensor(lib.tensor(x), scale, zp, getattr(lib, dtype))


# Activations for the layer tests use 7 bits (quint8 values in [0, 127]), as the x86 default qconfig's observers
# (reduce_range) make them: PyTorch's x86 kernels add pairs of u8 * s8 products in 16 bits, which saturates for
# full 8-bit activations, where ember's integer GEMM stays exact.
def _q7(lib, x):
    return _q(lib, np.clip(x, -2.5, 2.5), 0.04, 64)


def _weight(lib, w, per_channel):
    if per_channel:
        s = np.abs(w).reshape(w.shape[0], -1).max(1) / 127 + 1e-6
        return lib.quantize_per_channel(lib.tensor(w), lib.tensor(s), lib.zeros(w.shape[0], dtype=lib.int64), 0,
                                        lib.qint8)
    return lib.quantize_per_tensor(lib.tensor(w), float(np.abs(w).max() / 127), 0, lib.qint8)


def test_exact_integer_gemm_chunks_long_reductions():
    from ember.aten.quantized.gemm import int_matmul
    rng = np.random.default_rng(0)
    for k, density in ((7, 1.0), (700, 1.0), (5000, 1.0), (5000, 0.02)):   # one GEMM, chunks, one by the L1 bound
        a = rng.integers(-128, 128, (9, k)) * (rng.random((9, k)) < density)
        b = rng.integers(-128, 128, (k, 11))
        got = int_matmul(a.astype(np.float32), b.astype(np.float32), int(np.abs(a).max()), int(np.abs(b).max()),
                         int(np.abs(b).sum(0).max()))
        np.testing.assert_array_equal(got.astype(np.int64), a @ b)
        assert got.dtype == (np.float64 if k == 5000 and density == 1 else np.float32)


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("relu", [False, True])
def test_quantized_linear_matches_fbgemm(per_channel, relu):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 700)).astype(np.float32)
    w = (rng.standard_normal((12, 700)) * 0.05).astype(np.float32)
    b = rng.standard_normal(12).astype(np.float32)
    outs = {}
    for lib in (torch, ember):
        cls = lib.ao.nn.intrinsic.quantized.LinearReLU if relu else lib.ao.nn.quantized.Linear
        m = cls(700, 12)
        m.set_weight_bias(_weight(lib, w, per_channel), lib.tensor(b))
        m.scale, m.zero_point = 0.05, 64
        outs[lib.__name__] = m(_q7(lib, x))
    e, t = outs["ember"], outs["torch"]
    assert (e.q_scale(), e.q_zero_point(), e.dtype) == (0.05, 64, ember.quint8)
    assert np.abs(_ints(e) - _ints(t)).max() <= 1         # within one quantization step
    assert (_ints(e) == _ints(t)).mean() > 0.97


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("stride,padding,groups,relu", [(1, 0, 1, False), (2, 1, 1, True), (1, 1, 2, False)])
def test_quantized_conv2d_matches_fbgemm(per_channel, stride, padding, groups, relu):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4, 9, 9)).astype(np.float32)
    w = (rng.standard_normal((6, 4 // groups, 3, 3)) * 0.2).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    outs = {}
    for lib in (torch, ember):
        cls = lib.ao.nn.intrinsic.quantized.ConvReLU2d if relu else lib.ao.nn.quantized.Conv2d
        m = cls(4, 6, 3, stride=stride, padding=padding, groups=groups)
        m.set_weight_bias(_weight(lib, w, per_channel), lib.tensor(b))
        m.scale, m.zero_point = 0.04, 70
        outs[lib.__name__] = m(_q7(lib, x))
    e, t = outs["ember"], outs["torch"]
    assert tuple(e.shape) == tuple(t.shape)
    assert np.abs(_ints(e) - _ints(t)).max() <= 1
    assert (_ints(e) == _ints(t)).mean() > 0.97


def test_quantized_elementwise_pooling_and_cat_match_pytorch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    y = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    res = {}
    for lib in (torch, ember):
        qx, qy = _q(lib, x, 0.02, 120), _q(lib, y, 0.03, 128)
        f = lib.ao.nn.quantized.QFunctional()
        f.scale, f.zero_point = 0.05, 100
        res[lib.__name__] = [
            lib.relu(qx), lib.nn.ReLU()(qx), lib.ao.nn.quantized.ReLU6()(_q(lib, x * 4, 0.05, 120)),
            lib.nn.functional.max_pool2d(qx, 2), lib.nn.functional.max_pool2d(qx, 3, stride=2, padding=1),
            lib.nn.functional.adaptive_avg_pool2d(qx, 1), lib.nn.functional.adaptive_avg_pool2d(qx, (4, 3)),
            lib.cat([qx, qx], 1), lib.cat([qx, qy], 0), f.add(qx, qy), f.add_relu(qx, qy), qx.flatten(1),
            qx.reshape(4, -1), qx.transpose(1, 2), qx[:, :1]]
    for i, (e, t) in enumerate(zip(res["ember"], res["torch"])):
        assert tuple(e.shape) == tuple(t.shape), i
        assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point()), i
        assert np.abs(_ints(e) - _ints(t)).max() <= 1, i


def _cnn(lib, seed=0):
    lib.manual_seed(seed)
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = lib.ao.quantization.QuantStub()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.relu = nn.ReLU()
            self.pool = nn.MaxPool2d(2)
            self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(8)
            self.fc = nn.Linear(8 * 4 * 4, 16)
            self.relu2 = nn.ReLU()
            self.fc2 = nn.Linear(16, 5)
            self.skip = nn.quantized.FloatFunctional()
            self.dequant = lib.ao.quantization.DeQuantStub()

        def forward(self, x):
            x = self.pool(self.relu(self.bn(self.conv(self.quant(x)))))
            x = self.skip.add(x, self.bn2(self.conv2(x)))
            x = self.fc2(self.relu2(self.fc(x.reshape(x.shape[0], -1))))
            return self.dequant(x)
    return Net()


def _numbers_rounded(text):
    return re.sub(r"\d+\.\d+(e-?\d+)?", lambda m: f"{float(m.group()):.4g}", text.replace("torch.", "ember."))


def test_static_quantization_of_a_cnn_matches_pytorch():
    rng = np.random.default_rng(4)
    calib = rng.standard_normal((32, 3, 8, 8)).astype(np.float32)
    test = rng.standard_normal((8, 3, 8, 8)).astype(np.float32)
    models, outs = {}, {}
    for lib in (torch, ember):
        m = _cnn(lib)
        if lib is ember:
            m.load_state_dict({k: ember.tensor(v.numpy()) for k, v in models["torch"][1].items()})
        m.eval()
        sd = m.state_dict()
        m.qconfig = lib.ao.quantization.get_default_qconfig("x86")
        fused = lib.ao.quantization.fuse_modules(m, [["conv", "bn", "relu"], ["conv2", "bn2"], ["fc", "relu2"]])
        prepared = lib.ao.quantization.prepare(fused)
        assert hasattr(prepared.conv, "activation_post_process") and hasattr(prepared.fc, "activation_post_process")
        prepared(lib.tensor(calib))
        q = lib.ao.quantization.convert(prepared)
        models[lib.__name__] = (q, sd)
        outs[lib.__name__] = (q(lib.tensor(test)).detach().numpy(), m(lib.tensor(test)).detach().numpy())
    (eq, _), (tq, _) = models["ember"], models["torch"]
    assert _numbers_rounded(repr(eq)) == _numbers_rounded(repr(tq))
    step = tq.fc2.scale
    assert np.abs(outs["ember"][0] - outs["torch"][0]).max() <= 2 * step + 1e-6
    assert np.abs(outs["ember"][0] - outs["ember"][1]).max() < 0.1      # close to the float model
    # the converted model's state_dict: PyTorch's keys, and PyTorch's loads into ember's model exactly
    tsd, esd = tq.state_dict(), eq.state_dict()
    assert list(tsd) == list(esd)
    converted = _from_torch(tsd)       # through PyTorch's checkpoint format
    eq.load_state_dict(converted)
    np.testing.assert_array_equal(eq(ember.tensor(test)).numpy(), outs["torch"][0])


def _from_torch(t):
    import io
    buf = io.BytesIO()
    torch.save(t, buf)
    buf.seek(0)
    return ember.load(buf)


def test_quantized_state_dict_saved_by_ember_loads_in_pytorch(tmp_path):
    rng = np.random.default_rng(5)
    calib = rng.standard_normal((16, 3, 8, 8)).astype(np.float32)
    m = _cnn(ember)
    m.eval()
    m.qconfig = ember.ao.quantization.get_default_qconfig("x86")
    m = ember.ao.quantization.fuse_modules(m, [["conv", "bn", "relu"], ["conv2", "bn2"], ["fc", "relu2"]])
    ember.ao.quantization.prepare(m, inplace=True)
    m(ember.tensor(calib))
    ember.ao.quantization.convert(m, inplace=True)
    path = str(tmp_path / "q.pt")
    ember.save(m.state_dict(), path)
    t = _cnn(torch)
    t.eval()
    t.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    t = torch.ao.quantization.fuse_modules(t, [["conv", "bn", "relu"], ["conv2", "bn2"], ["fc", "relu2"]])
    torch.ao.quantization.prepare(t, inplace=True)
    torch.ao.quantization.convert(t, inplace=True)
    t.load_state_dict(torch.load(path))
    x = rng.standard_normal((4, 3, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(t(torch.from_numpy(x)).numpy(), m(ember.tensor(x)).numpy())


def test_dynamic_quantization_of_linear_lstm_gru_matches_pytorch():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((7, 3, 16)).astype(np.float32)
    outs, reprs, sd = {}, {}, None
    for lib in (torch, ember):
        lib.manual_seed(0)

        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = lib.nn.LSTM(16, 32, num_layers=2, bidirectional=True)
                self.gru = lib.nn.GRU(64, 8, batch_first=True)
                self.fc = lib.nn.Linear(8, 4)

            def forward(self, x):
                y, (h, c) = self.lstm(x)
                y, hg = self.gru(y.transpose(0, 1))
                return self.fc(y), h, c, hg
        m = M()
        if lib is ember:
            m.load_state_dict({k: ember.tensor(v.numpy()) for k, v in sd.items()})
        else:
            sd = m.state_dict()
        q = lib.ao.quantization.quantize_dynamic(m, {lib.nn.Linear, lib.nn.LSTM, lib.nn.GRU}, dtype=lib.qint8)
        reprs[lib.__name__] = repr(q)
        outs[lib.__name__] = [o.detach().numpy() for o in q(lib.tensor(x))]
        assert q.fc.weight().dtype == lib.qint8
    assert reprs["ember"].replace("ember.", "torch.") == reprs["torch"]
    for e, t in zip(outs["ember"], outs["torch"]):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-5)


def test_dynamic_linear_and_default_spec_match_pytorch():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 40)).astype(np.float32)
    outs, sd = {}, None
    for lib in (torch, ember):
        lib.manual_seed(1)
        m = lib.nn.Sequential(lib.nn.Linear(40, 30), lib.nn.ReLU(), lib.nn.Linear(30, 3))
        if lib is ember:
            m.load_state_dict({k: ember.tensor(v.numpy()) for k, v in sd.items()})
        else:
            sd = m.state_dict()
        q = lib.ao.quantization.quantize_dynamic(m)
        q16 = lib.ao.quantization.quantize_dynamic(m, dtype=lib.float16)
        outs[lib.__name__] = (q(lib.tensor(x)).numpy(), q16(lib.tensor(x)).detach().numpy(), list(q.state_dict()),
                              str(q[0]).replace("torch.", "ember."))
        assert type(m[0]).__name__ == "Linear"                      # not in place
    e, t = outs["ember"], outs["torch"]
    np.testing.assert_allclose(e[0], t[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e[1], t[1], rtol=1e-3, atol=1e-3)
    assert e[2] == t[2] and e[3] == t[3]


def test_fusion_folds_batch_norm_as_pytorch_does():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    outs, sd = {}, None
    for lib in (torch, ember):
        lib.manual_seed(2)
        m = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3), lib.nn.BatchNorm2d(4), lib.nn.ReLU())
        m[1].running_mean.uniform_(-1, 1)
        m[1].running_var.uniform_(0.5, 2)
        if lib is ember:
            m.load_state_dict({k: ember.tensor(v.numpy()) for k, v in sd.items()})
        else:
            sd = m.state_dict()
        m.eval()
        f = lib.ao.quantization.fuse_modules(m, [["0", "1", "2"]])
        outs[lib.__name__] = (repr(f).replace("torch.", "ember."), f(lib.tensor(x)).detach().numpy(),
                              m(lib.tensor(x)).detach().numpy())
        with pytest.raises(AssertionError, match="did not find fuser method"):
            lib.ao.quantization.fuse_modules(m, [["0", "2", "1"]])
        with pytest.raises(AssertionError, match="prepare_qat only works on models in training mode"):
            lib.ao.quantization.prepare_qat(m)
    assert outs["ember"][0] == outs["torch"][0]
    np.testing.assert_allclose(outs["ember"][1], outs["torch"][1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs["ember"][1], outs["ember"][2], rtol=1e-5, atol=1e-5)


def test_eager_workflow_warns_as_pytorch_does():
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.ao.quantization.prepare(lib.nn.Sequential(lib.nn.Linear(2, 2)))
        kinds = [(w.category.__name__, str(w.message)[:40]) for w in caught]
        assert ("DeprecationWarning", "torch.ao.quantization is deprecated and ") in kinds
        assert any(k == "UserWarning" and m.startswith("None of the submodule got qconfig") for k, m in kinds)
        q = lib.ao.quantization
        assert q.QuantStub is lib.quantization.QuantStub and lib.nn.quantized.Linear is lib.ao.nn.quantized.Linear


def test_quantization_aware_training_matches_pytorch():
    """fuse_modules_qat (Conv+BN+ReLU kept for training), prepare_qat (fake-quantized weights and activations),
    a few SGD steps, convert: PyTorch's losses, module tree and quantized outputs."""
    rng = np.random.default_rng(9)
    xs = [rng.standard_normal((8, 3, 8, 8)).astype(np.float32) for _ in range(4)]
    ys = [rng.integers(0, 5, 8) for _ in range(4)]
    res, sd = {}, None
    for lib in (torch, ember):
        lib.manual_seed(0)
        nn = lib.nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.quant = lib.ao.quantization.QuantStub()
                self.conv, self.bn, self.relu = nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), \
                    nn.ReLU()
                self.pool, self.flat = nn.MaxPool2d(2), nn.Flatten()
                self.fc, self.relu2, self.fc2 = nn.Linear(8 * 16, 16), nn.ReLU(), nn.Linear(16, 5)
                self.dequant = lib.ao.quantization.DeQuantStub()

            def forward(self, x):
                x = self.pool(self.relu(self.bn(self.conv(self.quant(x)))))
                return self.dequant(self.fc2(self.relu2(self.fc(self.flat(x)))))
        m = Net()
        if sd is None:
            sd = {k: v.numpy().copy() for k, v in m.state_dict().items()}
        else:
            m.load_state_dict({k: ember.tensor(v) for k, v in sd.items()})
        m.train()
        m.qconfig = lib.ao.quantization.get_default_qat_qconfig("x86")
        m = lib.ao.quantization.fuse_modules_qat(m, [["conv", "bn", "relu"], ["fc", "relu2"]])
        m = lib.ao.quantization.prepare_qat(m)
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        losses = []
        for x, y in zip(xs, ys):
            loss = lib.nn.functional.cross_entropy(m(lib.tensor(x)), lib.tensor(y))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss))
        prepared = repr(m).replace("torch.", "ember.")
        m.apply(lib.ao.nn.intrinsic.qat.freeze_bn_stats)
        m.eval()
        q = lib.ao.quantization.convert(m)
        res[lib.__name__] = (losses, q(lib.tensor(xs[0])).numpy(), _numbers_rounded(prepared),
                             _numbers_rounded(repr(q)))
    e, t = res["ember"], res["torch"]
    np.testing.assert_allclose(e[0], t[0], rtol=1e-5)
    assert e[2] == t[2] and e[3] == t[3]
    assert np.abs(e[1] - t[1]).max() <= 2 * 0.0075 + 1e-6
