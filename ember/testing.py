"""``ember.testing.assert_close`` (mirrors ``torch.testing``)."""
from __future__ import annotations

import collections.abc
import numbers

import numpy as np

import ember

__all__ = ["assert_close", "make_tensor"]

_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}


def _name(dtype) -> str:
    return str(dtype).split(".")[-1]


def _fail(msg, custom, exc=AssertionError):
    raise exc(custom if isinstance(custom, str) else custom(msg) if callable(custom) else msg)


def _as_tensor(x):
    if isinstance(x, ember.Tensor):
        return x
    if isinstance(x, np.ndarray):
        return ember.from_numpy(x)
    return None


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, check_stride, msg, path):
    where = f" at {path}" if path else ""
    if actual.shape != expected.shape:
        _fail(f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}{where}.", msg)
    if check_device and actual.device != expected.device:
        _fail(f"The values for attribute 'device' do not match: {actual.device} != {expected.device}{where}.", msg)
    if check_dtype and actual.dtype != expected.dtype:
        _fail(f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}{where}.", msg)
    if check_stride and actual.stride() != expected.stride():
        _fail(f"The values for attribute 'stride()' do not match: {actual.stride()} != {expected.stride()}{where}.",
              msg)
    dtype = expected.dtype if check_dtype else ember.promote_types(actual.dtype, expected.dtype)
    default = _TOLERANCES.get(_name(dtype), (0.0, 0.0))
    rtol = default[0] if rtol is None else rtol
    atol = default[1] if atol is None else atol
    a = actual.detach().cpu()
    e = expected.detach().cpu()
    a = (a.float() if a.dtype == ember.bfloat16 else a).numpy(force=True)     # (the values of a lazy conjugate)
    e = (e.float() if e.dtype == ember.bfloat16 else e).numpy(force=True)
    if a.dtype == np.bool_:
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(all="ignore"):
        if a.dtype.kind in "fc" or e.dtype.kind in "fc":
            close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
        else:
            close = np.abs(a.astype(np.float64) - e.astype(np.float64)) <= atol + rtol * np.abs(e.astype(np.float64))
        if close.all():
            return
        work = np.result_type(a.dtype, e.dtype)        # PyTorch reports the differences in the compared dtype
        if work.kind not in "fc":
            work = np.dtype(np.float64)
        diff = np.abs(a.astype(work) - e.astype(work))
        rel = diff / np.abs(e.astype(work))
    total = close.size
    bad = int(total - close.sum())
    kind = "close" if (a.dtype.kind in "fc" or rtol or atol) else "equal"
    d = np.where(close, 0, np.nan_to_num(diff, nan=np.inf))
    r = np.where(close, 0, np.nan_to_num(rel, nan=np.inf))
    ia = np.unravel_index(int(np.argmax(d)), d.shape) if d.ndim else ()
    ir = np.unravel_index(int(np.argmax(r)), r.shape) if r.ndim else ()
    def fmt(v):
        v = float(v)
        return str(int(v)) if kind == "equal" and v.is_integer() else repr(v)
    lines = [f"Tensor-likes are not {kind}!{where}", "", f"Mismatched elements: {bad} / {total} "
             f"({100 * bad / total:.1f}%)"]
    if kind == "close":
        lines += [f"Greatest absolute difference: {fmt(float(d[ia]))} at index {tuple(int(i) for i in ia)} "
                  f"(up to {atol} allowed)",
                  f"Greatest relative difference: {fmt(float(r[ir]))} at index {tuple(int(i) for i in ir)} "
                  f"(up to {rtol} allowed)"]
    else:
        lines += [f"Greatest absolute difference: {fmt(float(d[ia]))} at index {tuple(int(i) for i in ia)}",
                  f"Greatest relative difference: {fmt(float(r[ir]))} at index {tuple(int(i) for i in ir)}"]
    _fail("\n".join(lines), msg)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Assert that ``actual`` and ``expected`` are close: tensors (and NumPy arrays, Python numbers) compared
    elementwise with ``|a - e| <= atol + rtol * |e|`` and PyTorch's default tolerances per dtype; sequences
    and mappings compared item by item."""
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.")

    def compare(a, e, path):
        ta, te = _as_tensor(a), _as_tensor(e)
        if ta is not None or te is not None:
            if ta is None or te is None:
                _fail(f"No comparison pair was able to handle inputs of type {type(a)} and {type(e)}.", msg,
                      TypeError)
            _compare_tensors(ta, te, rtol, atol, equal_nan, check_device, check_dtype, check_stride, msg, path)
            return
        if isinstance(e, numbers.Number) and isinstance(a, numbers.Number) and not isinstance(e, bool):
            if check_dtype and type(a) is not type(e):
                _fail(f"The values for attribute 'dtype' do not match: {type(a)} != {type(e)}.", msg)
            r, t = (rtol, atol) if rtol is not None else ((1.3e-6, 1e-5) if isinstance(e, float) else (0.0, 0.0))
            if isinstance(e, complex) or isinstance(a, complex):
                ok = abs(a - e) <= t + r * abs(e)
            else:
                ok = (a == e) or (equal_nan and a != a and e != e) or abs(a - e) <= t + r * abs(e)
            if not ok:
                diff = abs(a - e)
                kind = "close" if isinstance(e, float) else "equal"
                _fail(f"Scalars are not {kind}!\n\nExpected {e} but got {a}.\nAbsolute difference: {diff} (up to {t} "
                      f"allowed)\nRelative difference: {diff / abs(e) if e else float('inf')} (up to {r} allowed)", msg)
            return
        if isinstance(e, collections.abc.Mapping) and isinstance(a, collections.abc.Mapping):
            if set(a.keys()) != set(e.keys()):
                _fail(f"The keys of the mappings do not match:\nMissing keys in the actual mapping: "
                      f"{sorted(set(e) - set(a))}\nAdditional keys in the actual mapping: {sorted(set(a) - set(e))}",
                      msg)
            for k in e:
                compare(a[k], e[k], f"{path}[{k!r}]" if path else f"item [{k!r}]")
            return
        if isinstance(e, collections.abc.Sequence) and isinstance(a, collections.abc.Sequence) and \
                not isinstance(e, str):
            if len(a) != len(e):
                _fail(f"The length of the sequences mismatch: {len(a)} != {len(e)}", msg)
            for i, (x, y) in enumerate(zip(a, e)):
                compare(x, y, f"{path}[{i}]" if path else f"item [{i}]")
            return
        if a != e:
            _fail(f"Objects are not equal: {a!r} != {e!r}", msg)

    compare(actual, expected, "")


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` with values drawn uniformly from ``[low, high)`` (PyTorch's defaults: -9..9)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    lo = -9 if low is None else low
    hi = 10 if high is None else high
    if dtype == ember.bool:
        t = ember.randint(0, 2, shape).to(ember.bool)
    elif dtype.is_floating_point or dtype.is_complex:
        t = ember.rand(shape, dtype=ember.float64) * ((9 if high is None else high) - lo) + lo
        t = t.to(dtype)
    else:
        t = ember.randint(int(lo), int(hi), shape, dtype=dtype)
    if exclude_zero:
        t = ember.where(t == 0, ember.ones_like(t), t)
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t
