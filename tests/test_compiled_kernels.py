"""The numba-compiled kernels (ember/aten/kernels/loops) against float64 references written from the
textbook formulas (SciPy's erfc, not 1 + erf, so that the far negative tail has a reference), against the NumPy
kernels they replace, on large arrays split over threads, on strided inputs and on NaN / inf."""
import math

import numpy as np
import pytest

import ember
from ember.aten import parallel
from ember.aten.kernels import compiled, loops

pytest.importorskip("numba", reason="numba is a dependency of ember: pip install numba")
special = pytest.importorskip("scipy.special")

BETA, KAPPA = math.sqrt(2 / math.pi), 0.044715


def gelu_ref(x, approximate):
    x = x.astype(np.float64)
    if approximate == "tanh":
        u = BETA * (x + KAPPA * x ** 3)
        return 0.5 * x * (2 / (1 + np.exp(-2 * u)))
    return 0.5 * x * special.erfc(-x / math.sqrt(2))


def gelu_grad_ref(x, approximate):
    x = x.astype(np.float64)
    if approximate == "tanh":
        u = BETA * (x + KAPPA * x ** 3)
        p, m = 2 / (1 + np.exp(-2 * u)), 2 / (1 + np.exp(2 * u))
        return 0.5 * p + 0.5 * x * p * m * BETA * (1 + 3 * KAPPA * x * x)
    return 0.5 * special.erfc(-x / math.sqrt(2)) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


@pytest.fixture
def fallback():
    """Run the NumPy kernels instead of the compiled ones, restoring the switch after the test."""
    yield lambda: compiled.set_enabled(False)
    compiled.set_enabled(True)


def test_compiled_kernels_are_in_use():
    assert compiled.is_enabled()
    assert compiled.usable(np, np.ones(3, np.float32))
    assert not compiled.usable(np, np.ones(3))  # float64 keeps the NumPy kernels (full double accuracy)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_forward_and_backward_to_float32_accuracy(approximate):
    """Relative error within a few float32 ulps everywhere gelu is a normal float32, the tail included: 6.1 ulps
    at worst (PyTorch's own kernel, 0.5 x (1 + erf(x / sqrt 2)), cancels: 1800 ulps already for x > -3)."""
    x = np.concatenate([np.linspace(-13, 13, 200001), np.random.default_rng(0).standard_normal(70000) * 3])
    x = x.astype(np.float32)
    g = np.random.default_rng(1).standard_normal(x.size).astype(np.float32)
    xe = ember.tensor(x).requires_grad_()
    y = ember.nn.functional.gelu(xe, approximate=approximate)
    y.backward(ember.tensor(g))
    ref = gelu_ref(x, approximate)
    normal = np.abs(ref) > 1e-37
    np.testing.assert_allclose(y.detach().numpy()[normal], ref[normal], rtol=8e-7)
    grad_ref = g.astype(np.float64) * gelu_grad_ref(x, approximate)
    ok = np.abs(grad_ref) > 1e-37
    # gelu' = Phi(x) + x phi(x) crosses zero near x = -0.75: there the error is absolute, 1.4e-7 at worst (times
    # g here; PyTorch's own float32 kernel: 2.4e-7)
    np.testing.assert_allclose(xe.grad.numpy()[ok], grad_ref[ok], rtol=6e-7, atol=3e-7)
    np.testing.assert_allclose(xe.grad.numpy()[~ok], 0, atol=1e-37)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_compiled_agrees_with_the_numpy_kernel(approximate, fallback):
    x = (np.random.default_rng(2).standard_normal((300, 257)) * 4).astype(np.float32)
    g = np.random.default_rng(3).standard_normal((300, 257)).astype(np.float32)
    runs = []
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        xe = ember.tensor(x).t().requires_grad_()  # strided: the kernels see a transposed array
        y = ember.nn.functional.gelu(xe, approximate=approximate)
        y.backward(ember.tensor(g).t())
        runs.append((y.detach().numpy(), xe.grad.numpy()))
    (yc, gc), (yn, gn) = runs
    assert yc.shape == yn.shape == (257, 300) and yc.dtype == np.float32
    # the NumPy kernel computes 1 + erf and 1 - tanh^2 in float32, losing digits in the tails
    np.testing.assert_allclose(yc, yn, rtol=2e-6, atol=2e-7)
    np.testing.assert_allclose(gc, gn, rtol=2e-6, atol=5e-6)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_special_values_and_half_types(approximate):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 88.0, -88.0], np.float32)
    y = ember.nn.functional.gelu(ember.tensor(x), approximate=approximate).numpy()
    np.testing.assert_array_equal(y, np.array([0, 0, np.inf, np.nan, np.nan, 1e30, 0, 88, 0], np.float32))
    d = ember.ops.aten.gelu_backward(ember.ones(9), ember.tensor(x), approximate=approximate).numpy()
    np.testing.assert_allclose(d[[0, 1, 4, 5, 6, 7, 8]], [0.5, 0.5, np.nan, 1, 0, 1, 0], rtol=1.2e-7, atol=0)
    assert np.isnan(d[2]) and np.isnan(d[3])  # inf * phi(inf) = inf * 0, as in PyTorch
    for dt in (ember.bfloat16, ember.float16):
        h = ember.tensor([-2.0, 0.5, 3.0]).to(dt)
        out = ember.nn.functional.gelu(h, approximate=approximate)
        assert out.dtype == dt
        np.testing.assert_allclose(out.float().numpy(), gelu_ref(h.float().numpy(), approximate), rtol=1e-2)


def test_silu_forward_and_backward_to_float32_accuracy(fallback):
    """SiLU and its gradient within float32 ulps of float64 (where PyTorch's float32 formula loses digits: the
    derivative's zero near x = -1.28), PyTorch's values at the special points, and the NumPy kernel's results
    on a strided input."""
    torch = pytest.importorskip("torch")
    x = np.concatenate([np.linspace(-90, 30, 240001), np.random.default_rng(0).standard_normal(50000) * 4])
    x = x.astype(np.float32)
    g = np.random.default_rng(1).standard_normal(x.size).astype(np.float32)
    xe = ember.tensor(x).requires_grad_()
    ember.nn.functional.silu(xe).backward(ember.tensor(g))
    x64 = x.astype(np.float64)
    sig = special.expit(x64)
    ref, dref = x64 * sig, g * sig * (1 + x64 * (1 - sig))
    y = ember.nn.functional.silu(ember.tensor(x)).numpy()
    normal = (np.abs(ref) > 1e-37) & (x > -88.72)
    np.testing.assert_allclose(y[normal], ref[normal], rtol=4e-7)
    live = x >= np.float32(-88.72283935546875)             # -ln(FLT_MAX)
    np.testing.assert_allclose(xe.grad.numpy()[live], dref[live], rtol=6e-7, atol=1e-37)
    assert not xe.grad.numpy()[~live].any()    # PyTorch's sigmoid is 0 there (its e^-x overflows float32)
    special_x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 88.0, -88.0, -88.8, -100.0], np.float32)
    got = ember.nn.functional.silu(ember.tensor(special_x)).numpy()
    want = torch.nn.functional.silu(torch.tensor(special_x)).numpy()
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))    # -0 where PyTorch's 1 + e^-x overflows
    dgot = ember.ops.aten.silu_backward(ember.ones(11), ember.tensor(special_x)).numpy()
    dwant = torch.ops.aten.silu_backward(torch.ones(11), torch.tensor(special_x)).numpy()
    np.testing.assert_allclose(dgot, dwant, rtol=2e-7, atol=0)    # NaN at +-inf as PyTorch: 1 + inf * 0
    xs = (np.random.default_rng(2).standard_normal((300, 257)) * 4).astype(np.float32)
    runs = []
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        xt = ember.tensor(xs).t().requires_grad_()
        yt = ember.nn.functional.silu(xt)
        yt.backward(ember.tensor(xs).t())
        runs.append((yt.detach().numpy(), xt.grad.numpy()))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=2e-6, atol=2e-6)


POOLS = [((2, 3, 9, 9), dict(kernel_size=3, stride=2, padding=1)), ((2, 3, 8, 8), dict(kernel_size=2)),
         ((3, 10, 11), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(2, 1), ceil_mode=True)),
         ((1, 2, 7, 7), dict(kernel_size=3, stride=3, ceil_mode=True)),
         ((2, 2, 5, 6, 7), dict(kernel_size=2, padding=1)),
         ((1, 1, 6, 6, 6), dict(kernel_size=3, stride=2, dilation=2))]


