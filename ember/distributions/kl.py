"""Kullback-Leibler divergences ``KL(p || q)`` (mirrors ``torch/distributions/kl.py``): closed forms
registered per pair of distribution types; lookup takes the most specific registered pair by subclassing,
exponential families of one type fall back to the Bregman divergence of their log normaliser."""
from __future__ import annotations

import math
import warnings

import ember
from ember.distributions.bernoulli import Bernoulli
from ember.distributions.beta import Beta
from ember.distributions.binomial import Binomial
from ember.distributions.categorical import Categorical
from ember.distributions.cauchy import Cauchy
from ember.distributions.continuous_bernoulli import ContinuousBernoulli
from ember.distributions.dirichlet import Dirichlet
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.exponential import Exponential
from ember.distributions.gamma import Gamma
from ember.distributions.geometric import Geometric
from ember.distributions.gumbel import Gumbel
from ember.distributions.half_normal import HalfNormal
from ember.distributions.independent import Independent
from ember.distributions.laplace import Laplace
from ember.distributions.lowrank_multivariate_normal import (LowRankMultivariateNormal, _batch_lowrank_logdet,
                                                             _batch_lowrank_mahalanobis)
from ember.distributions.multivariate_normal import MultivariateNormal, _batch_mahalanobis
from ember.distributions.normal import Normal
from ember.distributions.one_hot_categorical import OneHotCategorical
from ember.distributions.pareto import Pareto
from ember.distributions.poisson import Poisson
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.uniform import Uniform
from ember.distributions.utils import _sum_rightmost, euler_constant as _euler_gamma

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY: dict = {}   # (type_p, type_q) -> function: what was registered
_KL_MEMOIZE: dict = {}    # (type(p), type(q)) -> function: resolved lookups


def register_kl(type_p, type_q):
    """Decorator registering ``fun(p, q)`` as the KL divergence for ``p`` of ``type_p`` and ``q`` of
    ``type_q`` (and their subclasses, unless a more specific pair is registered)."""
    if not isinstance(type_p, type) and issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) and issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun
    return decorator


def _most_specific(pairs):
    """The pair that is most specific in its first type, ties broken by the second (single inheritance:
    a subclass is more specific than its bases)."""
    def more_specific(a, b):
        for x, y in zip(a, b):
            if x is not y:
                return issubclass(x, y)
        return True
    best = pairs[0]
    for pair in pairs[1:]:
        if more_specific(pair, best):
            best = pair
    return best


def _dispatch_kl(type_p, type_q):
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented
    left_p, left_q = _most_specific(matches)
    right_q, right_p = _most_specific([(q, p) for p, q in matches])
    left_fun, right_fun = _KL_REGISTRY[left_p, left_q], _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})", RuntimeWarning, stacklevel=2)
    return left_fun


