"""The lazy modules, LPPool3d, FeatureAlphaDropout and AdaptiveLogSoftmaxWithLoss against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

LAZY = [
    ("LazyLinear", lambda L: L.nn.LazyLinear(3), (2, 5)),
    ("LazyConv1d", lambda L: L.nn.LazyConv1d(4, 3, stride=2), (2, 3, 9)),
    ("LazyConv2d", lambda L: L.nn.LazyConv2d(4, 3, padding=1, bias=False), (2, 3, 6, 6)),
    ("LazyConv3d", lambda L: L.nn.LazyConv3d(2, 2), (1, 2, 3, 3, 3)),
    ("LazyConvTranspose1d", lambda L: L.nn.LazyConvTranspose1d(4, 3, stride=2), (2, 3, 6)),
    ("LazyConvTranspose2d", lambda L: L.nn.LazyConvTranspose2d(2, 3, groups=1), (1, 3, 4, 4)),
    ("LazyConvTranspose3d", lambda L: L.nn.LazyConvTranspose3d(2, 2), (1, 2, 2, 2, 2)),
    ("LazyBatchNorm1d", lambda L: L.nn.LazyBatchNorm1d(affine=False), (4, 3)),
    ("LazyBatchNorm2d", lambda L: L.nn.LazyBatchNorm2d(), (2, 3, 4, 4)),
    ("LazyBatchNorm3d", lambda L: L.nn.LazyBatchNorm3d(momentum=0.3), (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", lambda L: L.nn.LazyInstanceNorm1d(), (2, 3, 5)),
    ("LazyInstanceNorm2d", lambda L: L.nn.LazyInstanceNorm2d(affine=False, track_running_stats=False), (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", lambda L: L.nn.LazyInstanceNorm3d(), (2, 3, 2, 2, 2)),
]


@pytest.mark.parametrize("name,make,shape", LAZY, ids=[c[0] for c in LAZY])
def test_lazy_module_infers_initializes_and_becomes_the_eager_class_as_pytorchs(name, make, shape):
    res = []
    for L in (torch, ember):
        L.manual_seed(0)
        m = make(L)
        before = (repr(m), sorted(m.state_dict()), type(m).__name__,
                  sorted(type(v).__name__ for v in m.state_dict().values()))
        x = L.tensor(np.random.default_rng(1).standard_normal(shape).astype(np.float32))
        y = m(x)
        after = (type(m).__name__, repr(m), sorted(m.state_dict()), [tuple(p.shape) for p in m.parameters()])
        res.append((before, after, y.detach().numpy(), [b.numpy() for b in m.buffers()]))
    assert res[0][0] == res[1][0] and res[0][1] == res[1][1]
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-5, atol=1e-6)
    for a, b in zip(res[0][3], res[1][3]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_lazy_state_dicts_load_and_uninitialized_parameters_refuse_shape():
    for L in (torch, ember):
        src, lazy = L.nn.Linear(4, 3), L.nn.LazyLinear(3)
        assert type(lazy.state_dict()["weight"]).__name__ == "UninitializedParameter"
        lazy.load_state_dict(src.state_dict())
        assert tuple(lazy.weight.shape) == (3, 4) and bool((lazy.weight == src.weight).all())
        lazy(L.ones(2, 4))
        assert type(lazy).__name__ == "Linear"
        with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
            L.nn.LazyLinear(3).weight.shape


def test_lppool3d_and_feature_alpha_dropout_match_pytorch():
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 6, 6)).astype(np.float32)
    res = []
    for L in (torch, ember):
        L.manual_seed(0)
        p = L.nn.LPPool3d(2, (2, 3, 3))(L.tensor(np.abs(x)))
        d = L.nn.FeatureAlphaDropout(0.3)(L.tensor(x))
        res.append((p.numpy(), d.numpy(), repr(L.nn.LPPool3d(1.5, 2, stride=1))))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-5)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-6)
    assert res[0][2] == res[1][2]


def test_adaptive_log_softmax_matches_pytorch():
    res = []
    for L in (torch, ember):
        L.manual_seed(0)
        m = L.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10], div_value=2.0, head_bias=True)
        x = L.tensor(np.random.default_rng(0).standard_normal((7, 16)).astype(np.float32), requires_grad=True)
        t = L.tensor([0, 3, 4, 9, 10, 19, 5])
        out, loss = m(x, t)
        loss.backward()
        with L.no_grad():
            full, pred, single = m.log_prob(x), m.predict(x), m(x[0], t[0]).output
        res.append([out.detach().numpy(), loss.detach().numpy(), x.grad.numpy(), m.tail[1][0].weight.grad.numpy(),
                    full.numpy(), pred.numpy(), single.numpy()])
        with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 19\], but values in range \[0, 25\]"):
            m(x.detach(), L.tensor([0, 1, 2, 3, 4, 5, 25]))
        with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers"):
            L.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [10, 4])
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_sync_batchnorm_data_parallel_grad_and_deprecated_names_match_pytorch():
    x = np.random.default_rng(0).standard_normal((4, 3, 5)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((4, 2, 3, 3)).astype(np.float32)
    go = np.random.default_rng(2).standard_normal((1, 4, 3, 3)).astype(np.float32)
    xi = np.random.default_rng(3).standard_normal((1, 2, 5, 5)).astype(np.float32)
    res = []
    for L in (torch, ember):
        m = L.nn.SyncBatchNorm(3)
        y = m(L.tensor(x))
        net = L.nn.Sequential(L.nn.Conv2d(2, 3, 1), L.nn.BatchNorm2d(3))
        conv = L.nn.SyncBatchNorm.convert_sync_batchnorm(net)
        assert type(conv[1]).__name__ == "SyncBatchNorm" and conv[1].weight is net[1].weight
        dp = L.nn.DataParallel(L.nn.Linear(2, 3))
        assert list(dp.state_dict()) == ["module.weight", "module.bias"] and dp.device_ids == []
        gi = L.nn.grad.conv2d_input((1, 2, 5, 5), L.tensor(w), L.tensor(go), padding=1, stride=2)
        gw = L.nn.grad.conv2d_weight(L.tensor(xi), (4, 2, 3, 3), L.tensor(go), padding=1, stride=2)
        with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
            loss = L.nn.NLLLoss2d()(L.log_softmax(L.ones(2, 3, 2, 2), 1), L.zeros(2, 2, 2, dtype=L.long))
        assert L.nn.factory_kwargs({"device": "cpu", "factory_kwargs": {"dtype": L.float64}}) == \
            {"dtype": L.float64, "device": "cpu"}
        res.append([y.detach().numpy(), m.running_var.numpy(), gi.numpy(), gw.numpy(), loss.numpy(),
                    L.nn.functional.selu_(L.tensor([-1.0, 0.5])).numpy()])
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("nd,shape,kernel,out", [(2, (2, 3, 9, 11), (3, 2), (4, 5)),
                                                 (3, (2, 2, 6, 7, 8), (2, 3, 2), (3, 2, 4))])
def test_fractional_max_pool_modules_draw_and_pool_as_pytorch(nd, shape, kernel, out):
    """The window placement comes from ``rand`` on the global generator: same seed, same windows."""
    res = []
    for L in (torch, ember):
        L.manual_seed(0)
        x = L.tensor(np.random.default_rng(0).standard_normal(shape), requires_grad=True)
        cls = L.nn.FractionalMaxPool2d if nd == 2 else L.nn.FractionalMaxPool3d
        y, i = cls(kernel, output_size=out, return_indices=True)(x)
        (y * L.arange(float(y.numel())).view(y.shape)).sum().backward()
        z = cls(2, output_ratio=0.5)(x.detach()[0])
        res.append((y.detach().numpy(), i.numpy(), x.grad.numpy(), z.numpy(), y.grad_fn.name()))
        with pytest.raises(ValueError, match="requires specifying either an output size, or a pooling ratio"):
            cls(2)
    assert res[0][4] == res[1][4]
    for a, b in zip(res[0][:4], res[1][:4]):
        np.testing.assert_array_equal(b, a)
