"""Random streams identical to PyTorch's CPU generator (Note [PyTorch's CPU random transforms])."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def same(e, t):
    assert e.dtype.name == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.numpy(), t.numpy())  # bit for bit


@pytest.mark.parametrize("seed", [0, 1, 42, 2 ** 40 + 7])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(5,), (16,), (37,), (4, 25), (1000,)])
def test_rand_and_randn_match_pytorch_bit_for_bit(seed, dtype, shape):
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    for _ in range(2):  # the second draw checks the generator advanced identically
        same(ember.rand(*shape, dtype=getattr(ember, dtype)), torch.rand(*shape, dtype=getattr(torch, dtype)))
        same(ember.randn(*shape, dtype=getattr(ember, dtype)), torch.randn(*shape, dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("shape", [(3,), (8,), (9,), (4, 25)])
def test_complex_normals_draw_pytorchs_numbers(dtype, shape):
    """A complex normal is the real normal of its (real, imag) pairs, each part with std / sqrt(2)."""
    ember.manual_seed(5)
    torch.manual_seed(5)
    same(ember.randn(*shape, dtype=getattr(ember, dtype)), torch.randn(*shape, dtype=getattr(torch, dtype)))
    same(ember.empty(*shape, dtype=getattr(ember, dtype)).normal_(2.0, 3.0),
         torch.empty(*shape, dtype=getattr(torch, dtype)).normal_(2.0, 3.0))


@pytest.mark.parametrize("n", [1, 3, 15, 16, 17, 100])
def test_normal_and_uniform_in_place(n):
    ember.manual_seed(3)
    torch.manual_seed(3)
    same(ember.empty(n).normal_(2.0, 3.0), torch.empty(n).normal_(2.0, 3.0))
    same(ember.empty(n, dtype=ember.float64).normal_(-1.0, 0.5), torch.empty(n, dtype=torch.float64).normal_(-1.0, 0.5))
    same(ember.empty(n).uniform_(-2, 5), torch.empty(n).uniform_(-2, 5))
    same(ember.empty(n, dtype=ember.float64).uniform_(), torch.empty(n, dtype=torch.float64).uniform_())


def test_small_normals_use_the_generators_cached_second_value():
    ember.manual_seed(5)
    torch.manual_seed(5)
    for n in (1, 1, 3, 2, 5):  # odd counts leave a cached Box-Muller value for the next call
        same(ember.randn(n, dtype=ember.float64), torch.randn(n, dtype=torch.float64))
        same(ember.randn(n), torch.randn(n))


def test_noncontiguous_normal_takes_the_scalar_path():
    ember.manual_seed(9)
    torch.manual_seed(9)
    e = ember.empty(8, 4).t()
    t = torch.empty(8, 4).t()
    same(e.normal_(), t.normal_())


@pytest.mark.parametrize("low,high", [(0, 10), (-5, 5), (0, 2 ** 33), (3, 4)])
def test_randint_matches(low, high):
    ember.manual_seed(11)
    torch.manual_seed(11)
    same(ember.randint(low, high, (7, 3)), torch.randint(low, high, (7, 3)))
    same(ember.randint(high, (4,)), torch.randint(high, (4,)))


@pytest.mark.parametrize("n", [1, 2, 10, 1000])
def test_randperm_matches(n):
    ember.manual_seed(13)
    torch.manual_seed(13)
    same(ember.randperm(n), torch.randperm(n))


def test_random_in_place():
    ember.manual_seed(17)
    torch.manual_seed(17)
    same(ember.empty(6, dtype=ember.int64).random_(0, 100), torch.empty(6, dtype=torch.int64).random_(0, 100))
    same(ember.empty(6, dtype=ember.int64).random_(10), torch.empty(6, dtype=torch.int64).random_(10))


def test_bernoulli_with_probability_tensor():
    ember.manual_seed(19)
    torch.manual_seed(19)
    p = np.linspace(0, 1, 20).astype(np.float32)
    same(ember.bernoulli(ember.tensor(p)), torch.bernoulli(torch.tensor(p)))
    pd = np.linspace(0, 1, 20)
    same(ember.bernoulli(ember.tensor(pd)), torch.bernoulli(torch.tensor(pd)))


def test_multinomial_with_replacement():
    ember.manual_seed(23)
    torch.manual_seed(23)
    p = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    same(ember.multinomial(ember.tensor(p), 6, replacement=True),
         torch.multinomial(torch.tensor(p), 6, replacement=True))


def test_explicit_generators_are_independent_of_the_global_one():
    g = ember.Generator().manual_seed(7)
    tg = torch.Generator().manual_seed(7)
    ember.manual_seed(0)
    same(ember.rand(4, generator=g), torch.rand(4, generator=tg))
    same(ember.randn(20, generator=g), torch.randn(20, generator=tg))
    same(ember.randperm(9, generator=g), torch.randperm(9, generator=tg))
    assert g.initial_seed() == 7


def test_rng_state_round_trips_and_matches_pytorch_bytes():
    ember.manual_seed(29)
    torch.manual_seed(29)
    ember.randn(3, dtype=ember.float64)
    torch.randn(3, dtype=torch.float64)  # leaves a cached normal in both
    es, ts = ember.get_rng_state(), torch.get_rng_state()
    assert es.numel() == 5056
    np.testing.assert_array_equal(es.numpy(), ts.numpy())
    a = ember.rand(5)
    ember.set_rng_state(es)
    same(ember.rand(5), _as_torch(a))
    # a PyTorch state loads into ember and continues PyTorch's stream
    ember.set_rng_state(ember.tensor(ts.numpy()))
    same(ember.randn(33), torch.randn(33))


def _as_torch(e):
    return torch.from_numpy(e.numpy().copy())


def test_seed_and_initial_seed():
    ember.manual_seed(123)
    assert ember.initial_seed() == 123
    s = ember.seed()
    assert ember.initial_seed() == s


def test_meta_random_does_not_consume_the_generator():
    ember.manual_seed(31)
    torch.manual_seed(31)
    m = ember.randn(100, device="meta")
    assert m.shape == (100,) and m.is_meta
    same(ember.rand(3), torch.rand(3))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_multinomial_without_replacement(dtype, seed):
    p = np.random.default_rng(seed).random((3, 10)).astype(dtype)
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    same(ember.multinomial(ember.tensor(p), 4), torch.multinomial(torch.tensor(p), 4))


@pytest.mark.parametrize("n", [5, 16, 1000])
def test_bernoulli_with_scalar_probability(n):
    ember.manual_seed(37)
    torch.manual_seed(37)
    same(ember.empty(n).bernoulli_(0.3), torch.empty(n).bernoulli_(0.3))
    same(ember.empty(n, dtype=ember.float64).bernoulli_(0.7), torch.empty(n, dtype=torch.float64).bernoulli_(0.7))
    same(ember.bernoulli(ember.empty(n), 0.25), torch.bernoulli(torch.empty(n), 0.25))
    same(ember.empty(6, 4).t().bernoulli_(0.5), torch.empty(6, 4).t().bernoulli_(0.5))


DISTRIBUTIONS = [
    ("exponential_", (2.5,), ["float32", "float64", "float16", "bfloat16"]),
    ("cauchy_", (1.0, 3.0), ["float32", "float64"]),
    ("log_normal_", (0.2, 0.7), ["float32", "float64"]),
    ("geometric_", (0.3,), ["float32", "float64", "int64", "int32"]),
]


@pytest.mark.parametrize("method,args,dtypes", DISTRIBUTIONS, ids=[d[0] for d in DISTRIBUTIONS])
@pytest.mark.parametrize("shape", [(1,), (7, 5), (1000,)])
def test_in_place_distributions_draw_pytorchs_numbers(method, args, dtypes, shape):
    """One 53-bit double uniform per element, PyTorch's transforms in double (log_normal_: cached normal pairs);
    strided tensors are filled in memory order; the generator continues identically afterwards."""
    for dt in dtypes:
        ember.manual_seed(5)
        torch.manual_seed(5)
        e = getattr(ember.empty(*shape, dtype=getattr(ember, dt)), method)(*args)
        t = getattr(torch.empty(*shape, dtype=getattr(torch, dt)), method)(*args)
        if dt == "bfloat16":
            e, t = e.float(), t.float()
        same(e, t)
        et = getattr(ember.empty(*shape[::-1], dtype=getattr(ember, dt)).t(), method)(*args)
        tt = getattr(torch.empty(*shape[::-1], dtype=getattr(torch, dt)).t(), method)(*args)
        if dt == "bfloat16":
            et, tt = et.float(), tt.float()
        same(et, tt)
        same(ember.rand(3), torch.rand(3))


def test_poisson_draws_pytorchs_numbers_on_both_sides_of_rate_10():
    rates = np.array([0.0, 0.5, 3.0, 9.99, 10.0, 57.3, 1e4] * 20)
    for dt in ("float32", "float64"):
        ember.manual_seed(9)
        torch.manual_seed(9)
        same(ember.poisson(ember.tensor(rates.astype(dt))), torch.poisson(torch.from_numpy(rates.astype(dt))))
    g1, g2 = ember.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    same(ember.poisson(ember.tensor([2.0, 20.0]), g1), torch.poisson(torch.tensor([2.0, 20.0]), g2))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_gamma_dirichlet_and_binomial_draw_pytorchs_numbers(dt):
    """Note [PyTorch's gamma and binomial samplers]: one serial stream of uniforms and cached normals."""
    alphas = np.array([0.0, 0.01, 0.3, 0.999, 1.0, 1.5, 4.0, 9.0, 50.0, 1e3] * 8, dt)
    conc = np.random.default_rng(0).uniform(0.05, 20, (30, 4)).astype(dt)
    counts = np.array([0, 1, 5, 10, 20, 100, 1000, 37, 3e4] * 8, dt)
    probs = np.array([0.0, 0.1, 0.5, 0.9, 1.0, 0.03, 0.7, 0.45, 0.999] * 8, dt)
    for seed in (0, 7):
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        same(ember.randn(3), torch.randn(3))  # an odd count leaves a cached normal for the gamma sampler
        same(ember._standard_gamma(ember.tensor(alphas)), torch._standard_gamma(torch.from_numpy(alphas)))
        same(ember._sample_dirichlet(ember.tensor(conc)), torch._sample_dirichlet(torch.from_numpy(conc)))
        same(ember.binomial(ember.tensor(counts), ember.tensor(probs)),
             torch.binomial(torch.from_numpy(counts), torch.from_numpy(probs)))
        same(ember.binomial(ember.tensor(counts[:9]), ember.tensor(np.array(0.3, dt))),
             torch.binomial(torch.from_numpy(counts[:9]), torch.tensor(0.3, dtype=getattr(torch, dt))))
        same(ember.rand(5), torch.rand(5))
    g1, g2 = ember.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    same(ember._standard_gamma(ember.tensor(alphas[:5]), g1), torch._standard_gamma(torch.from_numpy(alphas[:5]), g2))


def test_standard_gamma_gradient_is_the_implicit_reparameterisation():
    a = np.array([0.2, 1.0, 3.0, 12.0])
    ea, ta = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ember.manual_seed(1)
    torch.manual_seed(1)
    es, ts = ember._standard_gamma(ea), torch._standard_gamma(ta)
    same(es.detach(), ts.detach())
    es.sum().backward()
    ts.sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="derivative for aten::_sample_dirichlet is not implemented"):
        ember._sample_dirichlet(ember.tensor([1.0, 2.0], requires_grad=True)).sum().backward()


