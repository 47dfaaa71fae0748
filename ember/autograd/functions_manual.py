"""Backward helpers used by the formulas of ``derivatives.yaml`` (mirrors
``torch/csrc/autograd/FunctionsManual.cpp``).  They are written in ember ops, so a backward computed with
``create_graph=True`` is itself differentiable."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Sequence

from ember._generated import aten
from ember.aten.kernels._common import wrap_dim
from ember.aten.kernels.linalg import linalg_solve_is_vector_rhs
from ember.autograd import grad_mode
from ember.c10 import forward_mode as _fw
from ember.c10.dispatch_key import DispatchKey
from ember.c10.dtype import bool_, finfo, int64
from ember.c10.memory_format import sparse_bsr, sparse_csr, strided

if TYPE_CHECKING:  # annotations only (the frontend's class; tests/test_layering.py)
    from ember._tensor import Tensor


def is_number(x: object) -> bool:
    """A Python number (a ``Scalar`` argument), as opposed to a tensor."""
    return type(x) in (int, float, bool, complex)


def conj_of(x: Any) -> Any:
    """The complex conjugate of a tensor or Python number, ``x`` itself when real: the factor PyTorch's formulas
    conjugate (``grad * other.conj()``), so complex gradients follow its conjugate-Wirtinger convention."""
    if isinstance(x, complex):
        return x.conjugate()
    if is_number(x) or x is None or not x.is_complex():
        return x
    return x.conj()


def zeros_of(sizes: int | Sequence[int], like: Tensor) -> Tensor:
    """``at::zeros(sizes, like.options())``: zeros of ``like``'s dtype on ``like``'s device -- made as
    ``like.new_zeros`` so that, under ``vmap``, a batched gradient gets a batched buffer to write into (Note [Batched
    tensors] in ``ember/_functorch/vmap.py``)."""
    return aten.new_zeros(like, (sizes,) if isinstance(sizes, int) else tuple(sizes))


def full_of(sizes: int | Sequence[int], value: Any, like: Tensor) -> Tensor:
    """``at::full(sizes, value, like.options())``."""
    return aten.full((sizes,) if isinstance(sizes, int) else tuple(sizes), value, dtype=like.dtype,
                     device=like.device)


def not_implemented(name: str) -> NoReturn:
    """A formula PyTorch declares ``not_implemented("name")``: backward reaching it raises PyTorch's error."""
    raise NotImplementedError(f"the derivative for '{name}' is not implemented.")


def _dims(dim: Any, ndim: int) -> Any:
    if dim is None or dim == ():
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(sorted(wrap_dim(d, ndim) for d in dim))


def unsqueeze_multiple(t: Tensor, dims: Sequence[int], ndim: int) -> Any:
    for d in sorted(dims):
        t = t.unsqueeze(d)
    return t


def restore_reduced_dims(grad: Tensor, sizes: Sequence[int], dim: Any, keepdim: bool) -> Any:
    """``grad`` of a reduction over ``dim`` with the reduced dims put back as size 1."""
    if keepdim or len(sizes) == 0:
        return grad
    return unsqueeze_multiple(grad, _dims(dim, len(sizes)), len(sizes))


def sum_backward(grad: Tensor, sizes: Sequence[int], dim: Any = None, keepdim: bool = False) -> Any:
    if grad.dim() == 0:   # a full reduction: the 0-dim gradient expands as it is (PyTorch's sum_backward)
        return grad.expand(sizes)
    return restore_reduced_dims(grad, sizes, dim, keepdim).expand(sizes)


def silu_double_backward(grad: Tensor, grad_output: Tensor, self: Tensor) -> Any:
    """d/dx of ``grad_output * silu'(x)``: ``grad_output * silu''(x)``, silu'' = s (1 - s) (2 + x (1 - 2 s))."""
    s = self.sigmoid()
    return grad * grad_output * s * (1 - s) * (2 + self * (1 - 2 * s))


def mse_loss_double_backward(grad: Tensor, input: Tensor, reduction: int) -> Any:  # noqa: A002
    """d/d input of mse_loss_backward: ``2 grad`` (over ``numel`` for the mean)."""
    g = 2 * grad
    return g / input.numel() if reduction == 1 else g


def mean_backward(grad: Tensor, sizes: Sequence[int], dim: Any = None, keepdim: bool = False) -> Any:
    n = 1
    for d in _dims(dim, len(sizes)):
        n *= sizes[d]
    if len(sizes) == 0:
        n = 1
    return sum_backward(grad, sizes, dim, keepdim) / n


