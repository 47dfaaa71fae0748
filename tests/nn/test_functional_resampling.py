"""interpolate (every mode), unfold/fold, max_unpool and embedding_bag against PyTorch: values, gradients of
every differentiable input, and PyTorch's errors."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def _compare(fn, arrays, rtol=1e-10, atol=1e-12):
    """fn(lib, *tensors) on ember and torch (float64); compares outputs and the gradients of float inputs."""
    e_in = [ember.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    t_in = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    eo, to = fn(ember, *e_in), fn(torch, *t_in)
    assert tuple(eo.shape) == tuple(to.shape)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=rtol, atol=atol)
    w = np.random.default_rng(9).standard_normal(tuple(to.shape))
    (eo * ember.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    for a, b in zip(e_in, t_in):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)


R = np.random.default_rng(0)


@pytest.mark.parametrize("shape,kw", [
    ((2, 3, 5), dict(scale_factor=2)),
    ((2, 3, 5), dict(size=7, mode="linear")),
    ((2, 3, 5), dict(size=3, mode="linear", align_corners=True)),
    ((1, 2, 4, 5), dict(scale_factor=(1.5, 0.7))),
    ((1, 2, 4, 5), dict(size=(7, 3), mode="nearest-exact")),
    ((1, 2, 4, 5), dict(scale_factor=2, mode="bilinear")),
    ((1, 2, 4, 5), dict(size=(3, 8), mode="bilinear", align_corners=True)),
    ((1, 2, 4, 5), dict(scale_factor=1.7, mode="bilinear", recompute_scale_factor=True)),
    ((1, 2, 4, 5), dict(size=(9, 6), mode="bicubic")),
    ((1, 2, 4, 5), dict(scale_factor=0.6, mode="bicubic", align_corners=True)),
    ((1, 2, 6, 5), dict(size=(4, 3), mode="area")),
    ((1, 2, 3, 4, 2), dict(scale_factor=2, mode="trilinear")),
    ((1, 2, 3, 4, 2), dict(size=(2, 5, 3), mode="nearest")),
    ((1, 2, 7), dict(size=3, mode="area")),
])
def test_interpolate_matches_pytorch(shape, kw):
    _compare(lambda L, x: L.nn.functional.interpolate(x, **kw), [R.standard_normal(shape)])


@pytest.mark.parametrize("kw", [dict(kernel_size=2),
                                dict(kernel_size=(2, 3), stride=(1, 2), padding=1, dilation=(2, 1))])
def test_unfold_fold_match_pytorch(kw):
    x = R.standard_normal((2, 3, 6, 7))
    _compare(lambda L, t: L.nn.functional.unfold(t, **kw), [x])
    cols = torch.nn.functional.unfold(torch.tensor(x), **kw).numpy()
    _compare(lambda L, t: L.nn.functional.fold(t, (6, 7), **kw), [cols])
    _compare(lambda L, t: L.nn.functional.unfold(t, **kw), [x[0]])


@pytest.mark.parametrize("nd,shape", [(1, (2, 3, 8)), (2, (2, 3, 6, 5)), (3, (1, 2, 4, 4, 6))])
def test_max_unpool_inverts_max_pool_like_pytorch(nd, shape):
    x = R.standard_normal(shape)
    pool = getattr(torch.nn.functional, f"max_pool{nd}d")
    out, idx = pool(torch.tensor(x), 2, return_indices=True)

    def f(L, o, i):
        return getattr(L.nn.functional, f"max_unpool{nd}d")(o, i, 2, output_size=list(x.shape[2:]))
    _compare(f, [out.numpy(), idx.numpy()])
    m = getattr(ember.nn, f"MaxUnpool{nd}d")(2)
    assert tuple(m(ember.tensor(out.numpy()), ember.tensor(idx.numpy()), output_size=x.shape).shape) == x.shape


@pytest.mark.parametrize("kw,inp,offsets", [
    (dict(mode="sum"), np.array([[1, 2, 4], [4, 3, 2]]), None),
    (dict(mode="mean"), np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 2, 2, 5])),
    (dict(mode="max"), np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 3, 5])),
    (dict(mode="mean", padding_idx=2), np.array([1, 2, 4, 2, 2, 3, 2, 9]), np.array([0, 3, 5])),
    (dict(mode="sum", include_last_offset=True), np.array([1, 2, 4, 5, 4, 3]), np.array([0, 2, 4, 6])),
])
def test_embedding_bag_matches_pytorch(kw, inp, offsets):
    w = R.standard_normal((10, 3))
    if offsets is None:
        _compare(lambda L, i, wt: L.nn.functional.embedding_bag(i, wt, **kw), [inp, w])
    else:
        _compare(lambda L, i, wt, o: L.nn.functional.embedding_bag(i, wt, o, **kw), [inp, w, offsets])


def test_embedding_bag_per_sample_weights_and_module_init():
    inp, off = np.array([1, 2, 4, 5, 4, 3]), np.array([0, 2])
    _compare(lambda L, i, wt, o, psw: L.nn.functional.embedding_bag(i, wt, o, mode="sum", per_sample_weights=psw),
             [inp, R.standard_normal((10, 3)), off, R.standard_normal(6)])
    ember.manual_seed(0)
    torch.manual_seed(0)
    e, t = ember.nn.EmbeddingBag(6, 3, padding_idx=1), torch.nn.EmbeddingBag(6, 3, padding_idx=1)
    np.testing.assert_allclose(e.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-6)
    assert repr(e) == repr(t)


@pytest.mark.parametrize("call", [
    lambda L: L.nn.functional.interpolate(L.randn(1, 2, 3), scale_factor=2, mode="bilinear"),
    lambda L: L.nn.functional.interpolate(L.randn(1, 2, 3), size=(2, 2)),
    lambda L: L.nn.functional.interpolate(L.randn(1, 2, 3, 3), mode="nearest", align_corners=True, size=2),
    lambda L: L.nn.functional.interpolate(L.randn(1, 2, 3, 3)),
    lambda L: L.nn.functional.interpolate(L.randn(1, 2, 3, 3), size=2, scale_factor=2),
    lambda L: L.nn.functional.fold(L.randn(1, 10, 4), (3, 3), 2),
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.randn(3, 2)),
    lambda L: L.nn.functional.embedding_bag(L.tensor([[1, 2]]), L.randn(3, 2), L.tensor([0])),
    lambda L: L.nn.functional.max_unpool2d(L.randn(1, 1, 2, 2), L.zeros(1, 1, 2, 2, dtype=L.long), 2,
                                           output_size=(9, 9)),
])
def test_errors_match_pytorch(call):
    with pytest.raises(Exception) as te:
        call(torch)
    with pytest.raises(type(te.value)) as ee:
        call(ember)
    assert str(ee.value).replace("ember._tensor.", "ember.") == str(te.value).replace("torch.", "ember.")


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 2, 3, 4, 2)])
def test_affine_grid_matches_pytorch(align, size):
    theta = R.standard_normal((size[0], len(size) - 2, len(size) - 1))
    _compare(lambda L, t: L.nn.functional.affine_grid(t, size, align_corners=align), [theta])


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_matches_pytorch(mode, padding_mode, align):
    x = R.standard_normal((2, 3, 4, 5))
    grid = R.uniform(-1.3, 1.3, (2, 3, 6, 2))           # some points outside [-1, 1]
    _compare(lambda L, a, g: L.nn.functional.grid_sample(a, g, mode=mode, padding_mode=padding_mode,
                                                         align_corners=align), [x, grid], rtol=1e-9, atol=1e-11)


def test_grid_sample_3d_matches_pytorch():
    x = R.standard_normal((1, 2, 3, 4, 5))
    grid = R.uniform(-1.1, 1.1, (1, 2, 3, 4, 3))
    _compare(lambda L, a, g: L.nn.functional.grid_sample(a, g, align_corners=False), [x, grid], rtol=1e-9,
             atol=1e-11)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("padded", [True, False])
def test_ctc_loss_matches_pytorch(reduction, padded):
    T, N, C = 12, 3, 5
    logits = R.standard_normal((T, N, C))
    tl = np.array([4, 2, 5])
    il = np.array([12, 9, 11])
    tg = R.integers(1, C, (N, 5))
    tg[0, 1] = tg[0, 2]                                   # a repeated label needs a blank in between
    if not padded:
        tg = np.concatenate([tg[n, :tl[n]] for n in range(N)])
    # through log_softmax: PyTorch's gradient w.r.t. log_probs carries an extra exp(log_probs) that only
    # cancels there (see ember.nn.functional.ctc_loss)
    _compare(lambda L, x, t, i, k: L.nn.functional.ctc_loss(x.log_softmax(2), t, i, k, reduction=reduction),
             [logits, tg, il, tl], rtol=1e-9, atol=1e-11)


def test_ctc_loss_infeasible_and_zero_infinity():
    T, C = 3, 4
    logits = R.standard_normal((T, 2, C))
    lp = torch.tensor(logits).log_softmax(2).numpy()
    tg = np.array([[1, 1, 1], [2, 3, 0]])                 # 1,1,1 needs 5 frames: infeasible in 3
    il, tl = np.array([3, 3]), np.array([3, 2])
    _compare(lambda L, x, t, i, k: L.nn.CTCLoss(zero_infinity=True, reduction="sum")(x.log_softmax(2), t, i, k),
             [logits, tg, il, tl])
    out = ember.nn.functional.ctc_loss(ember.tensor(lp), ember.tensor(tg), ember.tensor(il), ember.tensor(tl),
                                       reduction="none")
    assert out[0].item() == float("inf")