@pytest.mark.parametrize("call", [
    lambda L: L.empty(3).exponential_(-1.0), lambda L: L.empty(3).exponential_(0.0),
    lambda L: L.empty(3, dtype=L.long).exponential_(), lambda L: L.empty(3).geometric_(1.5),
    lambda L: L.empty(3).cauchy_(0, -1), lambda L: L.empty(3, dtype=L.long).cauchy_(),
    lambda L: L.empty(3, dtype=L.complex64).cauchy_(), lambda L: L.empty(3, dtype=L.complex64).exponential_(),
    lambda L: L.empty(3).log_normal_(0, 0), lambda L: L.empty(3, dtype=L.long).log_normal_(),
    lambda L: L.empty(3, dtype=L.bool).geometric_(0.5), lambda L: L.poisson(L.tensor([1, 2])),
    lambda L: L._standard_gamma(L.tensor([1, 2])), lambda L: L.binomial(L.tensor([1, 2]), L.tensor([0.5, 0.5])),
    lambda L: L.binomial(L.tensor([1.0, 2]), L.tensor([0.5, 0.5], dtype=L.float64)),
    lambda L: L._sample_dirichlet(L.tensor([1, 2])),
])
def test_distribution_argument_errors_match_pytorch(call):
    with pytest.raises(Exception) as t_err:
        call(torch)
    with pytest.raises(type(t_err.value)) as e_err:
        call(ember)
    assert str(e_err.value) == str(t_err.value).split(" (Triggered internally")[0]


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_multinomial_single_draws_take_pytorchs_exponential_path(dt):
    """With one sample (with or without replacement) PyTorch draws Exponential(1) noise like the
    probabilities and takes argmax(p / q), as without replacement."""
    p = np.random.default_rng(0).uniform(0, 1, (6, 5)).astype(dt)
    for n, replacement in [(1, True), (1, False), (3, False), (3, True)]:
        ember.manual_seed(8)
        torch.manual_seed(8)
        same(ember.multinomial(ember.tensor(p), n, replacement), torch.multinomial(torch.from_numpy(p), n, replacement))
        same(ember.multinomial(ember.tensor(p[0]), n, replacement), torch.multinomial(torch.from_numpy(p[0]), n,
                                                                                       replacement))


