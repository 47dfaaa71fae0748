"""Filtered resampling (``interpolate(antialias=True)``, ``mode="lanczos"``, uint8 bilinear / bicubic) against
PyTorch: uint8 results bit for bit (PIL's integer arithmetic, Note [Filtered resampling]), float results to
rounding, gradients, and PyTorch's argument errors."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

SIZES = [(20, 25), (13, 17), (60, 71), (37, 20), (2, 3)]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("size", SIZES)
def test_antialiased_resampling_matches_pytorch(mode, size):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 37, 45))
    u8 = rng.integers(0, 256, (1, 3, 40, 50)).astype(np.uint8)
    for dtype, tol in (("float32", 5e-6), ("float64", 1e-13)):
        want = torch.nn.functional.interpolate(torch.tensor(x).to(getattr(torch, dtype)), size, mode=mode,
                                               antialias=True)
        got = ember.nn.functional.interpolate(ember.tensor(x).to(getattr(ember, dtype)), size, mode=mode,
                                              antialias=True)
        assert got.dtype == getattr(ember, dtype)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)
    want = torch.nn.functional.interpolate(torch.tensor(u8), size, mode=mode, antialias=True)
    got = ember.nn.functional.interpolate(ember.tensor(u8), size, mode=mode, antialias=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", SIZES[:4])
def test_uint8_resampling_without_antialias_is_pytorchs_bit_for_bit(mode, align_corners, size):
    u8 = np.random.default_rng(1).integers(0, 256, (2, 3, 40, 50)).astype(np.uint8)
    want = torch.nn.functional.interpolate(torch.tensor(u8), size, mode=mode, align_corners=align_corners)
    got = ember.nn.functional.interpolate(ember.tensor(u8), size, mode=mode, align_corners=align_corners)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
def test_gradients_scale_factors_and_align_corners(mode):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 2, 19, 23))
    g = rng.standard_normal((2, 2, 7, 8))
    cases = [dict(size=(7, 8)), dict(scale_factor=0.37), dict(scale_factor=(0.4, 0.35))]
    if mode != "lanczos":
        cases.append(dict(size=(7, 8), align_corners=True))
    for kw in cases:
        t = torch.tensor(x, requires_grad=True)
        e = ember.tensor(x, requires_grad=True)
        yt = torch.nn.functional.interpolate(t, mode=mode, antialias=True, **kw)
        ye = ember.nn.functional.interpolate(e, mode=mode, antialias=True, **kw)
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
        gt = torch.tensor(rng.standard_normal(tuple(yt.shape)))
        (yt * gt).sum().backward()
        (ye * ember.tensor(gt.numpy())).sum().backward()
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)
        assert type(ye.grad_fn).__name__ == type(yt.grad_fn).__name__
    assert g.shape == (2, 2, 7, 8)
    small = ember.tensor(rng.standard_normal((1, 1, 6, 5)), requires_grad=True)
    assert ember.autograd.gradcheck(lambda v: ember.nn.functional.interpolate(v, (3, 4), mode=mode, antialias=True),
                                    (small,))
    assert ember.autograd.gradgradcheck(
        lambda v: ember.nn.functional.interpolate(v, (3, 4), mode=mode, antialias=True), (small,))


def test_argument_errors_are_pytorchs():
    x3 = np.zeros((1, 2, 5))
    x4 = np.zeros((1, 2, 5, 5))
    cases = [(x3, dict(size=3, mode="bilinear", antialias=True)), (x4, dict(size=3, mode="lanczos")),
             (x4, dict(size=3, mode="lanczos", antialias=True, align_corners=True)),
             (x4, dict(size=3, mode="nearest", antialias=True))]
    for arr, kw in cases:
        with pytest.raises(Exception) as want:
            torch.nn.functional.interpolate(torch.tensor(arr), **kw)
        with pytest.raises(type(want.value)) as got:
            ember.nn.functional.interpolate(ember.tensor(arr), **kw)
        assert str(got.value) == str(want.value)
