"""The Laplace distribution (mirrors ``torch/distributions/laplace.py``)."""
from __future__ import annotations

import numbers

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all

__all__ = ["Laplace"]


class Laplace(Distribution):
    """Laplace(loc, scale); ``rsample`` inverts the CDF at ``uniform_(eps - 1, 1)`` draws."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        if isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number):
            batch_shape = ember.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Laplace, batch_shape, _instance, {"loc": (), "scale": ()})

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        finfo = ember.finfo(self.loc.dtype)
        u = self.loc.new_empty(shape).uniform_(finfo.eps - 1, 1)
        return self.loc - self.scale * u.sign() * ember.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -ember.log(2 * self.scale) - ember.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * ember.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * ember.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + ember.log(2 * self.scale)


