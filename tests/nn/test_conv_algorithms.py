"""The convolution algorithms (gemm / offset for every convolution, direct for stride-1 ones, Winograd for 3x3
stride-1 ones) against
PyTorch for forward, input and weight gradients, the default choice, and the ``ember.backends.cudnn.benchmark``
selection (timed once per key, cached)."""
import numpy as np
import pytest

import ember
from ember.aten.context import global_context
from ember.aten.kernels import conv_algos

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

CASES = [
    ("conv2d", (2, 4, 7, 6), (6, 2, 3, 2), dict(stride=(2, 1), padding=1, dilation=(1, 2), groups=2)),
    ("conv1d", (2, 3, 9), (4, 3, 3), dict(stride=2, padding=2)),
    ("conv3d", (1, 2, 4, 5, 4), (3, 2, 2, 3, 2), dict(padding=(1, 0, 1))),
    ("conv_transpose2d", (2, 4, 3, 4), (4, 3, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose1d", (1, 4, 5), (4, 1, 3), dict(stride=3, groups=2, dilation=2)),
]


@pytest.fixture
def algorithm(request):
    conv_algos.force = request.param
    yield request.param
    conv_algos.force = None


@pytest.mark.parametrize("algorithm", ["gemm", "offset"], indirect=True)
@pytest.mark.parametrize("fn,xs,ws,kw", CASES, ids=[c[0] for c in CASES])
def test_algorithm_matches_pytorch(algorithm, fn, xs, ws, kw):
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(
        ws[1] * kw.get("groups", 1) if "transpose" in fn else ws[0])
    e = [ember.tensor(a, requires_grad=True) for a in (x, w, b)]
    t = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    eo = getattr(ember.nn.functional, fn)(*e, **kw)
    to = getattr(torch.nn.functional, fn)(*t, **kw)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = rng.standard_normal(tuple(to.shape))
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g))
    for a, c in zip(e, t):
        np.testing.assert_allclose(a.grad.numpy(), c.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert set(conv_algos._last.values()) == {algorithm}


def test_benchmark_mode_times_once_per_key_and_caches():
    conv_algos._cache.clear()
    ember.backends.cudnn.benchmark = True
    try:
        assert ember.backends.cudnn.benchmark is True and global_context.benchmark_cudnn is True
        m = ember.nn.Conv2d(3, 4, 3, padding=1)
        x = ember.randn(2, 3, 8, 8, requires_grad=True)
        ref = torch.nn.functional.conv2d(torch.tensor(x.detach().numpy()), torch.tensor(m.weight.detach().numpy()),
                                         torch.tensor(m.bias.detach().numpy()), padding=1)
        for _ in range(2):
            out = m(x)
            out.sum().backward()
            np.testing.assert_allclose(out.detach().numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
        assert {k[0] for k in conv_algos._cache} == {"forward", "input_grad", "weight_grad"}
        assert len(conv_algos._cache) == 3                 # the second step reused the cached choices
        assert set(conv_algos._cache.values()) <= set(conv_algos.ALGORITHMS)
    finally:
        ember.backends.cudnn.benchmark = False
        conv_algos._cache.clear()


def test_heuristic_falls_back_to_offset_for_huge_columns(monkeypatch):
    monkeypatch.setattr(conv_algos, "GEMM_MAX_COLUMN_BYTES", 10)
    ember.nn.functional.conv2d(ember.randn(1, 2, 5, 5), ember.randn(3, 2, 3, 3), stride=2)
    assert conv_algos._last["forward"] == "offset"


# (function, input shape, weight shape, keywords): 1-d and 2-d, channel counts off the block of 4, outputs off the
# block of 16, paddings up to the kernel's reach, unequal per dim, dilation, groups (depthwise too), 1x1, a batch
# of one and of none, transposed convolutions of stride 1 (the input gradient's loop as their forward).
DIRECT_CASES = [
    ("conv2d", (3, 5, 9, 11), (6, 5, 3, 3), dict(padding=1)),
    ("conv2d", (2, 1, 28, 28), (6, 1, 5, 5), dict(padding=2)),
    ("conv2d", (2, 6, 14, 14), (16, 6, 5, 5), {}),
    ("conv2d", (2, 4, 9, 7), (6, 2, 3, 2), dict(padding=(2, 1), dilation=(2, 1), groups=2)),
    ("conv2d", (2, 8, 6, 6), (8, 1, 3, 3), dict(padding=1, groups=8)),
    ("conv2d", (2, 7, 5, 6), (9, 7, 1, 1), {}),
    ("conv2d", (1, 3, 4, 40), (5, 3, 4, 3), dict(padding=(3, 0), dilation=(1, 3))),
    ("conv2d", (0, 3, 6, 6), (4, 3, 3, 3), dict(padding=1)),
    ("conv1d", (3, 4, 37), (5, 4, 5), dict(padding=2)),
    ("conv1d", (2, 6, 20), (4, 3, 3), dict(dilation=3, padding=6, groups=2)),
    ("conv_transpose2d", (2, 6, 5, 7), (6, 4, 3, 3), dict(padding=1)),
    ("conv_transpose1d", (2, 4, 11), (4, 3, 4), dict(groups=2, dilation=2)),
]


@pytest.mark.parametrize("algorithm", ["direct"], indirect=True)
@pytest.mark.parametrize("fn,xs,ws,kw", DIRECT_CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in DIRECT_CASES])
def test_direct_matches_pytorch(algorithm, fn, xs, ws, kw):
    """The direct loops in float32 against PyTorch in float64: forward, input, weight and bias gradients."""
    rng = np.random.default_rng(2)
    groups = kw.get("groups", 1)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
    b = rng.standard_normal(ws[1] * groups if "transpose" in fn else ws[0]).astype(np.float32)
    e = [ember.tensor(a, requires_grad=True) for a in (x, w, b)]
    t = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, b)]
    eo = getattr(ember.nn.functional, fn)(*e, **kw)
    to = getattr(torch.nn.functional, fn)(*t, **kw)
    g = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g, dtype=torch.float64))
    assert set(conv_algos._last.values()) == {"direct"}
    assert eo.dtype == ember.float32 and tuple(eo.shape) == tuple(to.shape)
    for a, c in [(eo, to)] + list(zip([v.grad for v in e], [v.grad for v in t])):
        want = c.detach().numpy()
        atol = 2e-6 * max(1.0, np.abs(want).max(initial=0))
        np.testing.assert_allclose(a.detach().numpy(), want, rtol=1e-5, atol=atol)


