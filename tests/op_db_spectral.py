"""The op table's entries for complex numbers and ``torch.fft`` (the rest of the table: ``tests/op_db.py``).

The table's samples are real arrays, so a complex input is built in the call from two real ones
(``complex(re, im)``: its gradient is part of what is checked) and a complex result is compared as its
``view_as_real`` pairs. Gradients then run through the complex graph end to end, against PyTorch's and
against finite differences (gradcheck in float64)."""
from __future__ import annotations

import numpy as np

from tests.opinfo import FLOATS, INTS, ErrorInput, OpInfo, Sample, arr, positive


def _err(args, kwargs, etype, match):
    return ErrorInput(Sample(args, kwargs), etype, match)


def _pairs(L, r):
    """A complex result as (re, im) pairs; PyTorch's lazily conjugated results are resolved first."""
    if isinstance(r, (tuple, list)):
        return type(r)(_pairs(L, x) for x in r)
    return L.view_as_real(r.resolve_conj()) if r.is_complex() else r


def _resolve(L, path):
    obj = L
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _complex_call(path, n_complex=1):
    """``path`` called on ``n_complex`` complex inputs, each made of the next two real sample arguments."""
    def fn(L, *args, **kwargs):
        zs = [L.complex(args[2 * i], args[2 * i + 1]) for i in range(n_complex)]
        return _pairs(L, _resolve(L, path)(*zs, *args[2 * n_complex:], **kwargs))
    return fn


def _real_call(path):
    def fn(L, *args, **kwargs):
        return _pairs(L, _resolve(L, path)(*args, **kwargs))
    return fn


ops: list[OpInfo] = []

# ------------------------------------------------------------------------------ complex numbers
_COMPLEX_SHAPES = [(), (5,), (3, 4)]


def _parts_samples(d, r):
    return [Sample((arr(r, s, d), arr(r, s, d))) for s in _COMPLEX_SHAPES] + \
        [Sample((arr(r, (3, 1), d), arr(r, (4,), d)), name="broadcast")]


def _complex_samples(d, r):
    cdt = "complex128" if d == "float64" else "complex64"
    return [Sample(((arr(r, s, d) + 1j * arr(r, s, d)).astype(cdt),)) for s in ((5,), (3, 4))]


