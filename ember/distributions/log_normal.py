"""The log-normal distribution (mirrors ``torch/distributions/log_normal.py``): ``exp`` of a Normal."""
from __future__ import annotations

from ember.distributions import constraints
from ember.distributions.normal import Normal
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import ExpTransform

__all__ = ["LogNormal"]


class LogNormal(TransformedDistribution):
    """LogNormal(loc, scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