@pytest.mark.parametrize("algorithm", ["direct"], indirect=True)
def test_direct_keeps_inf_and_nan_where_pytorch_has_them(algorithm):
    """An inf or NaN in the input reaches only the outputs and weight gradients that read it: the weight gradient
    of an input holding one is the GEMM's (the direct loop's dropped columns would multiply it by 0)."""
    x = np.random.default_rng(3).standard_normal((2, 3, 8, 9)).astype(np.float32)
    x[0, 1, 2, 8] = np.inf            # the last column: tap b = 0 reads it only from a dropped column
    x[1, 2, 5, 0] = np.nan
    w = np.random.default_rng(4).standard_normal((4, 3, 3, 5)).astype(np.float32)
    e = [ember.tensor(a, requires_grad=True) for a in (x, w)]
    t = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w)]
    eo = ember.nn.functional.conv2d(*e)
    to = torch.nn.functional.conv2d(*t)
    g = np.ones(tuple(to.shape), np.float32)
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g, dtype=torch.float64))
    assert conv_algos._last["forward"] == conv_algos._last["input_grad"] == "direct"
    for a, c in [(eo, to)] + list(zip([v.grad for v in e], [v.grad for v in t])):
        want = c.detach().numpy()
        got = a.detach().numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)


def test_direct_splits_over_threads_with_the_same_bits(monkeypatch):
    """A block's sums run in one order whatever the thread count: one thread and three give the same bits."""
    from ember.aten.kernels import compiled
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 5, 12, 10)).astype(np.float32)
    w = rng.standard_normal((7, 5, 3, 3)).astype(np.float32)
    g = rng.standard_normal((6, 7, 12, 10)).astype(np.float32)
    args = ((1, 1), (1, 1), (1, 1), 1)
    before = ember.get_num_threads()
    runs = []
    try:
        for threads in (1, 3):
            ember.set_num_threads(threads)
            monkeypatch.setattr(compiled, "row_grain", lambda n: 1)           # every block its own range
            runs.append([conv_algos._fwd_direct(np, x, w, *args), conv_algos._gin_direct(np, g, w, x.shape, *args),
                         conv_algos._gw_direct(np, g, x, w.shape, *args)])
    finally:
        ember.set_num_threads(before)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