ops += [
    OpInfo("complex", _parts_samples, method=False, ember_fn=_real_call("complex"), torch_fn=_real_call("complex"),
           errors=lambda: [
               _err((np.ones(2, "int64"), np.ones(2, "int64")), {}, RuntimeError,
                    "Expected both inputs to be Half, Float or Double tensors but got Long and Long"),
               _err((np.ones(2, "float32"), np.ones(2, "float64")), {}, RuntimeError,
                    "Expected object of scalar type Float but got scalar type Double for second argument")]),
    OpInfo("polar", lambda d, r: [Sample((positive(r, s, d), arr(r, s, d))) for s in _COMPLEX_SHAPES],
           method=False, ember_fn=_real_call("polar"), torch_fn=_real_call("polar"),
           errors=lambda: [_err((np.ones(2, "float64"), np.ones(2, "float32")), {}, RuntimeError,
                                "Expected object of scalar type Double but got scalar type Float")]),
    OpInfo("view_as_real", _parts_samples, method=False, ember_fn=_complex_call("view_as_real"),
           torch_fn=_complex_call("view_as_real")),
    # complex samples (no gradient: the table differentiates real inputs) for the entries with error inputs
    OpInfo("view_as_real", _complex_samples, method=False, supports_autograd=False,
           errors=lambda: [_err((np.ones(2),), {}, RuntimeError, "view_as_real is only supported for complex")]),
    OpInfo("view_as_complex", lambda d, r: [Sample((arr(r, s + (2,), d),)) for s in ((1,), (5,), (3, 4))],
           method=False, ember_fn=_real_call("view_as_complex"), torch_fn=_real_call("view_as_complex"),
           # strided inputs are refused ("Tensor must have a last dimension with stride 1"): see the errors
           noncontiguous=False,
           errors=lambda: [
               _err((np.ones((3, 3)),), {}, RuntimeError, "Tensor must have a last dimension of size 2"),
               _err((np.ones(()),), {}, RuntimeError, "Input tensor must have one or more dimensions"),
               _err((np.ones((2, 2), "int64"),), {}, RuntimeError,
                    "view_as_complex is only supported for half, float and double tensors, but got a tensor of "
                    "scalar type: Long")]),
    OpInfo("real", _parts_samples, method=False, ember_fn=_complex_call("real"), torch_fn=_complex_call("real"),
           covers=("view_as_real",)),
    OpInfo("real", lambda d, r: [Sample((arr(r, (3, 4), d),))], method=False, dtypes=FLOATS + INTS),
    OpInfo("imag", _parts_samples, method=False, ember_fn=_complex_call("imag"), torch_fn=_complex_call("imag")),
    OpInfo("imag", _complex_samples, method=False, supports_autograd=False, ember_fn=_real_call("imag"),
           torch_fn=_real_call("imag"),
           errors=lambda: [_err((np.ones(2),), {}, RuntimeError,
                                "imag is not implemented for tensors with non-complex dtypes.")]),
    # sgn and abs of complex numbers, and their double backward
    OpInfo("sgn", lambda d, r: [Sample((arr(r, s, d), arr(r, s, d))) for s in _COMPLEX_SHAPES] +
           [Sample((np.array([0.0, 1.0], d), np.array([0.0, -2.0], d)), name="zero")],
           ember_fn=_complex_call("sgn"), torch_fn=_complex_call("sgn")),
    OpInfo("abs", lambda d, r: [Sample((arr(r, s, d), arr(r, s, d))) for s in _COMPLEX_SHAPES],
           ember_fn=_complex_call("abs"), torch_fn=_complex_call("abs")),
    OpInfo("angle", lambda d, r: [Sample((np.array([1.0, -2.0, 0.0, -0.0, np.nan, -np.inf], d),)),
                                  Sample((arr(r, (3, 4), d),))] if d in FLOATS else [Sample((arr(r, (3, 4), d),))],
           dtypes=FLOATS + INTS, out=True,
           supports_gradgrad=False),  # piecewise constant for real inputs: the first derivative is a constant 0
    OpInfo("angle", lambda d, r: [Sample((arr(r, s, d), arr(r, s, d))) for s in _COMPLEX_SHAPES] +
           [Sample((np.array([0.0, 1.0, -1.0], d), np.array([0.5, 0.0, 0.0], d)), name="on the axes")],
           ember_fn=_complex_call("angle"), torch_fn=_complex_call("angle")),
    OpInfo("isreal", lambda d, r: [Sample((arr(r, (3, 4), d),))], dtypes=FLOATS + INTS + ("bool",),
           supports_autograd=False),
    OpInfo("isreal", lambda d, r: [Sample((arr(r, (6,), d), np.array([0, 1, 0, -2, 0, 0.5], d)))],
           ember_fn=_complex_call("isreal"), torch_fn=_complex_call("isreal"), supports_autograd=False),
]

# ------------------------------------------------------------------------------ torch.fft
_NORMS = (None, "backward", "ortho", "forward")


def _fft1_samples(complex_in, hermitian=False):
    """1-dim transforms: the default length and dim, each norm, cut and zero-padded lengths, another dim."""
    def f(d, r):
        def x(shape):
            return (arr(r, shape, d), arr(r, shape, d)) if complex_in else (arr(r, shape, d),)
        out = [Sample(x((8,)), dict(norm=nm)) for nm in _NORMS]
        out += [Sample(x((3, 5)), dict(n=n)) for n in (3, 8)]
        out += [Sample(x((4, 3, 2)), dict(dim=0, n=7 if hermitian else 4))]
        out += [Sample(x((3, 6)), dict(dim=-2, norm="ortho"))]
        return out
    return f


def _fftn_samples(complex_in, two=False):
    """n-dim transforms: every dim, some dims, shapes with -1, cut and padded sizes, each norm."""
    def f(d, r):
        def x(shape):
            return (arr(r, shape, d), arr(r, shape, d)) if complex_in else (arr(r, shape, d),)
        out = [Sample(x((3, 4)), dict(norm=nm)) for nm in _NORMS]
        out += [Sample(x((2, 3, 4)), dict(s=(5, 2))), Sample(x((2, 3, 4)), dict(s=(-1, 6), norm="ortho"))]
        out += [Sample(x((3, 2, 4)), dict(dim=(0, 2))), Sample(x((3, 2, 4)), dict(dim=(2, 0), s=(3, 4)))]
        if not two:
            out += [Sample(x((2, 3)), {}), Sample(x((2, 3, 2)), dict(dim=(1,), norm="forward"))]
        return out
    return f


