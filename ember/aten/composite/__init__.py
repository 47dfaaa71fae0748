"""CompositeImplicitAutograd ops: written in other ember ops, so they need no kernel and no derivative
formula (``aten/src/ATen/native`` functions registered as ``CompositeImplicitAutograd``).

Each function takes the op's schema arguments in order and is written in the internal op API
(``ember/_generated/aten.py``, Note [The internal op API]) and Tensor methods, as PyTorch's are in ``at::``.
"""
from __future__ import annotations

import math

from ember._generated import aten
from ember.aten.kernels._common import wrap_dim, wrap_dims
from ember.aten.kernels.linalg import _matmul_check
from ember.aten.kernels.views import compute_stride, infer_size, narrow_check
from ember.aten.meta import broadcast_shapes
from ember.c10.dtype import bool_, float32, float64, int64, scalar_dtype


# ------------------------------------------------------------------------------ copies
def to_copy(self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    """``_to_copy`` (CompositeExplicitAutograd): a new tensor on ``device`` / of ``dtype``, filled by ``copy_``."""
    out = aten.empty_memory_format(tuple(self.shape), dtype=self.dtype if dtype is None else dtype,
                                   device=self.device if device is None else device)
    return out.copy_(self)


# ------------------------------------------------------------------------------ views and shapes
def reshape(self, shape):
    shape = infer_size(shape, self.numel())
    if self.is_contiguous():
        return self.view(shape)
    st = compute_stride(tuple(self.shape), self.stride(), shape)
    if st is not None:
        return aten._reshape_alias(self, shape, st)
    return aten._contiguous_copy(self).view(shape)


def contiguous(self, memory_format=None):
    if self.is_contiguous():
        return self
    return aten._contiguous_copy(self)


def view_as(self, other):
    return self.view(other.shape)


def reshape_as(self, other):
    return self.reshape(other.shape)


def flatten(self, start_dim=0, end_dim=-1):
    if self.dim() == 0:
        return self.reshape((1,))
    s, e = wrap_dim(start_dim, self.dim()), wrap_dim(end_dim, self.dim())
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self
    shape = tuple(self.shape)
    return self.reshape(shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


def ravel(self):
    return self.contiguous().view(-1)


def movedim_int(self, source, destination):
    return aten.movedim_intlist(self, (source,), (destination,))


def expand_as(self, other):
    return self.expand(other.shape)


def broadcast_to(self, size):
    return self.expand(size)


def sum_to_size(self, size):
    """PyTorch's at::sum_to: sum ``self`` down to ``size``, a shape it could have been expanded from (leading
    dims summed away, dims of size 1 summed with keepdim); ``self`` itself when the shapes are equal."""
    size = tuple(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != t for s, t in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{[{', '.join(map(str, size))}]}} is not expandable to size "
                           f"{{[{', '.join(map(str, shape))}]}}.")
    if size == shape:
        return self
    out = self.sum(list(range(lead))) if lead else self
    keep = [i for i, (s, t) in enumerate(zip(size, shape[lead:])) if s == 1 and t != 1]
    return out.sum(keep, keepdim=True) if keep else out


def positive(self):
    if self.dtype is bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


def broadcast_tensors(tensors):
    shape = broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return [t.expand(shape) for t in tensors]


def meshgrid(tensors):
    return meshgrid_indexing(tensors, "ij")


def meshgrid_indexing(tensors, indexing):
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    ts = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    out = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = -1
        out.append(t.view(view).expand(shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return out


def atleast_1d(self):
    return self.reshape((1,)) if self.dim() == 0 else self


def atleast_2d(self):
    if self.dim() == 0:
        return self.reshape((1, 1))
    return self.unsqueeze(0) if self.dim() == 1 else self


def atleast_3d(self):
    if self.dim() == 0:
        return self.reshape((1, 1, 1))
    if self.dim() == 1:
        return self.unsqueeze(0).unsqueeze(-1)
    return self.unsqueeze(-1) if self.dim() == 2 else self


def atleast_1d_seq(tensors):
    return [atleast_1d(t) for t in tensors]


def atleast_2d_seq(tensors):
    return [atleast_2d(t) for t in tensors]


def atleast_3d_seq(tensors):
    return [atleast_3d(t) for t in tensors]


def hstack(tensors):
    ts = atleast_1d_seq(tensors)
    return aten.cat(ts, 0 if ts[0].dim() == 1 else 1)


def vstack(tensors):
    return aten.cat(atleast_2d_seq(tensors), 0)


row_stack = vstack


def dstack(tensors):
    return aten.cat(atleast_3d_seq(tensors), 2)


def column_stack(tensors):
    ts = [t.reshape((t.numel(), 1)) if t.dim() <= 1 else t for t in tensors]
    return aten.cat(ts, 1)


def fliplr(self):
    if self.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return self.flip((1,))


def flipud(self):
    if self.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return self.flip((0,))


def tile(self, dims):
    dims = tuple(dims)
    if len(dims) < self.dim():
        dims = (1,) * (self.dim() - len(dims)) + dims
    return self.repeat(dims)


def where_nonzero(condition):
    return list(condition.nonzero().unbind(1))


# ------------------------------------------------------------------------------ reductions
def var_unbiased(self, unbiased=True):
    return aten.var_correction(self, None, correction=1 if unbiased else 0)


def std_unbiased(self, unbiased=True):
    return aten.std_correction(self, None, correction=1 if unbiased else 0)


def var_dim_unbiased(self, dim, unbiased=True, keepdim=False):
    return aten.var_correction(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def std_dim_unbiased(self, dim, unbiased=True, keepdim=False):
    return aten.std_correction(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def var_mean_unbiased(self, unbiased=True):
    return aten.var_mean_correction(self, None, correction=1 if unbiased else 0)


def std_mean_unbiased(self, unbiased=True):
    return aten.std_mean_correction(self, None, correction=1 if unbiased else 0)


def var_mean_dim_unbiased(self, dim, unbiased=True, keepdim=False):
    return aten.var_mean_correction(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def std_mean_dim_unbiased(self, dim, unbiased=True, keepdim=False):
    return aten.std_mean_correction(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def sort_default(self, dim=-1, descending=False):
    return aten.sort_stable(self, stable=False, dim=dim, descending=descending)


def argsort_default(self, dim=-1, descending=False):
    return aten.argsort_stable(self, stable=False, dim=dim, descending=descending)


def norm_dim(self, p, dim, keepdim=False):
    return aten.linalg_vector_norm(self, 2 if p is None else p, dim, keepdim)


def norm_scalar(self, p=2):
    return aten.linalg_vector_norm(self, p)


def linalg_norm(self, ord=None, dim=None, keepdim=False, dtype=None):  # noqa: A002
    if isinstance(ord, str) or (ord is not None and dim is not None and len(dim) == 2) or \
            (ord is not None and dim is None and self.dim() == 2):
        matrix_norm = aten.linalg_matrix_norm_str_ord if isinstance(ord, str) else aten.linalg_matrix_norm
        return matrix_norm(self, ord, (-2, -1) if dim is None else tuple(dim), keepdim, dtype=dtype)
    return aten.linalg_vector_norm(self, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


# ------------------------------------------------------------------------------ factories
def arange_end(end, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.arange_start_step(0, end, 1, dtype=dtype, device=device)


def arange_start(start, end, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.arange_start_step(start, end, 1, dtype=dtype, device=device)


def _new_kw(self, dtype, device):
    return dict(dtype=self.dtype if dtype is None else dtype, device=self.device if device is None else device)


def new_empty(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.empty_memory_format(tuple(size), **_new_kw(self, dtype, device))


def new_zeros(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.zeros(tuple(size), **_new_kw(self, dtype, device))


def new_ones(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.ones(tuple(size), **_new_kw(self, dtype, device))


def new_full(self, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.full(tuple(size), fill_value, **_new_kw(self, dtype, device))


def randint_high(high, size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.randint_low(0, high, tuple(size), generator=generator, dtype=dtype, device=device)


def rand_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return aten.rand(tuple(self.shape), **_new_kw(self, dtype, device))


def randn_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return aten.randn(tuple(self.shape), **_new_kw(self, dtype, device))


def random_to(self, to, generator=None):
    return self.random_(0, to, generator=generator)


def random_default(self, generator=None):
    return aten.random__from(self, 0, None, generator=generator)


# ------------------------------------------------------------------------------ linear algebra
def inner(self, other):
    if self.dim() == 0 or other.dim() == 0:
        return self * other
    return aten.tensordot(self, other, (-1 % self.dim(),), (-1 % other.dim(),))


def cross(self, other, dim=None):
    if dim is None:
        dim = next((i for i, s in enumerate(self.shape) if s == 3), -1)
    return aten.linalg_cross(self, other, dim=dim)


def pinverse(self, rcond=1e-15):
    return aten.linalg_pinv(self, rtol=rcond)


def relu6(self):
    return aten.clamp(self, 0, 6)


# ------------------------------------------------------------------------------ ops PyTorch decomposes
# (written as PyTorch's CompositeImplicitAutograd versions are, so autograd records the same nodes:
# ``x @ y`` shows MmBackward0, ``x.narrow(...)`` SliceBackward0, ``x.movedim(...)`` PermuteBackward0)
def swapaxes(self, axis0, axis1):
    return self.transpose(axis0, axis1)


def movedim(self, source, destination):
    n = self.dim()
    if len(source) != len(destination):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(source)} dims) should "
                           f"contain the same number of dims as destination ({list(destination)} dims)")
    src, dst = wrap_dims(source, n), wrap_dims(destination, n)
    order = [-1] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(n) if i not in src)
    order = [next(rest) if o == -1 else o for o in order]
    return self.permute(order)


def narrow(self, dim, start, length):
    d, start = narrow_check(tuple(self.shape), dim, start, length)
    return aten.slice_Tensor(self, d, start, start + length, 1)


def split_sizes(self, split_size, dim=0):
    return self.split_with_sizes(split_size, dim)


def chunk(self, chunks, dim=0):
    if self.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = wrap_dim(dim, self.dim())
    n = self.shape[d]
    size = (n + chunks - 1) // chunks
    if size == 0 and n == 0:
        return list(self.split_with_sizes([0] * chunks, d))
    return list(aten.split_Tensor(self, size, d))


def tensor_split(self, sections, dim=0):
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    d = wrap_dim(dim, self.dim())
    q, r = divmod(self.shape[d], sections)
    out, start = [], 0
    for size in [q + 1] * r + [q] * (sections - r):
        out.append(aten.slice_Tensor(self, d, start, start + size, 1))
        start += size
    return out


def tensor_split_indices(self, indices, dim=0):
    d = wrap_dim(dim, self.dim())
    n = self.shape[d]
    out, prev = [], 0
    for i in list(indices) + [n]:
        i = max(min(i if i >= 0 else i + n, n), prev) if i != n else n
        out.append(aten.slice_Tensor(self, d, prev, max(i, prev), 1))
        prev = max(i, prev)
    return out


def matmul(self, other):
    """PyTorch's matmul decomposition: dot, mv, mm, or a batched bmm over broadcast batch dims."""
    _matmul_check(self._data, other._data)  # PyTorch's errors for every rank combination
    da, db = self.dim(), other.dim()
    if da == 1 and db == 1:
        return self.dot(other)
    if da == 2 and db == 1:
        return self.mv(other)
    if da == 1 and db == 2:
        return self.unsqueeze(0).mm(other).squeeze(0)
    if da == 2 and db == 2:
        return self.mm(other)
    if da >= 3 and db <= 2:  # fold the batch into the rows: one mm
        o = other.unsqueeze(-1) if db == 1 else other
        out = self.reshape(-1, self.shape[-1]).mm(o)
        return out.view(tuple(self.shape[:-1]) + ((o.shape[-1],) if db == 2 else ()))
    a = self.unsqueeze(0) if da == 1 else self
    b = other.unsqueeze(-1) if db == 1 else other
    batch = broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    n, k, m = a.shape[-2], a.shape[-1], b.shape[-1]
    a3 = a.expand(batch + (n, k)).reshape(-1, n, k)
    b3 = b.expand(batch + (k, m)).reshape(-1, k, m)
    out = a3.bmm(b3).view(batch + (n, m))
    if da == 1:
        out = out.squeeze(-2)
    if db == 1:
        out = out.squeeze(-1)
    return out


def max_other(self, other):
    return aten.maximum(self, other)


def min_other(self, other):
    return aten.minimum(self, other)


def wrapped_number(value, like):
    """A Python number as a 0-dim tensor that promotes like a wrapped number next to ``like`` (PyTorch's
    ``wrapped_scalar_tensor``): of ``like``'s dtype unless the number's category is higher."""
    d = scalar_dtype(value)
    if d._cat <= like.dtype._cat:
        d = like.dtype
    return aten.scalar_tensor(value, dtype=d, device=like.device)


def where_scalar_self(condition, self, other):
    return aten.where_self(condition, wrapped_number(self, other), other)


def where_scalar_other(condition, self, other):
    return aten.where_self(condition, self, wrapped_number(other, self))


# ------------------------------------------------------------------------------ quantiles
_QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(self, q, dim, keepdim, interpolation, ignore_nan):
    """PyTorch's quantile_impl (``aten/src/ATen/native/Sorting.cpp``): sort the reduced dim, gather the
    values at the ranks ``q * (n - 1)`` and lerp between neighbours. Written in ops, so it is
    differentiable through sort, gather and lerp."""
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
    if self.device.type == "cpu" and not bool(((q >= 0) & (q <= 1)).all()):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    ndim = self.dim()
    wd = wrap_dim(dim, max(ndim, 1)) if dim is not None else 0
    shape = list(self.shape)
    if dim is not None and ndim > 0:
        rest = shape[:wd] + ([1] if keepdim else []) + shape[wd + 1:]
    else:
        rest = [1] * ndim if keepdim else []
    if dim is None:
        reduced = self.flatten()
    elif ndim == 0 or wd == ndim - 1:
        reduced = self
    else:
        reduced = self.unsqueeze(-1).transpose(wd, -1)
    reduced = reduced.reshape(rest + [reduced.shape[-1] if reduced.dim() else 1])
    qd = q.to(float64)
    if ignore_nan:
        count = reduced.isnan().logical_not().sum(-1, keepdim=True)
        ranks = qd * (count - 1)
        ranks = ranks.masked_fill(ranks < 0, 0)
        # NaNs sort last, and ranks below the non-NaN count never reach them; all-NaN rows stay NaN.
    else:
        has_nan = reduced.isnan().any(-1, keepdim=True)
        last = float(reduced.shape[-1] - 1)
        ranks, has_nan = aten.broadcast_tensors([qd * last, has_nan])
        ranks = ranks.masked_fill(has_nan, last)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    below = ranks.to(int64)
    srt = reduced.sort(-1).values
    values = srt.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        weights = aten.full_like(ranks, 0.5, dtype=self.dtype) if interpolation == "midpoint" \
            else (ranks - below).to(self.dtype)
        values = values.lerp(srt.gather(-1, ranks.ceil().to(int64)), weights)
    if q.dim() == 0:
        return values.squeeze(-1)
    return values.unsqueeze(0).transpose(0, -1).squeeze(-1)


def _scalar_q(self, q):
    if not 0 <= q <= 1:
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
    return aten.scalar_tensor(q, dtype=self.dtype, device=self.device)


def quantile(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile(self, q, dim, keepdim, interpolation, False)


def quantile_scalar(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile(self, _scalar_q(self, q), dim, keepdim, interpolation, False)


def nanquantile(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile(self, q, dim, keepdim, interpolation, True)


def nanquantile_scalar(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile(self, _scalar_q(self, q), dim, keepdim, interpolation, True)


# ------------------------------------------------------------------------------ torch.special aliases
# PyTorch registers these CompositeImplicitAutograd: they call the base op, so autograd records the base
# op's node (``torch.special.erf(x).grad_fn`` is an ``ErfBackward0``).
def _alias(name, base):
    base_op = getattr(aten, base)

    def fn(*args):
        return base_op(*args)
    fn.__name__ = fn.__qualname__ = name
    globals()[name] = fn


for _name, _base in {"special_polygamma": "polygamma", "special_erf": "erf", "special_erfc": "erfc",
                     "special_erfinv": "erfinv", "special_expm1": "expm1", "special_exp2": "exp2",
                     "special_gammaln": "lgamma", "special_digamma": "digamma", "special_psi": "digamma",
                     "special_expit": "sigmoid", "special_i0": "i0", "special_sinc": "sinc",
                     "special_log1p": "log1p", "special_xlogy": "xlogy", "special_logit": "logit",
                     "special_logsumexp": "logsumexp"}.items():
    _alias(_name, _base)


# ------------------------------------------------------------------------------ nn
def softmax_int(self, dim, dtype=None):
    x = self if dtype is None else self.to(dtype)
    return aten._softmax(x, dim, False)


def log_softmax_int(self, dim, dtype=None):
    x = self if dtype is None else self.to(dtype)
    return aten._log_softmax(x, dim, False)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):  # noqa: A002
    return aten.native_layer_norm(input, normalized_shape, weight, bias, eps)[0]


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):  # noqa
    """PyTorch's _batch_norm_impl_index on the CPU: an empty input is passed through (scaled by the first
    channel's weight and bias, which keeps the graph); anything else is native_batch_norm."""
    if input.numel() == 0:
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    return aten.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)[0]


from ember.aten.composite.rnn import (dropout, gru_cell, gru_data, gru_input, lstm_cell, lstm_data,  # noqa: E402,F401
                                      lstm_input, rnn_relu_cell, rnn_relu_data, rnn_relu_input, rnn_tanh_cell,
                                      rnn_tanh_data, rnn_tanh_input)
