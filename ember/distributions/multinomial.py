"""The multinomial distribution (mirrors ``torch/distributions/multinomial.py``)."""
from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.binomial import Binomial
from ember.distributions.categorical import Categorical
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """Multinomial(total_count=1, probs=... or logits=...): counts of ``total_count`` categorical draws."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = ember.Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=ember.Size()):
        sample_shape = ember.Size(sample_shape)
        samples = self._categorical.sample(ember.Size((self.total_count,)) + sample_shape)
        # (total_count, sample_shape, batch_shape) -> (sample_shape, batch_shape, total_count)
        shifted_idx = list(range(samples.dim()))
        shifted_idx.append(shifted_idx.pop(0))
        samples = samples.permute(*shifted_idx)
        counts = samples.new_zeros(self._extended_shape(sample_shape))
        counts.scatter_add_(-1, samples, ember.ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self):
        n = ember.tensor(self.total_count)
        cat_entropy = self._categorical.entropy()
        term1 = n * cat_entropy - ember.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = ember.exp(self._binomial.log_prob(support))
        weights = ember.lgamma(support + 1)
        term2 = (binomial_probs * weights).sum([0, -1])
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = logits.clone(memory_format=ember.contiguous_format)
        log_factorial_n = ember.lgamma(value.sum(-1) + 1)
        log_factorial_xs = ember.lgamma(value + 1).sum(-1)
        logits[(value == 0) & (logits == -math.inf)] = 0
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
