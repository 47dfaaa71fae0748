"""The Cauchy distribution (mirrors ``torch/distributions/cauchy.py``)."""
from __future__ import annotations

import math
import numbers

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """Cauchy(loc, scale); ``rsample`` is ``loc + cauchy_() * scale``.  Mean and variance are undefined."""

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
        return self._expand_params(Cauchy, batch_shape, _instance, {"loc": (), "scale": ()})

    @property
    def mean(self):
        return ember.full(self._extended_shape(), math.nan, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return ember.full(self._extended_shape(), math.inf, dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        eps = self.loc.new_empty(shape).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ember.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return ember.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