@pytest.mark.parametrize("shape,kw", POOLS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool_matches_pytorch_bit_for_bit(shape, kw, dtype, fallback):
    """Values and indices (NaN anywhere in a window wins, the last one; an all -inf window answers its first
    in-bounds element) and the gradient through the compiled scatter, against PyTorch and the NumPy kernels."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(len(shape) + shape[-1])
    x = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[::11] = np.nan
    flat[3:9] = -np.inf
    fn = "max_pool3d" if len(shape) == 5 else "max_pool2d"
    t = torch.tensor(x, requires_grad=True)
    yt, it = getattr(torch.nn.functional, fn)(t, return_indices=True, **kw)
    g = rng.standard_normal(tuple(yt.shape)).astype(dtype)
    yt.backward(torch.tensor(g))
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        e = ember.tensor(x, requires_grad=True)
        ye, ie = getattr(ember.nn.functional, fn)(e, return_indices=True, **kw)
        ye.backward(ember.tensor(g))
        np.testing.assert_array_equal(ye.detach().numpy(), yt.detach().numpy())
        np.testing.assert_array_equal(ie.numpy(), it.numpy())
        np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())     # the same additions in the same order


def _pool_backward_args(lib, x, nd):
    k, s = [2] * nd, [2] * nd
    t = lib.tensor(x)
    y, i = getattr(lib.ops.aten, f"max_pool{nd}d_with_indices")(t, k, s, [1] * nd, [1] * nd, True)
    return t, y, i, (k, s, [1] * nd, [1] * nd, True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("shape", [(2, 3, 7, 6), (3, 5, 4), (2, 2, 3, 5, 4)])
def test_max_pool_backward_op_matches_pytorch(shape, dtype, fallback):
    """``max_pool{2,3}d_with_indices_backward`` as PyTorch's derivatives.yaml names it: values (an index of -1
    adds nothing), the grad_fn's names, and its own gradient with respect to grad_output, compiled and NumPy."""
    torch = pytest.importorskip("torch")
    nd = 3 if len(shape) == 5 else 2
    rng = np.random.default_rng(11)
    x = rng.standard_normal(shape).astype(np.float32)
    tt, yt, it, args = _pool_backward_args(torch, x, nd)
    skip = it.clone()
    skip[..., 0] = -1                    # no element: adds nothing (PyTorch's double backward cannot take it)
    g = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    h = rng.standard_normal(shape).astype(np.float32)
    tdt, edt = getattr(torch, dtype), getattr(ember, dtype)
    op_t = getattr(torch.ops.aten, f"max_pool{nd}d_with_indices_backward")
    op_e = getattr(ember.ops.aten, f"max_pool{nd}d_with_indices_backward")
    gt = torch.tensor(g).to(tdt).requires_grad_()
    want = op_t(gt, tt.to(tdt), *args, it)
    want.backward(torch.tensor(h).to(tdt))
    want_skip = op_t(gt.detach(), tt.to(tdt), *args, skip)
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        te, ye, ie, _ = _pool_backward_args(ember, x, nd)
        ge = ember.tensor(g).to(edt).requires_grad_()
        got = op_e(ge, te.to(edt), *args, ember.tensor(it.numpy()))
        assert got.dtype == edt and tuple(got.shape) == shape
        assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__
        np.testing.assert_array_equal(got.detach().float().numpy(), want.detach().float().numpy())
        got.backward(ember.tensor(h).to(edt))
        np.testing.assert_array_equal(ge.grad.float().numpy(), gt.grad.float().numpy())
        got_skip = op_e(ge.detach(), te.to(edt), *args, ember.tensor(skip.numpy()))
        np.testing.assert_array_equal(got_skip.float().numpy(), want_skip.float().numpy())


def test_max_pool_backward_op_errors_match_pytorch(fallback):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(12).standard_normal((2, 3, 8, 8)).astype(np.float32)
    cases = [
        lambda L, g, x, i: (g.double(), x, [2, 2], [2, 2], [0, 0], [1, 1], False, i),
        lambda L, g, x, i: (L.ones(2, 3, 5, 4), x, [2, 2], [2, 2], [0, 0], [1, 1], False, i),
        lambda L, g, x, i: (L.ones(2, 4, 4, 4), x, [2, 2], [2, 2], [0, 0], [1, 1], False, i),
        lambda L, g, x, i: (L.ones(3, 4, 4), x, [2, 2], [2, 2], [0, 0], [1, 1], False, i),
        lambda L, g, x, i: (g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, i[:, :, :3]),
        lambda L, g, x, i: (g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, i.int()),
        lambda L, g, x, i: (g, x, [2, 2, 2], [2, 2], [0, 0], [1, 1], False, i),
        lambda L, g, x, i: (g, x, [2, 2], [2, 2], [2, 2], [1, 1], False, i),
        lambda L, g, x, i: (g.long(), x.long(), [2, 2], [2, 2], [0, 0], [1, 1], False, i),
    ]
    for make in cases:
        msgs = []
        for L in (torch, ember):
            t = L.tensor(x)
            y, i = L.ops.aten.max_pool2d_with_indices(t, [2, 2], [2, 2])
            with pytest.raises(Exception) as info:
                L.ops.aten.max_pool2d_with_indices_backward(*make(L, L.ones_like(y), t, i))
            msgs.append((type(info.value), str(info.value).split("\n")[0]))
        assert msgs[0] == msgs[1]
    for nd, kw in [(2, dict(kernel_size=[2, 2, 2])), (2, dict(kernel_size=[2], stride=[1, 1, 1])),
                   (2, dict(kernel_size=[2], padding=[1, 1, 1])), (2, dict(kernel_size=[2], dilation=[1, 1, 1])),
                   (2, dict(kernel_size=[])), (3, dict(kernel_size=[2, 2])), (3, dict(kernel_size=[2], stride=[1, 1])),
                   (3, dict(kernel_size=[2], padding=[1, 1])), (3, dict(kernel_size=[2], dilation=[1, 1]))]:
        msgs = []
        for L in (torch, ember):
            with pytest.raises(Exception) as info:
                getattr(L.ops.aten, f"max_pool{nd}d_with_indices")(L.ones((1, 2) + (4,) * nd), **kw)
            msgs.append((type(info.value), str(info.value).split("\n")[0]))
        assert msgs[0] == msgs[1]
    # PyTorch writes past the gradient's buffer for an index outside the plane (other than -1); ember raises
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        t = ember.tensor(x)
        y, i = ember.ops.aten.max_pool2d_with_indices(t, [2, 2], [2, 2])
        i[1, 2, 3, 1] = 64
        with pytest.raises(RuntimeError, match=r"Found an invalid max index: 64 \(input volumes are of size 8x8\)"):
            ember.ops.aten.max_pool2d_with_indices_backward(ember.ones_like(y), t, [2, 2], [2, 2], [0, 0], [1, 1],
                                                            False, i)


def test_scatter_add_along_the_last_dim_is_compiled_and_matches_ufunc_at(fallback):
    rng = np.random.default_rng(5)
    base = rng.standard_normal((4, 3, 50)).astype(np.float32)
    index = rng.integers(0, 50, (4, 3, 70))
    src = rng.standard_normal((4, 3, 80)).astype(np.float32)
    runs = []
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        runs.append(ember.tensor(base).scatter_add(-1, ember.tensor(index), ember.tensor(src)).numpy())
    expect = base.copy()
    np.add.at(expect, tuple(list(np.indices(index.shape, sparse=True))[:2]) + (index,), src[..., :70])
    np.testing.assert_array_equal(runs[0], expect)  # the same additions in the same order
    np.testing.assert_array_equal(runs[1], expect)


def test_index_add_along_dim_0_is_compiled_and_matches_ufunc_at(fallback):
    """Embedding's backward: rows added in order, repeated rows included, as np.add.at adds them."""
    rng = np.random.default_rng(9)
    base = rng.standard_normal((50, 3, 4)).astype(np.float32)
    index = rng.integers(0, 50, 200)
    src = rng.standard_normal((200, 3, 4)).astype(np.float32)
    runs = []
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        runs.append(ember.tensor(base).index_add(0, ember.tensor(index), ember.tensor(src), alpha=0.5).numpy())
    expect = base.copy()
    np.add.at(expect, index, src * np.float32(0.5))
    np.testing.assert_array_equal(runs[0], expect)
    np.testing.assert_array_equal(runs[1], expect)


CONVS = [((3, 4, 9, 8), (6, 2, 3, 2), dict(stride=(2, 1), padding=(2, 1), dilation=(1, 2)), 2),
         ((2, 3, 11), (4, 3, 4), dict(stride=3, padding=2, dilation=2), 1),
         ((2, 2, 5, 6, 4), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1), padding=(1, 0, 1)), 1),
         ((16, 6, 14, 14), (16, 6, 5, 5), dict(), 1),                         # big enough to split over threads
         ((2, 4, 3, 3), (4, 2, 5, 5), dict(padding=4), 2)]                    # windows mostly in the padding


@pytest.mark.parametrize("xs,ws,kw,groups", CONVS)
def test_im2col_is_the_numpy_columns_and_col2im_its_adjoint(xs, ws, kw, groups, fallback):
    """The compiled columns equal the sliding-window copy element for element (zeros in the padding); col2im
    is im2col's adjoint: <im2col(x), c> = <x, col2im(c)> in float64."""
    from ember.aten.kernels import conv_algos
    nd = len(xs) - 2
    full = {k: (v,) * nd if isinstance(v, int) else v for k, v in kw.items()}
    stride, padding, dilation = (full.get(k, (d,) * nd) for k, d in (("stride", 1), ("padding", 0), ("dilation", 1)))
    out_sp = tuple((i + 2 * p - d * (k - 1) - 1) // s + 1
                   for i, k, s, p, d in zip(xs[2:], ws[2:], stride, padding, dilation))
    rng = np.random.default_rng(sum(xs))
    x = rng.standard_normal(xs)
    runs = []
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        runs.append(conv_algos._columns(np, x, ws[2:], stride, padding, dilation, out_sp).copy())
    np.testing.assert_array_equal(runs[0], runs[1])
    c = rng.standard_normal(runs[0].shape)
    compiled.set_enabled(True)
    back = [conv_algos._col2im(np, c, xs, ws[2:], stride, padding, dilation, out_sp)]
    fallback()
    back.append(conv_algos._col2im(np, c, xs, ws[2:], stride, padding, dilation, out_sp))
    np.testing.assert_allclose(back[0], back[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.vdot(runs[0], c), np.vdot(x, back[0]), rtol=1e-10)


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xs,ws,kw,groups", CONVS)
def test_convolution_through_compiled_im2col_matches_pytorch(xs, ws, kw, groups, dtype, transposed, fallback):
    torch = pytest.importorskip("torch")
    nd = len(xs) - 2
    kind = "conv_transpose" if transposed else "conv"
    fn = f"{kind}{nd}d"
    if transposed:       # weight (C_in, C_out / groups, k...); padding halved so that every output is non-empty
        ws = (xs[1], ws[0] // groups) + ws[2:]
        stride = kw.get("stride", 1)
        kw = dict(kw, padding=np.floor_divide(kw.get("padding", 0), 2).tolist(),
                  output_padding=np.subtract(stride, 1).tolist())
    rng = np.random.default_rng(len(xs) * 7 + int(transposed))
    x, w = rng.standard_normal(xs).astype(dtype), (rng.standard_normal(ws) * 0.3).astype(dtype)
    t = [torch.tensor(a, requires_grad=True) for a in (x, w)]
    yt = getattr(torch.nn.functional, fn)(*t, groups=groups, **kw)
    g = rng.standard_normal(tuple(yt.shape)).astype(dtype)
    yt.backward(torch.tensor(g))
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == "float64" else dict(rtol=2e-4, atol=2e-4)
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        e = [ember.tensor(a, requires_grad=True) for a in (x, w)]
        ye = getattr(ember.nn.functional, fn)(*e, groups=groups, **kw)
        ye.backward(ember.tensor(g))
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), **tol)
        for a, b in zip(e, t):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)


