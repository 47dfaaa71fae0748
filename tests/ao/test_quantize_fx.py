"""FX graph mode quantization against PyTorch's: prepare_fx / calibrate / convert_fx (and prepare_qat_fx) of models
with fusable runs, functional ReLU / pooling / flatten, residual additions and float tails; outputs within one
quantization step, the same quantized modules, parts left in float by the qconfig mapping."""
from __future__ import annotations

import importlib
import re

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")


def _fx(lib):
    return importlib.import_module(lib.__name__ + ".ao.quantization.quantize_fx")


def _model(lib, kind):
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)
    if kind == "cnn":
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 4, 3)
                self.bn = nn.BatchNorm2d(4)
                self.relu = nn.ReLU()
                self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
                self.fc = nn.Linear(4 * 3 * 3, 5)

            def forward(self, x):
                y = self.relu(self.bn(self.conv(x)))
                y = F.max_pool2d(y, 2)
                y = y + F.relu(self.conv2(y))
                y = lib.flatten(y, 1)
                return F.relu(self.fc(y)).softmax(-1)
        return M()

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(20, 32)
            self.fc2 = nn.Linear(32, 32)
            self.head = nn.Linear(32, 4)

        def forward(self, x):
            h = F.relu(self.fc1(x))
            h = h + self.fc2(h).relu()
            return self.head(h).tanh()
    return MLP()


def _rounded(text):
    """Reprs with numbers to 2 digits: the histogram observers' ranges move with the last bits of float GEMMs (MKL
    and OpenBLAS sum in different orders)."""
    return re.sub(r"\d+\.\d+(e-?\d+)?", lambda m: f"{float(m.group()):.2g}", text.replace("torch.", "ember."))


@pytest.mark.parametrize("kind,shape", [("cnn", (3, 8, 8)), ("mlp", (20,))])
@pytest.mark.parametrize("float_head", [False, True])
def test_prepare_convert_fx_matches_pytorch(kind, shape, float_head):
    rng = np.random.default_rng(0)
    calib = rng.standard_normal((32,) + shape).astype(np.float32)
    test = rng.standard_normal((6,) + shape).astype(np.float32)
    res, sd = {}, None
    for lib in (torch, ember):
        m = _model(lib, kind)
        if sd is None:
            sd = {k: v.numpy().copy() for k, v in m.state_dict().items()}
        else:
            m.load_state_dict({k: ember.tensor(v) for k, v in sd.items()})
        m.eval()
        mapping = lib.ao.quantization.get_default_qconfig_mapping("x86")
        if float_head:
            mapping.set_module_name("fc" if kind == "cnn" else "head", None)
        prepared = _fx(lib).prepare_fx(m, mapping, (lib.tensor(test),))
        prepared(lib.tensor(calib))
        q = _fx(lib).convert_fx(prepared)
        mods = {n: type(mod).__name__ for n, mod in q.named_modules() if n}
        res[lib.__name__] = (q(lib.tensor(test)).detach().numpy(), m(lib.tensor(test)).detach().numpy(), mods,
                             [_rounded(repr(mod)) for _, mod in sorted(q.named_children())])
    (eo, ef, em, er), (to, _, tm, tr) = res["ember"], res["torch"]
    assert em == tm and er == tr
    np.testing.assert_allclose(eo, to, atol=0.02, rtol=0)   # the float tail after one rounding of its input
    assert np.abs(eo - ef).max() < 0.1


def test_prepare_qat_fx_trains_and_converts_as_pytorch():
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((8, 3, 8, 8)).astype(np.float32) for _ in range(3)]
    res, sd = {}, None
    for lib in (torch, ember):
        m = _model(lib, "cnn")
        if sd is None:
            sd = {k: v.numpy().copy() for k, v in m.state_dict().items()}
        else:
            m.load_state_dict({k: ember.tensor(v) for k, v in sd.items()})
        m.train()
        prepared = _fx(lib).prepare_qat_fx(m, lib.ao.quantization.get_default_qat_qconfig_mapping("x86"),
                                           (lib.tensor(xs[0]),))
        opt = lib.optim.SGD(prepared.parameters(), lr=0.05)
        losses = []
        for x in xs:
            loss = prepared(lib.tensor(x)).square().sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss))
        prepared.eval()
        q = _fx(lib).convert_fx(prepared)
        res[lib.__name__] = (losses, q(lib.tensor(xs[0])).detach().numpy())
    np.testing.assert_allclose(res["ember"][0], res["torch"][0], rtol=1e-4)
    np.testing.assert_allclose(res["ember"][1], res["torch"][1], atol=0.02)


def test_fuse_fx_folds_batch_norm():
    x = np.random.default_rng(2).standard_normal((2, 3, 8, 8)).astype(np.float32)
    m = _model(ember, "cnn").eval()
    fused = ember.ao.quantization.quantize_fx.fuse_fx(m)
    assert type(fused.conv).__name__ == "ConvReLU2d"
    assert "bn" not in fused.code and "relu" not in [n.target for n in fused.graph.nodes if n.op == "call_module"]
    np.testing.assert_allclose(fused(ember.tensor(x)).numpy(), m(ember.tensor(x)).detach().numpy(), atol=1e-6)
    with pytest.raises(AssertionError, match="prepare_fx only works for models in eval mode"):
        ember.ao.quantization.quantize_fx.prepare_fx(m.train(), ember.ao.quantization.get_default_qconfig_mapping(),
                                                     (ember.tensor(x),))
