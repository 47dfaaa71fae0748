"""The base class of distributions (mirrors ``torch/distributions/distribution.py`` and ``utils.py``)."""
from __future__ import annotations

import warnings

import ember
from ember.distributions import constraints
from ember.distributions.utils import (  # noqa: F401  (their historical home)
    broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits)

__all__ = ["Distribution"]


class Distribution:
    """A parametrised probability distribution with ``batch_shape`` and ``event_shape``; subclasses give
    ``sample`` / ``rsample`` / ``log_prob`` / ``entropy``.  Arguments and samples are validated against
    their constraints unless ``validate_args=False`` (``Distribution.set_default_validate_args``)."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=ember.Size(), event_shape=ember.Size(), validate_args=None):
        self._batch_shape = ember.Size(batch_shape)
        self._event_shape = ember.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {repr(self)} to satisfy the constraint "
                                     f"{repr(constraint)}, but found invalid values:\n{value}")

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=ember.Size()):
        raise NotImplementedError

    def sample_n(self, n):
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning, stacklevel=2)
        return self.sample(ember.Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def expand(self, batch_shape, _instance=None):
        raise NotImplementedError

    def _expand_params(self, cls, batch_shape, _instance, params, event_shape=None):
        """A copy of ``self`` over ``batch_shape``: each parameter tensor named in ``params`` (a dict of
        name -> the shape of its own trailing event part) is expanded, others are left out."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = ember.Size(batch_shape)
        for name, tail in params.items():
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(tuple(batch_shape) + tuple(tail)))
        Distribution.__init__(new, batch_shape, self._event_shape if event_shape is None else event_shape,
                              validate_args=False)
        new._validate_args = self._validate_args
        return new

    def perplexity(self):
        return ember.exp(self.entropy())

    def _extended_shape(self, sample_shape=ember.Size()):
        if not isinstance(sample_shape, ember.Size):
            sample_shape = ember.Size(sample_shape)
        return ember.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value) -> None:
        if not isinstance(value, ember.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if tuple(value.size()[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {value.size()} vs "
                             f"{self._event_shape}.")
        actual_shape = value.size()
        expected_shape = ember.Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                 f"{expected_shape}.")
        support = self.support
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({repr(support)}) of the distribution {repr(self)}, but found "
                             f"invalid values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
                         for p in names)
        return self.__class__.__name__ + "(" + args + ")"