def _special_rows(x):
    """Rows with a NaN, a +inf, all -inf, some -inf, and huge values put into x (rows 0-4)."""
    x = x.copy()
    x[0, 3] = np.nan
    x[1, 2] = np.inf
    x[2, :] = -np.inf
    x[3, ::2] = -np.inf
    x[4, :] *= 1e30
    return x


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(7, 13), (3, 300, 257)])          # the second is split over threads
def test_softmax_rows_match_pytorch(fn, shape, fallback):
    """Values, NaN rows (PyTorch's: a row whose max is not finite is NaN throughout), the gradient through the
    _softmax_backward_data / _log_softmax_backward_data ops, on the compiled rows and the NumPy path."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(len(shape))
    x = _special_rows((rng.standard_normal(shape) * 4).astype(np.float32).reshape(-1, shape[-1])).reshape(shape)
    g = rng.standard_normal(shape).astype(np.float32)
    t = torch.tensor(x, requires_grad=True)
    yt = getattr(torch, fn)(t, -1)
    yt.backward(torch.tensor(g))
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        e = ember.tensor(x, requires_grad=True)
        ye = getattr(ember, fn)(e, -1)
        ye.backward(ember.tensor(g))
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=2e-6, atol=2e-6)
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward_ops_on_arbitrary_outputs(log, fallback):
    """The backward ops take any ``output`` a caller passes (values above 1, NaN): the compiled rows use libm's
    exp there and agree with PyTorch."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    g = rng.standard_normal((6, 9)).astype(np.float32)
    y = (rng.standard_normal((6, 9)) * 3).astype(np.float32)
    y[1, 1] = np.nan
    name = "_log_softmax_backward_data" if log else "_softmax_backward_data"
    ref = getattr(torch.ops.aten, name)(torch.tensor(g), torch.tensor(y), 1, torch.float32).numpy()
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        out = getattr(ember.ops.aten, name)(ember.tensor(g), ember.tensor(y), 1, ember.float32).numpy()
        np.testing.assert_allclose(out, ref, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("shape,normalized", [((5, 7), (7,)), ((4, 300, 128), (128,)), ((3, 4, 5), (4, 5))])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_rows_match_pytorch(shape, normalized, affine, fallback):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3 + 2).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    params = [rng.standard_normal(normalized).astype(np.float32) for _ in range(2)] if affine else []
    ts = [torch.tensor(a, requires_grad=True) for a in [x] + params]
    yt = torch.nn.functional.layer_norm(ts[0], normalized, *ts[1:])
    yt.backward(torch.tensor(g))
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        es = [ember.tensor(a, requires_grad=True) for a in [x] + params]
        ye = ember.nn.functional.layer_norm(es[0], normalized, *es[1:])
        ye.backward(ember.tensor(g))
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
        for a, b in zip(es, ts):     # weight / bias gradients sum over up to 1200 rows
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,groups", [((32, 16, 32, 32), 4), ((2, 6, 5), 3), ((4, 8, 3, 3, 3), 8), ((3, 4), 2),
                                          ((6, 32, 7, 7), 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_rows_match_pytorch(shape, groups, affine, fallback):
    """native_group_norm of float32 runs loops.normalization.group_norm (a row per sample and group): output,
    mean and rstd as PyTorch's, gradients through them; the NumPy kernel agrees."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3 + 2).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    params = [rng.standard_normal(shape[1]).astype(np.float32) for _ in range(2)] if affine else []
    ts = [torch.tensor(a, requires_grad=True) for a in [x] + params]
    yt = torch.nn.functional.group_norm(ts[0], groups, *ts[1:])
    yt.backward(torch.tensor(g))
    stats = torch.ops.aten.native_group_norm(torch.tensor(x), None, None, shape[0], shape[1], x[0, 0].size, groups,
                                             1e-5)
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        es = [ember.tensor(a, requires_grad=True) for a in [x] + params]
        ye = ember.nn.functional.group_norm(es[0], groups, *es[1:])
        ye.backward(ember.tensor(g))
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
        for a, b in zip(es, ts):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4)
        ours = ember.ops.aten.native_group_norm(ember.tensor(x), None, None, shape[0], shape[1], x[0, 0].size, groups,
                                                1e-5)
        for a, b in zip(ours[1:], stats[1:]):
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(8, 5), (4, 3, 5), (16, 24, 20, 20), (2, 3, 4, 5, 6)])
@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_channels_match_pytorch(shape, train, fallback):
    """The compiled channel loops (statistics, normalization, the two backward passes) and the NumPy kernel both
    give PyTorch's output, gradients and running statistics."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3 + 2).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    C = shape[1]
    w, b = rng.standard_normal(C).astype(np.float32), rng.standard_normal(C).astype(np.float32)
    rm, rv = rng.standard_normal(C).astype(np.float32), rng.random(C).astype(np.float32) + 0.5

    def run(lib):
        ts = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        stats = [lib.tensor(rm), lib.tensor(rv)]
        y = lib.nn.functional.batch_norm(ts[0], *stats, ts[1], ts[2], training=train, momentum=0.2)
        y.backward(lib.tensor(g))
        return [y.detach().numpy()] + [t.grad.numpy() for t in ts] + [s.numpy() for s in stats]
    want = run(torch)
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        for a, c in zip(run(ember), want):     # weight / bias gradients sum over up to 6400 values per channel
            np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(c).max()))


ATTENTION = [((2, 3, 6, 4), (2, 3, 6, 4), dict(is_causal=True)),
             ((2, 3, 5, 4), (2, 3, 7, 4), dict(is_causal=True, scale=0.3)),      # fewer queries than keys
             ((16, 4, 64, 32), (16, 4, 64, 32), dict(is_causal=True)),          # split over threads
             ((1, 2, 3, 4), (1, 2, 5, 4), dict(mask=(3, 5))),                    # additive 2-d mask, a row all -inf
             ((2, 2, 3, 4), (2, 2, 5, 4), dict(mask=(2, 1, 3, 5)))]              # 4-d mask broadcast over heads


