"""Exponential families (mirrors ``torch/distributions/exp_family.py``): densities
``p(x; theta) = exp(<t(x), theta> - F(theta) + k(x))``; the entropy follows from the log normaliser F by
automatic differentiation, and the KL divergence between two members is a Bregman divergence of F."""
from __future__ import annotations

import ember
from ember.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Subclasses give ``_natural_params``, ``_log_normalizer(*natural_params)`` and ``_mean_carrier_measure``."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """``F(theta) - <theta, grad F(theta)> - E[k(x)]``."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = ember.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for p, g in zip(nparams, gradients):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
