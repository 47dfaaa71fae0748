"""``ember.nn.utils.parametrizations`` (mirrors ``torch/nn/utils/parametrizations.py``): ``weight_norm``,
``spectral_norm`` and ``orthogonal`` as parametrizations (see ``parametrize.py``)."""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

from enum import Enum, auto

import ember
from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.utils import parametrize


if TYPE_CHECKING:
    from ember._tensor import Tensor

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ------------------------------------------------------------------------------ weight norm
def _norm_except_dim(v: Any, dim: Any) -> Any:
    """The 2-norm of ``v`` over every dimension but ``dim`` (all of them for ``dim = -1``), keeping dims."""
    if dim == -1:
        return v.norm()
    dims = [d for d in range(v.dim()) if d != dim]
    return v.pow(2).sum(dims, keepdim=True).sqrt() if dims else v.abs()


class _WeightNorm(Module):
    def __init__(self, dim: int = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Any, weight_v: Any) -> Any:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> Any:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Any, name: str = 'weight', dim: int = 0) -> Any:
    """``w = g * v / ||v||`` with magnitude ``original0`` (g) and direction ``original1`` (v)."""
    _weight_norm = _WeightNorm(dim)
    parametrize.register_parametrization(module, name, _weight_norm, unsafe=True)

    def _weight_norm_compat_hook(state_dict: Any, prefix: Any, local_metadata: Any, strict: Any,
                                 missing_keys: Any, unexpected_keys: Any, error_msgs: Any) -> Any:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


# ------------------------------------------------------------------------------ spectral norm
class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Any:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Any, n_power_iterations: Any) -> Any:
        with ember.no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(ember.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ember.mv(weight_mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Any:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = ember.vdot(u, ember.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Any:
        return value


def spectral_norm(module: Any, name: str = 'weight', n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: Any = None) -> Any:
    """``w / sigma(w)``, the largest singular value estimated by power iteration (one step per training
    forward), with ``u`` and ``v`` kept as buffers."""
    weight = getattr(module, name, None)
    if not isinstance(weight, ember.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ember.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# ------------------------------------------------------------------------------ orthogonal
class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _matrix_exp(A: Any) -> Any:
    """exp(A) by scaling and squaring of a degree-18 Taylor polynomial (differentiable; double precision
    accuracy for the skew-symmetric matrices used here)."""
    import math
    nrm = float(A.detach().abs().sum(-2).amax()) if A.numel() else 0.0
    s = max(0, int(math.ceil(math.log2(nrm / 0.5))) if nrm > 0.5 else 0)
    X = A / (2 ** s)
    n = A.size(-1)
    eye = ember.eye(n, dtype=A.dtype, device=A.device).expand(A.shape)
    E = eye
    term = eye
    for k in range(1, 19):
        term = term.matmul(X) / k
        E = E + term
    for _ in range(s):
        E = E.matmul(E)
    return E


def _householder_product(A: Any, tau: Any) -> Any:
    """Q = H_1 ... H_k (first ``A.size(-1)`` columns), H_i = I - tau_i v_i v_i^T with v_i the i-th column of
    ``A`` below the diagonal and 1 on it (LAPACK's ``orgqr``)."""
    m, k = A.size(-2), A.size(-1)
    eye = ember.eye(m, dtype=A.dtype, device=A.device)
    Q = eye.expand(tuple(A.shape[:-2]) + (m, m))
    rows = ember.arange(m, device=A.device)
    for i in reversed(range(k)):
        col = A[..., :, i]
        v = ember.where(rows > i, col, (rows == i).to(A.dtype))
        Qv = v.unsqueeze(-2).matmul(Q)                 # v^T Q
        Q = Q - tau[..., i, None, None] * v.unsqueeze(-1) * Qv
    return Q[..., :, :k]


def _make_orthogonal(A: Any) -> Any:
    Q, R = ember.linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _is_orthogonal(Q: Any, eps: Any = None) -> Any:
    n, k = Q.size(-2), Q.size(-1)
    Id = ember.eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10.0 * n * ember.finfo(Q.dtype).eps
    return bool(((Q.mT.matmul(Q) - Id).abs() <= eps).all())


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: Any, *, use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Any) -> Any:
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = ember.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _matrix_exp(A)
            else:
                Id = ember.eye(n, dtype=A.dtype, device=A.device)
                Q = ember.linalg.solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if getattr(self, "base", None) is not None:
            Q = self.base.matmul(Q)
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Any) -> Any:
        with ember.no_grad():
            if tuple(Q.shape) != tuple(self.shape):
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of "
                                 f"shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")
                raise NotImplementedError("assigning to a householder parametrization without trivialization needs "
                                          "geqrf, which ember does not have yet")
            if n == k:
                Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
            else:
                N = ember.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(ember.cat([Q, N], dim=-1))
            self.base = Q
            neg_Id = ember.zeros_like(Q_init)
            neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_Id


def orthogonal(module: Any, name: str = 'weight', orthogonal_map: Any = None, *,
               use_trivialization: bool = True) -> Any:
    """Constrains ``module.<name>`` to (semi-)orthogonal matrices through the matrix exponential, the Cayley
    map or Householder reflectors of an unconstrained ``original``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, ember.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: '
                         f"{orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