@pytest.mark.parametrize("qs,ks,kw", ATTENTION)
def test_fused_attention_matches_pytorch(qs, ks, kw, fallback):
    """_scaled_dot_product_flash_attention_for_cpu in float32 (output, logsumexp and the three gradients) against
    PyTorch's own op, on the compiled rows and on the NumPy path; a row whose keys are all masked gives output
    0 and logsumexp 0, as PyTorch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(sum(qs))
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in (qs, ks, ks))
    kw = dict(kw)
    mask = None
    if "mask" in kw:
        mask = np.where(rng.random(kw.pop("mask")) < 0.7, 0.0, -np.inf).astype(np.float32)
        mask[..., 1, :] = -np.inf
    g = rng.standard_normal(qs).astype(np.float32)
    ts = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    ot, lt = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        *ts, attn_mask=None if mask is None else torch.tensor(mask), **kw)
    ot.backward(torch.tensor(g))
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        es = [ember.tensor(a, requires_grad=True) for a in (q, k, v)]
        oe, le = ember.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            *es, attn_mask=None if mask is None else ember.tensor(mask), **kw)
        oe.backward(ember.tensor(g))
        np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(le.numpy(), lt.numpy(), rtol=1e-5, atol=1e-5)
        for a, b in zip(es, ts):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_attention_picks_the_fused_op_where_pytorch_does():
    """scaled_dot_product_attention takes the fused CPU op for 4-d inputs of one head size without dropout (as
    PyTorch's use_flash_attention_cpp decides) and the math path otherwise; both give PyTorch's values."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    cases = [((2, 4, 8, 16),) * 3, ((2, 4, 8, 16), (2, 4, 8, 16), (2, 4, 8, 8)), ((4, 8, 16),) * 3]
    for shapes, fused in zip(cases, (True, False, False)):
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        e = [ember.tensor(a, requires_grad=True) for a in arrays]
        out = ember.nn.functional.scaled_dot_product_attention(*e, is_causal=True)
        assert ("Flash" in out.grad_fn.name()) == fused, (shapes, out.grad_fn.name())
        ref = torch.nn.functional.scaled_dot_product_attention(*[torch.tensor(a) for a in arrays], is_causal=True)
        np.testing.assert_allclose(out.detach().numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    x = ember.randn(1, 2, 4, 8, requires_grad=True)
    dropped = ember.nn.functional.scaled_dot_product_attention(x, x, x, dropout_p=0.5)
    assert "Flash" not in dropped.grad_fn.name()


def test_cell_activations_to_float32_accuracy():
    """The LSTM cell's float32 sigmoid and tanh (from e^-|x| and e^(-2|x|) - 1): relative error within 2.5 ulps
    over the whole range, tanh's included near 0 (no cancellation), saturation at 0 / 1, NaN and signed zeros
    kept."""
    x = np.concatenate([np.linspace(-120, 120, 400001), np.geomspace(1e-30, 1e-2, 1000),
                        -np.geomspace(1e-30, 1e-2, 1000), [0.0, np.inf, -np.inf, np.nan]])
    # one LSTM step with every pre-activation x on the g gate and -x / x on the others
    n = x.size
    xw = np.zeros((n, 4), np.float64)
    xw[:, 0], xw[:, 2] = x, x
    ws, h = np.empty((n, 5), np.float32), np.empty((n, 1), np.float32)
    c = np.zeros((n, 1), np.float32)
    loops.rnn.lstm_cell(xw.astype(np.float32), np.zeros((n, 4), np.float32), c, ws, h)
    xf = x.astype(np.float32).astype(np.float64)
    with np.errstate(over="ignore"):
        sig = 1 / (1 + np.exp(-xf))
    for got, ref in ((ws[:, 0], sig), (ws[:, 2], np.tanh(xf))):
        assert np.array_equal(np.isnan(got), np.isnan(ref))
        ok = ~np.isnan(ref) & (np.abs(ref) > 1e-37)
        np.testing.assert_allclose(got[ok], ref[ok], rtol=2e-7)
        ulp = np.spacing(np.abs(ref[ok]).astype(np.float32)).astype(np.float64)
        assert np.max(np.abs(got[ok] - ref[ok]) / ulp) <= 2.5
    zeros = np.array([[0.0, 0.0, -0.0, 0.0]], np.float32)
    loops.rnn.lstm_cell(zeros, zeros.copy(), np.zeros((1, 1), np.float32), ws[:1], h[:1])   # -0 + -0 is -0
    assert np.signbit(ws[0, 2]) and ws[0, 0] == 0.5


@pytest.mark.parametrize("rows,K,H", [(1, 5, 16), (5, 37, 32), (20, 256, 48), (9, 8, 16)])
def test_lstm_step_in_one_region_matches_product_and_cell(rows, K, H):
    """The fused LSTM step (Note [The LSTM step in one region]) against NumPy's float64 product followed by the
    cell loop: the product's float32 sums in order over k, a few ulps of the largest term; rows past a block of 4
    and hidden-unit blocks split over three threads give the same bits as one thread."""
    rng = np.random.default_rng(rows + K + H)
    xw = rng.standard_normal((rows, 4 * H)).astype(np.float32)
    h = rng.standard_normal((rows, K)).astype(np.float32)
    w_hh = (rng.standard_normal((4 * H, K)) / np.sqrt(K)).astype(np.float32)
    c0 = rng.standard_normal((rows, H)).astype(np.float32)
    hw = (h.astype(np.float64) @ w_hh.T.astype(np.float64)).astype(np.float32)
    c_ref, ws_ref, h_ref = c0.copy(), np.empty((rows, 5 * H), np.float32), np.empty((rows, H), np.float32)
    loops.rnn.lstm_cell(xw, hw, c_ref, ws_ref, h_ref)
    panels = loops.rnn.lstm_panels(w_hh)
    before = ember.get_num_threads()
    runs = []
    try:
        for threads in (1, 3):
            ember.set_num_threads(threads)
            c, ws, hn = c0.copy(), np.empty((rows, 5 * H), np.float32), np.empty((rows, H), np.float32)
            loops.rnn.lstm_step(xw, h, panels, c, ws, hn)
            runs.append((c, ws, hn))
    finally:
        ember.set_num_threads(before)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    for got, want in zip(runs[0], (c_ref, ws_ref, h_ref)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,kw,lengths", [
    ("LSTM", dict(), None), ("LSTM", dict(num_layers=2, bidirectional=True), [7, 3, 5, 1]),
    ("LSTM", dict(proj_size=6, bidirectional=True), [2, 7, 7, 4]), ("GRU", dict(), None),
    ("GRU", dict(num_layers=2, bidirectional=True, bias=False), [7, 3, 5, 1])])
def test_recurrent_cells_match_pytorch(mode, kw, lengths, fallback):
    """float32 LSTM / GRU layers (the compiled step and the NumPy step) against PyTorch: outputs, final states and
    every gradient, padded and packed, with large pre-activations that saturate the gates."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((7, 4, 10)) * 3).astype(np.float32)
    torch.manual_seed(0)
    tm = getattr(torch.nn, mode)(10, 16, **kw)
    state = {k: v.detach().numpy() * 4 for k, v in tm.state_dict().items()}   # saturating gates too
    tm.load_state_dict({k: torch.tensor(v) for k, v in state.items()})

    def run(lib, m):
        xi = lib.tensor(x, requires_grad=True)
        inp = xi if lengths is None else lib.nn.utils.rnn.pack_padded_sequence(xi, lengths, enforce_sorted=False)
        out, hs = m(inp)
        if lengths is not None:
            out = lib.nn.utils.rnn.pad_packed_sequence(out)[0]
        hs = hs if isinstance(hs, tuple) else (hs,)
        w = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(np.float32)
        loss = (out * lib.tensor(w)).sum() + sum((h * h).sum() for h in hs)
        loss.backward()
        return [out.detach().numpy(), *[h.detach().numpy() for h in hs], xi.grad.numpy(),
                *[p.grad.numpy() for p in m.parameters()]]

    ref = run(torch, tm)
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        em = getattr(ember.nn, mode)(10, 16, **kw)
        em.load_state_dict({k: ember.tensor(v) for k, v in state.items()})
        for a, b in zip(run(ember, em), ref):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-4 * max(1.0, float(np.abs(b).max())))


@pytest.mark.parametrize("name,kw", [
    ("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)), ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, maximize=True)),
    ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, betas=(0.3, 0.9))),                     # 1 - beta1 >= 0.5: lerp's other branch
    ("AdamW", dict(lr=0.01)), ("AdamW", dict(lr=0.01, weight_decay=0.3, amsgrad=True))])
@pytest.mark.parametrize("foreach", [False, True])
def test_compiled_optimizer_steps_give_the_numpy_bits(name, kw, foreach, fallback, monkeypatch):
    """The one-pass SGD / Adam / AdamW loops round every intermediate as the op-by-op NumPy update does (which
    the optimizer tests check against PyTorch): parameters and state equal bit for bit after 20 steps, on one
    parameter's arrays and on the flat arena, on one thread and split over three (ranges of 4096 elements)."""
    from ember.aten.kernels import optim as optim_kernels
    runs = []
    before = ember.get_num_threads()
    for run in ("one thread", "split", "numpy"):
        if run == "split":
            monkeypatch.setattr(optim_kernels, "SGD_GRAIN", 4096)
            monkeypatch.setattr(optim_kernels, "ADAM_GRAIN", 4096)
        ember.set_num_threads(3 if run == "split" else 1)
        if run == "numpy":
            fallback()
        rng = np.random.default_rng(0)
        ps = [ember.nn.Parameter(ember.tensor(rng.standard_normal(s).astype(np.float32))) for s in ((300, 500), (7,))]
        opt = getattr(ember.optim, name)(ps, foreach=foreach, **kw)
        for step in range(20):
            opt.zero_grad()
            ((ps[0].sin() * ps[0]).sum() + (ps[1] ** 3).sum() * (step % 3 - 1)).backward()
            opt.step()
        runs.append([p.detach().numpy().copy() for p in ps] +
                    [v.numpy().copy() for st in opt.state.values() for v in st.values() if isinstance(v, ember.Tensor)])
    ember.set_num_threads(before)
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_compiled_mersenne_twister_draws_numpys_words(dtype, fallback):
    """The compiled engine continues NumPy's MT19937 state exactly: the same uniforms and the same state after
    draws of every size (block boundaries, an odd position left by a small NumPy draw), for PyTorch's
    transforms of each dtype."""
    from ember.aten.kernels.random import uniform_bits
    from ember.c10.generator import Generator
    runs = []
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        g = Generator().manual_seed(123)
        draws = [uniform_bits(g, n, np.dtype(dtype)) for n in (3, 5000, 623, 4097, 70001, 1, 9000)]
        runs.append((draws, g.get_state_bytes()))
    (a, sa), (b, sb) = runs
    assert sa == sb
    for x, y in zip(a, b):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


def test_dropout_and_rand_keep_pytorchs_stream():
    torch = pytest.importorskip("torch")
    for seed in (0, 7):
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        np.testing.assert_array_equal(ember.nn.functional.dropout(ember.ones(300, 70), 0.3).numpy(),
                                      torch.nn.functional.dropout(torch.ones(300, 70), 0.3).numpy())
        np.testing.assert_array_equal(ember.rand(50000, dtype=ember.float64).numpy(),
                                      torch.rand(50000, dtype=torch.float64).numpy())
        np.testing.assert_array_equal(ember.randn(20000).numpy(), torch.randn(20000).numpy())


def test_threshold_backward_compiled_matches_pytorch(fallback):
    """relu's backward (aten.threshold_backward): the compiled select and the NumPy where give PyTorch's values,
    0 for an inf / NaN gradient where the input is at or below the threshold, the gradient where the input is NaN."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((130, 257)).astype(np.float32)
    g = rng.standard_normal((130, 257)).astype(np.float32)
    x[0, :4] = [np.nan, 0.0, -0.0, 0.5]
    g[0, 4:8] = [np.inf, -np.inf, np.nan, np.inf]
    x[0, 4:8] = [-1.0, 0.0, -2.0, 3.0]
    for thr in (0, 0.25):
        want = torch.ops.aten.threshold_backward(torch.tensor(g), torch.tensor(x), thr).numpy()
        runs = []
        for use_fallback in (False, True):
            if use_fallback:
                fallback()
            runs.append(ember.ops.aten.threshold_backward(ember.tensor(g).t().t(), ember.tensor(x), thr).numpy())
        for got in runs:
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("reduce_range", [True, False])
def test_dynamic_quantization_of_rows_gives_the_numpy_integers(reduce_range):
    """The one-pass quantizer of a dynamic linear layer's input rounds as the NumPy form does: ties to even, values
    beyond the range clipped, NaN to the top; each row's sum of magnitudes alongside."""
    from ember.aten.composite.quantize import choose_qparams
    from ember.aten.quantized import quantizer as Qz
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((300, 257)) * 3).astype(np.float32)
    scale, zp = choose_qparams(-2.0, 5.0, 0, 255, reduce_range=reduce_range)
    x[0, :40] = ((np.arange(40) - 20) + 0.5) * np.float32(scale)                 # ties
    x[1, :4] = [np.nan, np.inf, -np.inf, 1e30]
    hi = 127 if reduce_range else 255
    got, l1 = loops.quantized.quantize_rows_centred(x, float(np.float32(1.0) / np.float32(scale)), zp, 0, hi)
    ref = np.clip(Qz.quantize_values(x, scale, zp, ember.quint8).astype(np.int64), 0, hi) - zp
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(l1, np.abs(ref).sum(1))


