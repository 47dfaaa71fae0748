"""The Kumaraswamy distribution (mirrors ``torch/distributions/kumaraswamy.py``):
``(1 - U ** (1 / b)) ** (1 / a)`` for a standard Uniform U."""
from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import AffineTransform, PowerTransform
from ember.distributions.uniform import Uniform
from ember.distributions.utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """The n-th moment: ``b B(1 + n / a, b)``."""
    arg1 = 1 + n / a
    log_value = ember.lgamma(arg1) + ember.lgamma(b) - ember.lgamma(arg1 + b)
    return b * ember.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy(concentration1, concentration0)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(ember.full_like(self.concentration0, 0), ember.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        """``((a - 1) / (a b - 1)) ** (1 / a)`` for a = concentration1, b = concentration0 both at least 1."""
        a, b = self.concentration1, self.concentration0
        log_mode = ((a - 1).log() - (a * b - 1).log()) / a
        log_mode[(b < 1) | (a < 1)] = math.nan
        return log_mode.exp()

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - ember.pow(self.mean, 2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        H0 = ember.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * H0 - ember.log(self.concentration1) - ember.log(self.concentration0)
