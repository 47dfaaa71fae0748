"""The Fisher-Snedecor F distribution (mirrors ``torch/distributions/fishersnedecor.py``)."""
from __future__ import annotations

import math
import numbers

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.gamma import Gamma
from ember.distributions.utils import broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """FisherSnedecor(df1, df2): the ratio of two scaled Gamma draws."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        if isinstance(df1, numbers.Number) and isinstance(df2, numbers.Number):
            batch_shape = ember.Size()
        else:
            batch_shape = self.df1.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(FisherSnedecor, batch_shape, _instance, {"df1": (), "df2": ()})
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self):
        df2 = self.df2.clone(memory_format=ember.contiguous_format)
        df2[df2 <= 2] = math.nan
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1
        mode[mode <= 0] = math.nan
        return mode * self.df2 / (self.df2 + 2)

    @property
    def variance(self):
        df2 = self.df2.clone(memory_format=ember.contiguous_format)
        df2[df2 <= 4] = math.nan
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=ember.Size(())):
        shape = self._extended_shape(sample_shape)
        X1 = self._gamma1.rsample(sample_shape).view(shape)
        X2 = self._gamma2.rsample(sample_shape).view(shape)
        tiny = ember.finfo(X2.dtype).tiny
        X2.clamp_(min=tiny)
        Y = X1 / X2
        Y.clamp_(min=tiny)
        return Y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * ember.log(value)
        t3 = (ct1 + ct2) * ember.log1p(ct3 * value)
        return t1 + t2 - t3