def test_dynamic_quantized_layers_compiled_match_the_numpy_path(fallback):
    rng = np.random.default_rng(1)
    ember.manual_seed(0)
    m = ember.nn.Sequential(ember.nn.Linear(40, 64), ember.nn.ReLU(), ember.nn.Linear(64, 8))
    lstm, gru = ember.nn.LSTM(8, 16, num_layers=2), ember.nn.GRU(8, 16, bidirectional=True)
    q = [ember.ao.quantization.quantize_dynamic(mod, {ember.nn.Linear, ember.nn.LSTM, ember.nn.GRU})
         for mod in (m, lstm, gru)]
    x = ember.tensor(rng.standard_normal((6, 5, 40)).astype(np.float32))

    def run():
        with ember.no_grad():
            y = q[0](x)
            return [y.numpy()] + [o.numpy() for o in q[1](y)[0:1] + q[1](y)[1]] + \
                [o.numpy() for o in q[2](y)]
    got = run()
    fallback()
    ref = run()
    np.testing.assert_array_equal(got[0], ref[0])       # the same integers, the same output stage
    for g, r in zip(got[1:], ref[1:]):                  # the cells' float64 activations against NumPy's float32
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("per_channel", [False, True])
def test_int8_gemm_gives_the_exact_accumulator_of_the_float_path(per_channel):
    """The AVX2 int8 micro-kernel of dynamic linear layers against the exact float32 GEMM it replaces, bit for bit,
    on shapes that leave partial tiles and partial 32-byte steps, with and without weight zero points and bias."""
    from ember.aten.quantized import gemm
    if not loops.quantized.int8_gemm_usable():
        pytest.skip("the int8 micro-kernel needs an x86 host with AVX2")
    rng = np.random.default_rng(2)
    for m, k, n in ((1, 1, 1), (3, 31, 5), (17, 33, 9), (64, 100, 67), (5, 1030, 130)):
        w = rng.standard_normal((n, k)).astype(np.float32)
        if per_channel:
            zps = rng.integers(-20, 20, n)
            qw = ember.quantize_per_channel(ember.tensor(w), ember.tensor(np.abs(w).max(1) / 100 + 1e-3),
                                            ember.tensor(zps), 0, ember.qint8)
        else:
            qw = ember.quantize_per_tensor(ember.tensor(w), float(np.abs(w).max() / 127), 0, ember.qint8)
        x = (rng.standard_normal((m, k)) * 3 + 0.5).astype(np.float32)
        for bias in (None, rng.standard_normal(n).astype(np.float32)):
            pack = gemm.packed(qw)
            got = gemm.quantized_linear_dynamic(x, pack, bias, True)
            try:
                loops.quantized._int8_gemm = False
                ref = gemm.quantized_linear_dynamic(x, pack, bias, True)
            finally:
                loops.quantized._int8_gemm = None
            np.testing.assert_array_equal(got, ref)


def test_int8_gemm_is_used_by_dynamic_layers_on_avx2_hosts(monkeypatch):
    from llvmlite import binding
    if binding.get_host_cpu_features().get("avx2", False):
        assert loops.quantized.int8_gemm_usable()
    calls = []
    real = loops.quantized.int8_linear
    monkeypatch.setattr(loops.quantized, "int8_linear", lambda *a: calls.append(1) or real(*a))
    lin = ember.ao.quantization.quantize_dynamic(ember.nn.Sequential(ember.nn.Linear(8, 4)))
    lin(ember.randn(2, 8))
    assert len(calls) == int(loops.quantized.int8_gemm_usable())


def test_box_muller_compiled_equals_the_numpy_evaluation(fallback):
    """normal_'s float32 transform: the compiled loop and vec_math's NumPy evaluation give the same bits (both
    are PyTorch's; tests/test_random.py holds them to PyTorch's stream), the extreme uniforms included."""
    from ember.aten.kernels import random as rnd
    u = np.random.default_rng(0).random((50000, 16), dtype=np.float32)
    u[0] = 0.0
    u[1] = np.float32(1) - np.float32(2 ** -24)
    u[2, :8] = np.float32(2 ** -24)
    got = rnd._box_muller_16_f32(u)
    fallback()
    want = rnd._box_muller_16_f32(u)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
    x = np.random.default_rng(1).standard_normal(70001).astype(np.float32)
    compiled.set_enabled(True)
    a = rnd._fma_f32(x, 0.02, np.float32(0.3))
    fallback()
    np.testing.assert_array_equal(a.view(np.int32), rnd._fma_f32(x, 0.02, np.float32(0.3)).view(np.int32))


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("shape", [(500, 3, 3), (200, 4, 2), (100, 2, 5), (64, 1, 1)], ids=str)
def test_many_small_lu_factorizations_match_pytorch(dtype, shape, fallback):
    """linalg.lu_factor of a long batch of small matrices (numba's getf2 over the batch, or the NumPy elimination):
    PyTorch's pivots, its factors to rounding, and its first zero pivot in info."""
    torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(dtype)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape).astype(dtype)
    a[::7, :, 0] = 0  # a zero column: a zero pivot, reported in info
    tLU, tpiv, tinfo = torch.linalg.lu_factor_ex(torch.tensor(a))
    tol = 1e-5 if dtype in ("float32", "complex64") else 1e-12
    for use_fallback in (False, True):
        if use_fallback:
            fallback()
        LU, piv, info = ember.linalg.lu_factor_ex(ember.tensor(a))
        np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
        np.testing.assert_array_equal(info.numpy(), tinfo.numpy())
        np.testing.assert_allclose(LU.numpy(), tLU.numpy(), rtol=tol, atol=tol)


