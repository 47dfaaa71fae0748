"""The inverse gamma distribution (mirrors ``torch/distributions/inverse_gamma.py``): ``1 / X`` for a
Gamma X."""
from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.gamma import Gamma
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """InverseGamma(concentration, rate)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base_dist.rate.new_ones(())
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        result = self.rate / (self.concentration - 1)
        return ember.where(self.concentration > 1, result, math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        result = self.rate.square() / ((self.concentration - 1).square() * (self.concentration - 2))
        return ember.where(self.concentration > 2, result, math.inf)

    def entropy(self):
        return (self.concentration + self.rate.log() + self.concentration.lgamma()
                - (1 + self.concentration) * self.concentration.digamma())
