"""``repr`` of tensors as PyTorch prints them (mirrors ``torch/_tensor_str.py``): 4 significant decimals,
scientific notation when the range demands it, integers printed with a trailing ``.`` for floats,
summarisation past 1000 elements, and ``dtype=`` / ``device=`` suffixes when they are not the defaults."""
from __future__ import annotations

import math

import numpy as np

from ember.c10.dispatch_key import SPARSE_MASK as _SPARSE_MASK, DispatchKey as _DispatchKey
from ember.c10.storage import root_array
from ember.c10.tensor_impl import is_fake_buffer
from ember.aten.math_bits import values_of
from ember.autograd import forward_ad

from ember.c10.dtype import BF16_NP as _BF16

from ember.c10 import dtype as _dt

_PYTHON_BIT = 1 << _DispatchKey.Python  # tensors whose values live behind __torch_dispatch__


class _PrintOptions:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    if profile == "default":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 4, 1000, 3, 80
    elif profile == "short":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 1000, 2, 80
    elif profile == "full":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 4, math.inf, 3, 80
    for k, v in dict(precision=precision, threshold=threshold, edgeitems=edgeitems, linewidth=linewidth).items():
        if v is not None:
            setattr(PRINT_OPTS, k, v)
    PRINT_OPTS.sci_mode = sci_mode


class _Formatter:
    def __init__(self, values: np.ndarray, is_float: bool, is_complex: bool = False):
        self.floating = is_float
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        vals = values.reshape(-1)
        if not is_float:
            for v in vals:
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = vals[np.isfinite(vals)]
        if finite.size == 0:
            return
        nonzero_abs = np.abs(finite[finite != 0])
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if self.int_mode:
            if nonzero_abs.size and (float(nonzero_abs.max()) / float(nonzero_abs.min()) > 1000.0 or
                                     float(nonzero_abs.max()) > 1e8):
                self.sci_mode = True
                for v in finite[finite != 0]:
                    self.max_width = max(self.max_width, len(f"{v:.{PRINT_OPTS.precision}e}"))
            else:
                for v in finite[finite != 0]:
                    self.max_width = max(self.max_width, len(f"{v:.0f}") + 1)
        else:
            if nonzero_abs.size:
                mx, mn = float(nonzero_abs.max()), float(nonzero_abs.min())
                if mx / mn > 1000.0 or mx > 1e8 or mn < 1e-4:
                    self.sci_mode = True
            for v in finite[finite != 0]:
                s = f"{v:.{PRINT_OPTS.precision}e}" if self.sci_mode else f"{v:.{PRINT_OPTS.precision}f}"
                self.max_width = max(self.max_width, len(s))
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode

    def width(self) -> int:
        return self.max_width

    def format(self, v) -> str:
        if self.floating:
            fv = float(v)
            if not math.isfinite(fv):
                s = "nan" if math.isnan(fv) else ("inf" if fv > 0 else "-inf")
            elif self.int_mode and not self.sci_mode:
                s = f"{fv:.0f}."
            elif self.sci_mode:
                s = f"{fv:.{PRINT_OPTS.precision}e}"
            else:
                s = f"{fv:.{PRINT_OPTS.precision}f}"
        else:
            s = str(v)
        return " " * (self.max_width - len(s)) + s


def _summarize(a: np.ndarray) -> np.ndarray:
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * e:
        parts = np.concatenate([a[:e], a[-e:]])
    else:
        parts = a
    if a.ndim == 1:
        return parts
    return np.stack([_summarize(x) for x in parts])