def _fft_errors(path, complex_in):
    x = (np.ones((3, 4)), np.ones((3, 4))) if complex_in else (np.ones((3, 4)),)
    nd = path.endswith("n") or path.endswith("2")
    errs = [_err(x, dict(norm="bogus"), RuntimeError, 'Invalid normalization mode: "bogus"')]
    if nd:
        errs += [_err(x, dict(dim=(0, 0)), RuntimeError, "FFT dims must be unique"),
                 _err(x, dict(s=(2, 3), dim=(0,)), RuntimeError, "When given, dim and shape arguments must have"),
                 _err(x, dict(s=(0, 3)), RuntimeError, r"Invalid number of data points \(0\) specified")]
        if path.endswith("n"):
            errs += [_err(x, dict(s=(2, 3, 4)), RuntimeError, "Got shape with 3 values but input tensor only has 2")]
    else:
        errs += [_err(x, dict(n=0), RuntimeError, r"Invalid number of data points \(0\) specified"),
                 _err(x, dict(dim=2), IndexError, "Dimension out of range")]
    return errs


def _fft_entry(kind, suffix, complex_in, covers):
    path = f"fft.{kind}{suffix}"
    samples = _fftn_samples(complex_in, two=suffix == "2") if suffix else \
        _fft1_samples(complex_in, hermitian=kind in ("irfft", "hfft"))
    call = _complex_call(path) if complex_in else _real_call(path)
    return OpInfo(path, samples, method=False, torch_name=path, ember_fn=call, torch_fn=call, covers=covers,
                  errors=lambda: _fft_errors(path, complex_in))


for _suffix in ("", "2", "n"):
    ops += [
        _fft_entry("fft", _suffix, False, ("_fft_r2c",) if not _suffix else ("_fft_c2c",)),
        _fft_entry("fft", _suffix, True, ("_fft_c2c",)),
        _fft_entry("ifft", _suffix, False, ()),
        _fft_entry("ifft", _suffix, True, ()),
        _fft_entry("rfft", _suffix, False, ("_fft_r2c",)),
        _fft_entry("irfft", _suffix, True, ("_fft_c2r",)),
        _fft_entry("irfft", _suffix, False, ()),
        _fft_entry("hfft", _suffix, True, ("_fft_c2r",)),
        _fft_entry("ihfft", _suffix, False, ("_fft_r2c",)),
    ]
ops[-1].errors = lambda: _fft_errors("fft.ihfftn", False) + [
    _err((np.ones((3, 4), "complex128"),), {}, RuntimeError, "Only supports floating-point dtypes, but found: Comp"),
    _err((np.ones((3, 4)),), dict(dim=()), RuntimeError, "ihfftn must transform at least one axis")]


def _freq_samples(d, r):
    return [Sample((n,), dict(d=sp, dtype=d)) for n in (1, 4, 7) for sp in (1.0, 0.25)]


ops += [
    OpInfo(f"fft.{name}", _freq_samples, method=False, torch_name=f"fft.{name}", out=True, supports_autograd=False,
           noncontiguous=False, meta=False,
           errors=lambda name=name: [_err((4,), dict(dtype="int64"), RuntimeError,
                                          "fftfreq requires a floating point or complex dtype")])
    for name in ("fftfreq", "rfftfreq")
]
ops += [
    OpInfo(f"fft.{name}", lambda d, r: [Sample((arr(r, (5,), d),)), Sample((arr(r, (4, 5), d),)),
                                        Sample((arr(r, (4, 5), d),), dict(dim=1)),
                                        Sample((arr(r, (4, 5, 3), d),), dict(dim=(0, -1)))],
           method=False, torch_name=f"fft.{name}", dtypes=FLOATS + INTS)
    for name in ("fftshift", "ifftshift")
]

# ------------------------------------------------------------------------------ windows, stft and istft
_WINDOW_ARGS = {"hann_window": [()], "blackman_window": [()], "bartlett_window": [()],
                "hamming_window": [(), (0.5,), (0.6, 0.3)], "kaiser_window": [(), (3.0,)]}


def _window_samples(name):
    def f(d, r):
        out = [Sample((n,), dict(dtype=d)) for n in (0, 1, 2, 5, 8)]
        out += [Sample((n, periodic) + extra, dict(dtype=d)) for n in (1, 6, 7) for periodic in (True, False)
                for extra in _WINDOW_ARGS[name]]
        return out
    return f


ops += [
    OpInfo(name, _window_samples(name), method=False, supports_autograd=False, noncontiguous=False,
           meta=False, errors=lambda name=name: [
               _err((-1,), {}, RuntimeError, f"{name} requires non-negative window_length, got window_length=-1"),
               _err((4,), dict(dtype="int64"), RuntimeError, f"{name} expects floating point dtypes, got: "
                                                                r"TensorOptions\(dtype=long int")])
    for name in _WINDOW_ARGS
]


