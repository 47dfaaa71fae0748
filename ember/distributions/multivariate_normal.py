"""The multivariate normal distribution (mirrors ``torch/distributions/multivariate_normal.py``); every
computation goes through the lower Cholesky factor of the covariance."""
from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat, bvec):
    """Matrix-vector products over broadcast batch dimensions."""
    return ember.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """``x^T (L L^T)^-1 x`` for each vector x of ``bx``: the squared norm of ``L^-1 x``."""
    return ember.linalg.solve_triangular(bL, bx.unsqueeze(-1), upper=False).squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(P):
    """The lower Cholesky factor of ``P^-1``, from the Cholesky factor of P with rows and columns reversed."""
    Lf = ember.linalg.cholesky(ember.flip(P, (-2, -1)))
    L_inv = ember.transpose(ember.flip(Lf, (-2, -1)), -2, -1)
    Id = ember.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return ember.linalg.solve_triangular(L_inv, Id, upper=False)


class MultivariateNormal(Distribution):
    """MultivariateNormal(loc, covariance_matrix=... or precision_matrix=... or scale_tril=...)."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        for name, m in (("scale_tril", scale_tril), ("covariance_matrix", covariance_matrix),
                        ("precision_matrix", precision_matrix)):
            if m is None:
                continue
            if m.dim() < 2:
                raise ValueError(f"{name} {'matrix ' if name == 'scale_tril' else ''}must be at least two-dimensional, "
                                 "with optional leading batch dimensions")
            batch_shape = ember.broadcast_shapes(m.shape[:-2], loc.shape[:-1])
            setattr(self, name, m.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        ev = tuple(self.event_shape)
        new = self._expand_params(MultivariateNormal, batch_shape, _instance,
                                  {"loc": ev, "covariance_matrix": ev + ev, "scale_tril": ev + ev,
                                   "precision_matrix": ev + ev})
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return ember.matmul(L, L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return ember.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self):
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)