def prod_backward(grad: Tensor, self: Tensor, result: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """d prod / d x_i = prod_{j != i} x_j, computed without dividing by x_i (zeros are allowed)."""
    if dim is None:
        flat = self.reshape(-1)
        g = grad.reshape(())
        return (g * _prod_others(flat, 0)).reshape(self.shape)
    d = wrap_dim(dim, self.dim()) if self.dim() else 0
    g = grad if keepdim or self.dim() == 0 else grad.unsqueeze(d)
    if self.dim() == 0:
        return grad
    return g * _prod_others(self, d)


def _prod_others(x: Tensor, d: int) -> Any:
    """Product of all elements along ``d`` except the one at each position (exclusive cumprods)."""
    n = x.shape[d]
    if n == 0:
        return x
    ones = aten.ones_like(x.narrow(d, 0, 1))
    left = aten.cat([ones, x.narrow(d, 0, n - 1).cumprod(d)], d) if n > 1 else ones
    right = aten.cat([ones, x.flip((d,)).narrow(d, 0, n - 1).cumprod(d)], d).flip((d,)) if n > 1 else ones
    return left * right


def var_backward(grad: Tensor, self: Tensor, dim: Any, correction: Any, keepdim: bool) -> Any:
    c = 1 if correction is None else correction
    dims = _dims(dim, self.dim())
    n = 1
    for d in dims:
        n *= self.shape[d]
    if self.dim() == 0:
        n = 1
    g = restore_reduced_dims(grad, tuple(self.shape), dims, keepdim)
    return (2.0 / (n - c)) * g * (self - self.mean(dims if dims else None, keepdim=True))


def std_backward(result: Tensor, grad: Tensor, self: Tensor, dim: Any, correction: Any, keepdim: bool) -> Any:
    g = grad / (2 * result)
    g = g.masked_fill(result == 0, 0)
    return var_backward(g, self, dim, correction, keepdim)


def evenly_distribute_backward(grad: Tensor, self: Tensor, value: Any) -> Any:
    """max()/min() over everything: the gradient is shared by all elements equal to the result."""
    mask = (self == value) | (self.isnan() & value.isnan()) if self.is_floating_point() else self == value
    count = mask.sum()
    return mask * (grad / count)


def amax_amin_backward(grad: Tensor, self: Tensor, result: Tensor, dim: Any, keepdim: bool) -> Any:
    sizes = tuple(self.shape)
    r = restore_reduced_dims(result, sizes, dim, keepdim)
    g = restore_reduced_dims(grad, sizes, dim, keepdim)
    mask = self == r
    count = mask.sum(_dims(dim, self.dim()) or None, keepdim=True) if self.dim() else mask.sum()
    return g * mask / count


def value_selecting_reduction_backward(grad: Tensor, dim: Any, indices: Tensor, sizes: Sequence[int],
                                       keepdim: bool) -> Any:
    if len(sizes) == 0:
        return grad
    d = wrap_dim(dim, len(sizes))
    if not keepdim:
        grad = grad.unsqueeze(d)
        indices = indices.unsqueeze(d)
    return zeros_of(sizes, grad).scatter(d, indices, grad)


def logsumexp_backward(grad: Tensor, self: Tensor, result: Tensor, dim: Any, keepdim: bool) -> Any:
    sizes = tuple(self.shape)
    g = restore_reduced_dims(grad, sizes, dim, keepdim)
    r = restore_reduced_dims(result, sizes, dim, keepdim)
    return g * (self - r).exp()


def mvlgamma_backward(grad: Tensor, self: Tensor, p: int) -> Any:
    """``grad * sum_i digamma(x - i/2)``, the derivative of ``mvlgamma(x, p)``."""
    args = aten.arange_start_step(-p / 2 + 0.5, 0.5, 0.5, dtype=self.dtype, device=self.device)
    return grad * args.add(self.unsqueeze(-1)).digamma_().sum(-1)


def norm_backward(grad: Tensor, self: Tensor, p: Any, norm: Tensor, dim: Any, keepdim: bool) -> Any:
    """Gradient of the vector p-norm ``norm`` of ``self`` over ``dim``."""
    sizes = tuple(self.shape)
    g = restore_reduced_dims(grad, sizes, dim, keepdim)
    n = restore_reduced_dims(norm, sizes, dim, keepdim)
    p = float(p)
    if p == 0.0:
        return aten.zeros_like(self)
    if p == 1.0:
        return self.sgn() * g
    if p == 2.0:
        return (self * (g / n)).masked_fill(n == 0, 0)
    if math.isinf(p):
        mask = (self.abs() == n)
        return self.sgn() * mask * g / mask.sum(_dims(dim, self.dim()), keepdim=True)
    scale = g / n.pow(p - 1)
    return (self * self.abs().pow(p - 2) * scale).masked_fill(n == 0, 0)


def renorm_backward(grad: Tensor, self: Tensor, p: Any, dim: int, maxnorm: Any) -> Any:
    """The gradient of ``renorm``: a slice scaled by ``maxnorm / (norm + 1e-7)`` also moves with its norm."""
    d = wrap_dim(dim, self.dim())
    reduce = tuple(i for i in range(self.dim()) if i != d)
    norm = aten.linalg_vector_norm(self, p, reduce, True)
    inner = self.conj() * grad
    if inner.is_complex():
        inner = inner.real
    nb = norm_backward(inner.sum(reduce, keepdim=True), self, p, norm, reduce, True)
    invnorm = (norm + 1e-7).reciprocal()
    factor = invnorm * maxnorm
    return aten.where_self(norm > maxnorm, factor * grad - (maxnorm * invnorm * invnorm) * nb, grad)


def pdist_backward(grad: Tensor, self: Tensor, p: Any, result: Tensor) -> Any:
    """The gradient of ``_pdist_forward``: each pair's norm gradient added to its first row, taken from its second."""
    n = self.shape[0]
    i, j = aten.triu_indices(n, n, 1, device=self.device).unbind(0)
    g = norm_backward(grad, self.index_select(0, i) - self.index_select(0, j), p, result, (1,), False)
    return aten.zeros_like(self).index_add(0, i, g).index_add(0, j, -g)


def cumsum_backward(grad: Tensor, dim: Any) -> Any:
    if grad.dim() == 0:
        return grad
    return grad.flip((dim,)).cumsum(dim).flip((dim,))


def maybe_multiply(t: Tensor, s: Any) -> Any:
    return t if (isinstance(s, (int, float)) and s == 1) else t * s


def _column_major(sizes: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """A 2-d tensor laid out column by column (a transposed row-major matrix, as ``weight.t()`` in ``linear``),
    from its saved sizes and strides."""
    return bool(strides[0] == 1 and strides[1] == sizes[0])


def mm_mat1_backward(grad: Tensor, mat2: Tensor, mat1_sizes: Any, mat1_strides: Any, alpha: Any) -> Any:
    """d(mat1 @ mat2)/d mat1 = grad @ mat2^H, computed in mat1's layout (PyTorch's mm_mat1_backward, which also
    saves only mat1's sizes and strides): for a column-major mat1 it is (mat2^* @ grad^T)^T, so the gradient
    reaching a transposed leaf is row-major and its AccumulateGrad copies one contiguous block instead of
    transposing."""
    if _column_major(mat1_sizes, mat1_strides):
        return maybe_multiply(conj_of(mat2).mm(grad.t()).t(), conj_of(alpha))
    return maybe_multiply(grad.mm(conj_of(mat2.t())), conj_of(alpha))


def mm_mat2_backward(grad: Tensor, mat1: Tensor, mat2_sizes: Any, mat2_strides: Any, alpha: Any) -> Any:
    """d(mat1 @ mat2)/d mat2 = mat1^H @ grad, in mat2's layout (PyTorch's mm_mat2_backward): for a column-major
    mat2 (``linear``'s ``weight.t()``) it is (grad^T @ mat1^*)^T."""
    if _column_major(mat2_sizes, mat2_strides):
        return maybe_multiply(grad.t().mm(conj_of(mat1)).t(), conj_of(alpha))
    return maybe_multiply(conj_of(mat1.t()).mm(grad), conj_of(alpha))


def handle_inf_or_zero_pow(grad: Tensor, self: Tensor, exponent: Tensor) -> Any:
    """d/dx x**e = e * x**(e-1), 0 where e == 0 (PyTorch's pow_backward)."""
    if isinstance(exponent, (int, float)) and exponent == 0:
        return aten.zeros_like(self)
    return grad * exponent * self.pow(exponent - 1)


def pow_backward_self(grad: Tensor, self: Tensor, exponent: Tensor) -> Any:
    if is_number(exponent):
        return handle_inf_or_zero_pow(grad, self, exponent)
    return aten.where_self(exponent == 0, zeros_of((), grad), grad * exponent * self.pow(exponent - 1))


def pow_backward_exponent(grad: Tensor, self: Tensor, exponent: Tensor, result: Tensor) -> Any:
    """d/de x**e = x**e * log(x), defined as 0 where x == 0 and e >= 0."""
    if is_number(self):
        if self == 0:
            return aten.where_self(exponent >= 0, zeros_of((), grad), grad * result * math.log(self)
                                   if self > 0 else grad * float("nan"))
        return grad * result * math.log(self)
    cond = (self == 0) & (exponent >= 0)
    return aten.where_self(cond, zeros_of((), grad), grad * (result * self.log()))


def minmax_backward(grad: Tensor, self: Tensor, other: Tensor, is_max: bool) -> Any:
    """maximum/minimum: the gradient goes to the selected input, split evenly on ties."""
    if is_max:
        sel_self, sel_other = self > other, other > self
    else:
        sel_self, sel_other = self < other, other < self
    tie = self == other
    return grad * sel_self + grad * tie * 0.5, grad * sel_other + grad * tie * 0.5


# Note [View backwards without in-place writes]
# The gradient of a select / slice / diagonal is the gradient written into zeros at the view's place. Written in
# place (``out.select(...).copy_(grad)``) it is one copy; but when that backward is itself differentiated -- a
# gradient that requires grad, a batched one (vmap over a vjp: jacrev of jacrev), a dual one (jacfwd of jacrev) --
# the in-place write on a view would be recorded as CopySlices, whose backward re-applies the view's strides to a
# gradient laid out differently (a batched one), and put second derivatives in the wrong places. Those cases take
# the functional ``select_scatter`` / ``slice_scatter`` / ``diagonal_scatter``, whose derivatives are the views.
_PYTHON_BIT = 1 << DispatchKey.Python


def _plain_backward(grad: Tensor) -> bool:
    return not (grad._rg or grad._ks & _PYTHON_BIT or _fw.state.on)


def select_backward(grad: Tensor, sizes: Sequence[int], dim: int, index: int) -> Any:
    out = zeros_of(sizes, grad)
    if not _plain_backward(grad):
        return aten.select_scatter(out, grad, dim, index)
    out.select(dim, index).copy_(grad)
    return out


def slice_backward(grad: Tensor, sizes: Sequence[int], dim: Any, start: Any, end: Any, step: Any) -> Any:
    out = zeros_of(sizes, grad)
    if not _plain_backward(grad):
        return aten.slice_scatter(out, grad, dim, start, end, step)
    aten.slice_Tensor(out, dim, start, end, step).copy_(grad)
    return out


def diagonal_backward(grad: Tensor, sizes: Sequence[int], offset: int, dim1: int, dim2: int) -> Any:
    out = zeros_of(sizes, grad)
    if not _plain_backward(grad):
        return aten.diagonal_scatter(out, grad, offset, dim1, dim2)
    out.diagonal(offset, dim1, dim2).copy_(grad)
    return out


def strided_view_backward(grad: Tensor, self_sizes: Sequence[int], self_strides: Sequence[int], self_offset: int,
                          sizes: Sequence[int], strides: Sequence[int], offset: int) -> Any:
    """Gradient of any strided view of a contiguous-or-not input: every view element adds into the input
    position it reads (``as_strided_backward`` without the geometry special cases).  Positions are
    computed on index tensors, so overlapping views accumulate correctly."""
    n_storage = self_offset + 1 + sum((s - 1) * st for s, st in zip(self_sizes, self_strides)) \
        if all(self_sizes) else 0
    flat = zeros_of(max(n_storage, 1), grad)
    pos = aten.arange(max(n_storage, 1), device=grad.device).as_strided(sizes, strides, offset).reshape(-1)
    flat = flat.index_add(0, pos, grad.reshape(-1))
    src = aten.arange(max(n_storage, 1), device=grad.device).as_strided(self_sizes, self_strides, self_offset)
    return flat.index_select(0, src.reshape(-1)).reshape(self_sizes)


def unbind_backward(grads: Sequence[Tensor | None], sizes: Sequence[int], dim: Any, dtype: Any, device: Any) -> Any:
    parts = [g if g is not None else aten.zeros(tuple(s for i, s in enumerate(sizes) if i != dim),
                                                  dtype=dtype, device=device) for g in grads]
    return aten.stack(parts, dim)


def split_backward(grads: Sequence[Tensor | None], split_sizes: Sequence[int], dim: Any, sizes: Sequence[int],
                   dtype: Any, device: Any) -> Any:
    parts = []
    for g, n in zip(grads, split_sizes):
        if g is None:
            shape = list(sizes)
            shape[dim] = n
            g = aten.zeros(tuple(shape), dtype=dtype, device=device)
        parts.append(g)
    return aten.cat(parts, dim)


def cat_backward(grad: Tensor, sizes_list: Any, dim: Any) -> Any:
    if not sizes_list:
        return []
    ref = next((s for s in sizes_list if not (len(s) == 1 and s[0] == 0)), sizes_list[0])
    d = wrap_dim(dim, len(ref))
    out, start = [], 0
    for s in sizes_list:
        if len(s) == 1 and s[0] == 0 and len(ref) != 1:
            out.append(zeros_of(s, grad))
            continue
        out.append(grad.narrow(d, start, s[d]))
        start += s[d]
    return out


def conv_tbc_backward(grad: Tensor, self: Tensor, weight: Tensor, bias: Tensor, pad: int,
                      grad_input_mask: Sequence[bool]) -> Any:
    """The gradients of ``conv_tbc``: those of the 1-d convolution it is, on the (batch, channel, time) views."""
    gi, gw, gb = aten.convolution_backward(grad.permute(1, 2, 0), self.permute(1, 2, 0), weight.permute(2, 1, 0),
                                           (bias.shape[0],), (1,), (pad,), (1,), False, (0,), 1, list(grad_input_mask))
    return (gi.permute(2, 0, 1) if gi is not None else None, gw.permute(2, 1, 0) if gw is not None else None, gb)


def block_diag_backward(grad: Tensor, sizes_list: Any) -> Any:
    """Each input's block of the gradient, in the input's shape (a 0-d input was a 1x1 block, a 1-d one a row; an
    empty input gets an empty gradient)."""
    out, row, col = [], 0, 0
    for shape in sizes_list:
        if len(shape) == 1 and shape[0] == 0:
            out.append(zeros_of(shape, grad))
            continue
        rows, cols = (shape[0], shape[1]) if len(shape) == 2 else (1, shape[0] if shape else 1)
        block = grad.narrow(0, row, rows).narrow(1, col, cols)
        out.append(block if len(shape) == 2 else block.reshape(shape))
        row, col = row + rows, col + cols
    return out


def stack_backward(grad: Tensor, n: int, dim: Any) -> Any:
    d = wrap_dim(dim, grad.dim())
    return list(grad.unbind(d))


def permute_backward(grad: Tensor, dims: Sequence[int]) -> Any:
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[wrap_dim(d, len(dims))] = i
    return grad.permute(inv)


def copy_forward(self: Tensor, src_t: Tensor) -> Any:
    """``copy_``'s new tangent: the source's, as ``self``'s dtype and size (a real ``self`` keeps the real part)."""
    if src_t.dtype.is_complex and not self.dtype.is_complex:
        src_t = aten.real(src_t)
    return aten.expand(src_t.to(self.dtype), tuple(self.shape))


def expand_backward(grad: Tensor, sizes: Sequence[int]) -> Any:
    from ember.autograd.engine import _sum_to
    return _sum_to(grad, tuple(sizes))


def repeat_backward(grad: Tensor, repeats: Tensor, sizes: Sequence[int]) -> Any:
    nd = len(repeats)
    lead = nd - len(sizes)
    shape = []
    for i, r in enumerate(repeats):
        s = sizes[i - lead] if i >= lead else 1
        shape += [r, s]
    g = grad.reshape(shape)
    g = g.sum(tuple(range(0, 2 * nd, 2)))
    return g.reshape(sizes)


def index_backward(grad: Tensor, self_sizes: Sequence[int], indices: Sequence[Tensor | None]) -> Any:
    return zeros_of(self_sizes, grad).index_put(indices, grad, True)


def masked_select_backward(grad: Tensor, self: Tensor, mask: Tensor) -> Any:
    from ember.aten.meta import broadcast_shapes
    shape = broadcast_shapes(tuple(self.shape), tuple(mask.shape))
    out = zeros_of(shape, grad).masked_scatter(mask.expand(shape), grad)
    return expand_backward(out, tuple(self.shape))


def matmul_backward(grad: Tensor, self: Tensor, other: Tensor, which: Any) -> Any:
    """Gradients of ``matmul`` for every rank combination (PyTorch's matmul_backward)."""
    a, b = self, other
    if a.dim() == 1 and b.dim() == 1:
        return grad * conj_of(b) if which == 0 else grad * conj_of(a)
    a2 = a.unsqueeze(0) if a.dim() == 1 else a
    b2 = b.unsqueeze(-1) if b.dim() == 1 else b
    g = grad
    if a.dim() == 1:
        g = g.unsqueeze(-2)
    if b.dim() == 1:
        g = g.unsqueeze(-1)
    if which == 0:
        r = g.matmul(conj_of(b2.transpose(-1, -2)))
        r = expand_backward(r, tuple(a2.shape))
        return r.squeeze(0) if a.dim() == 1 else r
    r = conj_of(a2.transpose(-1, -2)).matmul(g)
    r = expand_backward(r, tuple(b2.shape))
    return r.squeeze(-1) if b.dim() == 1 else r


def inverse_backward(grad: Tensor, result: Tensor) -> Any:
    rt = result.mT
    return -(rt.matmul(grad).matmul(rt))


def linalg_det_backward(grad: Tensor, det: Tensor, A: Tensor, LU: Tensor, pivots: Tensor) -> Any:
    """The cofactor matrix scaled by the gradient: gA = (grad conj(det)) A^-H, solved with A's LU factors (or with
    ``linalg_solve`` when a second derivative may be taken). For a singular matrix, whose A^-H does not exist, it
    is read off the SVD A = U S Vh instead: gA = U diag(alpha prod_{j != i} S_j) Vh, alpha = conj(det U det Vh)
    grad (PyTorch's linalg_det_backward)."""
    if A.numel() == 0:
        return aten.zeros_like(A)
    n = A.shape[-1]
    d = (det.conj() * grad).unsqueeze(-1)
    eye_d = aten.diag_embed(d.expand(tuple(d.shape[:-1]) + (n,)))
    gA = _solve_with_det_factors(A, LU, pivots, eye_d)
    singular = det == 0
    if not bool(singular.any()):
        return gA
    U, S, Vh = aten.linalg_svd(A)
    alpha = (aten.linalg_det(U) * aten.linalg_det(Vh)).conj() * grad
    D = alpha.unsqueeze(-1) * _prod_others(S, -1)
    g_singular = (U * D.unsqueeze(-2)).matmul(Vh)
    return aten.where_self(singular.unsqueeze(-1).unsqueeze(-1), g_singular, gA)


def linalg_solve_backward(gX: Tensor, X: Tensor, A: Tensor, LU: Tensor, pivots: Tensor, left: bool,
                          B_requires_grad: bool) -> Any:
    """(gA, gB) of X = A^-1 B (X = B A^-1 when not ``left``): gB = A^-H gX (gX A^-H), solved with the LU factors
    ``_linalg_solve_ex`` kept or with ``linalg_solve`` when a second derivative may be taken; gA = -gB X^H
    (-X^H gB)."""
    vector = linalg_solve_is_vector_rhs(A, X)
    gXm, Xm = (gX.unsqueeze(-1), X.unsqueeze(-1)) if vector else (gX, X)
    if grad_mode.state.enabled:
        gB = aten.linalg_solve(A.mH, gXm, left=left)
    else:
        gB = aten.linalg_lu_solve(LU, pivots, gXm, left=left, adjoint=True)
    gA = -gB.matmul(Xm.mH) if left else -Xm.mH.matmul(gB)
    return gA, ((gB.squeeze(-1) if vector else gB) if B_requires_grad else None)


def solve_triangular_backward_B(grad: Tensor, A: Tensor, upper: bool, left: bool, unitriangular: bool) -> Any:
    """gB = A^-H grad (``left``), or grad A^-H: a triangular solve with the other triangle."""
    return aten.linalg_solve_triangular(conj_of(A.mT), grad, upper=not upper, left=left, unitriangular=unitriangular)


def solve_triangular_backward_A(grad: Tensor, A: Tensor, result: Tensor, upper: bool, left: bool,
                                unitriangular: bool) -> Any:
    """-gB X^H (``left``) or -X^H gB, restricted to the triangle A's values were read from."""
    gB = solve_triangular_backward_B(grad, A, upper, left, unitriangular)
    gA = -(gB.matmul(conj_of(result.mT))) if left else -(conj_of(result.mT).matmul(gB))
    offset = 1 if unitriangular else 0
    return gA.triu(offset) if upper else gA.tril(-offset)


def cholesky_solve_backward_input2(grad: Tensor, L: Tensor, result: Tensor, upper: bool) -> Any:
    """With X = A^-1 B, A = L L^H: -(gB X^H + X gB^H) L (``L^H (...)`` when ``upper``), gB = A^-1 grad; the
    whole matrix, as PyTorch returns it (not restricted to the triangle)."""
    gB = aten.cholesky_solve(grad, L, upper)
    common = gB.matmul(conj_of(result.mT))
    common = common + conj_of(common.mT)
    return -(L.matmul(common)) if upper else -(common.matmul(L))


def cholesky_inverse_backward(grad: Tensor, L: Tensor, upper: bool, inverse: Tensor) -> Any:
    """-A^-1 (g + g^H) A^-1 L (``L (...)`` when ``upper``)."""
    common = inverse.matmul((grad + conj_of(grad.mT)).matmul(inverse))
    return -(L.matmul(common)) if upper else -(common.matmul(L))


def linalg_lu_backward(L_grad: Tensor | None, U_grad: Tensor | None, P: Tensor, L: Tensor, U: Tensor,
                       pivot: bool) -> Any:
    """The gradient of A = P L U (L unit lower m x k, U upper k x n, k = min(m, n)) for the three shapes:
    square, wide (U = [U1 U2]) and tall (L = [L1; L2]); PyTorch's formulas."""
    m, n = L.shape[-2], U.shape[-1]
    if L_grad is None and U_grad is None:
        return None
    solve = aten.linalg_solve_triangular
    if m == n:
        gA = None
        if L_grad is not None:
            gA = L.mH.matmul(L_grad).tril(-1)
        if U_grad is not None:
            term = U_grad.matmul(U.mH).triu()
            gA = term if gA is None else gA + term
        assert gA is not None  # one of the two grads is defined
        gA = solve(U.mH, gA, upper=False, left=False)
        gA = solve(L.mH, gA, upper=True, left=True, unitriangular=True)
    elif m < n:
        U1, U2 = U.narrow(-1, 0, m), U.narrow(-1, m, n - m)
        gA = L.mH.matmul(L_grad) if L_grad is not None else None
        if U_grad is not None:
            term = U_grad.triu().matmul(U.mH)
            gA = -term if gA is None else gA - term
        assert gA is not None
        gA = solve(U1.mH, gA.tril(-1), upper=False, left=False)
        if U_grad is not None:
            gA = aten.cat([gA + U_grad.narrow(-1, 0, m).triu(), U_grad.narrow(-1, m, n - m)], -1)
        gA = solve(L.mH, gA, upper=True, left=True, unitriangular=True)
        if U_grad is None:
            gA = aten.cat([gA, aten.zeros_like(U2)], -1)
    else:
        L1, L2 = L.narrow(-2, 0, n), L.narrow(-2, n, m - n)
        gA = U_grad.matmul(U.mH) if U_grad is not None else None
        if L_grad is not None:
            term = L.mH.matmul(L_grad.tril(-1))
            gA = -term if gA is None else gA - term
        assert gA is not None
        gA = solve(L1.mH, gA.triu(), upper=True, left=True, unitriangular=True)
        if L_grad is not None:
            gA = aten.cat([gA + L_grad.narrow(-2, 0, n).tril(-1), L_grad.narrow(-2, n, m - n)], -2)
        gA = solve(U.mH, gA, upper=False, left=False)
        if L_grad is None:
            gA = aten.cat([gA, aten.zeros_like(L2)], -2)
    return P.matmul(gA) if pivot else gA


def lu_factor_ex_backward(grad: Tensor, LU: Tensor, pivots: Tensor, pivot: bool) -> Any:
    """Through the unpacked factors: the strictly lower part of the packed gradient is L's, the rest U's."""
    P, L, U = aten.lu_unpack(LU, pivots)
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    return linalg_lu_backward(grad.narrow(-1, 0, k).tril(-1), grad.narrow(-2, 0, k).triu(), P, L, U, pivot)


def lu_unpack_backward(L_grad: Tensor | None, U_grad: Tensor | None, m: int, n: int) -> Any:
    """The packed m x n gradient: L's strictly lower part and U's upper part."""
    k = min(m, n)
    if L_grad is None and U_grad is None:
        return None
    if m == n:
        gL = L_grad.tril(-1) if L_grad is not None else None
        gU = U_grad.triu() if U_grad is not None else None
        return gU if gL is None else gL if gU is None else gL + gU
    if m < n:  # L is m x m, U is m x n
        out = U_grad.triu() if U_grad is not None else None
        if L_grad is not None:
            pad = aten.constant_pad_nd(L_grad.tril(-1), (0, n - k), 0)
            out = pad if out is None else out + pad
        return out
    out = L_grad.tril(-1) if L_grad is not None else None  # L is m x n, U is n x n
    if U_grad is not None:
        pad = aten.constant_pad_nd(U_grad.triu(), (0, 0, 0, m - k), 0)
        out = pad if out is None else out + pad
    return out


def linalg_matrix_exp_differential(A: Tensor, grad: Tensor, adjoint: bool) -> Any:
    """The Frechet derivative of exp at A in direction ``grad`` (at A^H for the adjoint, which the backward
    needs): the upper-right block of exp([[A, G], [0, A]])."""
    M = conj_of(A.mT) if adjoint else A
    n = A.shape[-1]
    top = aten.cat([M, grad], -1)
    bottom = aten.cat([aten.zeros_like(M), M], -1)
    return aten.linalg_matrix_exp(aten.cat([top, bottom], -2)).narrow(-2, 0, n).narrow(-1, n, n)


def handle_r_to_c(self: Tensor, grad: Tensor | None) -> Any:
    """The real part of a complex gradient for a real input (an op from real to complex), else the gradient."""
    if grad is not None and not self.is_complex() and grad.is_complex():
        return grad.real
    return grad


def linalg_eig_backward(gL: Tensor | None, gV: Tensor | None, L: Tensor, V: Tensor) -> Any:
    """gA = V^-H (diag(gL) + (V^H gV - V^H V Re(diag(V^H gV))) / conj(L_j - L_i)) V^H; the eigenvectors are
    defined up to a phase, so a loss that depends on it is refused, as in PyTorch."""
    if gL is None and gV is None:
        return None
    if gV is None:
        assert gL is not None
        gA = aten.diag_embed(gL)
    else:
        VhgV = conj_of(V.mT).matmul(gV)
        diag = VhgV.diagonal(0, -2, -1)
        if not bool(aten.allclose(diag.imag, aten.zeros_like(diag.imag), 1e-2, 1e-2)):
            raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are specified up to "
                               "multiplication by e^{i phi}. The specified loss function depends on this quantity, so "
                               "it is ill-defined.")
        gA = VhgV - conj_of(V.mT).matmul(V * diag.real.unsqueeze(-2))
        Lc = conj_of(L)
        Econj = Lc.unsqueeze(-2) - Lc.unsqueeze(-1)
        n = L.shape[-1]
        eye = aten.eye(n, dtype=bool_, device=L.device)
        gA = gA / Econj.masked_fill(eye, 1)
        gA = gA.masked_fill(eye, 0)
        if gL is not None:
            gA = gA + aten.diag_embed(gL)
    return aten.linalg_solve(conj_of(V.mT), gA.matmul(conj_of(V.mT)))


def logit_backward(grad: Tensor, self: Tensor, eps: Any) -> Any:
    if eps is None:
        return grad / (self * (1 - self))
    inside = (self >= eps) & (self <= 1 - eps)
    return aten.where_self(inside, grad / (self * (1 - self)), zeros_of((), grad))


def sinc_backward(grad: Tensor, self: Tensor) -> Any:
    px = self * math.pi
    d = (px.cos() * px - px.sin()) / (px * self)
    return grad * d.masked_fill(self == 0, 0)


def _bessel_safe(self: Tensor) -> Any:
    """(self with |self| <= eps replaced by eps, mask of the elements that are not tiny): the I1 formulas
    divide by x and take their limit 0.5 at 0 (PyTorch's i1_backward)."""
    eps = finfo(self.dtype).eps
    not_tiny = self.abs() > eps
    return aten.where_self(not_tiny, self, full_of((), eps, self)), not_tiny


def i1_backward(grad: Tensor, self: Tensor, result: Tensor) -> Any:
    safe, not_tiny = _bessel_safe(self)
    d = safe.i0() - result * safe.reciprocal()
    return grad * aten.where_self(not_tiny, d, full_of((), 0.5, self))


def i1e_backward(grad: Tensor, self: Tensor, result: Tensor) -> Any:
    safe, not_tiny = _bessel_safe(self)
    d = aten.special_i0e(safe) - result * (safe.sgn() + safe.reciprocal())
    return grad * aten.where_self(not_tiny, d, full_of((), 0.5, self))


def scatter_reduce_backward(grad: Tensor, self: Tensor, dim: Any, index: Tensor, src: Tensor, reduce: Any,
                            include_self: bool, result: Tensor, wrt: Any) -> Any:
    """Gradient of ``scatter_reduce`` for ``self`` (wrt="self") or ``src`` (PyTorch's
    scatter_reduce_backward). One deliberate difference: for amax/amin with ``include_self=False``, an
    excluded ``self`` value that happens to equal the result is not counted among the tied maximisers,
    so the source gets its whole gradient (PyTorch 2.13 splits it with the excluded value)."""
    dt = grad.dtype
    g_self: Callable[[], Tensor]
    g_src: Callable[[], Tensor]
    if reduce == "sum":
        g_self, g_src = (lambda: grad), (lambda: grad.gather(dim, index))
    elif reduce == "mean":
        base = aten.ones_like(grad) if include_self else aten.zeros_like(grad)
        n = base.scatter_add(dim, index, aten.ones_like(src, dtype=dt))
        scaled = grad / n.masked_fill(n == 0, 1)
        g_self, g_src = (lambda: scaled), (lambda: scaled.gather(dim, index))
    elif reduce == "prod":
        # The product of the other members of each group: result / x where x != 0; for a zero, the product
        # of the group's non-zeros if it is the group's only zero, else 0.
        self_zero = self == 0
        if not include_self:
            self_zero = self_zero.scatter(dim, index, False)
        masked_self = self.masked_fill(self == 0, 1)
        masked_src = src.masked_fill(src == 0, 1)
        masked_result = masked_self.scatter_reduce(dim, index, masked_src, "prod", include_self=include_self)
        zeros = self_zero.to(dt).scatter_add(dim, index, (src == 0).to(dt))
        lone = grad * masked_result * (zeros == 1)
        gr = grad * result
        g_self = lambda: aten.where_self(self_zero, lone, gr / masked_self)  # noqa: E731
        g_src = lambda: aten.where_self(src == 0, lone.gather(dim, index), gr.gather(dim, index) / masked_src)  # noqa: E731
    elif reduce in ("amax", "amin"):
        self_is = (self == result).to(dt)
        if not include_self:
            self_is = self_is.scatter(dim, index, 0.0)
        src_is = (src == result.gather(dim, index)).to(dt)
        share = grad / self_is.scatter_add(dim, index, src_is)
        g_self, g_src = (lambda: self_is * share), (lambda: src_is * share.gather(dim, index))
    else:
        raise RuntimeError(f"Expected 'reduce' argument to be one of 'sum', 'prod', 'mean', 'amax', 'amin' but got "
                           f"{reduce}")
    if wrt == "src":
        return g_src()
    g = g_self()
    return g if include_self else g.scatter(dim, index, 0.0)


def clamp_backward(grad: Tensor, self: Tensor, min: Any, max: Any) -> Any:  # noqa: A002
    mask = aten.ones_like(self, dtype=bool_)
    if min is not None:
        mask = mask & (self >= min)
    if max is not None:
        mask = mask & (self <= max)
    return grad * mask


def clamp_backward_min_max(grad: Tensor, self: Tensor, min: Any, max: Any) -> Any:  # noqa: A002
    gmin = gmax = None
    if min is not None:
        gmin = grad * (self < min)
        if max is not None:
            gmin = gmin * (min <= max)
    if max is not None:
        gmax = grad * (self > max)
    return gmin, gmax


def cumprod_backward(grad: Tensor, self: Tensor, dim: Any, result: Tensor) -> Any:
    """Gradient of cumprod without dividing by the input (zeros allowed): sum over later outputs of
    grad_j * prod_{k<=j, k != i} x_k, computed as a reversed cumulative sum per position."""
    if self.dim() == 0:
        return grad
    d = wrap_dim(dim, self.dim())
    n = self.shape[d]
    out = []
    for i in range(n):
        xi_excluded = self.narrow(d, i, 1)
        ones = aten.ones_like(xi_excluded)
        x_wo = aten.cat([self.narrow(d, 0, i), ones, self.narrow(d, i + 1, n - i - 1)], d)
        cp = x_wo.cumprod(d)
        contrib = (grad * cp).narrow(d, i, n - i).sum(d, keepdim=True)
        out.append(contrib)
    return aten.cat(out, d)


def as_strided_backward(grad: Tensor, self_geometry: tuple[tuple[int, ...], tuple[int, ...], int],
                        size: Sequence[int], stride: Sequence[int], storage_offset: int | None) -> Any:
    """The gradient of ``as_strided`` from the input's geometry (PyTorch's TensorGeometry: sizes, strides, storage
    offset), not the input itself, which a later in-place change may have modified."""
    sizes, strides, offset = self_geometry
    off = offset if storage_offset is None else storage_offset
    return strided_view_backward(grad, sizes, strides, offset, tuple(size), tuple(stride), off)


def split_sizes_of(sizes: Sequence[int], split_size: int, dim: Any) -> Any:
    d = wrap_dim(dim, len(sizes))
    n = sizes[d]
    if n == 0:
        return [0]
    return [min(split_size, n - s) for s in range(0, n, split_size)]


def grad_index(grad: Tensor, indices: Sequence[Tensor | None]) -> Any:
    return aten.index_Tensor(grad, indices)


def masked_scatter_source_backward(grad: Tensor, mask: Tensor, source_sizes: Sequence[int]) -> Any:
    n = 1
    for s in source_sizes:
        n *= s
    sel = grad.masked_select(mask)
    pad = zeros_of(n - sel.numel(), grad)
    return aten.cat([sel, pad]).reshape(source_sizes)


def cdist_backward(grad: Tensor, x1: Tensor, x2: Tensor, p: Any, result: Tensor, which: Any) -> Any:
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    r = result.unsqueeze(-1)
    g = grad.unsqueeze(-1)
    if p == 2:
        w = (diff / r).masked_fill(r == 0, 0)
    elif p == 1:
        w = diff.sgn()
    elif math.isinf(p):
        w = diff.sgn() * (diff.abs() == r)
    else:
        w = (diff.sgn() * diff.abs().pow(p - 1) / r.pow(p - 1)).masked_fill(r == 0, 0)
    t = g * w
    return t.sum(-2) if which == 0 else -t.sum(-3)


def cummaxmin_backward(grad: Tensor, dim: Any, indices: Tensor, sizes: Sequence[int]) -> Any:
    """Several positions can select the same element: their gradients add up (scatter_add)."""
    if len(sizes) == 0:
        return grad
    return zeros_of(sizes, grad).scatter_add(dim, indices, grad)


def var_mean_backward(grads: Sequence[Tensor | None], self: Tensor, dim: Any, correction: Any, keepdim: bool,
                      is_std: bool, result: Tensor) -> Any:
    gv, gm = grads[0], grads[1]
    out = None
    if gv is not None:
        out = std_backward(result[0], gv, self, dim, correction, keepdim) if is_std else \
            var_backward(gv, self, dim, correction, keepdim)
    if gm is not None:
        m = mean_backward(gm, tuple(self.shape), dim, keepdim)
        out = m if out is None else out + m
    return out if out is not None else aten.zeros_like(self)


def aminmax_backward(grads: Sequence[Tensor | None], self: Tensor, result: Tensor, dim: Any, keepdim: bool) -> Any:
    out = aten.zeros_like(self)
    d = () if dim is None else dim
    if grads[0] is not None:
        out = out + amax_amin_backward(grads[0], self, result[0], d, keepdim)
    if grads[1] is not None:
        out = out + amax_amin_backward(grads[1], self, result[1], d, keepdim)
    return out


def logcumsumexp_backward(grad: Tensor, self: Tensor, result: Tensor, dim: Any) -> Any:
    """d/dx_i of sum_j g_j * log(sum_{k<=j} e^{x_k}) = e^{x_i} * sum_{j>=i} g_j e^{-r_j}, computed in a shifted
    form so that neither exponential overflows for moderate ranges."""
    if self.dim() == 0:
        return grad
    d = wrap_dim(dim, self.dim())
    m = result.amax(d, keepdim=True)
    w = (grad * (m - result).exp()).flip((d,)).cumsum(d).flip((d,))
    return w * (self - m).exp()


def slogdet_backward(grad_sign: Tensor | None, grad_logabsdet: Tensor | None, A: Tensor, sign: Tensor, LU: Tensor,
                     pivots: Tensor) -> Any:
    """d log|det A| = Re tr(A^-1 dA), and for a complex A the sign's phase adds Im(conj(sign) grad_sign) i: gA =
    g A^-H with g = grad_logabsdet + i Im(grad_sign conj(sign)), solved with A's LU factors (or with
    ``linalg_solve`` when a second derivative may be taken). A real sign has a zero derivative."""
    g = grad_logabsdet
    if A.is_complex() and grad_sign is not None:
        phase = aten.imag(grad_sign * sign.conj()) * 1j
        g = phase if g is None else g + phase
    if g is None:
        return aten.zeros_like(A)
    n = A.shape[-1]
    g = g.to(A.dtype)
    eye_g = aten.diag_embed(g.unsqueeze(-1).expand(tuple(g.shape) + (n,)))
    return _solve_with_det_factors(A, LU, pivots, eye_g)


def triangular_solve_backward(grad_x: Tensor | None, grad_m: Tensor | None, b: Tensor, A: Tensor, x: Tensor,
                              upper: bool, transpose: bool, unitriangular: bool,
                              grad_input_mask: Sequence[bool]) -> Any:
    """(gb, gA) of X = op(A)^-1 b: gb = op(A)^-H gX (a triangular solve with A^H), gA = -gb X^H (-X gb^T conj for
    the transposed system) restricted to A's triangle (its diagonal left out when it is a unit one); the copy of A
    passes its gradient straight through."""
    gb = gA = None
    if grad_x is not None:
        gb = aten.triangular_solve(grad_x, A.conj(), upper, not transpose, unitriangular)[0]
        if grad_input_mask[1]:
            gA = -x.conj().matmul(gb.mT) if transpose else -gb.matmul(x.mH)
            gA = gA.triu(int(unitriangular)) if upper else gA.tril(-int(unitriangular))
    if gA is None:
        gA = aten.zeros((1,), dtype=A.dtype, device=A.device).expand(tuple(A.shape))
    if gb is None:
        gb = aten.zeros((1,), dtype=b.dtype, device=b.device).expand(tuple(b.shape))
    if grad_input_mask[1] and grad_m is not None:
        gA = gA + grad_m
    return gb, gA


def _apply_reflectors_backward(grad: Tensor, input: Tensor, tau: Tensor, C: Tensor, left: bool,  # noqa: A002
                               adjoint: bool) -> Any:
    """(g_input, g_tau, g_C) of Y = op(Q) C (C op(Q) when not ``left``), Q = H_1 ... H_k of the reflectors stored
    below input's diagonal, in reverse mode through the reflectors as they act in turn: for a step Z' = Z - s v
    (v^H Z) with gradient G' of Z' (w = v^H Z): G = G' - conj(s) v (v^H G'), g_s = -v^H G' w^H, g_v = -conj(s) G' w^H
    - s Z G'^H v; for a right step Z' = Z - s (Z v) v^H (u = Z v): G = G' - conj(s) G' v v^H, g_s = -u^H G' v, g_v =
    -conj(s) Z^H G' v - s G'^H u. A conjugated scale passes conj(g_s) to tau; v's entries below the diagonal are
    input's. Written in ops, so it has a second derivative."""
    m, n = input.shape[-2], input.shape[-1]
    k = tau.shape[-1]
    batch = tuple(input.shape[:-2])
    below = aten.ones((m, n), dtype=bool_, device=input.device).tril(-1)
    zero = aten.zeros((), dtype=input.dtype, device=input.device)
    V = aten.where_self(below, input, zero) + aten.eye_m(m, n, dtype=input.dtype, device=input.device)
    scales = tau.conj() if adjoint else tau  # (H_i^H = I - conj(tau_i) v_i v_i^H)
    order = list(range(k)) if left == adjoint else list(range(k - 1, -1, -1))  # as the reflectors act on C
    Zs = []
    Z = C
    for i in order:  # the forward again, keeping what each step acted on
        Zs.append(Z)
        v, scale = V[..., :, i:i + 1], scales[..., i, None, None]
        Z = Z - scale * v * v.mH.matmul(Z) if left else Z - scale * Z.matmul(v) * v.mH
    G = grad
    g_tau: list[Any] = [None] * k
    g_cols: list[Any] = [None] * k
    for i, Z in zip(reversed(order), reversed(Zs)):
        v, scale = V[..., :, i:i + 1], scales[..., i, None, None]
        if left:
            w = v.mH.matmul(Z)
            g_s = -(v.mH.matmul(G).matmul(w.mH))[..., 0, 0]
            g_cols[i] = -scale.conj() * G.matmul(w.mH) - scale * Z.matmul(G.mH.matmul(v))
            G = G - scale.conj() * v * v.mH.matmul(G)
        else:
            u = Z.matmul(v)
            g_s = -(u.mH.matmul(G).matmul(v))[..., 0, 0]
            g_cols[i] = -scale.conj() * Z.mH.matmul(G.matmul(v)) - scale * G.mH.matmul(u)
            G = G - scale.conj() * G.matmul(v) * v.mH
        g_tau[i] = g_s.conj() if adjoint else g_s
    zero_cols = [aten.zeros(batch + (m, 1), dtype=input.dtype, device=input.device)] * (n - k)
    g_input = aten.where_self(below, aten.cat(g_cols + zero_cols, -1), zero)
    return g_input, aten.stack(g_tau, -1), G


def householder_product_backward(grad: Tensor, result: Tensor, input: Tensor,  # noqa: A002
                                 tau: Tensor) -> Any:
    """(g_input, g_tau) of Q = H_1 ... H_k E (E the first n columns of I): the reflectors acting on E
    (``_apply_reflectors_backward``)."""
    if tau.shape[-1] == 0:  # Q = E: nothing depends on the inputs (PyTorch leaves both gradients undefined)
        return None, None
    m, n = input.shape[-2], input.shape[-1]
    E = aten.eye_m(m, n, dtype=input.dtype, device=input.device).expand(tuple(input.shape[:-2]) + (m, n))
    g_input, g_tau, _ = _apply_reflectors_backward(grad, input, tau, E, True, False)
    return g_input, g_tau


def ormqr_backward(grad: Tensor, result: Tensor, self: Tensor, input2: Tensor, input3: Tensor, left: bool,
                   transpose: bool, grad_input_mask: Sequence[bool]) -> Any:
    """(g_reflectors, g_tau, g_other) of ormqr's op(Q) C (``_apply_reflectors_backward``)."""
    if input2.shape[-1] == 0:  # Q = I: the result is C
        return None, None, grad if grad_input_mask[2] else None
    g_input, g_tau, g_other = _apply_reflectors_backward(grad, self, input2, input3, left, transpose)
    return (g_input if grad_input_mask[0] else None, g_tau if grad_input_mask[1] else None,
            g_other if grad_input_mask[2] else None)


def linalg_lu_solve_LU(gX: Tensor, LU: Tensor, pivots: Tensor, X: Tensor, left: bool, adjoint: bool) -> Any:
    """The gradient of ``linalg.lu_solve`` in the packed factors: first the one in A = P L U, which for each system
    is -A^-H C (or -C A^-H) with C an outer product of X and gX (left, not adjoint: A X = B gives -A^-H gX X^H;
    adjoint: -X gX^H A^-H; right: -X^H gX A^-H; right adjoint: -A^-H gX^H X), then through A = P L U:
    gL = (P^T gA U^H) below the diagonal, gU = (L^H P^T gA) on and above it."""
    if left and not adjoint:
        gA = aten.linalg_lu_solve(LU, pivots, gX.matmul(X.mH), adjoint=True)
    elif left:
        gA = aten.linalg_lu_solve(LU, pivots, X.matmul(gX.mH), left=False, adjoint=True)
    elif not adjoint:
        gA = aten.linalg_lu_solve(LU, pivots, X.mH.matmul(gX), left=False, adjoint=True)
    else:
        gA = aten.linalg_lu_solve(LU, pivots, gX.mH.matmul(X), adjoint=True)
    P, L, U = aten.lu_unpack(LU, pivots)
    PtgA = -P.mT.matmul(gA)
    return PtgA.matmul(U.mH).tril(-1) + L.mH.matmul(PtgA).triu()


def _solve_with_det_factors(A: Tensor, LU: Tensor, pivots: Tensor, B: Tensor) -> Any:
    """A^-H B with the LU factors ``_linalg_det`` / ``_linalg_slogdet`` kept (of A^T for a real row-major A, for
    which A^-H = (A^T)^-1), or by ``linalg_solve`` when a second derivative may be taken (it must see A)."""
    if grad_mode.state.enabled:  # (solve_ex: a singular A is the caller's to handle, not an error)
        return aten.linalg_solve_ex(A.mH, B)[0]
    transposed = A.is_contiguous() and not A.is_complex()
    return aten.linalg_lu_solve(LU, pivots, B, adjoint=not transposed)


def cholesky_backward(grad: Tensor, L: Tensor, upper: bool) -> Any:
    """Murray's formula: gA = L^-H Phi(L^H gL) L^-1, symmetrized (Phi: lower triangle, diagonal halved)."""
    if upper:
        L = L.mT
        grad = grad.mT
    P = L.mT.matmul(grad)
    phi = P.tril(-1) + P.diagonal(0, -2, -1).diag_embed() * 0.5
    Linv = aten.linalg_inv(L)
    gA = Linv.mT.matmul(phi).matmul(Linv)
    return 0.5 * (gA + gA.mT)


def eigh_backward(grads: Sequence[Tensor | None], result: Tensor) -> Any:
    """PyTorch's linalg_eig_backward for Hermitian input: gA = V (diag(gL) + skew(V^H gV) / E) V^H with
    E_ij = L_j - L_i off the diagonal."""
    gL, gV = grads[0], grads[1]
    L, V = result[0], result[1]
    if gV is None:
        assert gL is not None  # the engine calls a backward only with some gradient defined
        inner = gL.diag_embed()
    else:
        VhgV = V.mT.matmul(gV)
        VhgV = 0.5 * (VhgV - VhgV.mT)
        Ediff = L.unsqueeze(-2) - L.unsqueeze(-1)
        n = L.shape[-1]
        eye = aten.eye(n, dtype=L.dtype, device=L.device).bool()
        inner = (VhgV / Ediff.masked_fill(eye, 1.0)).masked_fill(eye, 0.0)
        if gL is not None:
            inner = inner + gL.diag_embed()
    return V.matmul(inner).matmul(V.mT)


def linalg_qr_backward(grads: Sequence[Tensor | None], A: Tensor, mode: Any, result: Tensor) -> Any:
    """Gradient of A = QR (PyTorch's linalg_qr_backward, real case). For m >= n (reduced):
    gA = (gQ + Q copyltu(M)) R^-T with M = R gR^T - gQ^T Q and copyltu(M) = tril(M) + tril(M, -1)^T.
    For m < n, A = [X | Y] with X = QU, Y = QV: gY = Q gV and X's gradient is the square case with
    gQ + Y gV^T in place of gQ."""
    m, n = A.shape[-2], A.shape[-1]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
                           "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    gQ, gR = grads
    Q, R = result
    if gQ is None:
        gQ = aten.zeros_like(Q)
    if gR is None:
        gR = aten.zeros_like(R)

    def square_or_tall(gQ: Tensor, gR: Tensor, Q: Tensor, R: Tensor) -> Tensor:
        M = R.matmul(gR.mT) - gQ.mT.matmul(Q)
        low = M.tril(-1)
        b = gQ + Q.matmul(M.tril() + low.mT)
        return aten.linalg_solve(R, b.mT).mT  # b R^-T

    if m >= n:
        return square_or_tall(gQ, gR, Q, R)
    U = R[..., :, :m]
    gU, gV = gR[..., :, :m], gR[..., :, m:]
    Y = A[..., :, m:]
    gX = square_or_tall(gQ + Y.matmul(gV.mT), gU, Q, U)
    return aten.cat([gX, Q.matmul(gV)], dim=-1)


def svd_backward(grads: Sequence[Tensor | None], A: Tensor, full_matrices: bool, result: Tensor) -> Any:
    """PyTorch's svd_backward (real case): gA = U [(skew(U^H gU) S + S skew(V^H gV)) / E + diag(gS)] V^H plus
    the terms for the part of a rectangular A's column / row space that U or V do not span."""
    gU, gS, gVh = grads
    U, S, Vh = result
    if U.dim() < 2:  # _linalg_svd(compute_uv=False) keeps no singular vectors
        raise RuntimeError("Setting compute_uv to false in torch.svd doesn't compute singular matrices, and hence we "
                           "cannot compute backward. Please use torch.svd(compute_uv=True)")
    m, n = A.shape[-2], A.shape[-1]
    k = S.shape[-1]
    if gU is None and gVh is None:
        if gS is None:
            return aten.zeros_like(A)
        Uk, Vhk = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
        return Uk.matmul(gS.diag_embed()).matmul(Vhk)
    if full_matrices and (m != n):
        raise RuntimeError("linalg_svd_backward: Setting full_matrices=True in forward is not supported when the "
                           "gradients wrt U or Vh are defined. Use full_matrices=False instead.")
    V = Vh.mT
    gV = gVh.mT if gVh is not None else None

    def skew(X: Tensor) -> Tensor:
        return X - X.transpose(-2, -1)
    S2 = S * S
    Ediff = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    eye = aten.eye(k, dtype=S.dtype, device=S.device).bool()
    Ediff = Ediff.masked_fill(eye, 1.0)
    if gU is not None and gV is not None:
        gA = (skew(U.mT.matmul(gU)) * S.unsqueeze(-2) + S.unsqueeze(-1) * skew(V.mT.matmul(gV))) / Ediff
    elif gU is not None:
        gA = skew(U.mT.matmul(gU)) * (S.unsqueeze(-2) / Ediff)
    else:
        gA = S.unsqueeze(-1) * skew(V.mT.matmul(gV)) / Ediff
    gA = gA.masked_fill(eye, 0.0)
    if gS is not None:
        gA = gA + gS.diag_embed()
    if m > n and gU is not None:
        gA = U.matmul(gA)
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - U.matmul(U.mT.matmul(gUSinv))
        return gA.matmul(V.mT)
    if m < n and gV is not None:
        gA = gA.matmul(V.mT)
        gVSinv = gV / S.unsqueeze(-2)
        gA = gA + gVSinv.mT - gVSinv.mT.matmul(V).matmul(V.mT)
        return U.matmul(gA)
    return U.matmul(gA).matmul(V.mT)


def pinv_backward(grad: Tensor, pinvA: Tensor, A: Tensor) -> Any:
    """PyTorch's pinv_backward (real case), arranged to multiply the smallest matrices."""
    m, n = A.shape[-2], A.shape[-1]
    pinvAh = pinvA.mT
    gradh = grad.mT
    if m <= n:
        K = gradh.matmul(pinvA)
        KpinvAh = K.matmul(pinvAh)
        return -(pinvA.matmul(K)).mT + KpinvAh - A.matmul(pinvA).matmul(KpinvAh) + \
            pinvAh.matmul(pinvA).matmul(gradh - K.matmul(A))
    K = pinvA.matmul(gradh)
    pinvAhK = pinvAh.matmul(K)
    return -(K.matmul(pinvA)).mT + (gradh - A.matmul(K)).matmul(pinvA).matmul(pinvAh) + pinvAhK - \
        pinvAhK.matmul(pinvA).matmul(A)


def lstsq_backward_A(grad: Tensor, A: Tensor, b: Tensor) -> Any:
    """The least-squares solution is pinv(A) @ b: its gradient flows through pinv."""
    if grad is None:
        return aten.zeros_like(A)
    bb = b.unsqueeze(-1) if b.dim() == A.dim() - 1 else b
    g = grad.unsqueeze(-1) if grad.dim() == A.dim() - 1 else grad
    P = aten.linalg_pinv_atol_rtol_tensor(A)
    return pinv_backward(g.matmul(bb.mT), P, A)


def lstsq_backward_B(grad: Tensor, A: Tensor, b: Tensor) -> Any:
    if grad is None:
        return aten.zeros_like(b)
    g = grad.unsqueeze(-1) if grad.dim() == A.dim() - 1 else grad
    r = aten.linalg_pinv_atol_rtol_tensor(A).mT.matmul(g)
    return r.squeeze(-1) if b.dim() == A.dim() - 1 else r


# ------------------------------------------------------------------------------ nn
def softmax_double_backward(grad: Tensor, grad_output: Tensor, dim: Any, output: Tensor) -> Any:
    """d/d output of _softmax_backward_data's y * (g - sum(g * y)), for the incoming gradient G = ``grad`` and
    g = ``grad_output``: G * g - G * sum(g * y) - g * sum(G * y)."""
    return grad * grad_output - grad * (grad_output * output).sum(dim, keepdim=True) - \
        grad_output * (grad * output).sum(dim, keepdim=True)


def flash_attention_backward(grad: Tensor | None, query: Tensor, key: Tensor, value: Tensor, out: Tensor,
                             logsumexp: Tensor, dropout_p: Any, is_causal: Any, attn_mask: Tensor | None,
                             scale: Any) -> Any:
    """Gradients (query, key, value) of _scaled_dot_product_flash_attention_for_cpu. A plain backward runs the
    fused backward op; with create_graph the same products are written in ops (the probabilities recomputed
    with a differentiable softmax), so attention can be differentiated twice -- which PyTorch's fused CPU path
    refuses."""
    if grad is None:
        return [None, None, None]
    if not grad_mode.state.enabled:
        return list(aten._scaled_dot_product_flash_attention_for_cpu_backward(
            grad, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask=attn_mask, scale=scale))
    s = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = query.matmul(key.transpose(-2, -1)) * s
    if attn_mask is not None:
        scores = scores + attn_mask
    if is_causal:
        L, S = query.size(-2), key.size(-2)
        keep = aten.ones((L, S), dtype=bool_, device=query.device).tril()
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    p = aten._safe_softmax(scores, -1)
    dp = grad.matmul(value.transpose(-2, -1))
    ds = aten._softmax_backward_data(dp, p, -1, p.dtype) * s
    return [ds.matmul(key), ds.transpose(-2, -1).matmul(query), p.transpose(-2, -1).matmul(grad)]


def gelu_double_backward(ggI: Tensor, grad_output: Tensor, self: Tensor, approximate: Any) -> Any:
    """d/dx of gelu_backward's grad_output * gelu'(x): grad_output * gelu''(x) * ggI. For the erf form
    gelu''(x) = phi(x) (2 - x^2) (phi' = -x phi); for the tanh form, with t = tanh(u), u' = b = beta (1 +
    3 kappa x^2), b' = 6 beta kappa x: gelu''(x) = (1 - t^2) (b - x t b^2 + x b' / 2)."""
    if approximate == "tanh":
        k_beta = math.sqrt(2.0 / math.pi)
        k_kappa = 0.044715
        x_sq = self * self
        t = (k_beta * (self + k_kappa * x_sq * self)).tanh()
        b = k_beta * (1 + 3 * k_kappa * x_sq)
        second = (1 - t * t) * (b - self * t * b * b + self * (3 * k_beta * k_kappa) * self)
    else:
        pdf = (-0.5 * self * self).exp() * (1 / math.sqrt(2 * math.pi))
        second = pdf * (2 - self * self)
    return ggI * grad_output * second


def layer_norm_backward(grad: Tensor, input: Tensor, normalized_shape: Sequence[int],  # noqa: A002
                        weight: Tensor | None, bias: Tensor | None, mean: Tensor, rstd: Tensor, eps: Any,
                        grad_input_mask: Sequence[bool]) -> Any:
    """Gradients (input, weight, bias) of native_layer_norm.  A plain backward runs the fused kernel
    native_layer_norm_backward; with create_graph (grad mode on inside backward) PyTorch's formula is written in
    ops so it can be differentiated again: with xhat = (x - mean) * rstd and g = grad * weight,
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) over the normalised dims."""
    if not grad_mode.state.enabled:
        gi, gw, gb = aten.native_layer_norm_backward(grad, input, tuple(normalized_shape), mean, rstd, weight, bias,
                                                     grad_input_mask)
        return [gi if grad_input_mask[0] else None, gw if grad_input_mask[1] else None,
                gb if grad_input_mask[2] else None]
    k = len(normalized_shape)
    axes = list(range(input.dim() - k, input.dim()))
    # the saved statistics are outputs marked non-differentiable, so recompute them in ops to keep their
    # dependence on input in the graph (PyTorch has layer_norm_double_backward)
    mean = input.mean(axes, keepdim=True)
    rstd = (input.var(axes, unbiased=False, keepdim=True) + eps).rsqrt()
    xhat = (input - mean) * rstd
    batch = list(range(input.dim() - k))
    out: list[Tensor | None] = [None, None, None]
    if grad_input_mask[0]:
        g = grad * weight if weight is not None else grad
        out[0] = rstd * (g - g.mean(axes, keepdim=True) - xhat * (g * xhat).mean(axes, keepdim=True))
    if grad_input_mask[1]:
        out[1] = (grad * xhat).sum(batch) if batch else grad * xhat
    if grad_input_mask[2]:
        out[2] = grad.sum(batch) if batch else grad
    return out


def batch_norm_backward(grad: Tensor, input: Tensor, weight: Tensor | None, running_mean: Tensor | None,  # noqa
                        running_var: Tensor | None, save_mean: Tensor | None, save_invstd: Tensor | None,
                        training: bool, eps: Any, grad_input_mask: Sequence[bool]) -> Any:
    """Gradients (input, weight, bias) of native_batch_norm.  A plain backward runs the fused kernel
    native_batch_norm_backward; with create_graph the formula is written in ops so it can be differentiated
    again (PyTorch's batchnorm_double_backward), the batch statistics recomputed from input in training."""
    if not grad_mode.state.enabled:
        gi, gw, gb = aten.native_batch_norm_backward(grad, input, weight, running_mean, running_var,
                                                           save_mean, save_invstd, training, eps, grad_input_mask)
        return [gi if grad_input_mask[0] else None, gw if grad_input_mask[1] else None,
                gb if grad_input_mask[2] else None]
    dims = [0] + list(range(2, input.dim()))
    shape = (1, -1) + (1,) * (input.dim() - 2)
    if training:
        mean = input.mean(dims, keepdim=True)
        invstd = (input.var(dims, unbiased=False, keepdim=True) + eps).rsqrt()
    else:
        assert running_mean is not None and running_var is not None
        mean = running_mean.reshape(shape)
        invstd = (running_var.reshape(shape) + eps).rsqrt()
    xhat = (input - mean) * invstd
    out: list[Tensor | None] = [None, None, None]
    if grad_input_mask[0]:
        g = grad * weight.reshape(shape) if weight is not None else grad
        if training:
            out[0] = invstd * (g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True))
        else:
            out[0] = g * invstd
    if grad_input_mask[1]:
        out[1] = (grad * xhat).sum(dims)
    if grad_input_mask[2]:
        out[2] = grad.sum(dims)
    return out


