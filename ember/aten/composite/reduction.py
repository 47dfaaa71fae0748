"""Reductions and sorting written in other ops (``ReduceOps.cpp``, ``Sorting.cpp``): the legacy ``unbiased``
overloads of var / std, default sort / argsort, norm, and quantile / nanquantile."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember._generated import aten
from ember.aten.kernels._common import wrap_dim
from ember.aten.meta import broadcast_shapes
from ember.aten.math_bits import values_of
from ember.c10.dtype import scalar_type_name
from ember.c10.dtype import bool_, float32, float64, get_default_dtype, int64
from ember.c10.dtype import can_cast as _can_cast, promote_types as _promote_types
from ember.c10.exceptions import warn_once, warn_user


def var_unbiased(self: Any, unbiased: Any = True) -> Any:
    return aten.var_correction(self, None, correction=1 if unbiased else 0)


def std_unbiased(self: Any, unbiased: Any = True) -> Any:
    return aten.std_correction(self, None, correction=1 if unbiased else 0)


def var_dim_unbiased(self: Any, dim: Any, unbiased: Any = True, keepdim: Any = False) -> Any:
    return aten.var_correction(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def std_dim_unbiased(self: Any, dim: Any, unbiased: Any = True, keepdim: Any = False) -> Any:
    return aten.std_correction(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def var_mean_unbiased(self: Any, unbiased: Any = True) -> Any:
    return aten.var_mean_correction(self, None, correction=1 if unbiased else 0)


def std_mean_unbiased(self: Any, unbiased: Any = True) -> Any:
    return aten.std_mean_correction(self, None, correction=1 if unbiased else 0)


def var_mean_dim_unbiased(self: Any, dim: Any, unbiased: Any = True, keepdim: Any = False) -> Any:
    return aten.var_mean_correction(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def std_mean_dim_unbiased(self: Any, dim: Any, unbiased: Any = True, keepdim: Any = False) -> Any:
    return aten.std_mean_correction(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def argsort_default(self: Any, dim: Any = -1, descending: Any = False) -> Any:
    return aten.sort(self, dim, descending)[1]


def argsort_stable(self: Any, stable: Any, dim: Any = -1, descending: Any = False) -> Any:
    return aten.sort_stable(self, stable=stable, dim=dim, descending=descending)[1]


def argwhere(self: Any) -> Any:
    return aten.nonzero(self)


def nanmean(self: Any, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
    """``nansum / (the count of non-NaN elements)``, the count taken on the detached input (ReduceOps.cpp)."""
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{scalar_type_name(self.dtype)}")
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"nanmean(): could not infer output dtype. Optional dtype must be either a floating point "
                           f"or complex dtype. Got: {scalar_type_name(dtype)}")
    d = self.detach()
    factor = (d != d).logical_not_().sum(dim, keepdim)
    return aten.nansum(self, dim, keepdim, dtype=dtype).div(factor)


def norm_dim(self: Any, p: Any, dim: Any, keepdim: Any = False) -> Any:
    return aten.linalg_vector_norm(self, 2 if p is None else p, dim, keepdim)


def norm_scalar(self: Any, p: Any = 2) -> Any:
    return aten.linalg_vector_norm(self, p)


_QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(self: Any, q: Any, dim: Any, keepdim: Any, interpolation: Any, ignore_nan: Any,
              checked_q: bool = False) -> Any:
    """PyTorch's quantile_impl (``aten/src/ATen/native/Sorting.cpp``): sort the reduced dim, compute the ranks
    ``q * (n - 1)`` in the input's dtype, gather the values there and lerp between neighbours in place. Written in
    ops, so it is differentiable through sort, gather and lerp."""
    if self.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if q.dim() > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if self.dtype not in (float32, float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if q.dtype != self.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if q.device != self.device:
        raise RuntimeError("quantile() q tensor must be on the same device as the input tensor")
    if interpolation not in _QUANTILE_MODES:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           f"Found '{interpolation}'")
    if not checked_q and q.device.type == "cpu":    # read on the host, as PyTorch's check (which no mode sees)
        values = np.asarray(values_of(q)._data)
        if not bool(((values >= 0) & (values <= 1)).all()):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
    ndim = self.dim()
    wd = wrap_dim(dim, max(ndim, 1)) if dim is not None else 0
    shape = list(self.shape)
    if dim is not None and ndim > 0:
        rest = shape[:wd] + ([1] if keepdim else []) + shape[wd + 1:]
    else:
        rest = [1] * ndim if keepdim else []
    if dim is None:
        srt = self.flatten().sort()[0]
    elif ndim == 0 or wd == ndim - 1:
        srt = self.sort()[0]
    else:
        srt = self.unsqueeze(-1).transpose(wd, -1).sort()[0]
    srt = srt.view(rest + [srt.shape[-1] if srt.dim() else 1])
    n = srt.shape[-1]
    if ignore_nan:      # the ranks among the values that are not NaN (all NaN: rank 0, a NaN quantile)
        ranks = q * (srt.isnan().logical_not_().sum(-1, keepdim=True) - 1)
        ranks.masked_fill_(ranks < 0, 0)
    else:               # a NaN anywhere makes the quantile NaN: the last rank, where NaNs sort
        ranks = q * (n - 1)
        has_nan = srt.isnan().any(-1, keepdim=True)
        both = broadcast_shapes(tuple(ranks.shape), tuple(has_nan.shape))
        ranks = ranks if tuple(ranks.shape) == both else ranks.expand(both)
        has_nan = has_nan if tuple(has_nan.shape) == both else has_nan.expand(both)
        ranks = aten.masked_fill_Scalar(ranks, has_nan, n - 1)
    if interpolation == "lower":
        ranks.floor_()
    elif interpolation == "higher":
        ranks.ceil_()
    elif interpolation == "nearest":
        ranks.round_()
    below = ranks.to(int64)
    values = srt.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        weights = aten.full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below
        values.lerp_(srt.gather(-1, ranks.ceil_().to(int64)), weights)
    if q.dim() == 0:
        return values.squeeze_(-1)
    return values.unsqueeze_(0).transpose_(0, -1).squeeze_(-1)


def _scalar_q(self: Any, q: Any) -> Any:
    if not 0 <= q <= 1:
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
    return aten.scalar_tensor(q, dtype=self.dtype, device=self.device)


def quantile(self: Any, q: Any, dim: Any = None, keepdim: Any = False, interpolation: Any = 'linear') -> Any:
    return _quantile(self, q, dim, keepdim, interpolation, False)


def quantile_scalar(self: Any, q: Any, dim: Any = None, keepdim: Any = False, interpolation: Any = 'linear') -> Any:
    return _quantile(self, _scalar_q(self, q), dim, keepdim, interpolation, False, True)


def nanquantile(self: Any, q: Any, dim: Any = None, keepdim: Any = False, interpolation: Any = 'linear') -> Any:
    return _quantile(self, q, dim, keepdim, interpolation, True)


def nanquantile_scalar(self: Any, q: Any, dim: Any = None, keepdim: Any = False, interpolation: Any = 'linear') -> Any:
    return _quantile(self, _scalar_q(self, q), dim, keepdim, interpolation, True, True)


# PyTorch registers these CompositeImplicitAutograd: they call the base op, so autograd records the base
# op's node (``torch.special.erf(x).grad_fn`` is an ``ErfBackward0``).


# ------------------------------------------------------------------------------ comparisons (TensorCompare.cpp)
def isclose(self: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Any:
    """``|self - other| <= atol + rtol |other|`` (finite errors only), or equal; NaNs equal with ``equal_nan``."""
    if self.dtype != other.dtype:
        raise RuntimeError(f"{scalar_type_name(self.dtype)} did not match {scalar_type_name(other.dtype)}")
    if self.dtype.is_complex and equal_nan:
        raise RuntimeError("isclose with equal_nan=True is not supported for complex inputs.")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")
    close = self == other       # the masks combine in place (``__ior__`` / ``__iand__``), as PyTorch's do
    if equal_nan and self.dtype.is_floating_point:
        close.bitwise_or_(self.isnan().bitwise_and(other.isnan()))
    if rtol == 0 and atol == 0:
        return close
    x, y = self, other
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        x, y = self.to(get_default_dtype()), other.to(get_default_dtype())
    allowed = atol + (rtol * y).abs()
    actual = (x - y).abs()
    return close.bitwise_or_(actual.isfinite().bitwise_and_(actual <= allowed))


def allclose(self: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    return bool(isclose(self, other, rtol, atol, equal_nan).all())


def equal(self: Any, other: Any) -> bool:
    """Same shape and the same values (NaN is not equal to itself)."""
    return tuple(self.shape) == tuple(other.shape) and bool((self == other).all())


def promote_types(type1: Any, type2: Any) -> Any:
    """The dtype both promote to (c10's promoteTypes table), an operator as in PyTorch."""
    return _promote_types(type1, type2)


def can_cast(from_: Any, to: Any) -> bool:
    """Whether type promotion allows casting ``from_`` to ``to`` (c10's canCast), an operator as in PyTorch."""
    return bool(_can_cast(from_, to))


def is_same_size(self: Any, other: Any) -> bool:
    return tuple(self.shape) == tuple(other.shape)


def is_nonzero(self: Any) -> bool:
    if self.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if self.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item() != 0)


