"""The Gumbel distribution (mirrors ``torch/distributions/gumbel.py``): ``loc - scale * log(-log(U))``
as transforms of a Uniform on (tiny, 1 - eps)."""
from __future__ import annotations

import math
import numbers

import ember
from ember.distributions import constraints
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import AffineTransform, ExpTransform
from ember.distributions.uniform import Uniform
from ember.distributions.utils import broadcast_all, euler_constant

__all__ = ["Gumbel"]


class Gumbel(TransformedDistribution):
    """Gumbel(loc, scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = ember.finfo(self.loc.dtype)
        if isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number):
            base_dist = Uniform(finfo.tiny, 1 - finfo.eps, validate_args=validate_args)
        else:
            base_dist = Uniform(ember.full_like(self.loc, finfo.tiny), ember.full_like(self.loc, 1 - finfo.eps),
                                validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-ember.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=self.loc, scale=-self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * euler_constant

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + euler_constant)
