"""The Dirichlet distribution (mirrors ``torch/distributions/dirichlet.py``)."""
from __future__ import annotations

import ember
from ember.autograd import Function
from ember.distributions import constraints
from ember.distributions.exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


def _Dirichlet_backward(x, concentration, grad_output):
    """The implicit reparameterisation gradient of Dirichlet samples ``x`` (``_dirichlet_grad``), projected
    onto the simplex's tangent space."""
    total = concentration.sum(-1, True).expand_as(concentration)
    grad = ember._dirichlet_grad(x, concentration, total)
    return grad * (grad_output - (x * grad_output).sum(-1, True))


class _Dirichlet(Function):
    @staticmethod
    def forward(ctx, concentration):
        x = ember._sample_dirichlet(concentration)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        return _Dirichlet_backward(x, concentration, grad_output)


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration) over the simplex of the last dimension."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Dirichlet, batch_shape, _instance, {"concentration": tuple(self.event_shape)})

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        concentration = self.concentration.expand(shape)
        return _Dirichlet.apply(concentration)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (ember.xlogy(self.concentration - 1.0, value).sum(-1) + ember.lgamma(self.concentration.sum(-1))
                - ember.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        mask = (self.concentration < 1).all(dim=-1)
        mode[mask] = ember.nn.functional.one_hot(mode[mask].argmax(dim=-1), concentrationm1.shape[-1]).to(mode)
        return mode

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (ember.lgamma(self.concentration).sum(-1) - ember.lgamma(a0) - (k - a0) * ember.digamma(a0)
                - ((self.concentration - 1.0) * ember.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - ember.lgamma(x.sum(-1))