# ------------------------------------------------------------------------------ pointwise loops and the drivers
def _special_floats(n, seed=0):
    """n float32 values: normals over many scales, with NaN, +-inf, +-0, subnormals and extremes mixed in."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)).astype(np.float32)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -3e-42, 3.4e38, -3.4e38, 1.0], np.float32)
    x[rng.integers(0, n, 200)] = special[rng.integers(0, special.size, 200)]
    return x


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_pointwise_arithmetic_gives_numpys_and_pytorchs_bits(op, monkeypatch):
    """Large float32 arithmetic runs loops.pointwise (split over the threads): each result rounds once, so the
    values are NumPy's and PyTorch's bit for bit -- two arrays, an array and a number on either side."""
    torch = pytest.importorskip("torch")
    n = 100_003
    a, b = _special_floats(n, 1), _special_floats(n, 2)
    ufunc = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}[op]
    ea, eb, ta, tb = ember.tensor(a), ember.tensor(b), torch.tensor(a), torch.tensor(b)
    f = getattr(ember, op)
    calls = []
    arithmetic = loops.pointwise.arithmetic
    monkeypatch.setattr(loops.pointwise, "arithmetic", lambda *a: calls.append(a[0]) or arithmetic(*a))
    with np.errstate(all="ignore"):
        cases = [(f(ea, eb), ufunc(a, b), getattr(torch, op)(ta, tb)),
                 (f(ea, 2.5), ufunc(a, np.float32(2.5)), getattr(torch, op)(ta, 2.5)),
                 (f(3, eb), ufunc(np.float32(3), b), getattr(torch, op)(3, tb))]
    for got, want, theirs in cases:
        assert got.dtype == ember.float32
        np.testing.assert_array_equal(got.numpy().view(np.int32), want.view(np.int32))
        np.testing.assert_array_equal(got.numpy(), theirs.numpy())
    assert len(calls) == 3 and loops.pointwise.binary in compiled._drivers     # all three ran the compiled loop


_SELECTS = {
    "relu": lambda L, x: L.relu(x),
    "relu_": lambda L, x: x.clone().relu_(),
    "clamp": lambda L, x: x.clamp(0, 6),
    "clamp_min_-0": lambda L, x: x.clamp(min=-0.0),
    "clamp_max": lambda L, x: x.clamp(max=0),
    "clamp_nan_bound": lambda L, x: x.clamp(min=float("nan")),
    "clamp_min_above_max": lambda L, x: x.clamp(2, 1),
    "clamp_tensor_bounds": lambda L, x: x.clamp(L.zeros_like(x), L.ones_like(x)),
    "hardtanh": lambda L, x: L.nn.functional.hardtanh(x),
    "relu6": lambda L, x: L.nn.functional.relu6(x),
    "leaky_relu": lambda L, x: L.nn.functional.leaky_relu(x, 0.1),
    "where": lambda L, x: L.where(x > 0, x, x * 2),
    "where_number": lambda L, x: L.where(x > 0, x, 0.5),
    "where_number_first": lambda L, x: L.where(x > 0, 2.0, x),
    "where_numbers": lambda L, x: L.where(x > 0, 2.0, -1.0),
    "threshold": lambda L, x: L.nn.functional.threshold(x, 0.5, -3.0),
    "strided_relu": lambda L, x: L.relu(x[::2]),
    "softshrink": lambda L, x: L.nn.functional.softshrink(x),
}


@pytest.mark.parametrize("n", [1024, 2 ** 18])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("name", sorted(_SELECTS))
def test_clamps_and_selects_give_pytorchs_values_and_signed_zeros(name, dtype, n, monkeypatch):
    """relu, clamp, hardtanh and the kernels built on ``where`` run the select loops from compiled.SELECT_MIN
    elements on (Note [Selects]) and NumPy below it: both give PyTorch's values bit for bit, NaN kept, and its
    signed zeros -- x kept where it equals a number bound (relu(-0.0) is -0.0), a tensor bound's value where it
    equals that (n a multiple of PyTorch's vector width: its scalar tail orders ties the other way)."""
    torch = pytest.importorskip("torch")
    with np.errstate(over="ignore"):
        x = _special_floats(n, 3).astype(dtype)
    x[::97] = -0.0
    calls = []
    for fn in ("clamped", "selected"):
        real = getattr(loops.pointwise, fn)
        monkeypatch.setattr(loops.pointwise, fn, lambda *a, real=real: calls.append(1) or real(*a))
    with np.errstate(all="ignore"):
        got = _SELECTS[name](ember, ember.tensor(x)).numpy()
        want = _SELECTS[name](torch, torch.tensor(x)).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    number = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))
    if n >= compiled.SELECT_MIN and dtype != np.float16 and name not in ("clamp_nan_bound", "clamp_tensor_bounds",
                                                                         "strided_relu", "leaky_relu"):
        assert calls


def test_where_through_the_select_loop_keeps_numpys_promotion_and_falls_back_where_it_must():
    n = compiled.SELECT_MIN
    c = np.random.default_rng(0).random(n) < 0.5
    a32, b64 = np.arange(n, dtype=np.float32), np.ones(n)
    for x, y in [(a32, 0.5), (a32, b64), (2, a32), (a32, np.float64(3)), (a32, np.array(7.0)), (True, a32),
                 (a32[::-1], 1.0), (a32.reshape(1, n), 1.0), (np.arange(n), 1), (a32, 1j)]:
        got, want = compiled.where(np, c, x, y), np.where(c, x, y)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_lerp_with_a_number_weight_gives_pytorchs_bits(dtype):
    """lerp by a number runs loops.pointwise.lerp: PyTorch's two forms by the weight, each one fused multiply-add,
    so its bits on any size (NumPy's two roundings differed in the last bit on a quarter of the values)."""
    torch = pytest.importorskip("torch")
    for n in (1, 7, 1000, 100_003):
        a, b = _special_floats(n, 4).astype(dtype), _special_floats(n, 5).astype(dtype)
        for w in (0.3, 0.5, 0.49999, -0.5, 0.7, 1.5, 0, 1, float("nan")):
            with np.errstate(all="ignore"):
                want = torch.lerp(torch.tensor(a), torch.tensor(b), w).numpy()
                got = ember.lerp(ember.tensor(a), ember.tensor(b), w).numpy()
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    x, y = ember.tensor(a), ember.tensor(b)
    x.lerp_(y, 0.25)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(x.numpy(), torch.tensor(a).lerp_(torch.tensor(b), 0.25).numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.uint8])
def test_topk_by_selection_equals_the_stable_sort(dtype):
    """A small k (at most an eighth of the dim) is found by a partition, not a sort of each row: the same values
    and indices as the stable sort gives (NaN the largest, ties by index; rows whose k-th value ties fall back)
    and PyTorch's values."""
    torch = pytest.importorskip("torch")
    from ember.aten.kernels import reduction
    rng = np.random.default_rng(0)
    for shape, dim in (((64, 512), 1), ((64, 512), 0), ((8, 100, 40), 1), ((1000,), 0)):
        with np.errstate(invalid="ignore", over="ignore"):
            a = (rng.standard_normal(shape) * 50).astype(dtype)
        if a.dtype.kind == "f":
            for v in (np.nan, np.inf, -np.inf, -0.0):
                a.ravel()[rng.integers(0, a.size, 10)] = v
        for k in (1, 3, 8):
            for largest in (True, False):
                vals, idx = reduction.sort(np, a, True, dim, largest)
                want_v, want_i = np.take(vals, range(k), axis=dim), np.take(idx, range(k), axis=dim)
                got_v, got_i = ember.topk(ember.tensor(a), k, dim, largest)
                np.testing.assert_array_equal(got_i.numpy(), want_i)
                np.testing.assert_array_equal(got_v.numpy(), want_v)
                np.testing.assert_array_equal(got_v.numpy(), torch.topk(torch.tensor(a), k, dim, largest)[0].numpy())
    assert reduction._top_k_selected(np.zeros((4, 64), np.float32), 2, 1, True) is None     # ties: the sort


_FLOAT64_LOOPS = {      # name: (function, ulps the loop keeps against PyTorch's float64, PyTorch's float32 against it)
    "softplus": (lambda L, t: L.nn.functional.softplus(t), 0.51),
    "softplus_beta": (lambda L, t: L.nn.functional.softplus(t, beta=2, threshold=10), 0.51),
    "elu": (lambda L, t: L.nn.functional.elu(t, alpha=0.3), 0.51),
    "selu": (lambda L, t: L.nn.functional.selu(t), 1.1),
    "celu": (lambda L, t: L.nn.functional.celu(t, alpha=1.7), 2.0),
    "logsigmoid": (lambda L, t: L.nn.functional.logsigmoid(t), 0.51),
    "mish": (lambda L, t: L.nn.functional.mish(t), 0.52),
    "tanh": (lambda L, t: L.tanh(t), 0.51),
    "erf": (lambda L, t: L.erf(t), 0.6),
    "bce_with_logits": (lambda L, t: L.nn.functional.binary_cross_entropy_with_logits(
        t, L.ones_like(t) * 0.25, reduction="none"), 4.01),        # float32 (1 - t) x - log-sigmoid: PyTorch's 4.0
}


@pytest.mark.parametrize("name", sorted(_FLOAT64_LOOPS))
def test_float64_register_loops_within_their_ulps_and_pytorchs_special_values(name):
    """Softplus, ELU (SELU, CELU), log-sigmoid (and the losses on it), Mish, tanh and erf compute in float64 registers
    and round once (NumPy's float32 log1p / expm1 are scalar loops): within about half an ulp of PyTorch's float64
    result where that is a normal float32 (PyTorch's float32 kernels: 1-3 ulps, Mish 137; CELU and SELU scale x
    in float32 first, as PyTorch's do), and PyTorch's values at
    NaN, +-inf and where its result overflows; subnormal results are kept where PyTorch flushes some to 0."""
    torch = pytest.importorskip("torch")
    fn, ulps = _FLOAT64_LOOPS[name]
    x = np.concatenate([np.linspace(-120, 120, 200001), _special_floats(100000, 6),
                        np.random.default_rng(7).standard_normal(10000) * 1e-5]).astype(np.float32)
    with np.errstate(all="ignore"):
        got = fn(ember, ember.tensor(x)).numpy()
        theirs = fn(torch, torch.tensor(x)).numpy()
        ref = fn(torch, torch.tensor(x.astype(np.float64))).numpy()
    normal = np.isfinite(ref) & (np.abs(ref) >= 2.0 ** -126) & (np.abs(ref) < 3.4e38)
    ulp = np.spacing(np.abs(ref[normal]).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[normal] - ref[normal]) / ulp) <= ulps
    odd = ~normal & (np.abs(np.nan_to_num(ref)) >= 2.0 ** -126)
    np.testing.assert_array_equal(got[odd], theirs[odd])
    tiny = ~normal & ~odd
    np.testing.assert_allclose(got[tiny], ref[tiny], rtol=0, atol=2.0 ** -126)