def max_pool_double_backward(grad: Tensor, indices: Tensor, nd: int) -> Tensor:
    """Each position of ``indices`` takes ``grad`` at the element its index names, flat over the ``nd`` spatial
    dims: max_unpool's gradient, and the gradient of max pooling's backward with respect to its grad_output."""
    lead = grad.dim() - nd
    return grad.flatten(lead).gather(-1, indices.flatten(lead)).view(tuple(indices.shape))


def max_pool_backward(grad: Tensor, self: Tensor, indices: Tensor, nd: Any) -> Any:
    """Scatter each output's gradient to the input element its index names (summing overlaps); indices
    are flat over the ``nd`` spatial dims of the input."""
    head = tuple(self.shape[:self.dim() - nd])
    flat_in = zeros_of(head + (int(math.prod(self.shape[self.dim() - nd:])),), grad)
    return flat_in.scatter_add(-1, indices.flatten(len(head)), grad.flatten(len(head))).view(self.shape)


def embedding_backward(grad: Tensor, indices: Tensor, weight_sizes: Sequence[int], padding_idx: int,
                       scale_grad_by_freq: bool, sparse: bool = False) -> Any:
    num_weights, dim = weight_sizes[0], grad.shape[-1]
    if sparse:
        return embedding_sparse_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq)
    idx = indices.reshape(-1)
    g = grad.reshape(-1, dim)
    if padding_idx is not None and padding_idx >= 0:
        g = g * (idx != padding_idx).unsqueeze(1).to(g.dtype)
    if scale_grad_by_freq:
        counts = zeros_of(num_weights, g).index_add(0, idx, aten.ones_like(idx, dtype=g.dtype))
        g = g / counts[idx].unsqueeze(1)
    return zeros_of((num_weights, dim), grad).index_add(0, idx, g)


