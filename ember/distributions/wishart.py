"""The Wishart distribution over positive-definite matrices (mirrors ``torch/distributions/wishart.py``);
samples by the Bartlett decomposition."""
from __future__ import annotations

import math
import numbers
import warnings

import ember
from ember.distributions import constraints
from ember.distributions.chi2 import Chi2
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.multivariate_normal import _precision_to_scale_tril
from ember.distributions.utils import lazy_property

__all__ = ["Wishart"]

_log_2 = math.log(2)


def _mvdigamma(x, p):
    """The multivariate digamma: ``sum_i digamma(x - i / 2)`` for i < p."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    return ember.digamma(x.unsqueeze(-1) - ember.arange(p, dtype=x.dtype, device=x.device).div(2).expand(
        tuple(x.shape) + (-1,))).sum(-1)


def _clamp_above_eps(x):
    return x.clamp(min=ember.finfo(x.dtype).eps)


class Wishart(ExponentialFamily):
    """Wishart(df, covariance_matrix=... or precision_matrix=... or scale_tril=...)."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = ember.Size(param.shape[:-2])
            self.df = ember.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = ember.broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        if self.df.le(event_shape[-1] - 1).any():
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {event_shape[-1] - 1}.")
        matrix = param.expand(tuple(batch_shape) + (-1, -1))
        if scale_tril is not None:
            self.scale_tril = matrix
        elif covariance_matrix is not None:
            self.covariance_matrix = matrix
        else:
            self.precision_matrix = matrix
        if self.df.lt(event_shape[-1]).any():
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < "
                          "ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._chi2_for(self.df, batch_shape)

    def _chi2_for(self, df, batch_shape):
        """The Chi2(df - i) draws of the Bartlett decomposition's diagonal."""
        L = self._unbroadcasted_scale_tril
        return Chi2(df=df.unsqueeze(-1) - ember.arange(self._event_shape[-1], dtype=L.dtype, device=L.device).expand(
            tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        ev = tuple(self.event_shape)
        new = self._expand_params(Wishart, batch_shape, _instance,
                                  {"covariance_matrix": ev, "scale_tril": ev, "precision_matrix": ev})
        batch_shape = ember.Size(batch_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(tuple(batch_shape) + ev)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        new._dist_chi2 = new._chi2_for(new.df, batch_shape)
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-2, -1)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        identity = ember.eye(self._event_shape[-1], device=L.device, dtype=L.dtype)
        return ember.cholesky_solve(identity, L).expand(self._matrix_shape())

    @property
    def mean(self):
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor[factor <= 0] = math.nan
        return factor.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        outer = diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2)
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * (V.pow(2) + outer)

    def _bartlett_sampling(self, sample_shape=ember.Size()):
        """``L A A^T L^T`` with A lower-triangular: square roots of Chi2(df - i) draws on the diagonal, standard
        normals below."""
        p = self._event_shape[-1]
        noise = _clamp_above_eps(self._dist_chi2.rsample(sample_shape).sqrt()).diag_embed(dim1=-2, dim2=-1)
        i, j = ember.tril_indices(p, p, offset=-1)
        noise[..., i, j] = ember.randn(tuple(sample_shape) + tuple(self._batch_shape) + (p * (p - 1) // 2,),
                                       dtype=noise.dtype, device=noise.device)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=ember.Size(), max_try_correction=None):
        """Bartlett samples, redrawn up to ``max_try_correction`` (default 10) times where the support check
        flags them, as PyTorch does (its flag is the check's result, so it redraws the valid samples: kept, so
        that the samples for a seed are PyTorch's)."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = ember.Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        is_singular = self.support.check(sample)
        if self._batch_shape:
            is_singular = is_singular.amax(self._batch_dims)
        if is_singular.any():
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                sample_new = self._bartlett_sampling(is_singular[is_singular].shape)
                sample[is_singular] = sample_new
                is_singular_new = ~self.support.check(sample_new)
                if self._batch_shape:
                    is_singular_new = is_singular_new.amax(self._batch_dims)
                # a new mask rather than an in-place update: autograd saved the old one for ``sample[...] = ``
                # (PyTorch updates it in place, and its rsample then cannot be differentiated)
                previous = is_singular
                is_singular = previous.clone()
                is_singular[previous] = is_singular_new
                if not is_singular.any():
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (-nu * (p * _log_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                - ember.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * ember.linalg.slogdet(value).logabsdet
                - ember.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return ((p + 1) * (p * _log_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                + ember.mvlgamma(nu / 2, p=p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-ember.linalg.slogdet(-2 * x).logabsdet + _log_2 * p)
                + ember.mvlgamma(y + (p + 1) / 2, p=p))
