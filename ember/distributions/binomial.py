"""The binomial distribution (mirrors ``torch/distributions/binomial.py``)."""
from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Binomial"]


def _clamp_by_zero(x):
    """``max(x, 0)`` with gradient 1/2 at 0."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(Distribution):
    """Binomial(total_count=1, probs=... or logits=...); samples are ``torch.binomial`` draws."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(Binomial, batch_shape, _instance, {"total_count": (), "probs": (), "logits": ()})
        new._param = new.__dict__.get("probs", new.__dict__.get("logits"))
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = ember.lgamma(self.total_count + 1)
        log_factorial_k = ember.lgamma(value + 1)
        log_factorial_nmk = ember.lgamma(self.total_count - value + 1)
        # n log(1 - p) written stably in the logits: n max(l, 0) + n log1p(exp(-|l|)) = -n log(1 - p)
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * ember.log1p(ember.exp(-ember.abs(self.logits))) - log_factorial_n)
        return value * self.logits - normalize_term - log_factorial_k - log_factorial_nmk

    def entropy(self):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(ember.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = ember.arange(1 + total_count, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