def embedding_sparse_backward(grad: Tensor, indices: Tensor, num_weights: int, padding_idx: int,
                              scale_grad_by_freq: bool) -> Any:
    """The weight gradient of ``embedding(..., sparse=True)``: a COO tensor with one row per looked-up index (its
    row of ``grad``), repeated indices not summed, the padding index left out (PyTorch's embedding_sparse_backward)."""
    if scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
    dim = grad.shape[-1]
    idx = indices.reshape(-1).to(int64)
    g = grad.reshape(-1, dim)
    if padding_idx is not None and padding_idx >= 0:
        keep = idx != padding_idx
        idx, g = idx[keep], g[keep]
    return aten._sparse_coo_tensor_unsafe(idx.reshape(1, -1), g, (num_weights, dim))


_ROW_LAYOUTS = (sparse_csr, sparse_bsr)


# -- sparse tensors (Note [Sparse tensors] in ember/aten/sparse/__init__.py) --------------------------------------
def sparse_constructor_values_backward(grad: Tensor, indices: Tensor) -> Any:
    """The gradient of a sparse constructor's values: ``grad`` at each of its indices (every duplicate gets it)."""
    if grad.is_sparse:
        size = tuple(grad.shape)
        sd = indices.shape[0]
        pattern = aten._sparse_coo_tensor_unsafe(indices, aten.zeros((indices.shape[1],) + size[sd:], dtype=grad.dtype),
                                                 size)
        return aten._values(grad.coalesce().sparse_mask(pattern))
    return grad[tuple(indices.unbind(0))]