def msort(self: Any) -> Any:
    return aten.sort(self, 0)[0]


def diff(self: Any, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The ``n``-th forward difference along ``dim`` (``ReduceOps.cpp``), after concatenating ``prepend`` and
    ``append``; bool tensors differ by xor."""
    if self.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    parts = []
    for t in (prepend, self, append):
        if t is None:
            continue
        if t is not self and t.dim() != self.dim():
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        parts.append(t)
    x = aten.cat(parts, dim) if len(parts) > 1 else self
    d = dim if dim >= 0 else dim + x.dim()
    for _ in range(n):
        length = x.shape[d]
        if length == 0:
            break
        hi, lo = x.narrow(d, 1, length - 1), x.narrow(d, 0, length - 1)
        x = hi.logical_xor(lo) if x.dtype == bool_ else hi - lo
    return x


# ------------------------------------------------------------------------------ statistics (Correlation.cpp)
def _is_true(t: Any) -> bool:
    """PyTorch's ``is_scalar_tensor_true``: a 0-d bool tensor compared with a one (``equal``, which reads it)."""
    return aten.equal(t, t.new_ones(()))


def cov(self: Any, correction: int = 1, fweights: Any = None, aweights: Any = None) -> Any:
    """The covariance of the rows (variables) over the columns (observations), weighted by ``fweights`` (integer
    frequencies) and ``aweights`` (observation weights), with ``correction`` (Bessel's by default); NumPy's corner
    cases as PyTorch's Correlation.cpp has them."""
    if self.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with {self.dim()} "
                           f"dimensions")
    if self.dtype == bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = self.view(1, -1) if self.dim() < 2 else self
    n = x.shape[1]
    data = self.device.type != "meta"  # the value checks need values (PyTorch's Meta path skips them too)
    w = None
    for name, t, integral in (("fweights", fweights, True), ("aweights", aweights, False)):
        if t is None:
            continue
        if t.dim() > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                               f"{t.dim()} dimensions")
        if integral and (t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == bool_):
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                               f"{scalar_type_name(t.dtype)} dtype")
        if not integral and not t.dtype.is_floating_point:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                               f"{scalar_type_name(t.dtype)} dtype")
        if t.numel() != n:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                               f"input but got {t.numel()} != {n}")
        if data and n and not _is_true(t.min().ge(0)):
            raise RuntimeError(f"cov(): {name} cannot be negative")
        w = t if w is None else w * t
    w_sum = w.sum() if w is not None else aten.scalar_tensor(n, dtype=int64, device=self.device)
    if data and w is not None and not _is_true(w_sum.ne(0)):
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x * w if w is not None else x).sum(1) / w_sum
    if w is None:
        norm_factor = aten.scalar_tensor(n - correction, dtype=int64, device=self.device)
    elif correction == 0:
        norm_factor = w_sum
    elif aweights is None:
        norm_factor = w_sum - correction
    elif fweights is None and n == 1 and correction == 1:   # NumPy's value, not a rounding error
        norm_factor = aten.scalar_tensor(0, dtype=int64, device=self.device)
    else:
        norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
    if data and _is_true(norm_factor.le(0)):
        warn_user("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                  "observations.")
        norm_factor = norm_factor.zero_()
    if n == 1 and (fweights is None) != (aweights is None):     # one observation, one kind of weight: x - avg is 0
        x = x.clone().zero_()
        if not (x.dtype.is_floating_point or x.dtype.is_complex):
            x = x.to(float32)
    else:
        x = x - avg.unsqueeze(1)
    c = aten.mm(x, (x * w if w is not None else x).t().conj())
    if c.dtype.is_complex and (x.shape[0] == 1 or x.shape[1] == 1):    # x x^H of a vector: no imaginary part
        re = c.real
        c = aten.complex(re, aten.zeros_like(re))
    return aten.div_Tensor(c, norm_factor).squeeze()


def corrcoef(self: Any) -> Any:
    """Pearson's correlation coefficients of the rows, clipped to [-1, 1]."""
    if self.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{self.dim()} dimensions")
    c = cov(self)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    stddev = (d.real if d.dtype.is_complex else d).sqrt()
    c = c / stddev.view(-1, 1)
    c = c / stddev.view(1, -1)
    if c.dtype.is_complex:       # rounding can leave values just outside [-1, 1]: clipped, as NumPy does
        return aten.complex(c.real.clip(-1, 1), c.imag.clip(-1, 1))
    return c.clip(-1, 1)


def cartesian_prod(tensors: Any) -> Any:
    """Every combination of one element from each 1-D tensor, as rows."""
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = aten.meshgrid_indexing(list(tensors), indexing="ij")
    return aten.stack([g.flatten() for g in grids], 1)


def block_diag(tensors: Any) -> Any:
    """The tensors as blocks along a diagonal (a 0-d tensor is a 1x1 block, a 1-d one a row)."""
    mats = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        mats.append(t.view(1, -1) if t.dim() < 2 else t)
    if not mats:
        return aten.empty_memory_format((1, 0))
    dtype = mats[0].dtype
    for m in mats[1:]:
        dtype = _promote_types(dtype, m.dtype)
    width = sum(m.shape[1] for m in mats)
    rows, col = [], 0
    for m in mats:
        rows.append(aten.cat([aten.zeros((m.shape[0], col), dtype=dtype, device=m.device), m.to(dtype),
                              aten.zeros((m.shape[0], width - col - m.shape[1]), dtype=dtype, device=m.device)], 1))
        col += m.shape[1]
    return aten.cat(rows, 0)


# -- the trapezoidal rule ----------------------------------------------------------------------------------------
def _empty_integral(y: Any, dim: int) -> Any:
    """Zeros of the reduced shape, outside the graph (as PyTorch's ``at::zeros``)."""
    return y.new_zeros(tuple(s for i, s in enumerate(y.shape) if i != dim))


def _trapezoid_dx(y: Any, dx: Any, dim: int) -> Any:
    d = y.shape[dim] if y.dim() else 0
    if d == 0:
        return _empty_integral(y, dim)
    ends = (y.select(dim, 0) + y.select(dim, -1)) * 0.5      # (PyTorch's compiled code makes these first)
    return (y.sum(dim) - ends) * dx


def _spacing(y: Any, x: Any, dim: int, name: str) -> Any:
    """The spacing of the sample points x along ``dim`` of y: a 1-D x viewed along that dimension, a shorter x
    with leading ones (Integration.cpp: x is not broadcast to y before the difference)."""
    if y.dtype == bool_ or x.dtype == bool_:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not supported")
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[dim] = x.shape[0]
        x = x.view(shape)
    elif x.dim() < y.dim():
        x = x.view([1] * (y.dim() - x.dim()) + list(x.shape))
    left = aten.slice_Tensor(x, dim, 0, -1)
    return aten.slice_Tensor(x, dim, 1) - left


def _pairs(y: Any, dim: int) -> Any:
    """``y[i] + y[i + 1]`` along ``dim``."""
    return aten.slice_Tensor(y, dim, 0, -1) + aten.slice_Tensor(y, dim, 1)


def trapezoid_x(y: Any, x: Any, dim: int = -1) -> Any:
    """The integral of y over the sample points x along ``dim``: sum of (x[i+1] - x[i]) (y[i+1] + y[i]) / 2."""
    dim = dim % y.dim() if y.dim() else 0
    if y.shape[dim] == 0:
        return _empty_integral(y, dim)
    dx = _spacing(y, x, dim, "trapezoid")
    return (_pairs(y, dim) * dx).sum(dim) / 2.0


def trapezoid_dx(y: Any, dx: Any = 1, dim: int = -1) -> Any:
    return _trapezoid_dx(y, dx, dim % y.dim() if y.dim() else 0)


def trapz_x(y: Any, x: Any, dim: int = -1) -> Any:
    return trapezoid_x(y, x, dim)


def trapz_dx(y: Any, dx: float = 1.0, dim: int = -1) -> Any:
    return trapezoid_dx(y, dx, dim)


def cumulative_trapezoid_x(y: Any, x: Any, dim: int = -1) -> Any:
    """The running trapezoidal integral: n - 1 partial sums along ``dim``."""
    dim = dim % y.dim() if y.dim() else 0
    if y.shape[dim] == 0:
        return y.narrow(dim, 0, 0)
    dx = _spacing(y, x, dim, "cumulative_trapezoid")
    return (_pairs(y, dim) * dx).cumsum(dim) / 2.0


def cumulative_trapezoid_dx(y: Any, dx: Any = 1, dim: int = -1) -> Any:
    dim = dim % y.dim() if y.dim() else 0
    n = y.shape[dim]
    if n == 0:
        return y.narrow(dim, 0, 0)
    return aten.cumsum((y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)) * (dx * 0.5), dim)


