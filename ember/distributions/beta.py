"""The beta distribution (mirrors ``torch/distributions/beta.py``): the first coordinate of a
two-dimensional Dirichlet."""
from __future__ import annotations

import numbers

import ember
from ember.distributions import constraints
from ember.distributions.dirichlet import Dirichlet
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import broadcast_all

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    """Beta(concentration1, concentration0)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, numbers.Real) and isinstance(concentration0, numbers.Real):
            concentration1_concentration0 = ember.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            concentration1_concentration0 = ember.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(concentration1_concentration0, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = ember.Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        super(Beta, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = ember.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def concentration1(self):
        result = self._dirichlet.concentration[..., 0]
        return ember.tensor([result]) if isinstance(result, numbers.Number) else result

    @property
    def concentration0(self):
        result = self._dirichlet.concentration[..., 1]
        return ember.tensor([result]) if isinstance(result, numbers.Number) else result

    @property
    def _natural_params(self):
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x, y):
        return ember.lgamma(x) + ember.lgamma(y) - ember.lgamma(x + y)