def sparse_compressed_values_backward(grad: Tensor, compressed_indices: Tensor, plain_indices: Tensor,
                                      values: Tensor, size: Any, layout: Any) -> Any:
    """The gradient of a compressed constructor's values: ``grad`` at each stored position."""
    mask = aten._sparse_compressed_tensor_unsafe(compressed_indices, plain_indices, aten.zeros_like(values), size,
                                                 layout=layout)
    return grad.to_dense().sparse_mask(mask).values()


def values_backward(grad: Tensor, self: Tensor) -> Any:
    """The gradient of ``values()``: a tensor of ``self``'s layout and pattern holding ``grad``."""
    if self.is_sparse:
        return aten._sparse_coo_tensor_unsafe(self.indices(), grad, tuple(self.shape), is_coalesced=True)
    compressed, plain = (self.crow_indices(), self.col_indices()) if self.layout in _ROW_LAYOUTS else \
        (self.ccol_indices(), self.row_indices())
    return aten._sparse_compressed_tensor_unsafe(compressed, plain, grad, tuple(self.shape), layout=self.layout)


def to_dense_backward(grad: Tensor, self: Tensor, masked_grad: Any) -> Any:
    """The gradient of ``to_dense()``: ``grad`` at the input's (coalesced) stored positions, or all of it as COO
    with ``masked_grad=False`` (PyTorch's to_dense_backward)."""
    if self.layout is strided:
        return grad.to_dense()
    if masked_grad is None or masked_grad:
        return grad.sparse_mask(self.coalesce() if self.is_sparse else self)
    return grad.to_sparse(self.sparse_dim()) if self.is_sparse else grad.to_sparse(layout=self.layout)