def renorm(self: Any, p: Any, dim: int, maxnorm: Any, out: Any = None) -> Any:
    """Each slice along ``dim`` whose p-norm exceeds maxnorm scaled to maxnorm (by maxnorm / (norm + 1e-7))."""
    if not maxnorm >= 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    dim = wrap_dim(dim, self.dim())
    reduce = tuple(d for d in range(self.dim()) if d != dim)
    norm = aten.linalg_vector_norm(self, p, reduce, True)
    factor = aten.where_self(norm > maxnorm, maxnorm / (norm + 1e-7), aten.ones_like(norm))
    r = self * factor
    return r if out is None else out.resize_(r.shape).copy_(r)


def renorm_(self: Any, p: Any, dim: int, maxnorm: Any) -> Any:
    return self.copy_(renorm(self, p, dim, maxnorm).detach())


def frobenius_norm_dim(self: Any, dim: Any, keepdim: bool = False, out: Any = None) -> Any:
    if len(dim) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dim)} dimensions instead.")
    warn_once("frobenius_norm", "at::frobenius_norm is deprecated and it is just left for JIT compatibility. "
                     "It will be removed in a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, "
                     "keepdim)` instead")
    r = aten.norm_ScalarOpt_dim(self, 2, tuple(dim), keepdim)
    return r if out is None else out.resize_(r.shape).copy_(r)


def nuclear_norm(self: Any, keepdim: bool = False, out: Any = None) -> Any:
    return nuclear_norm_dim(self, (-2, -1), keepdim, out)


def nuclear_norm_dim(self: Any, dim: Any, keepdim: bool = False, out: Any = None) -> Any:
    warn_once("nuclear_norm", "at::nuclear_norm is deprecated and it is just left for JIT compatibility. It "
                     "will be removed in a future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, "
                     "keepdim)` instead")
    r = aten.linalg_matrix_norm_str_ord(self, "nuc", tuple(dim), keepdim)
    return r if out is None else out.resize_(r.shape).copy_(r)


