"""``ember.distributions`` (mirrors ``torch/distributions``): Normal, Categorical, Bernoulli, Uniform."""
from ember.distributions import constraints  # noqa: F401
from ember.distributions.bernoulli import Bernoulli
from ember.distributions.categorical import Categorical
from ember.distributions.distribution import Distribution
from ember.distributions.normal import Normal
from ember.distributions.uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "Normal", "Uniform", "constraints"]