def to_sparse_backward(grad: Tensor, self: Tensor) -> Any:
    return grad.to_dense() if self.layout is strided else grad


def sparse_mask_backward(grad: Tensor, mask: Tensor, self: Tensor) -> Any:
    g = grad.sparse_mask(mask)
    return g.to_dense() if self.layout is strided else g


def mm_mat1_sparse_backward(grad: Tensor, mat1: Tensor, mat2: Tensor, alpha: Any) -> Any:
    """The gradient of ``torch.sparse.mm`` / ``sparse.addmm`` for the sparse ``mat1``: ``grad @ mat2^H`` only at
    ``mat1``'s coalesced indices (``sampled_addmm`` over its CSR form, whose elements are in the same order: one
    dot product per stored element, never the dense matrix)."""
    pattern = mat1.coalesce()
    sampled = aten.sparse_sampled_addmm(pattern.to_sparse_csr(), grad, conj_of(mat2.t()), beta=0,
                                        alpha=conj_of(alpha))
    return aten._sparse_coo_tensor_unsafe(pattern._indices(), sampled.values(), tuple(mat1.shape), is_coalesced=True)


def binary_cross_entropy_target_backward(grad: Tensor, self: Tensor, target: Tensor, weight: Tensor | None,
                                         reduction: int) -> Any:
    """d binary_cross_entropy / d target: ``-logit(self)`` (PyTorch's FunctionsManual)."""
    g = -aten.logit(self) * grad
    if weight is not None:
        g = g * weight
    return g / target.numel() if reduction == 1 else g