def _stft_samples(d, r):
    """Each signal shape, centred or not (each pad mode), window shorter than n_fft or none, normalized,
    two-sided, align_to_window; the window is a sample argument, so its gradient is checked too."""
    out = [Sample((arr(r, (40,), d), 16, 4, None, positive(r, (16,), d)), dict(return_complex=True)),
           Sample((arr(r, (2, 30), d), 8, 3, 6, positive(r, (6,), d)), dict(return_complex=True, normalized=True)),
           Sample((arr(r, (25,), d), 8, 2, None, positive(r, (8,), d)),
                  dict(return_complex=True, center=False, onesided=False)),
           Sample((arr(r, (2, 25), d), 8, None, 4, positive(r, (4,), d)),
                  dict(return_complex=True, center=False, align_to_window=True)),
           Sample((arr(r, (20,), d), 6), dict(return_complex=True, pad_mode="constant")),
           Sample((arr(r, (20,), d), 6, 2), dict(return_complex=False, pad_mode="replicate"))]
    return out


def _stft_errors():
    x = np.ones(10)
    return [_err((x, 16), dict(return_complex=True, center=False), RuntimeError, "expected 0 < n_fft < 10, but got"),
            _err((x, 4), {}, RuntimeError, "stft requires the return_complex parameter be given for real inputs"),
            _err((np.ones((2, 2, 10)), 4), dict(return_complex=True), RuntimeError, "expected a 1D or 2D tensor"),
            _err((x, 4, 0), dict(return_complex=True), RuntimeError, "expected hop_length > 0, but got hop_length=0"),
            _err((x, 4, 1, 5), dict(return_complex=True), RuntimeError, "expected 0 < win_length <= n_fft"),
            _err((x, 4, 1, 4, np.ones(3)), dict(return_complex=True), RuntimeError,
                 r"expected a 1D window tensor of size equal to win_length=4, but got window with size \[3\]"),
            _err((x, 4), dict(return_complex=True, align_to_window=True), RuntimeError,
                 "stft align_to_window should only be set when center = false"),
            _err((np.ones(10, "int64"), 4), dict(return_complex=True), RuntimeError,
                 "expected a tensor of floating point or complex values")]


def _istft_samples(d, r):
    """Spectra of the right size (not necessarily an stft's: istft is linear), centred or not, with ``length``,
    two-sided, a complex result, normalized."""
    return [Sample((arr(r, (9, 11), d), arr(r, (9, 11), d), 16, 4, None, positive(r, (16,), d))),
            Sample((arr(r, (2, 5, 7), d), arr(r, (2, 5, 7), d), 8, 2, 6, positive(r, (6,), d)),
                   dict(length=15, normalized=True)),
            Sample((arr(r, (5, 6), d), arr(r, (5, 6), d), 8, 2, None, positive(r, (8,), d)), dict(center=False)),
            Sample((arr(r, (8, 6), d), arr(r, (8, 6), d), 8, 3, None, positive(r, (8,), d)),
                   dict(onesided=False, return_complex=True)),
            Sample((arr(r, (8, 6), d), arr(r, (8, 6), d), 8, 3, None, positive(r, (8,), d)),
                   dict(onesided=False, length=30))]


def _istft_errors():
    z = (np.ones((3, 11)) + 1j * np.ones((3, 11))).astype("complex64")
    return [_err((np.ones((3, 11)), 4), {}, RuntimeError, "istft requires a complex-valued input tensor"),
            _err((z, 4, 1, 4, np.ones(3, "float32")), {}, RuntimeError, "Invalid window shape"),
            _err((z, 4, 5), {}, RuntimeError, "expected 0 < hop_length <= win_length"),
            _err((z[:, :0], 4), {}, RuntimeError, "input tensor cannot be empty."),
            _err((z, 6), {}, RuntimeError, r"expected the frequency dimension \(3rd to the last\) of the input tensor "
                                           "to match n_fft / 2 \\+ 1 when onesided=True, but got 3"),
            _err((z, 4, 1, 4, np.zeros(4, "float32")), {}, RuntimeError, "window overlap add min")]


ops += [
    OpInfo("stft", _stft_samples, ember_fn=_real_call("stft"), torch_fn=_real_call("stft"), covers=("stft",),
           errors=_stft_errors),
    # PyTorch has no Meta kernel for istft (its window check reads data); ember's Meta path checks shapes only
    OpInfo("istft", _istft_samples, ember_fn=_complex_call("istft"), torch_fn=_complex_call("istft"), meta=False),
    OpInfo("istft", lambda d, r: [Sample(((arr(r, (9, 11), d) + 1j * arr(r, (9, 11), d)).astype(
        "complex128" if d == "float64" else "complex64"), 16, 4), dict(window=positive(r, (16,), d)))],
        supports_autograd=False, meta=False, errors=_istft_errors),
]
