"""``ember.fft`` and complex tensors beyond the op table (``tests/op_db_spectral.py`` checks values, gradients,
gradcheck, Meta shapes and errors of every function): ``out=``, the result layout, the NumPy fallback when SciPy
is absent, views onto complex memory, the window-less warnings."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.aten.kernels import spectral

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

RNG = np.random.default_rng(11)
X = RNG.standard_normal((3, 8, 5))
Z = X + 1j * RNG.standard_normal((3, 8, 5))


def _t(lib, a):
    return lib.tensor(a) if lib is ember else torch.from_numpy(a.copy())


@pytest.mark.parametrize("name,data,kw", [
    ("fft", Z, {}), ("fft", X, dict(n=6, dim=1)), ("ifft", Z, dict(norm="ortho")), ("rfft", X, dict(dim=0)),
    ("irfft", Z, dict(n=10)), ("hfft", Z, {}), ("ihfft", X, {}), ("ihfft", X, dict(dim=1)),
    ("fftn", X, {}), ("ifft2", Z, dict(s=(4, 4))), ("rfftn", X, dict(dim=(0, 2))), ("irfft2", Z, {}),
    ("hfftn", Z, dict(dim=(0, 1))), ("ihfftn", X, {}), ("ihfft2", X, dict(norm="forward")),
])
def test_out_matches_pytorch_and_is_written_in_place(name, data, kw):
    results = []
    for lib in (torch, ember):
        ref = getattr(lib.fft, name)(_t(lib, data), **kw)
        out = lib.empty(0, dtype=ref.dtype)
        r = getattr(lib.fft, name)(_t(lib, data), **kw, out=out)
        assert r is out
        results.append(out.resolve_conj().numpy() if lib is torch else out.numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-10, atol=1e-12)


def test_out_refuses_inputs_that_require_grad_as_pytorch_does():
    messages = []
    for lib in (torch, ember):
        x = lib.ones(4, requires_grad=True)
        with pytest.raises(RuntimeError) as info:
            lib.fft.fft(x, out=lib.empty(4, dtype=lib.complex64))
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_freq_out_takes_its_dtype_and_checks_an_explicit_one():
    for lib in (torch, ember):
        out = lib.empty(0, dtype=lib.float64)
        assert lib.fft.fftfreq(5, 0.5, out=out) is out and out.dtype is lib.float64
    with pytest.raises(RuntimeError, match="dtype Float does not match dtype of out parameter \\(Double\\)"):
        ember.fft.rfftfreq(5, out=ember.empty(0, dtype=ember.float64), dtype=ember.float32)
    with pytest.raises(RuntimeError, match="dtype Float does not match dtype of out parameter"):
        torch.fft.rfftfreq(5, out=torch.empty(0, dtype=torch.float64), dtype=torch.float32)


@pytest.mark.parametrize("name,kw", [("fft", dict(dim=1)), ("irfft", dict(dim=0)), ("rfft", {}),
                                     ("fftn", dict(dim=(0, 2))), ("ifft", dict(dim=-2))])
def test_results_are_laid_out_as_pytorchs(name, kw):
    """The transformed dims are innermost in memory, as PyTorch's CPU kernels leave them."""
    data = Z if name in ("irfft", "ifft") else X
    strides = [getattr(lib.fft, name)(_t(lib, data), **kw).stride() for lib in (torch, ember)]
    assert strides[0] == strides[1]


@pytest.mark.parametrize("fn", [lambda f, x: f.fft(x, dim=1), lambda f, x: f.rfftn(x.real, dim=(0, 2)),
                                lambda f, x: f.irfft(x, n=7), lambda f, x: f.ifft2(x, norm="ortho"),
                                lambda f, x: f.hfft(x, dim=0)])
def test_numpy_fft_serves_when_scipy_is_absent(fn, monkeypatch):
    z = ember.tensor(Z)
    with_scipy = fn(ember.fft, z)
    monkeypatch.setattr(spectral, "_scipy_fft", False)  # as if `import scipy.fft` had failed
    assert spectral.fft_library(np)[0] is np.fft
    np.testing.assert_allclose(fn(ember.fft, z).numpy(), with_scipy.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fn(ember.fft, z).numpy(), fn(torch.fft, torch.from_numpy(Z)).numpy(), rtol=1e-10,
                               atol=1e-12)


def test_float32_transforms_stay_in_single_precision():
    x = ember.tensor(X.astype(np.float32))
    assert ember.fft.rfft(x).dtype is ember.complex64
    assert ember.fft.irfft(ember.fft.rfft(x)).dtype is ember.float32
    assert ember.fft.fft(ember.tensor(X.astype(np.int64))).dtype is ember.complex64  # integers: default dtype
    with pytest.raises(RuntimeError, match="Unsupported dtype Half"):
        ember.fft.fft(ember.ones(4, dtype=ember.float16))


def test_real_and_imag_are_views_that_write_through():
    for lib in (torch, ember):
        z = _t(lib, np.array([1 + 2j, 3 - 4j]))
        z.real.mul_(10)
        z.imag[1] = 7
        r = lib.view_as_real(z)
        r[0, 1] = -1
        assert z.tolist() == [10 - 1j, 30 + 7j]
        z.real = _t(lib, np.array([0.5, 0.25]))
        assert z.tolist() == [0.5 - 1j, 0.25 + 7j]
        c = lib.view_as_complex(_t(lib, np.arange(8.0).reshape(2, 2, 2)))
        assert c.stride() == (2, 1) and c[1, 0].item() == 4 + 5j


def test_view_as_real_shares_the_version_counter():
    z = ember.zeros(3, dtype=ember.complex64, requires_grad=True).clone()
    r = ember.view_as_real(z)
    v = z._version
    r.add_(1)
    assert z._version == v + 1 and r._base is z


def test_stft_without_a_window_warns_once_as_pytorch():
    from ember.c10 import exceptions
    exceptions._WARNED_ONCE.discard("stft")
    x = ember.randn(32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.stft(x, 8, return_complex=True)
        ember.stft(x, 8, return_complex=True)
    msgs = [str(w.message) for w in caught if "window was not provided" in str(w.message)]
    assert len(msgs) == 1 and "spectral leakage" in msgs[0]


def test_stft_istft_round_trip_and_method_forms():
    x = RNG.standard_normal((2, 64))
    outs = []
    for lib in (torch, ember):
        t = _t(lib, x)
        w = lib.hann_window(16, dtype=lib.float64)
        s = t.stft(16, hop_length=4, window=w, return_complex=True)
        y = s.istft(16, hop_length=4, window=w, length=64)
        np.testing.assert_allclose(y.numpy(), x, atol=1e-12)
        outs.append(s.numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-10, atol=1e-12)
