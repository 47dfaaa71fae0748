"""The LKJ distribution over Cholesky factors of correlation matrices (mirrors
``torch/distributions/lkj_cholesky.py``); samples by the onion method (Lewandowski, Kurowicka and Joe,
2009, section 3.2), vectorised over rows."""
from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.beta import Beta
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJCholesky(dim, concentration=1.0): ``L L^T`` has density proportional to ``det ** (concentration - 1)``."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = ember.Size((dim, dim))
        # the Beta draws of the onion method, one per row (the first row's is unused)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = ember.arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = ember.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = ember.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=ember.Size()):
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        u_normal = ember.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
        u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
        u_hypersphere[..., 0, :].fill_(0.0)  # the first row is 0 / 0
        w = ember.sqrt(y) * u_hypersphere
        eps = ember.finfo(w.dtype).tiny
        diag_elems = ember.clamp(1 - ember.sum(w ** 2, dim=-1), min=eps).sqrt()
        return w + ember.diag_embed(diag_elems)

    def log_prob(self, value):
        """``sum_i (2 (concentration - 1) + D - i) log L_ii`` (the density of the correlation matrix times
        the Jacobian of ``L -> L L^T``), minus the normalising constant."""
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ember.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = ember.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = ember.lgamma(alpha) * dm1
        numerator = ember.mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)
