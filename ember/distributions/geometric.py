"""The geometric distribution (mirrors ``torch/distributions/geometric.py``): the number of failures
before the first success."""
from __future__ import annotations

import numbers

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    """Geometric(probs=... or logits=...) over 0, 1, 2, ...; samples are ``floor(log(u) / log1p(-p))``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        probs_or_logits = probs if probs is not None else logits
        if isinstance(probs_or_logits, numbers.Number):
            batch_shape = ember.Size()
        else:
            batch_shape = probs_or_logits.size()
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not valid.all():
                raise ValueError(f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) of "
                                 f"distribution {repr(self)} to be positive but found invalid values:\n"
                                 f"{value.data[~valid]}")

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Geometric, batch_shape, _instance, {"probs": (), "logits": ()})

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return ember.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        tiny = ember.finfo(self.probs.dtype).tiny
        with ember.no_grad():
            u = self.probs.new_empty(shape).uniform_(tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = probs.clone(memory_format=ember.contiguous_format)
        probs[(probs == 1) & (value == 0)] = 0
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return ember.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                                   reduction="none") / self.probs