def _fmt_vector(vals, fmt, indent, summarize, total_len):
    e = PRINT_OPTS.edgeitems
    elem_w = fmt.width() + 2
    per_line = max(math.floor((PRINT_OPTS.linewidth - indent) / elem_w), 1)
    strs = [fmt.format(v) for v in vals]
    if summarize and total_len > 2 * e:
        strs = strs[:e] + [" ..."] + strs[e:]
    lines = [", ".join(strs[i:i + per_line]) for i in range(0, len(strs), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _fmt(a: np.ndarray, fmt, indent: int, summarize: bool) -> str:
    if a.ndim == 0:
        return fmt.format(a[()])
    if a.ndim == 1:
        vals = a
        if summarize and a.shape[0] > 2 * PRINT_OPTS.edgeitems:
            e = PRINT_OPTS.edgeitems
            vals = np.concatenate([a[:e], a[-e:]])
        return _fmt_vector(vals, fmt, indent, summarize, a.shape[0])
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        slices = [_fmt(a[i], fmt, indent + 1, summarize) for i in range(e)] + ["..."] + \
                 [_fmt(a[i], fmt, indent + 1, summarize) for i in range(a.shape[0] - e, a.shape[0])]
    else:
        slices = [_fmt(a[i], fmt, indent + 1, summarize) for i in range(a.shape[0])]
    sep = "," + "\n" * (a.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(slices) + "]"


def tensor_repr(t, prefix: str = "tensor(") -> str:
    dt = t.dtype
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if t._ks & _SPARSE_MASK:
        return _sparse_repr(t, prefix, suffixes)
    indent = len(prefix)
    if t.device.type == "meta" or (t._ks & _PYTHON_BIT and is_fake_buffer(root_array(t._data))):
        # no data to show: a meta tensor, or a tensor subclass whose values live behind __torch_dispatch__ (a
        # wrapper subclass holds no data of its own; PyTorch fails to format one that defines no __repr__)
        if t.device.type != "meta":
            prefix = type(t).__name__ + "("
        body = "..."
        suffixes.append(f"size={tuple(t.shape)}")
        if dt is not _dt.get_default_dtype():
            suffixes.append(f"dtype={dt}")
        return prefix + body + ", " + ", ".join(suffixes) + ")"
    if dt._limited == "quantized":
        return _quantized_repr(t, prefix)
    a = values_of(t.cpu())._data    # the values, not the memory, of a lazy conjugate (Note [Math bits])
    body = _values(a, dt, indent)
    if a.size == 0 and a.ndim != 1:
        suffixes.append(f"size={tuple(a.shape)}")
    default_int = dt is _dt.int64
    if not (dt is _dt.get_default_dtype() or dt is _dt.bool_ or default_int or
            (dt is _dt.default_complex_dtype())):
        suffixes.append(f"dtype={dt}")
    elif a.size == 0 and dt is not _dt.get_default_dtype():
        suffixes.append(f"dtype={dt}")
    grad_fn = getattr(t, "grad_fn", None)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(grad_fn).__name__}>")
    elif getattr(t, "requires_grad", False):
        suffixes.append("requires_grad=True")
    if "_fwg" in t.__dict__:   # a dual tensor (ember/autograd/forward_ad.py) shows its tangent
        tangent = forward_ad.unpack_dual(t).tangent
        if tangent is not None:
            suffixes.append(f"tangent={tangent}")
            return _add_suffixes(prefix + body, suffixes, indent)
    if suffixes:
        return prefix + body + ", " + ", ".join(suffixes) + ")"
    return prefix + body + ")"


# the parts a sparse layout prints, in PyTorch's order and names
_SPARSE_PARTS = {"sparse_coo": (("indices", "_indices"), ("values", "_values")),
                 "sparse_csr": (("crow_indices", "crow_indices"), ("col_indices", "col_indices"), ("values", "values")),
                 "sparse_csc": (("ccol_indices", "ccol_indices"), ("row_indices", "row_indices"), ("values", "values")),
                 "sparse_bsr": (("crow_indices", "crow_indices"), ("col_indices", "col_indices"), ("values", "values")),
                 "sparse_bsc": (("ccol_indices", "ccol_indices"), ("row_indices", "row_indices"), ("values", "values"))}


def _sparse_repr(t, prefix: str, suffixes: list) -> str:
    """PyTorch's form of a sparse tensor: its index and value tensors, then size, nnz, dtype and layout (a COO
    tensor's first suffix always on a line of its own)."""
    indent = len(prefix)
    layout = t.layout
    suffixes += [f"size={tuple(t.shape)}", f"nnz={t._nnz()}"]
    if t.dtype is not _dt.get_default_dtype():
        suffixes.append(f"dtype={t.dtype}")
    parts = []
    for name, method in _SPARSE_PARTS[layout.name]:
        part = getattr(t, method)().detach()
        head = f"{name}=tensor("
        body = _values(part._data, part.dtype, indent + len(head))
        if part.numel() == 0:
            body += f", size={tuple(part.shape)}"
        parts.append(head + body + ")")
    body = (",\n" + " " * indent).join(parts)
    suffixes.append(f"layout={layout}")
    grad_fn = getattr(t, "grad_fn", None)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(grad_fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent, force_newline=layout.name == "sparse_coo")


def _values(a, dt, indent: int) -> str:
    """The bracketed values of the array ``a`` (of ember dtype ``dt``)."""
    if a.dtype == _BF16 or a.dtype == np.float16:
        a = a.astype(np.float32)
    if a.size == 0:
        return "[]"
    summarize = a.size > PRINT_OPTS.threshold
    sample = _summarize(a) if summarize else a
    if dt.is_complex:
        return _fmt_complex(a, _Formatter(sample.real, True), _Formatter(sample.imag, True), indent, summarize)
    return _fmt(a, _Formatter(sample, dt.is_floating_point), indent, summarize)


def _add_suffixes(body: str, suffixes: list, indent: int, force_newline: bool = False) -> str:
    """``body, suffix, ...)``, a suffix moving to a line of its own when it would pass the line width, or when
    ``force_newline`` the first one (PyTorch's ``_add_suffixes``)."""
    out = [body]
    last = len(body) - body.rfind("\n") + 1
    for suffix in suffixes:
        if force_newline or last + len(suffix) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
            force_newline = False
        else:
            out.append(", " + suffix)
            last += len(suffix) + 2
    return "".join(out) + ")"


def _quantized_repr(t, prefix: str) -> str:
    """A quantized tensor: its real values, then size, dtype, scheme and parameters."""
    q = t.qscheme()
    suffixes = [f"size={tuple(t.shape)}", f"dtype={t.dtype}", f"quantization_scheme={q}"]
    if q.name in ("per_tensor_affine", "per_tensor_symmetric"):
        suffixes += [f"scale={t.q_scale()}", f"zero_point={t.q_zero_point()}"]
    else:
        suffixes += [f"scale={tensor_repr(t.q_per_channel_scales())}",
                     f"zero_point={tensor_repr(t.q_per_channel_zero_points())}", f"axis={t.q_per_channel_axis()}"]
    body = prefix + _values(t.dequantize()._data, _dt.float32, len(prefix))
    return _add_suffixes(body, suffixes, len(prefix))


def _fmt_complex(a, fr, fi, indent, summarize):
    class _C:
        def width(self):
            return fr.width() + fi.width() + 2

        def format(self, v):
            re = fr.format(v.real)
            im = fi.format(abs(v.imag)).strip()
            sign = "-" if np.signbit(v.imag) else "+"
            return f"{re}{sign}{im}j"
    return _fmt(a, _C(), indent, summarize)
