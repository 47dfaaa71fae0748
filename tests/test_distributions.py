"""ember.distributions and ember.testing.assert_close against PyTorch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def vals(t):
    return np.asarray(t.detach().numpy()) if hasattr(t, "detach") else np.asarray(t)


CASES = {
    "Normal": lambda lib: lib.distributions.Normal(lib.tensor([0.0, 1.0, -2.0]), lib.tensor([1.0, 0.5, 2.0])),
    "Normal-scalar": lambda lib: lib.distributions.Normal(1.0, 3.0),
    "Categorical-probs": lambda lib: lib.distributions.Categorical(probs=lib.tensor([[0.2, 0.3, 0.5],
                                                                                    [0.6, 0.2, 0.2]])),
    "Categorical-logits": lambda lib: lib.distributions.Categorical(logits=lib.tensor([0.1, -1.0, 2.0, 0.5])),
    "Bernoulli-probs": lambda lib: lib.distributions.Bernoulli(probs=lib.tensor([0.1, 0.5, 0.9])),
    "Bernoulli-logits": lambda lib: lib.distributions.Bernoulli(logits=lib.tensor([-1.0, 0.0, 3.0])),
    "Uniform": lambda lib: lib.distributions.Uniform(lib.tensor([0.0, -1.0]), lib.tensor([1.0, 3.0])),
}
VALUES = {"Normal": [0.3, -1.0, 2.5], "Normal-scalar": 0.7, "Categorical-probs": [2, 0],
          "Categorical-logits": 3, "Bernoulli-probs": [1.0, 0.0, 1.0], "Bernoulli-logits": [0.0, 1.0, 1.0],
          "Uniform": [0.5, 2.0]}


@pytest.mark.parametrize("name", list(CASES))
def test_distribution_matches_pytorch(name):
    out = {}
    for lib in (ember, torch):
        lib.manual_seed(3)
        d = CASES[name](lib)
        v = lib.tensor(VALUES[name])
        r = {"sample": d.sample((4,)), "log_prob": d.log_prob(v), "entropy": d.entropy(),
             "batch_shape": tuple(d.batch_shape), "event_shape": tuple(d.event_shape)}
        if d.has_rsample:
            r["rsample"] = d.rsample((2,))
        if not name.startswith("Categorical"):
            r["mean"], r["variance"], r["stddev"] = d.mean, d.variance, d.stddev
        out[lib.__name__] = r
    e, t = out["ember"], out["torch"]
    assert e.keys() == t.keys()
    for k in e:
        if isinstance(e[k], tuple):
            assert e[k] == t[k], k
        else:
            np.testing.assert_allclose(vals(e[k]), vals(t[k]), rtol=1e-6, atol=1e-7, err_msg=k)


def test_rsample_is_differentiable_and_log_prob_gradients_match():
    grads = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        loc = lib.tensor([0.5, -0.5], requires_grad=True)
        scale = lib.tensor([1.0, 2.0], requires_grad=True)
        d = lib.distributions.Normal(loc, scale)
        (d.rsample((3,)).sum() + d.log_prob(lib.tensor([0.1, 0.2])).sum()).backward()
        grads.append((vals(loc.grad), vals(scale.grad)))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("case", [
    lambda D, lib: D.Normal(0.0, -1.0),
    lambda D, lib: D.Bernoulli(probs=lib.tensor([1.5])),
    lambda D, lib: D.Categorical(probs=lib.tensor([0.5, 0.5]), logits=lib.tensor([0.0, 0.0])),
    lambda D, lib: D.Categorical(probs=lib.tensor(0.5)),
    lambda D, lib: D.Uniform(2.0, 1.0),
    lambda D, lib: D.Normal(0.0, 1.0).log_prob(1.0),
    lambda D, lib: D.Bernoulli(probs=lib.tensor([0.5])).log_prob(lib.tensor([0.5])),
    lambda D, lib: D.Categorical(probs=lib.tensor([0.5, 0.5])).log_prob(lib.tensor(3)),
])
def test_validation_errors_match_pytorch(case, monkeypatch):
    # with validation on, PyTorch's default (a test that started PyTorch's dynamo in this worker switched it off)
    monkeypatch.setattr(torch.distributions.Distribution, "_validate_args", True)
    with pytest.raises(Exception) as te:
        case(torch.distributions, torch)
    with pytest.raises(type(te.value)) as ee:
        case(ember.distributions, ember)
    assert str(ee.value).replace("ember.", "torch.") == str(te.value)


def test_assert_close():
    ac = ember.testing.assert_close
    ac(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0 + 1e-7]))
    ac({"a": [ember.ones(2), 3]}, {"a": [ember.ones(2), 3]})
    ac(1.0, 1.0 + 1e-9)
    with pytest.raises(AssertionError) as e:
        ac(ember.tensor([1.0, 2.0, 3.0]), ember.tensor([1.0, 2.5, 3.0]))
    t = pytest.raises(AssertionError, torch.testing.assert_close, torch.tensor([1.0, 2.0, 3.0]),
                      torch.tensor([1.0, 2.5, 3.0]))
    assert str(e.value) == str(t.value)
    with pytest.raises(AssertionError, match="The values for attribute 'dtype' do not match"):
        ac(ember.ones(2), ember.ones(2, dtype=ember.float64))
    with pytest.raises(AssertionError, match="The values for attribute 'shape' do not match"):
        ac(ember.ones(2), ember.ones(3))
    ac(ember.tensor([float("nan")]), ember.tensor([float("nan")]), equal_nan=True)
    with pytest.raises(AssertionError, match="custom"):
        ac(ember.ones(1), ember.zeros(1), msg="custom")
    ac(ember.ones(2), ember.ones(2) * 1.01, rtol=0.02, atol=0.0)
