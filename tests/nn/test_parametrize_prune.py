"""nn.utils.parametrize / parametrizations (weight_norm, spectral_norm, orthogonal) and nn.utils.prune
against PyTorch: state_dict keys, repr, values after the same seed, gradients, training steps, removal."""
import numpy as np
import pytest

import ember
import ember.nn as enn

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
pytest.importorskip("torch.nn.utils.prune")
tnn = torch.nn


def _close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name,ctor,shape", [
    ("weight_norm", lambda nn: nn.utils.parametrizations.weight_norm(nn.Linear(3, 4).double()), (2, 3)),
    ("weight_norm-dim-None", lambda nn: nn.utils.parametrizations.weight_norm(nn.Conv2d(2, 3, 2).double(), dim=None),
     (2, 2, 4, 4)),
    ("spectral_norm", lambda nn: nn.utils.parametrizations.spectral_norm(nn.Linear(5, 4).double()), (2, 5)),
    ("spectral_norm-convT", lambda nn: nn.utils.parametrizations.spectral_norm(nn.ConvTranspose2d(2, 3, 2).double()),
     (2, 2, 4, 4)),
    ("orthogonal-square", lambda nn: nn.utils.parametrizations.orthogonal(nn.Linear(4, 4).double()), (2, 4)),
    ("orthogonal-tall", lambda nn: nn.utils.parametrizations.orthogonal(nn.Linear(3, 5).double()), (2, 3)),
    ("orthogonal-cayley", lambda nn: nn.utils.parametrizations.orthogonal(nn.Linear(4, 4).double(),
                                                                          orthogonal_map="cayley"), (2, 4)),
])
def test_parametrizations_match_pytorch(name, ctor, shape):
    ember.manual_seed(0)
    torch.manual_seed(0)
    em, tm = ctor(enn), ctor(tnn)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    for (k, a), (_, b) in zip(em.state_dict().items(), tm.state_dict().items()):
        _close(a, b, rtol=1e-9, atol=1e-12)
    _close(em.weight, tm.weight, rtol=1e-9, atol=1e-12)
    x = np.random.default_rng(0).standard_normal(shape)
    for step in range(2):                               # two training steps: power iteration state evolves
        eo, to = em(ember.tensor(x)), tm(torch.tensor(x))
        _close(eo, to, rtol=1e-8, atol=1e-10)
        eo.pow(2).sum().backward()
        to.pow(2).sum().backward()
        for (k, p), (_, q) in zip(em.named_parameters(), tm.named_parameters()):
            _close(p.grad, q.grad, rtol=1e-7, atol=1e-9)
            with ember.no_grad():
                p -= 0.01 * p.grad
            with torch.no_grad():
                q -= 0.01 * q.grad
            p.grad = None
            q.grad = None
    if name.startswith("orthogonal"):
        w = em.weight.detach().numpy()
        m = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
        np.testing.assert_allclose(m, np.eye(m.shape[0]), atol=1e-10)


def test_parametrize_core_register_assign_remove():
    class Symmetric(enn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()

    m = enn.Linear(3, 3)
    P = enn.utils.parametrize
    P.register_parametrization(m, "weight", Symmetric())
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight") and not P.is_parametrized(m, "bias")
    assert type(m).__name__ == "ParametrizedLinear" and P.type_before_parametrizations(m) is enn.Linear
    w = m.weight.detach().numpy()
    np.testing.assert_array_equal(w, w.T)
    A = ember.tensor(np.arange(9.0).reshape(3, 3), dtype=ember.float32)
    m.weight = A + A.T                                   # goes through right_inverse
    np.testing.assert_array_equal(m.weight.detach().numpy(), (A + A.T).numpy())
    with P.cached():
        assert m.weight is m.weight
    P.remove_parametrizations(m, "weight")
    assert type(m) is enn.Linear and isinstance(m.weight, enn.Parameter)
    np.testing.assert_array_equal(m.weight.detach().numpy(), (A + A.T).numpy())
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(m, "weight")


def test_weight_norm_loads_old_style_keys():
    m = enn.utils.parametrizations.weight_norm(enn.Linear(3, 2))
    sd = {"weight_g": ember.ones(2, 1), "weight_v": ember.ones(2, 3), "bias": ember.zeros(2)}
    m.load_state_dict(sd)
    np.testing.assert_allclose(m.weight.detach().numpy(), np.full((2, 3), 1 / np.sqrt(3)), rtol=1e-6)


def _prune_pair(fn):
    ember.manual_seed(0)
    torch.manual_seed(0)
    em, tm = enn.Conv2d(3, 4, 2).double(), tnn.Conv2d(3, 4, 2).double()
    fn(enn.utils.prune, em)
    fn(torch.nn.utils.prune, tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    for (k, a), (_, b) in zip(em.state_dict().items(), tm.state_dict().items()):
        _close(a, b, rtol=1e-6, atol=1e-7)
    _close(em.weight, tm.weight, rtol=1e-6, atol=1e-7)
    return em, tm


@pytest.mark.parametrize("fn", [
    lambda P, m: P.l1_unstructured(m, "weight", amount=0.3),
    lambda P, m: P.l1_unstructured(m, "bias", amount=2),
    lambda P, m: P.random_unstructured(m, "weight", amount=0.5),
    lambda P, m: P.ln_structured(m, "weight", amount=0.5, n=2, dim=0),
    lambda P, m: P.random_structured(m, "weight", amount=2, dim=1),
    lambda P, m: (P.l1_unstructured(m, "weight", amount=0.3), P.ln_structured(m, "weight", 1, n=1, dim=0),
                  P.l1_unstructured(m, "weight", amount=0.2)),
    lambda P, m: P.custom_from_mask(m, "bias", mask=(m.bias.detach() > 0).to(m.bias.dtype)),
])
def test_pruning_matches_pytorch(fn):
    em, tm = _prune_pair(fn)
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 4))
    eo, to = em(ember.tensor(x)), tm(torch.tensor(x))
    _close(eo, to, rtol=1e-6, atol=1e-7)
    eo.sum().backward()
    to.sum().backward()
    for (k, p), (_, q) in zip(em.named_parameters(), tm.named_parameters()):
        _close(p.grad, q.grad, rtol=1e-6, atol=1e-7)
    assert enn.utils.prune.is_pruned(em)


def test_global_unstructured_and_remove():
    def fn(P, m):
        P.global_unstructured([(m, "weight"), (m, "bias")], pruning_method=P.L1Unstructured, amount=10)
    em, tm = _prune_pair(fn)
    assert int((em.weight_mask == 0).sum() + (em.bias_mask == 0).sum()) == 10
    enn.utils.prune.remove(em, "weight")
    torch.nn.utils.prune.remove(tm, "weight")
    assert list(em.state_dict()) == list(tm.state_dict())
    assert isinstance(em.weight, enn.Parameter)
    _close(em.weight, tm.weight, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        enn.utils.prune.remove(em, "weight")
    with pytest.raises(ValueError, match="should either be a float in the range"):
        enn.utils.prune.l1_unstructured(em, "bias", amount=1.5)
