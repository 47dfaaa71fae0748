"""The gamma distribution (mirrors ``torch/distributions/gamma.py``)."""
from __future__ import annotations

import numbers

import ember
from ember.distributions import constraints
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import broadcast_all

__all__ = ["Gamma"]


def _standard_gamma(concentration):
    return ember._standard_gamma(concentration)


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate); ``rsample`` divides ``_standard_gamma`` draws by the rate and is
    differentiated through the implicit reparameterisation (``_standard_gamma_grad``)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, numbers.Number) and isinstance(rate, numbers.Number):
            batch_shape = ember.Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, {"concentration": (), "rate": ()})

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=ember.finfo(value.dtype).tiny)
        return value

    def log_prob(self, value):
        value = ember.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (ember.xlogy(self.concentration, self.rate) + ember.xlogy(self.concentration - 1, value)
                - self.rate * value - ember.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - ember.log(self.rate) + ember.lgamma(self.concentration)
                + (1.0 - self.concentration) * ember.digamma(self.concentration))

    @property
    def _natural_params(self):
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x, y):
        return ember.lgamma(x + 1) + (x + 1) * ember.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ember.special.gammainc(self.concentration, self.rate * value)