@pytest.mark.parametrize("name", ["hardswish", "hardsigmoid", "leaky_relu"])
def test_hard_activations_give_pytorchs_bits(name):
    torch = pytest.importorskip("torch")
    x = np.concatenate([np.linspace(-10, 10, 200001), _special_floats(100000, 8),
                        np.array([-3, 3, -3.0000002, 2.9999998], np.float32)]).astype(np.float32)
    f = getattr(torch.nn.functional, name)
    with np.errstate(all="ignore"):
        for xx in (x, x[:1000]):
            np.testing.assert_array_equal(getattr(ember.nn.functional, name)(ember.tensor(xx)).numpy(),
                                          f(torch.tensor(xx)).numpy())


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_half_conversions_give_pytorchs_bits(half, monkeypatch):
    """float32 -> float16 / bfloat16 and float16 -> float32 of contiguous arrays run the conversion loops (F16C's
    instructions; bfloat16's rounding on the bits): PyTorch's bits, NaN, inf, overflow, subnormals and ties
    included; a strided source takes NumPy's cast, which agrees."""
    torch = pytest.importorskip("torch")
    x = np.concatenate([_special_floats(100_000, 9), np.float32([65504, 65520, 65519.99, 6e-8, 3e-8, 2.9e-8,
                                                                  1.00390625, 1.01171875, -np.nan])])
    calls = []
    convert = loops.pointwise.convert
    monkeypatch.setattr(loops.pointwise, "convert", lambda *a: calls.append(1) or convert(*a))
    with np.errstate(all="ignore"):
        for e, t in ((ember.tensor(x), torch.tensor(x)), (ember.tensor(x)[::2], torch.tensor(x)[::2])):
            got, want = e.to(getattr(ember, half)), t.to(getattr(torch, half))
            # NaN's bits aside: PyTorch's strided bfloat16 cast writes 0x7FC0, its vector one 0xFFFF (as ember)
            number = ~np.isnan(e.numpy())
            np.testing.assert_array_equal(got.view(ember.int16).numpy()[number], want.view(torch.int16).numpy()[number])
            np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    assert calls


@pytest.mark.parametrize("shape,dim", [((1024, 512), -1), ((1024, 512), None), ((32, 16, 32, 32), (2, 3)),
                                       ((3, 300000), 1), ((1 << 20,), None), ((5, 4100), -1), ((2, 70000), (-1,))])
@pytest.mark.parametrize("keepdim", [False, True])
def test_sums_over_trailing_dims_by_rows_and_blocks(shape, dim, keepdim):
    """float32 sum / mean over trailing dims (or all) run loops.reduction: as accurate as PyTorch's (against a
    float64 sum; long rows in float64-added blocks), PyTorch's shapes, NaN and inf kept, the same bits on 1, 2 and 3
    threads."""
    torch = pytest.importorskip("torch")
    x = (np.random.default_rng(len(shape)).standard_normal(shape) * 3 + 1).astype(np.float32)
    before = ember.get_num_threads()
    try:
        for fn in ("sum", "mean"):
            runs = []
            for n in (1, 2, 3):
                ember.set_num_threads(n)
                e = getattr(ember.tensor(x), fn)(dim=dim, keepdim=keepdim) if dim is not None else \
                    getattr(ember.tensor(x), fn)()
                runs.append(e.numpy())
            t = getattr(torch.tensor(x), fn)(dim=dim, keepdim=keepdim) if dim is not None else \
                getattr(torch.tensor(x), fn)()
            ref = getattr(torch.tensor(x, dtype=torch.float64), fn)(dim=dim, keepdim=keepdim) if dim is not None else \
                getattr(torch.tensor(x, dtype=torch.float64), fn)()
            assert runs[0].shape == tuple(t.shape) and runs[0].dtype == np.float32
            for r in runs[1:]:
                np.testing.assert_array_equal(r, runs[0])
            scale = np.abs(x).astype(np.float64).mean() * (x.size / max(ref.numel(), 1) if fn == "sum" else 1)
            ours, theirs = np.abs(runs[0] - ref.numpy()).max() / scale, np.abs(t.numpy() - ref.numpy()).max() / scale
            assert ours <= 2 * theirs + 2e-7
    finally:
        ember.set_num_threads(before)
    y = x.copy()
    y.reshape(-1)[[0, 7, -1]] = [np.nan, np.inf, -np.inf]
    got = ember.tensor(y).sum(dim=dim) if dim is not None else ember.tensor(y).sum()
    want = torch.tensor(y).sum(dim=dim) if dim is not None else torch.tensor(y).sum()
    np.testing.assert_array_equal(np.isnan(got.numpy()), np.isnan(want.numpy()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_cumsum_gives_pytorchs_bits_along_every_dim(dtype):
    """cumsum of float32 / float64 runs loops.reduction.cumsum: float64 running sums rounded once each, PyTorch's
    CPU accumulation, so its bits along any dim (NumPy's float32 running sums differed); half types keep NumPy's
    float32 sums, which are PyTorch's for them."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for shape in ((1024, 512), (3, 4, 5), (7,), (2, 0, 3), (1, 100000)):
        x = (rng.standard_normal(shape) * 3).astype(dtype)
        if x.size > 10:
            x.reshape(-1)[[0, 5]] = [np.nan, np.inf]
        for d in range(-len(shape), len(shape)):
            got, want = ember.cumsum(ember.tensor(x), d).numpy(), torch.cumsum(torch.tensor(x), d).numpy()
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_two_norm_over_trailing_dims_by_sums_of_squares():
    """The float32 2-norm over trailing dims (or all) is one pass of squares (loops.reduction): PyTorch's shapes, as
    accurate as its norm against float64 or more; other dims keep the NumPy kernel."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    for shape, dim in (((1024, 512), -1), ((1024, 512), None), ((32, 16, 32, 32), (2, 3)), ((1 << 20,), None),
                       ((1024, 512), 0)):
        x = (rng.standard_normal(shape) * 3).astype(np.float32)
        for keepdim in (False, True):
            got = ember.linalg.vector_norm(ember.tensor(x), 2, dim, keepdim).numpy()
            theirs = torch.linalg.vector_norm(torch.tensor(x), 2, dim, keepdim).numpy()
            ref = torch.linalg.vector_norm(torch.tensor(x, dtype=torch.float64), 2, dim, keepdim).numpy()
            assert got.shape == theirs.shape and got.dtype == np.float32
            assert np.max(np.abs(got - ref) / ref) <= max(2 * np.max(np.abs(theirs - ref) / ref), 2.5e-7)


def test_exp_and_sigmoid_loops_within_their_ulps_and_pytorchs_special_values():
    torch = pytest.importorskip("torch")
    x = np.concatenate([np.linspace(-104, 88.7, 300001), _special_floats(100000)]).astype(np.float32)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        for fn, ref, ulps in ((ember.exp, np.exp(x64), 1.01), (ember.sigmoid, special.expit(x64), 2.5)):
            got = fn(ember.tensor(x)).numpy()
            normal = np.isfinite(ref) & (np.abs(ref) >= 2.0 ** -126) & (np.abs(ref) < 3.4e38)
            ulp = np.exp2(np.floor(np.log2(np.abs(ref[normal]))) - 23)
            assert np.max(np.abs(got[normal] - ref[normal]) / ulp) <= ulps
            odd = ~normal
            theirs = getattr(torch, fn.__name__)(torch.tensor(x)).numpy()
            np.testing.assert_array_equal(np.isnan(got[odd]), np.isnan(theirs[odd]))
            np.testing.assert_allclose(got[odd], theirs[odd], rtol=0, atol=2e-45)


def test_loops_give_the_same_bits_on_any_number_of_threads():
    """The parallel drivers split rows and elements, never a row's sums: one, two and three threads agree."""
    x = ember.tensor(np.random.default_rng(0).standard_normal((3000, 100)).astype(np.float32) * 3)
    g = ember.tensor(np.random.default_rng(1).standard_normal((3000, 100)).astype(np.float32))
    before = ember.get_num_threads()
    runs = []
    try:
        for n in (1, 2, 3):
            ember.set_num_threads(n)
            xe = x.clone().requires_grad_()
            outs = [ember.softmax(xe, -1), ember.log_softmax(xe, -1), ember.nn.functional.layer_norm(xe, (100,)),
                    ember.nn.functional.gelu(xe), xe * x + 1.5, xe.exp()]
            sum(o.sum() for o in outs[:-1]).backward(retain_graph=True)
            (outs[0] * g).sum().backward()
            runs.append([o.detach().numpy() for o in outs] + [xe.grad.numpy()])
    finally:
        ember.set_num_threads(before)
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="fork is POSIX")
def test_a_forked_child_runs_the_loops_on_its_own_thread():
    """GNU OpenMP aborts a child forked after its workers started if the child starts a region: there the drivers
    stay unused and the loops run on the calling thread, with the same results."""
    import os
    x = ember.tensor(np.random.default_rng(0).standard_normal((2000, 64)).astype(np.float32))
    want = ember.softmax(x, -1).numpy()            # the parent has run a driver: numba's workers are up
    xs = x.view(50, 40, 64)
    want_bmm = ember.bmm(xs, xs.transpose(1, 2)).numpy()
    assert parallel.numba_layer_usable()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                   # the child: exit status 0 only if it computed the same
        try:
            os.close(r)
            ok = not parallel.numba_layer_usable() and np.array_equal(ember.softmax(x, -1).numpy(), want) \
                and np.array_equal(ember.bmm(xs, xs.transpose(1, 2)).numpy(), want_bmm)
            os.write(w, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert got == b"1"


def test_the_threading_layer_loads_with_a_short_spin_and_leaves_the_environment_alone(monkeypatch):
    """GNU OpenMP reads GOMP_SPINCOUNT once, when numba's layer loads it: ember sets a short spin for that moment
    only, and never over the user's own setting."""
    import os
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    with parallel._short_spin():
        assert os.environ["GOMP_SPINCOUNT"] == parallel._GOMP_SPINCOUNT
    assert "GOMP_SPINCOUNT" not in os.environ
    for var, value in (("GOMP_SPINCOUNT", "123"), ("OMP_WAIT_POLICY", "passive")):
        monkeypatch.setenv(var, value)
        with parallel._short_spin():
            assert os.environ.get("GOMP_SPINCOUNT") == ("123" if var == "GOMP_SPINCOUNT" else None)
        monkeypatch.delenv(var)


def _transposed(x):
    """x's values with its matrices stored column by column (a transposed view of a contiguous array)."""
    return np.swapaxes(np.ascontiguousarray(np.swapaxes(x, -1, -2)), -1, -2)


@pytest.fixture
def gemm_calls(monkeypatch):
    """The number of products that went through loops.gemm's BLAS calls."""
    calls = []
    gemm = loops.gemm._gemm
    monkeypatch.setattr(loops.gemm, "_gemm", lambda *a: calls.append(a[2].shape) or gemm(*a))
    return calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT", "strided"])
def test_batched_gemm_matches_pytorch(dtype, layout, gemm_calls):
    """bmm, baddbmm, matmul over broadcast batches and addmm through loops.gemm (one BLAS call per matrix, the
    layouts passed as transpose flags, a non-BLAS layout copied): PyTorch's values."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((24, 40, 32)).astype(dtype), rng.standard_normal((24, 32, 48)).astype(dtype)
    if layout == "strided":
        a = rng.standard_normal((24, 80, 32)).astype(dtype)[:, ::2]
    if layout[0] == "T":
        a = _transposed(a)
    if layout[-1] == "T":
        b = _transposed(b)
    s, bias = rng.standard_normal((40, 48)).astype(dtype), rng.standard_normal(48).astype(dtype)
    bias[5] = np.nan
    tol = dict(rtol=2e-6, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-12)

    def both(fn):
        return fn(ember, ember.from_numpy), fn(torch, torch.from_numpy)
    assert loops.gemm.available(dtype)
    gemm_calls.clear()                      # (the check available makes once)
    cases = [both(lambda L, t: L.bmm(t(a), t(b))),
             both(lambda L, t: L.baddbmm(t(s), t(a), t(b), beta=0.5, alpha=-2.0)),
             both(lambda L, t: L.baddbmm(t(bias), t(a), t(b), beta=0)),            # self not read: no NaN
             both(lambda L, t: L.matmul(t(a[:6, None]), t(b[None, :4]))),           # batches broadcast
             both(lambda L, t: L.addmm(t(bias), t(a.reshape(-1, 32)), t(b[0]))),
             both(lambda L, t: L.addmm(t(s[:1]), t(a.reshape(-1, 32)[:400]), t(b[0]), beta=2.0, alpha=0.5))]
    for got, want in cases:
        assert got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want.numpy(), **tol)
    assert not np.isnan(cases[2][0].numpy()).any()
    assert len(gemm_calls) == 6


def test_batched_gemm_same_bits_on_any_number_of_threads_and_openblas_count_restored():
    """The matrices are split over the threads, never a matrix: one, two and three threads give the same bits;
    OpenBLAS computes on the calling threads meanwhile and gets its thread count back after, also when two
    Python threads multiply at once."""
    import threading
    rng = np.random.default_rng(0)
    a = ember.tensor(rng.standard_normal((64, 64, 32)).astype(np.float32))
    b = ember.tensor(rng.standard_normal((64, 64, 32)).astype(np.float32))
    blas = parallel.numpy_openblas()
    assert blas is not None and loops.gemm.available(np.float32)
    before = ember.get_num_threads()
    runs = []
    try:
        for n in (1, 2, 3):
            ember.set_num_threads(n)
            runs.append(ember.matmul(a, b.transpose(1, 2)).numpy())
            assert blas._get() == n
    finally:
        ember.set_num_threads(before)
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0], other)
    ember.set_num_threads(2)
    try:
        workers = [threading.Thread(target=lambda: [ember.bmm(a, b.transpose(1, 2)) for _ in range(20)])
                   for _ in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert blas._get() == 2
    finally:
        ember.set_num_threads(before)


def test_batched_gemm_falls_back_to_numpy_without_a_callable_openblas(monkeypatch):
    """Where NumPy's BLAS is not an OpenBLAS ember can call (MKL, Accelerate), products are NumPy's."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 64, 64)).astype(np.float32), rng.standard_normal((8, 64, 64)).astype(np.float32)
    monkeypatch.setattr(loops.gemm, "_checked", {})
    monkeypatch.setattr(parallel, "numpy_openblas", lambda: None)
    assert not loops.gemm.available(np.float32)
    np.testing.assert_array_equal(ember.bmm(ember.tensor(a), ember.tensor(b)).numpy(), np.matmul(a, b))


def test_batched_gemm_that_disagrees_with_numpy_warns_and_is_left(monkeypatch):
    """An OpenBLAS whose products through ember's calls disagree with NumPy's is not used, and ember says so."""
    monkeypatch.setattr(loops.gemm, "_checked", {})
    monkeypatch.setattr(loops.gemm, "_self_check", lambda dtype: False)
    monkeypatch.setattr(ember.c10.exceptions, "_WARNED_ONCE", set())
    with pytest.warns(UserWarning, match="disagree with NumPy's"):
        assert not loops.gemm.available(np.float32)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 2, 17, 128, 70000])
