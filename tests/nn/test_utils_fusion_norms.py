"""``nn.utils``: BatchNorm fusion, the legacy hook-based weight_norm / spectral_norm, functional_call,
skip_init, clip_grads_with_norm_ and the weight memory-format conversion, against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def _load(m_e, m_t, seed=0):
    rng = np.random.default_rng(seed)
    for (ne, pe), (nt, pt) in zip(m_e.state_dict().items(), m_t.state_dict().items()):
        v = rng.standard_normal(tuple(pt.shape)).astype(np.float32)
        if "running_var" in ne:
            v = np.abs(v) + 0.5
        if "num_batches" in ne:
            continue
        with torch.no_grad():
            pt.copy_(torch.from_numpy(v))
        with ember.no_grad():
            pe.copy_(ember.tensor(v))


@pytest.mark.parametrize("kind", ["conv2d", "conv_transpose2d", "linear"])
def test_fused_layer_computes_bn_of_layer_as_pytorchs(kind):
    outs = []
    for L in (torch, ember):
        if kind == "conv2d":
            layer, bn, x = L.nn.Conv2d(3, 4, 3), L.nn.BatchNorm2d(4), L.ones(2, 3, 5, 5)
        elif kind == "conv_transpose2d":
            layer, bn, x = L.nn.ConvTranspose2d(3, 4, 3), L.nn.BatchNorm2d(4), L.ones(2, 3, 5, 5)
        else:
            layer, bn, x = L.nn.Linear(6, 4), L.nn.BatchNorm1d(4), L.ones(3, 6)
        outs.append((layer, bn, x))
    _load(outs[1][0], outs[0][0])
    _load(outs[1][1], outs[0][1], seed=1)
    res = []
    for (layer, bn, x), L in zip(outs, (torch, ember)):
        layer.eval()
        bn.eval()
        U = L.nn.utils
        if kind == "linear":
            fused = U.fuse_linear_bn_eval(layer, bn)
        else:
            fused = U.fuse_conv_bn_eval(layer, bn, transpose=kind == "conv_transpose2d")
        xin = L.tensor(np.random.default_rng(3).standard_normal(tuple(x.shape)).astype(np.float32))
        with L.no_grad():
            res.append((fused(xin).numpy(), bn(layer(xin)).numpy(), type(fused.weight).__name__))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(res[1][0], res[1][1], rtol=1e-4, atol=1e-5)
    assert res[1][2] == res[0][2] == "Parameter"
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        ember.nn.utils.fuse_conv_bn_eval(ember.nn.Conv2d(1, 1, 1), ember.nn.BatchNorm2d(1))


@pytest.mark.parametrize("dim", [0, 1, None])
def test_legacy_weight_norm_matches_pytorch(dim):
    res = []
    for L in (torch, ember):
        L.manual_seed(0)
        m = L.nn.utils.weight_norm(L.nn.Linear(4, 3), dim=dim)
        names = sorted(m.state_dict())
        x = L.tensor(np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32))
        y = m(x)
        y.sum().backward()
        g = m.weight_g.grad.numpy()
        L.nn.utils.remove_weight_norm(m)
        res.append((names, y.detach().numpy(), g, sorted(m.state_dict())))
    assert res[0][0] == res[1][0] and res[0][3] == res[1][3]
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-6)
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-5, atol=1e-6)


def test_legacy_spectral_norm_matches_pytorch_over_training_and_eval_steps():
    res = []
    for L in (torch, ember):
        L.manual_seed(0)
        m = L.nn.utils.spectral_norm(L.nn.Conv2d(2, 3, 3), n_power_iterations=2)
        names = sorted(m.state_dict())
        x = L.tensor(np.random.default_rng(1).standard_normal((1, 2, 5, 5)).astype(np.float32))
        ys = [m(x).detach().numpy() for _ in range(3)]
        m.eval()
        ys.append(m(x).detach().numpy())
        u = m.weight_u.numpy().copy()
        L.nn.utils.remove_spectral_norm(m)
        res.append((names, ys, u, sorted(m.state_dict())))
    assert res[0][0] == res[1][0] == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert res[0][3] == res[1][3]
    for a, b in zip(res[0][1], res[1][1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-5, atol=1e-6)
    t = ember.nn.utils.spectral_norm(ember.nn.ConvTranspose2d(2, 3, 3))
    assert t.weight_u.shape == (3,)  # dim 1: the output channels of a transposed convolution


def test_functional_call_swaps_parameters_and_buffers_for_one_call():
    res = []
    for L in (torch, ember):
        L.manual_seed(0)
        m = L.nn.Sequential(L.nn.Linear(3, 3), L.nn.BatchNorm1d(3))
        w = L.ones(3, 3, requires_grad=True)
        x = L.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
        call = L.func.functional_call if L is torch else L.nn.utils.stateless.functional_call
        y = call(m, {"0.weight": w, "1.running_mean": L.zeros(3)}, (x,))
        y.sum().backward()
        assert m[0].weight.grad is None and w.grad is not None
        assert not (m[0].weight == 1).all()
        res.append((y.detach().numpy(), w.grad.numpy(), m[1].running_mean.numpy()))
        with pytest.raises(RuntimeError, match="Missing key"):
            call(m, {"0.weight": w}, (x,), strict=True)
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_functional_call_ties_weights():
    lin = ember.nn.Linear(2, 2, bias=False)
    m = ember.nn.Sequential(lin, lin)
    w = ember.eye(2) * 2
    assert ember.nn.utils.stateless.functional_call(m, {"0.weight": w}, (ember.ones(1, 2),)).tolist() == [[4.0, 4.0]]
    with pytest.raises(ValueError, match="which are tied"):
        ember.nn.utils.stateless.functional_call(m, {"0.weight": w, "1.weight": w * 3}, (ember.ones(1, 2),))


def test_skip_init_and_clip_grads_with_norm_and_memory_format():
    m = ember.nn.utils.skip_init(ember.nn.Linear, 4, 3)
    assert m.weight.device.type == "cpu" and m.weight.shape == (4, 3)[::-1]
    with pytest.raises(RuntimeError, match="Expected a Module"):
        ember.nn.utils.skip_init(int)
    grads = []
    for L in (torch, ember):
        p = [L.nn.Parameter(L.ones(3)), L.nn.Parameter(L.ones(2))]
        for q in p:
            q.grad = L.full_like(q, 2.0)
        total = L.nn.utils.get_total_norm([q.grad for q in p])
        L.nn.utils.clip_grads_with_norm_(p, 1.0, total)
        grads.append([q.grad.numpy() for q in p])
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-6)
    net = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3))
    ember.nn.utils.convert_conv2d_weight_memory_format(net, ember.channels_last)
    assert net[0].weight.is_contiguous(memory_format=ember.channels_last)