def binary_cross_entropy_with_logits_backward(grad: Tensor, self: Tensor, target: Tensor, weight: Tensor | None,
                                              pos_weight: Tensor | None, reduction: int) -> Any:
    """``sigmoid(x) - t``, or ``(pos_weight t + 1 - t) sigmoid(x) - pos_weight t`` with pos_weight."""
    if pos_weight is not None:
        t = pos_weight * target
        g = (t + 1 - target) * aten.sigmoid(self) - t
    else:
        g = aten.sigmoid(self) - target
    if weight is not None:
        g = g * weight
    g = g * grad
    return g / self.numel() if reduction == 1 else g


def binary_cross_entropy_with_logits_target_backward(grad: Tensor, self: Tensor, target: Tensor,
                                                     weight: Tensor | None, pos_weight: Tensor | None,
                                                     reduction: int) -> Any:
    if pos_weight is not None:
        g = _log_sigmoid(-self) - _log_sigmoid(self) * pos_weight
    else:
        g = -self
    if weight is not None:
        g = g * weight
    g = g * grad
    return g / target.numel() if reduction == 1 else g


def _log_sigmoid(x: Tensor) -> Any:
    """``log(sigmoid(x))`` as PyTorch's kernel computes it: ``min(x, 0) - log1p(exp(-|x|))``."""
    return x.clamp(max=0) - x.abs().neg().exp().log1p()


def group_norm_backward(grad: Tensor, input: Tensor, weight: Tensor | None, N: int, C: int, HxW: int, group: int,
                        eps: Any, grad_input_mask: Sequence[bool]) -> Any:
    """native_group_norm's gradients with the group statistics recomputed from ``input`` in ops, so that a second
    derivative sees their dependence on the input, as PyTorch's infinitely differentiable version does."""
    x = input.reshape(N, group, -1)
    mean = x.mean(-1, keepdim=True)
    rstd = (((x - mean) ** 2).mean(-1, keepdim=True) + eps).rsqrt()
    return aten.native_group_norm_backward(grad, input, mean.squeeze(-1), rstd.squeeze(-1), weight, N, C, HxW, group,
                                           grad_input_mask)


def angle_backward(grad: Tensor, self: Tensor) -> Any:
    """d angle: ``i z / |z|^2`` against the conjugate gradient (0 where z is 0); nothing flows for real inputs,
    whose angle is piecewise constant."""
    if not self.is_complex():
        return aten.zeros_like(self)
    return aten.where_self(self == 0, aten.zeros((), dtype=self.dtype, device=self.device),
                           grad * self / self.abs().pow(2) * 1j)


def polar_backward(grad: Tensor, result: Tensor) -> Any:
    """``polar(r, theta) = r e^{i theta}``: the real parts of ``conj(grad)`` against ``d/dr = sgn(result)`` and
    ``d/dtheta = i result``."""
    g = grad.conj()
    return aten.real(g * result.sgn()), aten.real(g * (result * 1j))


def fft_r2c_backward(grad: Tensor, dim: Sequence[int], normalization: int, onesided: bool,
                     self_sizes: Sequence[int]) -> Any:
    """The adjoint of a real-to-complex transform: the inverse complex transform of ``grad`` (zero-filled back to
    the full length when the forward kept one side only), of which the real part reaches the real input."""
    if onesided:
        last = dim[-1] % grad.dim()
        missing = self_sizes[last] - grad.shape[last]
        if missing > 0:
            pad = [0, 0] * (grad.dim() - 1 - last) + [0, missing]
            grad = aten.constant_pad_nd(grad, tuple(pad), 0)
    return aten.real(aten._fft_c2c(grad, tuple(dim), normalization, False))


def fft_c2r_backward(grad: Tensor, dim: Sequence[int], normalization: int) -> Any:
    """The adjoint of a complex-to-real (onesided) transform: a onesided real-to-complex transform of ``grad``, in
    which the entries whose mirror images were dropped count twice (indices 1 .. n - onesided length of the last
    dim: the input's other half is their conjugate)."""
    g = aten._fft_r2c(grad, tuple(dim), normalization, True)
    last = dim[-1] % grad.dim()
    double = grad.shape[last] - g.shape[last]
    if double > 0:
        scale = aten.ones((g.shape[last],), dtype=grad.dtype, device=grad.device)
        scale[1:1 + double] = 2
        g = g * scale.reshape((-1,) + (1,) * (grad.dim() - 1 - last))
    return g


def sgn_backward(self: Tensor, grad: Tensor, result: Tensor) -> Any:
    """``sgn(z) = z / |z|``: for complex z, ``(grad - sgn^2 conj(grad)) / (2 |z|)`` (0 at z = 0); the sign of
    a real number is piecewise constant."""
    if not self.is_complex():
        return aten.zeros_like(grad)
    a = self.abs()
    return aten.where_self(a == 0, aten.zeros((), dtype=grad.dtype, device=grad.device),
                           (grad - result * result * grad.conj()) / (2.0 * a))


def index_reduce_backward(grad: Tensor, self: Tensor, dim: Any, index: Tensor, source: Tensor, reduce: Any,
                          include_self: bool, result: Tensor) -> Any:
    """Gradients of ``index_reduce`` for ``self`` and ``source``: scatter_reduce's, with the index spread over each
    slice of ``source`` (the same ties rule as scatter_reduce_backward)."""
    d = wrap_dim(dim, self.dim()) if self.dim() else 0
    if self.dim() == 0:
        full = index.long().reshape(())
    else:
        shape = [1] * self.dim()
        shape[d] = -1
        full = index.long().reshape(shape).expand(tuple(source.shape))
    return (scatter_reduce_backward(grad, self, d, full, source, reduce, include_self, result, "self"),
            scatter_reduce_backward(grad, self, d, full, source, reduce, include_self, result, "src"))