INITS = [("uniform_", (7, 5), dict(a=-0.3, b=0.7)), ("normal_", (7, 5), dict(mean=0.5, std=2.0)),
         ("trunc_normal_", (64, 3, 3, 3), dict(std=0.02)),                          # the normal branch
         ("trunc_normal_", (300, 7), dict(std=1.0, a=-0.5, b=0.5)),                # rejection from uniforms
         ("trunc_normal_", (33,), dict(mean=1.0, std=2.0, a=3.0, b=4.0)),
         ("xavier_uniform_", (20, 30), dict(gain=1.5)), ("xavier_normal_", (20, 30, 3), {}),
         ("kaiming_uniform_", (16, 8, 3, 3), dict(a=5 ** 0.5)), ("kaiming_normal_", (16, 8), dict(mode="fan_out")),
         ("orthogonal_", (6, 10), {}), ("orthogonal_", (10, 6), dict(gain=2.0)),
         ("sparse_", (12, 5), dict(sparsity=0.3))]


@pytest.mark.parametrize("name,shape,kw", INITS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(INITS)])
def test_nn_init_draws_pytorchs_values(name, shape, kw):
    """nn.init from a seed gives PyTorch's values, and leaves the generator where PyTorch's does."""
    import warnings
    out = {}
    for lib in (ember, torch):
        lib.manual_seed(11)
        w = lib.empty(*shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")        # trunc_normal_'s "mean is more than 2 std" on both sides
            getattr(lib.nn.init, name)(w, **kw)
        out[lib.__name__] = (w, lib.rand(3))
    (ew, en), (tw, tn) = out["ember"], out["torch"]
    if name == "orthogonal_":   # a QR decomposition: LAPACK's rounding, not the generator's
        np.testing.assert_allclose(ew.numpy(), tw.numpy(), rtol=1e-5, atol=1e-6)
    else:
        same(ew, tw)
    same(en, tn)