def kl_divergence(p, q):
    """``KL(p || q) = E_p[log p(x) - log q(x)]``, a tensor of shape ``batch_shape``; NotImplementedError for
    pairs without a registered closed form."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fun(p, q)


def _infinite_like(tensor):
    return ember.full_like(tensor, math.inf)


def _x_log_x(tensor):
    return ember.special.xlogy(tensor, tensor)  # 0 at 0


def _batch_trace_XXT(bmat):
    """``trace(X X^T)`` over trailing batch dimensions: the sum of squares of each matrix."""
    m, n = bmat.size(-2), bmat.size(-1)
    return bmat.reshape(-1, m * n).pow(2).sum(-1).reshape(bmat.shape[:-2])


def _log_det_tril(L):
    return L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


# -- same family ----------------------------------------------------------------------------------
@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    softplus = ember.nn.functional.softplus
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1[q.probs == 0] = math.inf
    t1[p.probs == 0] = 0
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2[q.probs == 1] = math.inf
    t2[p.probs == 1] = 0
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * ember.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * ember.digamma(p.concentration0)
    t5 = (sum_q - sum_p) * ember.digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if (p.total_count < q.total_count).any():
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    inf_idxs = p.total_count > q.total_count
    kl[inf_idxs] = _infinite_like(kl[inf_idxs])
    return kl


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t[(q.probs == 0).expand_as(t)] = math.inf
    t[(p.probs == 0).expand_as(t)] = 0
    return t.sum(-1)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + ember.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - ember.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log normaliser F: ``F(q) - F(p) - <theta_q - theta_p, grad F(p)>``."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot "
                                  "be computed using Bregman divergences")
    p_nparams = [t.detach().requires_grad_() for t in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = ember.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        result = result - _sum_rightmost((qnp - pnp) * g, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = ember.lgamma(q.concentration) - ember.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * ember.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * _euler_gamma
    t3 = ember.exp(ct2 + (1 + ct1).lgamma() - ct3)
    return t1 + t2 + t3 - (1 + _euler_gamma)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - ember.log1p(-q.probs) / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * ember.exp(-loc_abs_diff / p.scale) - 1


def _check_event_shapes(p, q, what):
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {what} with different event shapes cannot be computed")


def _woodbury_factor(q):
    """``A = C^-1 W^T D^-1`` of a low-rank normal q (C its capacitance Cholesky factor)."""
    qWt_qDinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return ember.linalg.solve_triangular(q._capacitance_tril, qWt_qDinv, upper=False)


def _lowrank_logdet(d):
    return _batch_lowrank_logdet(d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag, d._capacitance_tril)


def _lowrank_mahalanobis_of_loc_diff(p, q):
    return _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q.loc - p.loc,
                                      q._capacitance_tril)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p, q):
    _check_event_shapes(p, q, "Low Rank Multivariate Normals")
    term1 = _lowrank_logdet(q) - _lowrank_logdet(p)
    term3 = _lowrank_mahalanobis_of_loc_diff(p, q)
    A = _woodbury_factor(q)
    term21 = (p._unbroadcasted_cov_diag / q._unbroadcasted_cov_diag).sum(-1)
    term22 = _batch_trace_XXT(p._unbroadcasted_cov_factor * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term23 = _batch_trace_XXT(A * p._unbroadcasted_cov_diag.sqrt().unsqueeze(-2))
    term24 = _batch_trace_XXT(A.matmul(p._unbroadcasted_cov_factor))
    return 0.5 * (term1 + term21 + term22 - term23 - term24 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p, q):
    _check_event_shapes(p, q, "(Low Rank) Multivariate Normals")
    term1 = _lowrank_logdet(q) - 2 * _log_det_tril(p._unbroadcasted_scale_tril)
    term3 = _lowrank_mahalanobis_of_loc_diff(p, q)
    A = _woodbury_factor(q)
    term21 = _batch_trace_XXT(p._unbroadcasted_scale_tril * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term22 = _batch_trace_XXT(A.matmul(p._unbroadcasted_scale_tril))
    return 0.5 * (term1 + term21 - term22 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p, q):
    _check_event_shapes(p, q, "(Low Rank) Multivariate Normals")
    term1 = 2 * _log_det_tril(q._unbroadcasted_scale_tril) - _lowrank_logdet(p)
    term3 = _batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    batch = tuple(ember.broadcast_shapes(q._unbroadcasted_scale_tril.shape[:-2],
                                         p._unbroadcasted_cov_factor.shape[:-2]))
    n = p.event_shape[0]
    q_scale_tril = q._unbroadcasted_scale_tril.expand(batch + (n, n))
    p_cov_factor = p._unbroadcasted_cov_factor.expand(batch + (n, p.cov_factor.size(-1)))
    p_cov_diag = ember.diag_embed(p._unbroadcasted_cov_diag.sqrt()).expand(batch + (n, n))
    term21 = _batch_trace_XXT(ember.linalg.solve_triangular(q_scale_tril, p_cov_factor, upper=False))
    term22 = _batch_trace_XXT(ember.linalg.solve_triangular(q_scale_tril, p_cov_diag, upper=False))
    return 0.5 * (term1 + term21 + term22 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    _check_event_shapes(p, q, "Multivariate Normals")
    half_term1 = _log_det_tril(q._unbroadcasted_scale_tril) - _log_det_tril(p._unbroadcasted_scale_tril)
    batch = tuple(ember.broadcast_shapes(q._unbroadcasted_scale_tril.shape[:-2],
                                         p._unbroadcasted_scale_tril.shape[:-2]))
    n = p.event_shape[0]
    q_scale_tril = q._unbroadcasted_scale_tril.expand(batch + (n, n))
    p_scale_tril = p._unbroadcasted_scale_tril.expand(batch + (n, n))
    term2 = _batch_trace_XXT(ember.linalg.solve_triangular(q_scale_tril, p_scale_tril, upper=False))
    term3 = _batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    result[p.support.lower_bound < q.support.lower_bound] = math.inf
    return result


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    result[(q.low > p.low) | (q.high < p.high)] = math.inf
    return result


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


# -- different families: q's support does not cover p's -> infinity ----------------------------------
def _register_infinite(p_type, q_types, param):
    def fun(p, q):
        return _infinite_like(getattr(p, param))
    fun.__name__ = f"_kl_{p_type.__name__.lower()}_infinity"
    for q_type in q_types:
        register_kl(p_type, q_type)(fun)


_BOUNDED = (Beta, ContinuousBernoulli, Pareto, Uniform)
_register_infinite(Beta, (Pareto,), "concentration1")
_register_infinite(ContinuousBernoulli, (Pareto,), "probs")
_register_infinite(Exponential, _BOUNDED, "rate")
_register_infinite(Gamma, _BOUNDED, "concentration")
_register_infinite(Gumbel, _BOUNDED + (Exponential, Gamma), "loc")
_register_infinite(Laplace, _BOUNDED + (Exponential, Gamma), "loc")
_register_infinite(Normal, _BOUNDED + (Exponential, Gamma), "loc")
_register_infinite(Pareto, (Beta, ContinuousBernoulli, Uniform), "scale")
_register_infinite(Poisson, (Bernoulli, Binomial), "rate")


# -- different families: closed forms ---------------------------------------------------------------
@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    return -p.entropy() - p.mean * q.logits - ember.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0))


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (q.concentration - 1) * (p.concentration1.digamma() - (p.concentration1 + p.concentration0).digamma())
    t4 = q.rate * p.concentration1 / (p.concentration1 + p.concentration0)
    return -p.entropy() + t2 - t3 + t4


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    E_beta = p.concentration1 / (p.concentration1 + p.concentration0)
    var_normal = q.scale.pow(2)
    t2 = 0.5 * (var_normal * 2 * math.pi).log()
    t3 = (E_beta * (1 - E_beta) / (p.concentration1 + p.concentration0 + 1) + E_beta.pow(2)) * 0.5
    t4 = q.loc * E_beta
    t5 = q.loc.pow(2) * 0.5
    return -p.entropy() + t2 + (t3 - t4 + t5) / var_normal


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    result[(q.low > p.support.lower_bound) | (q.high < p.support.upper_bound)] = math.inf
    return result


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -p.entropy() - ember.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    t2 = 0.5 * (math.log(2.0 * math.pi) + ember.square(q.loc / q.scale)) + ember.log(q.scale)
    t3 = (p.variance + ember.square(p.mean) - 2.0 * q.loc * p.mean) / (2.0 * ember.square(q.scale))
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    outside = ember.max(ember.ge(q.low, p.support.lower_bound), ember.le(q.high, p.support.upper_bound))
    return ember.where(outside, ember.ones_like(result) * math.inf, result)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    return (-q.concentration * ember.log(ratio) + ratio + q.concentration.lgamma() + q.concentration * _euler_gamma
            - (1 + _euler_gamma))


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    scale_rate_prod = p.rate * q.scale
    loc_scale_ratio = q.loc / q.scale
    t1 = scale_rate_prod.log() - 1
    t2 = ember.exp(loc_scale_ratio) * scale_rate_prod / (scale_rate_prod + 1)
    return t1 - loc_scale_ratio + t2 + scale_rate_prod.reciprocal()


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    var_normal = q.scale.pow(2)
    rate_sqr = p.rate.pow(2)
    t1 = 0.5 * ember.log(rate_sqr * var_normal * 2 * math.pi)
    return t1 - 1 + (rate_sqr.reciprocal() - q.loc / p.rate + q.loc.pow(2) * 0.5) / var_normal


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    beta_scale_prod = p.rate * q.scale
    loc_scale_ratio = q.loc / q.scale
    t1 = (p.concentration - 1) * p.concentration.digamma() - p.concentration.lgamma() - p.concentration
    t2 = beta_scale_prod.log() + p.concentration / beta_scale_prod
    t3 = ember.exp(loc_scale_ratio) * (1 + beta_scale_prod.reciprocal()).pow(-p.concentration) - loc_scale_ratio
    return t1 + t2 + t3


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    var_normal = q.scale.pow(2)
    beta_sqr = p.rate.pow(2)
    t1 = 0.5 * ember.log(beta_sqr * var_normal * 2 * math.pi) - p.concentration - p.concentration.lgamma()
    t2 = 0.5 * (p.concentration.pow(2) + p.concentration) / beta_sqr
    t3 = q.loc * p.concentration / p.rate
    t4 = 0.5 * q.loc.pow(2)
    return t1 + (p.concentration - 1) * p.concentration.digamma() + (t2 - t3 + t4) / var_normal


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    param_ratio = p.scale / q.scale
    t1 = (param_ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * param_ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * _euler_gamma - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (_euler_gamma + 1)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    var_normal = q.scale.pow(2)
    scale_sqr_var_ratio = p.scale.pow(2) / var_normal
    t1 = 0.5 * ember.log(2 * scale_sqr_var_ratio / math.pi)
    t2 = 0.5 * p.loc.pow(2)
    t3 = p.loc * q.loc
    t4 = 0.5 * q.loc.pow(2)
    return -t1 + scale_sqr_var_ratio + (t2 - t3 + t4) / var_normal - 1


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    mean_scale_ratio = p.loc / q.scale
    var_scale_sqr_ratio = (p.scale / q.scale).pow(2)
    loc_scale_ratio = q.loc / q.scale
    t1 = var_scale_sqr_ratio.log() * 0.5
    t2 = mean_scale_ratio - loc_scale_ratio
    t3 = ember.exp(-mean_scale_ratio + 0.5 * var_scale_sqr_ratio + loc_scale_ratio)
    return -t1 + t2 + t3 - (0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    loc_diff = p.loc - q.loc
    scale_ratio = p.scale / q.scale
    loc_diff_scale_ratio = loc_diff / p.scale
    t1 = ember.log(scale_ratio)
    t2 = math.sqrt(2 / math.pi) * p.scale * ember.exp(-0.5 * loc_diff_scale_ratio.pow(2))
    t3 = loc_diff * ember.erf(math.sqrt(0.5) * loc_diff_scale_ratio)
    return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    scale_rate_prod = p.scale * q.rate
    t1 = (p.alpha / scale_rate_prod).log()
    t3 = p.alpha * scale_rate_prod / (p.alpha - 1)
    result = t1 - p.alpha.reciprocal() + t3 - 1
    result[p.alpha <= 1] = math.inf
    return result


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    common_term = p.scale.log() + p.alpha.reciprocal()
    t1 = p.alpha.log() - common_term
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * common_term
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    result = t1 + t2 + t3 + t4 - 1
    result[p.alpha <= 1] = math.inf
    return result


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    var_normal = 2 * q.scale.pow(2)
    common_term = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * common_term.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common_term - q.loc).pow(2)
    result = t1 - p.alpha.reciprocal() + (t3 + t4) / var_normal - 1
    result[p.alpha <= 2] = math.inf
    return result


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    common_term = p.high - p.low
    t1 = ember.log(common_term)
    t2 = (q.concentration1 - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - common_term) / common_term
    t3 = (q.concentration0 - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + common_term) / common_term
    t4 = q.concentration1.lgamma() + q.concentration0.lgamma() - (q.concentration1 + q.concentration0).lgamma()
    result = t3 + t4 - t1 - t2
    result[(p.high > q.support.upper_bound) | (p.low < q.support.lower_bound)] = math.inf
    return result


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    result = -p.entropy() - p.mean * q.logits - ember.log1p(-q.probs) - q._cont_bern_log_norm()
    outside = ember.max(ember.ge(p.high, q.support.upper_bound), ember.le(p.low, q.support.lower_bound))
    return ember.where(outside, ember.ones_like(result) * math.inf, result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponetial(p, q):
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    result[p.low < q.support.lower_bound] = math.inf
    return result


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    common_term = p.high - p.low
    t1 = common_term.log()
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - common_term) / common_term
    t4 = q.rate * (p.high + p.low) / 2
    result = -t1 + t2 + t3 + t4
    result[p.low < q.support.lower_bound] = math.inf
    return result


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    common_term = q.scale / (p.high - p.low)
    high_loc_diff = (p.high - q.loc) / q.scale
    low_loc_diff = (p.low - q.loc) / q.scale
    t1 = common_term.log() + 0.5 * (high_loc_diff + low_loc_diff)
    t2 = common_term * (ember.exp(-high_loc_diff) - ember.exp(-low_loc_diff))
    return t1 - t2


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    common_term = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / common_term).log()
    t2 = common_term.pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    support_uniform = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * support_uniform).log()
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - support_uniform) / support_uniform
    result = t2 * (q.alpha + 1) - t1
    result[p.low < q.support.lower_bound] = math.inf
    return result