def _dense_strides_like(sizes: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """Contiguous strides for ``sizes`` with the dimensions laid out in the order of ``strides`` (outermost: the
    largest stride), as a clone keeps a dense tensor's layout."""
    order = sorted(range(len(sizes)), key=lambda i: (-strides[i], i))
    out = [0] * len(sizes)
    step = 1
    for i in reversed(order):
        out[i] = step
        step *= max(sizes[i], 1)
    return tuple(out)


def as_strided_scatter_backward(grad: Tensor, self_geometry: tuple[tuple[int, ...], tuple[int, ...], int],
                                size: Sequence[int], stride: Sequence[int], storage_offset: int | None,
                                wrt: str) -> Any:
    """``as_strided_scatter``'s gradients: the output's memory is a clone of ``self`` laid out as ``self``; the
    window is read from (``src``) or zeroed in (``self``) the gradient laid out the same way."""
    sizes, strides, _ = self_geometry
    g = aten.empty_strided(tuple(sizes), _dense_strides_like(sizes, strides), dtype=grad.dtype,
                           device=grad.device).copy_(grad)
    if wrt == "src":
        return g.as_strided(tuple(size), tuple(stride), 0 if storage_offset is None else storage_offset).clone()
    return aten.as_strided_scatter(g, aten.zeros(tuple(size), dtype=grad.dtype, device=grad.device), tuple(size),
                                   tuple(stride), storage_offset)


# -- forward-mode derivatives (``result:`` formulas of derivatives.yaml; Note [Forward formulas] in
# tools/codegen/gen_autograd.py) ------------------------------------------------------------------------------


def resolved_conj(t: Tensor) -> Any:
    """The conjugate, computed (a lazy conjugate's bit would follow the tangent into views that refuse it)."""
    return aten.conj_physical(t) if t.dtype.is_complex else t


def selected_tangent(self_t: Tensor, dim: Any, indices: Tensor, keepdim: bool) -> Any:
    """The tangent of values chosen by ``indices`` along ``dim`` (max / min / kthvalue / median / mode / sort / topk):
    the tangent's entries at the same places."""
    if self_t.dim() == 0:
        return self_t.clone()
    d = wrap_dim(dim, self_t.dim())
    if keepdim or indices.dim() == self_t.dim():
        return self_t.gather(d, indices)
    return self_t.gather(d, indices.unsqueeze(d)).squeeze(d)


def max_pool_jvp(self_t: Tensor, indices: Tensor, nd: int) -> Any:
    """The tangent of a max pooling: the input tangent's entry at each output's flat spatial index."""
    lead = self_t.dim() - nd
    flat = self_t.flatten(lead)
    return flat.gather(-1, indices.flatten(lead)).view(indices.shape)


def convolution_jvp(input: Tensor, input_t: Tensor, weight: Tensor, weight_t: Tensor, bias_t: Tensor | None,
                    stride: Any, padding: Any, dilation: Any, transposed: bool, output_padding: Any,
                    groups: int) -> Any:
    """A convolution is linear in each operand: conv(x_t, w) + conv(x, w_t) + b_t."""
    return aten.convolution(input_t, weight, bias_t, stride, padding, dilation, transposed, output_padding, groups) \
        + aten.convolution(input, weight_t, None, stride, padding, dilation, transposed, output_padding, groups)


def cholesky_jvp(A_t: Tensor, L: Tensor, upper: bool) -> Any:
    """dL = L Phi(L^-1 dA L^-H) (Phi: the lower triangle, diagonal halved); ``upper``: the same for U = L^H."""
    Lo = L.mH if upper else L
    X = aten.linalg_solve_triangular(Lo, A_t, upper=False, left=True)
    X = aten.linalg_solve_triangular(Lo.mH, X, upper=True, left=False)
    phi = X.tril(-1) + X.diagonal(0, -2, -1).diag_embed() * 0.5
    dL = Lo.matmul(phi)
    return dL.mH if upper else dL


def cholesky_inverse_jvp(L: Tensor, L_t: Tensor, upper: bool, inverse: Tensor) -> Any:
    """X = (L L^H)^-1 (``upper``: (U^H U)^-1): dX = -X dA X with dA = dL L^H + L dL^H."""
    dA = L_t.mH.matmul(L) + L.mH.matmul(L_t) if upper else L_t.matmul(L.mH) + L.matmul(L_t.mH)
    return -inverse.matmul(dA).matmul(inverse)


def triangular_solve_jvp(self_t: Tensor, A: Tensor, A_t: Tensor, X: Tensor, upper: bool, transpose: bool,
                         unitriangular: bool) -> Any:
    """X = op(A)^-1 b: dX = op(A)^-1 (db - op(dA) X); the copy of A gets A's tangent. As PyTorch's formula, dA is
    A's whole tangent (the reverse mode keeps A's triangle only: the two agree for a triangular tangent)."""
    rhs = self_t - (A_t.mT if transpose else A_t).matmul(X)
    return aten.triangular_solve(rhs, A, upper, transpose, unitriangular)[0], A_t.clone()


def svd_jvp(A: Tensor, A_t: Tensor, full_matrices: bool, compute_uv: bool, result: Any) -> Any:
    """The tangents of A = U S V^H (k = min(m, n) singular values): with dP = U^H dA V, dS = Re(diag dP),
    U^H dU = F o (dP S + S dP^H) and V^H dV = F o (S dP + dP^H S) (F_ij = 1 / (s_j^2 - s_i^2), zero diagonal), plus
    the parts of dA outside U's (V's) span for a tall (wide) A. The extra columns of ``full_matrices``' U or V get
    the tangent that keeps them orthogonal to the first k and moves them no further."""
    U, S, Vh = result if compute_uv else aten._linalg_svd(A, False, True)
    m, n = A.shape[-2], A.shape[-1]
    k = S.shape[-1]
    Uk, Vhk = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
    Vk = Vhk.mH
    dP = Uk.mH.matmul(A_t).matmul(Vk)
    dS = dP.diagonal(0, -2, -1)
    dS = dS.real if dS.dtype.is_complex else dS
    if not compute_uv:
        return aten.zeros_like(U), dS, aten.zeros_like(Vh)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    eye = aten.eye(k, dtype=bool_, device=S.device)
    F = (1.0 / E.masked_fill(eye, 1.0)).masked_fill(eye, 0.0)
    Sr, Sc = S.unsqueeze(-2), S.unsqueeze(-1)   # (multiplying on the right / on the left by diag(S))
    dPh = dP.mH
    omega_u = F * (dP * Sr + Sc * dPh)
    omega_v = F * (Sc * dP + dPh * Sr)
    if dP.dtype.is_complex:    # the phase left free by (U, V) -> (U e^it, V e^it): given to U
        omega_u = omega_u + (1j * dP.diagonal(0, -2, -1).imag / S).diag_embed()
    dU = Uk.matmul(omega_u)
    dV = Vk.matmul(omega_v)
    if m > k:
        dU = dU + (A_t.matmul(Vk) - Uk.matmul(dP)) / Sr
    if n > k:
        dV = dV + (A_t.mH.matmul(Uk) - Vk.matmul(dPh)) / Sr
    if full_matrices and m > k:
        U2 = U.narrow(-1, k, m - k)
        dU = aten.cat([dU, -Uk.matmul(dU.mH.matmul(U2))], -1)
    if full_matrices and n > k:
        V2 = Vh.narrow(-2, k, n - k).mH
        dV = aten.cat([dV, -Vk.matmul(dV.mH.matmul(V2))], -1)
    return dU, dS, dV.mH


def rnn_layer_jvp(input: Tensor, batch_sizes: Any, h0: Tensor, c0: Tensor | None, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None, b_hh: Tensor | None, w_hr: Tensor | None, mode: str, reverse: bool,
                  result: Any, input_t: Tensor, h0_t: Tensor, c0_t: Tensor | None, w_ih_t: Tensor, w_hh_t: Tensor,
                  b_ih_t: Tensor | None, b_hh_t: Tensor | None, w_hr_t: Tensor | None) -> Any:
    """The tangents of one recurrent layer (ember/aten/kernels/rnn.py's ``_rnn_layer``): its recurrence linearized
    step by step around the forward pass, whose activated gates (and LSTM cell states) the workspace kept."""
    out, _, _, ws = result
    sizes = [int(b) for b in batch_sizes]
    offs = [0]
    for b in sizes:
        offs.append(offs[-1] + b)
    order = range(len(sizes) - 1, -1, -1) if reverse else range(len(sizes))
    H = w_ih.shape[0] // {"LSTM": 4, "GRU": 3}.get(mode, 1)
    dxw = input_t.matmul(w_ih.mT) + input.matmul(w_ih_t.mT)
    if b_ih_t is not None:
        dxw = dxw + b_ih_t
    if mode in ("LSTM", "RNN_TANH", "RNN_RELU") and b_hh_t is not None:
        dxw = dxw + b_hh_t
    h, dh = h0, h0_t
    c: Any = c0
    dc: Any = c0_t
    outs_t: list[Any] = [None] * len(sizes)

    def rows(x: Tensor, bs: int, new: Tensor) -> Tensor:   # x with its first bs rows replaced
        return new if bs == x.shape[0] else aten.cat([new, x[bs:]], 0)
    for t in order:
        bs = sizes[t]
        r0, r1 = offs[t], offs[t] + bs
        hp, dhp = h[:bs], dh[:bs]
        dhw = dhp.matmul(w_hh.mT) + hp.matmul(w_hh_t.mT)
        w = ws[r0:r1]
        if mode == "LSTM":
            dg = dxw[r0:r1] + dhw
            gi, gf, gg, go, cn = w[:, :H], w[:, H:2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:4 * H], w[:, 4 * H:]
            dgi = gi * (1 - gi) * dg[:, :H]
            dgf = gf * (1 - gf) * dg[:, H:2 * H]
            dgg = (1 - gg * gg) * dg[:, 2 * H:3 * H]
            dgo = go * (1 - go) * dg[:, 3 * H:]
            dcn = dgf * c[:bs] + gf * dc[:bs] + dgi * gg + gi * dgg
            tc = cn.tanh()
            dhn = dgo * tc + go * (1 - tc * tc) * dcn
            if w_hr is not None and w_hr_t is not None:   # (w_hr_t is zeros when w_hr has no tangent)
                dhn = dhn.matmul(w_hr.mT) + (go * tc).matmul(w_hr_t.mT)
            c, dc = rows(c, bs, cn), rows(dc, bs, dcn)
        elif mode == "GRU":
            if b_hh_t is not None:
                dhw = dhw + b_hh_t
            dxi = dxw[r0:r1]
            gr, gz, gn, hn_lin = w[:, :H], w[:, H:2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:]
            dgr = gr * (1 - gr) * (dxi[:, :H] + dhw[:, :H])
            dgz = gz * (1 - gz) * (dxi[:, H:2 * H] + dhw[:, H:2 * H])
            dgn = (1 - gn * gn) * (dxi[:, 2 * H:] + dgr * hn_lin + gr * dhw[:, 2 * H:])
            dhn = dgn + dgz * (hp - gn) + gz * (dhp - dgn)
        else:
            pre_t = dxw[r0:r1] + dhw
            hn = out[r0:r1]
            dhn = (1 - hn * hn) * pre_t if mode == "RNN_TANH" else (hn > 0) * pre_t
        outs_t[t] = dhn
        h, dh = rows(h, bs, out[r0:r1]), rows(dh, bs, dhn)
    out_t = aten.cat(outs_t, 0) if outs_t else aten.zeros_like(out)
    return out_t, dh, (dc if mode == "LSTM" else None), None


def _reduced_dims(self: Tensor, dim: Any) -> list[int]:
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(self.dim()))
    return [wrap_dim(d, self.dim()) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]


def var_jvp(self: Tensor, self_t: Tensor, dim: Any, correction: Any, keepdim: bool) -> Any:
    """d var = 2 sum((x - mean) dx) / (n - correction), the sum over the reduced dims."""
    dims = _reduced_dims(self, dim)
    n = math.prod(self.shape[d] for d in dims) if self.dim() else 1
    c = 1 if correction is None else correction
    prod = resolved_conj(self - self.mean(dims, keepdim=True)) * self_t
    s = prod.sum(dims, keepdim) if self.dim() else prod
    s = s.real if s.dtype.is_complex else s
    return s * (2.0 / (n - c)) if n - c > 0 else s * math.inf


def logsumexp_jvp(self: Tensor, self_t: Tensor, dim: Any, keepdim: bool, result: Tensor) -> Any:
    """The tangent weighted by softmax over the reduced dims."""
    dims = _reduced_dims(self, dim)
    r = result
    if not keepdim and self.dim():
        for d in sorted(dims):
            r = r.unsqueeze(d)
    return (self_t * (self - r).exp()).sum(dims, keepdim) if self.dim() else self_t.clone()


def amax_amin_jvp(self: Tensor, self_t: Tensor, dim: Any, keepdim: bool, result: Tensor) -> Any:
    """The tangent averaged over the places that reach the extreme (the subgradient PyTorch's formula takes)."""
    dims = _reduced_dims(self, dim)
    if not self.dim():
        return self_t.clone()
    r = result
    if not keepdim:
        for d in sorted(dims):
            r = r.unsqueeze(d)
    mask = (self == r).to(self_t.dtype)
    return (self_t * mask).sum(dims, keepdim) / mask.sum(dims, keepdim)


def mse_loss_jvp(self: Tensor, self_t: Tensor, target: Tensor, target_t: Tensor, reduction: int) -> Any:
    """2 (x - y)(dx - dy), reduced as the loss."""
    d = 2 * (self - target) * (self_t - target_t)
    return d.mean() if reduction == 1 else d.sum() if reduction == 2 else d


def layer_norm_jvp(input: Tensor, input_t: Tensor, normalized_shape: Sequence[int], weight: Tensor | None,
                   weight_t: Tensor | None, bias_t: Tensor | None, mean: Tensor, rstd: Tensor) -> Any:
    """With x^ = (x - mu) rstd over the normalized dims: d x^ = rstd (dx - mean(dx)) - x^ rstd^2 mean((x - mu) dx);
    the output's tangent is dx^ w + x^ dw + db (mean and rstd have none)."""
    axes = list(range(input.dim() - len(normalized_shape), input.dim()))
    centered = input - mean
    xhat = centered * rstd
    dmu = input_t.mean(axes, keepdim=True)
    drstd = -(rstd * rstd * rstd) * (centered * input_t).mean(axes, keepdim=True)
    dxhat = (input_t - dmu) * rstd + centered * drstd
    out = dxhat * weight if weight is not None else dxhat
    if weight_t is not None:
        out = out + xhat * weight_t
    if bias_t is not None:
        out = out + bias_t
    return out, None, None


def batch_norm_jvp(input: Tensor, input_t: Tensor, weight: Tensor | None, weight_t: Tensor | None,
                   bias_t: Tensor | None, running_mean: Tensor | None, running_var: Tensor | None, training: bool,
                   eps: float, result: Any) -> Any:
    """Per channel (dim 1): in training, x^ = (x - mu) invstd with the batch's statistics and the tangent as layer
    norm's (d x^ = invstd (dx - mean(dx)) - x^ invstd^2 mean((x - mu) dx)); in evaluation the running statistics
    are constants, d x^ = dx invstd. Written out: the double backward would run the op again and update the running
    statistics twice."""
    shape = [1, input.shape[1]] + [1] * (input.dim() - 2)
    axes = [0] + list(range(2, input.dim()))
    if training or running_mean is None or running_var is None:
        mean, invstd = result[1].reshape(shape), result[2].reshape(shape)
        centered = input - mean
        dmu = input_t.mean(axes, keepdim=True)
        dinvstd = -(invstd * invstd * invstd) * (centered * input_t).mean(axes, keepdim=True)
        dxhat = (input_t - dmu) * invstd + centered * dinvstd
    else:
        mean, invstd = running_mean.reshape(shape), (running_var.reshape(shape) + eps).rsqrt()
        centered = input - mean
        dxhat = input_t * invstd
    out = dxhat * weight.reshape(shape) if weight is not None else dxhat
    if weight_t is not None:
        out = out + centered * invstd * weight_t.reshape(shape)
    if bias_t is not None:
        out = out + bias_t.reshape(shape)
    return out, None, None