def test_nll_loss_loops_give_pytorchs_bits(dtype, n, fallback):
    """loops.loss: nll_loss forward and backward over (N, C) scores with PyTorch's bits -- per row, and summed
    with its cascade of partial sums (Note [NLL's cascade sum]; 70000 rows carry through four levels) -- with and
    without class weights, ignored rows (all of them for one row: the mean is NaN, 0 / 0), every reduction; the
    NumPy fallback within a rounding."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 10)).astype(dtype)
    y = rng.integers(0, 10, n)
    y[::7] = -100
    w = rng.random(10).astype(dtype)
    for reduction in ("mean", "sum", "none"):
        for weight in (None, w):
            results = []
            for lib in (ember, torch):
                xt = lib.tensor(x, requires_grad=True)
                loss = lib.nn.functional.nll_loss(xt, lib.tensor(y), reduction=reduction,
                                                  weight=None if weight is None else lib.tensor(weight))
                loss.backward(lib.tensor(np.linspace(-1, 2, loss.numel()).astype(dtype).reshape(loss.shape)))
                results.append((loss.detach().numpy(), xt.grad.numpy()))
            (a, ga), (b, gb) = results
            assert a.dtype == b.dtype and ga.dtype == gb.dtype
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(ga, gb)
    fallback()
    xt = ember.tensor(x)
    ours = ember.nn.functional.nll_loss(xt, ember.tensor(y), reduction="sum").numpy()
    np.testing.assert_allclose(ours, torch.nn.functional.nll_loss(torch.tensor(x), torch.tensor(y),
                                                                   reduction="sum").numpy(), rtol=1e-5)


def test_nll_loss_loops_report_the_first_target_out_of_bounds():
    """PyTorch's IndexError names the first target out of bounds in row order, forward and backward; an ignored
    row is never checked."""
    x = ember.zeros(4, 3, requires_grad=True)
    for reduction in ("mean", "none"):
        with pytest.raises(IndexError, match=r"^Target 7 is out of bounds\.$"):
            ember.nn.functional.nll_loss(x, ember.tensor([0, 7, -1, 2]), reduction=reduction)
        loss = ember.nn.functional.nll_loss(x, ember.tensor([0, -100, 2, 1]), reduction=reduction)
        loss.sum().backward()
    with pytest.raises(IndexError, match=r"^Target 3 is out of bounds\.$"):
        ember.ops.aten.nll_loss_backward(ember.tensor(1.0), x.detach(), ember.tensor([0, 1, 3, 1]), None, 1, -100,
                                         ember.tensor(4.0))


def test_max_pool_of_windows_inside_the_plane_agrees_with_the_general_loop():
    """Windows that never reach padding take ``max_pool2d_inside`` (no bounds checks, the 2 x 2 pool unrolled):
    the general loop's values and indices exactly -- ties (the first wins), NaN (the last wins), -inf windows --
    over random shapes, kernels, strides and dilations."""
    from ember.aten.kernels.loops import pooling as L
    rng = np.random.default_rng(0)
    compared = 0
    for _ in range(300):
        P, H, W = rng.integers(1, 4), rng.integers(2, 12), rng.integers(2, 12)
        x = rng.integers(-3, 3, (P, 1, H, W)).astype(np.float32)
        m = rng.random(x.shape)
        x[m < 0.1] = np.nan
        x[(m > 0.1) & (m < 0.3)] = -np.inf
        kh, kw, sh, sw, dh, dw = (int(v) for v in rng.integers(1, [4, 4, 3, 3, 3, 3]))
        OH, OW = (H - dh * (kh - 1) - 1) // sh + 1, (W - dw * (kw - 1) - 1) // sw + 1
        if OH <= 0 or OW <= 0:
            continue
        got, got_idx = L.max_pool(x, (1, kh, kw), (1, sh, sw), (0, 0, 0), (1, dh, dw), (1, OH, OW))
        ref, ref_idx = np.empty_like(got), np.empty_like(got_idx)
        L.max_pool3d(x, 1, kh, kw, 1, sh, sw, 0, 0, 0, 1, dh, dw, ref, ref_idx, 0, P)
        assert np.array_equal(got, ref, equal_nan=True) and np.array_equal(got_idx, ref_idx)
        compared += 1
    assert compared > 200
