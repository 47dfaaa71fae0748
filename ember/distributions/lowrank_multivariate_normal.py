"""The multivariate normal with a low-rank-plus-diagonal covariance ``W W^T + diag(D)`` (mirrors
``torch/distributions/lowrank_multivariate_normal.py``): determinants and inverses go through the small
"capacitance" matrix ``I + W^T D^-1 W`` (the Woodbury identity and the matrix determinant lemma)."""
from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.multivariate_normal import _batch_mahalanobis, _batch_mv
from ember.distributions.utils import _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _add_identity(K):
    return K + ember.eye(K.shape[-1], dtype=K.dtype, device=K.device)


def _batch_capacitance_tril(W, D):
    """The Cholesky factor of ``I + W^T D^-1 W``."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    return ember.linalg.cholesky(_add_identity(ember.matmul(Wt_Dinv, W)))


def _batch_lowrank_logdet(W, D, capacitance_tril):
    """``log det(W W^T + D) = log det(capacitance) + log det(D)``."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """``x^T (W W^T + D)^-1 x`` by the Woodbury identity."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    Wt_Dinv_x = _batch_mv(Wt_Dinv, x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    """LowRankMultivariateNormal(loc, cov_factor, cov_diag)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = ember.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                       cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        batch_shape = self.loc.shape[:-1]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        ev = tuple(self.event_shape)
        new = self._expand_params(LowRankMultivariateNormal, batch_shape, _instance,
                                  {"loc": ev, "cov_diag": ev, "cov_factor": ev + tuple(self.cov_factor.shape[-1:])})
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        """``D^1/2 chol(I + D^-1/2 W W^T D^-1/2)``."""
        cov_diag_sqrt_unsqueeze = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / cov_diag_sqrt_unsqueeze
        K = _add_identity(ember.matmul(Dinvsqrt_W, Dinvsqrt_W.mT))
        return (cov_diag_sqrt_unsqueeze * ember.linalg.cholesky(K)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        return (ember.matmul(W, W.mT) + ember.diag_embed(self._unbroadcasted_cov_diag)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        """``D^-1 - D^-1 W C^-1 W^T D^-1`` (Woodbury)."""
        Wt_Dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        A = ember.linalg.solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        precision_matrix = ember.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - A.mT @ A
        return precision_matrix.expand(self._matrix_shape())

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        W_shape = tuple(shape[:-1]) + tuple(self.cov_factor.shape[-1:])
        eps_W = _standard_normal(W_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_D = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, diff,
                                       self._capacitance_tril)
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                        self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + M)

    def entropy(self):
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                        self._capacitance_tril)
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)