WINOGRAD_CASES = [((2, 16, 8, 8), 16, 1), ((3, 5, 7, 9), 4, 1), ((2, 3, 6, 5), 6, 0), ((2, 4, 5, 6), 3, 2),
                  ((1, 2, 1, 1), 3, 1), ((2, 17, 3, 3), 20, 0), ((4, 32, 12, 11), 24, 1)]


@pytest.mark.parametrize("algorithm", ["winograd"], indirect=True)
@pytest.mark.parametrize("xs,o,pad", WINOGRAD_CASES, ids=[f"{c[0]}-{c[1]}-p{c[2]}" for c in WINOGRAD_CASES])
def test_winograd_matches_pytorch(algorithm, xs, o, pad):
    """F(2x2, 3x3) in float32 against PyTorch in float64: odd and even sizes (cut tiles), paddings 0 to 2."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal((o, xs[1], 3, 3)) / 3).astype(np.float32)
    e = [ember.tensor(a, requires_grad=True) for a in (x, w)]
    t = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w)]
    eo = ember.nn.functional.conv2d(*e, padding=pad)
    to = torch.nn.functional.conv2d(*t, padding=pad)
    assert conv_algos._last["forward"] == "winograd"
    g = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g, dtype=torch.float64))
    assert conv_algos._last["input_grad"] == conv_algos._last["weight_grad"] == "winograd"
    for a, c in [(eo, to)] + list(zip([x.grad for x in e], [x.grad for x in t])):
        want = c.detach().numpy()
        np.testing.assert_allclose(a.detach().numpy(), want, rtol=1e-5, atol=2e-6 * max(1.0, np.abs(want).max()))


def test_default_choice():
    """Winograd for 3x3 with many channels and tiles, else direct for stride 1 with few channel pairs, else gemm."""
    def chosen(x, w, **kw):
        ember.nn.functional.conv2d(x, w, **kw)
        return conv_algos._last["forward"]
    x, w = ember.randn(2, 128, 48, 48), ember.randn(128, 128, 3, 3)           # 2 * 24 * 24 = 1152 2x2 tiles
    assert chosen(x, w, padding=1) == "winograd"
    assert chosen(x[:, :, :40, :40], w, padding=1) == "gemm"                   # 800 tiles: too few
    assert chosen(x.double(), w.double(), padding=1) == "gemm"          # float64 keeps the exact products
    assert chosen(x, w, padding=1, stride=2) == "gemm"
    assert chosen(x, ember.randn(128, 128, 5, 5), padding=2) == "gemm"
    assert chosen(ember.randn(2, 3, 8, 8), ember.randn(16, 3, 3, 3), padding=1) == "direct"   # 48 channel pairs
    assert chosen(x[:, :64], ember.randn(64, 64, 3, 3), padding=1) == "winograd"            # enough tiles
    assert chosen(x[:, :64, :20, :20], ember.randn(64, 64, 3, 3), padding=1) == "direct"    # 200 tiles; 64 x 64
    assert chosen(x[:, :64, :20, :20], ember.randn(65, 64, 3, 3), padding=1) == "gemm"
    assert chosen(x[:, :, :20, :20], ember.randn(128, 64, 3, 3), padding=1, groups=2) == "direct"   # per group
    assert chosen(x, ember.randn(64, 64, 5, 5), padding=2, groups=2) == "direct"
    assert chosen(ember.randn(2, 3, 8, 8), ember.randn(16, 3, 3, 3), stride=2) == "gemm"
    assert chosen(ember.randn(2, 3, 8, 8).double(), ember.randn(16, 3, 3, 3).double()) == "gemm"
