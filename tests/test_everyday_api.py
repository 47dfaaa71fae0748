"""The rest of PyTorch's everyday API against PyTorch: factories and random draws (range, randint_like,
empty_permuted), the deprecated functions' warnings, the in-place forms whose refusals the op table cannot reach,
and what autograd does with ops PyTorch does not differentiate."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def same(e, t):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    assert tuple(e.stride()) == tuple(t.stride()), (e.stride(), t.stride())
    np.testing.assert_array_equal(e.numpy(), t.numpy())


RANGES = [lambda L: L.range(1, 4), lambda L: L.range(0, 1, 0.3), lambda L: L.range(5, 0, -1),
          lambda L: L.range(1, 4, dtype=L.int64), lambda L: L.range(1.5, 3), lambda L: L.range(0, 1, 0.1),
          lambda L: L.range(2, 2), lambda L: L.range(-1, 1, 0.25, dtype=L.float64)]


@pytest.mark.parametrize("i", range(len(RANGES)))
def test_range_matches_pytorch(i):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(RANGES[i](ember), RANGES[i](torch))


def test_range_warns_at_the_callers_line_and_refuses_as_pytorch():
    with pytest.warns(UserWarning, match="torch.range is deprecated and will be removed") as rec:
        ember.range(0, 3)
    assert rec[0].filename == __file__
    for args, msg in [((0, 1, 0), "step must be nonzero"),
                      ((1, 0, 1), "upper bound and lower bound inconsistent with step sign"),
                      ((0, float("inf")), "unsupported range: 0 -> inf")]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match=msg):
                torch.range(*args)
            with pytest.raises(RuntimeError, match=msg):
                ember.range(*args)


RANDINT_LIKE = [lambda L, x: L.randint_like(x, 10), lambda L, x: L.randint_like(x, 3, 10),
                lambda L, x: L.randint_like(x, -5, 5, dtype=L.int64), lambda L, x: L.randint_like(x, L.tensor(7)),
                lambda L, x: L.randint_like(x.int(), 1000), lambda L, x: L.randint_like(x, 2, dtype=L.bool)]


@pytest.mark.parametrize("i", range(len(RANDINT_LIKE)))
def test_randint_like_draws_pytorchs_stream(i):
    ember.manual_seed(3)
    torch.manual_seed(3)
    same(RANDINT_LIKE[i](ember, ember.zeros(3, 5)), RANDINT_LIKE[i](torch, torch.zeros(3, 5)))


def test_randint_like_with_a_generator_and_refusals():
    g, tg = ember.Generator().manual_seed(11), torch.Generator().manual_seed(11)
    same(ember.randint_like(ember.zeros(4), 9, generator=g), torch.randint_like(torch.zeros(4), 9, generator=tg))
    same(ember.randint_like(ember.zeros(4), 2, 9, generator=g), torch.randint_like(torch.zeros(4), 2, 9, generator=tg))
    for L in (ember, torch):
        with pytest.raises(RuntimeError, match="high must be a scalar tensor and on CPU"):
            L.randint_like(L.zeros(2), L.tensor([1, 2]))
        with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
            L.randint_like(L.zeros(2), 5, 5)


@pytest.mark.parametrize("size,layout", [((2, 3, 4), (0, 2, 1)), ((2, 3, 4, 5), (0, 2, 3, 1)), ((3,), (0,)),
                                         ((2, 3), (1, 0)), ((0, 2), (0, 1))])
def test_empty_permuted_lays_dimensions_out_as_pytorch(size, layout):
    e, t = ember.empty_permuted(size, layout), torch.empty_permuted(size, layout)
    assert tuple(e.shape) == tuple(t.shape) and tuple(e.stride()) == tuple(t.stride())
    assert ember.empty_permuted(size, layout, dtype=ember.int32).dtype == ember.int32


def test_empty_permuted_refusals():
    for L in (ember, torch):
        with pytest.raises(RuntimeError, match="len\\(size\\) = 2 is not equal to len\\(physical_layout\\) = 1"):
            L.empty_permuted((2, 3), (0,))
        with pytest.raises(RuntimeError, match="Duplicate dim not allowed"):
            L.empty_permuted((2, 3), (0, 0))


@pytest.mark.parametrize("dtype,exp,msg", [
    ("float32", 2, "dtype Float but the operation's result requires dtype Double"),
    ("complex64", 2, "dtype ComplexFloat but the operation's result requires dtype ComplexDouble"),
    ("float64", 2j, "dtype Double but the operation's result requires dtype ComplexDouble")])
def test_float_power_in_place_refuses_a_base_it_cannot_hold(dtype, exp, msg):
    for L in (ember, torch):
        with pytest.raises(RuntimeError, match=msg):
            L.ones(2, dtype=getattr(L, dtype)).float_power_(exp)


def test_float_power_in_place_into_complex_double():
    e = ember.tensor([1 + 1j, 2.0], dtype=ember.complex128).float_power_(2)
    t = torch.tensor([1 + 1j, 2.0], dtype=torch.complex128).float_power_(2)
    np.testing.assert_allclose(e.numpy(), t.numpy())


def test_function_forms_of_in_place_ops():
    for L in (ember, torch):
        x = L.tensor([1.0, 2.0])
        assert L.xlogy_(x, L.tensor([3.0, 4.0])) is x
        a = L.ones(2)
        assert L.addmv_(a, L.ones(2, 3), L.ones(3)) is a
    np.testing.assert_allclose(ember.xlogy_(ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])).numpy(),
                               torch.xlogy_(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])).numpy(), rtol=1e-6)


@pytest.mark.parametrize("call,match", [
    (lambda L: L.qr(L.eye(3)), "torch.qr is deprecated in favor of torch.linalg.qr"),
    (lambda L: L.triangular_solve(L.ones(3, 1), L.eye(3)), "torch.triangular_solve is deprecated in favor of"),
    (lambda L: L.index_reduce(L.ones(3), 0, L.tensor([0]), L.ones(1), "prod"), "index_reduce\\(\\) is in beta")])
def test_deprecated_and_beta_functions_warn_once_as_pytorch(call, match):
    import ember.c10.exceptions as exc
    import ember.aten.kernels.indexing as idx
    exc._WARNED_ONCE.clear()
    idx._INDEX_REDUCE_WARNED.clear()
    with pytest.warns(UserWarning, match=match) as rec:
        call(ember)
    assert rec[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        call(ember)  # once per process, as PyTorch's TORCH_WARN_ONCE


def test_ops_pytorch_does_not_differentiate_refuse_at_backward():
    for L in (ember, torch):
        x = L.randn(5, 2, requires_grad=True)
        h = L.histogramdd(x, 3).hist
        assert h.requires_grad
        with pytest.raises(RuntimeError, match="derivative for .*_histogramdd_from_bin_cts is not implemented"):
            h.sum().backward()
        u = L.unique_consecutive(L.tensor([1.0, 1.0, 2.0], requires_grad=True))
        with pytest.raises(RuntimeError, match="the derivative for 'unique_consecutive' is not implemented"):
            u.sum().backward()


def test_tensor_methods_of_the_new_ops():
    x = np.array([1, 1, 2, 2, 3, 1])
    e = ember.tensor(x).unique_consecutive(return_counts=True)
    t = torch.tensor(x).unique_consecutive(return_counts=True)
    for a, b in zip(e, t):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    e, t = ember.tensor([1.0, float("nan"), 3.0]).nanmedian(), torch.tensor([1.0, float("nan"), 3.0]).nanmedian()
    assert float(e) == float(t)
    e = ember.tensor([0.5, 1.5], dtype=ember.float64).polygamma_(2)
    t = torch.tensor([0.5, 1.5], dtype=torch.float64).polygamma_(2)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)


@pytest.mark.parametrize("fn,shape,kw", [("svd_lowrank", (20, 8), {}), ("svd_lowrank", (8, 20), dict(q=3)),
                                         ("svd_lowrank", (2, 12, 6), dict(niter=0)), ("pca_lowrank", (20, 8), {}),
                                         ("pca_lowrank", (20, 8), dict(q=3, center=False)),
                                         ("pca_lowrank", (15, 5), dict(q=5, niter=4))])
def test_randomized_low_rank_svd_and_pca_match_pytorch(fn, shape, kw):
    """Same seed, same Gaussian test matrix: the singular values, and U diag(S) V^H (the singular vectors' signs
    are LAPACK's choice)."""
    a = np.random.default_rng(1).standard_normal(shape)
    ember.manual_seed(5)
    torch.manual_seed(5)
    (eu, es, ev), (tu, ts, tv) = getattr(ember, fn)(ember.tensor(a), **kw), getattr(torch, fn)(torch.tensor(a), **kw)
    np.testing.assert_allclose(es.numpy(), ts.numpy(), rtol=1e-10, atol=1e-12)
    recon_e = (eu * es.unsqueeze(-2)) @ ev.mH
    recon_t = (tu * ts.unsqueeze(-2)) @ tv.mH
    np.testing.assert_allclose(recon_e.numpy(), recon_t.numpy(), rtol=1e-9, atol=1e-10)
    assert ember.randn(1).item() == torch.randn(1).item()  # both drew the same numbers


def test_pca_lowrank_refusals_and_thread_safe_generator():
    for L in (ember, torch):
        with pytest.raises(ValueError, match="q\\(=9\\) must be non-negative integer and not greater than"):
            L.pca_lowrank(L.ones(4, 3), q=9)
        with pytest.raises(ValueError, match="niter\\(=-1\\) must be non-negative integer"):
            L.pca_lowrank(L.ones(4, 3), niter=-1)
        assert L.thread_safe_generator() is None  # the main process: the default generator


@pytest.mark.parametrize("kind", ["real", "complex_symmetric", "hermitian"])
def test_ldl_factor_and_solve_match_lapack_as_pytorch_calls_it(kind):
    """Random symmetric / Hermitian matrices, some with zero leading diagonals (2x2 pivots): PyTorch's packed
    factors, pivots, info and solutions."""
    r = np.random.default_rng({"real": 0, "complex_symmetric": 1, "hermitian": 2}[kind])
    herm = kind == "hermitian"
    for trial in range(60):
        n = int(r.integers(1, 8))
        a = r.standard_normal((n, n)) + (1j * r.standard_normal((n, n)) if kind != "real" else 0)
        a = a + (a.conj().T if herm else a.T)
        if trial % 4 == 0 and n > 2:
            a[0, 0] = a[1, 1] = 0
        e, t = ember.linalg.ldl_factor_ex(ember.tensor(a), hermitian=herm), \
            torch.linalg.ldl_factor_ex(torch.tensor(a), hermitian=herm)
        np.testing.assert_allclose(e.LD.numpy(), t.LD.numpy(), rtol=1e-9, atol=1e-10)
        np.testing.assert_array_equal(e.pivots.numpy(), t.pivots.numpy())
        assert int(e.info) == int(t.info)
        if int(t.info):
            continue
        b = r.standard_normal((n, 3)) + (1j * r.standard_normal((n, 3)) if kind != "real" else 0)
        np.testing.assert_allclose(ember.linalg.ldl_solve(e.LD, e.pivots, ember.tensor(b), hermitian=herm).numpy(),
                                   torch.linalg.ldl_solve(t.LD, t.pivots, torch.tensor(b), hermitian=herm).numpy(),
                                   rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("dimension", [1, 3, 40, 1111])
@pytest.mark.parametrize("kw", [{}, dict(scramble=True, seed=3)])
def test_sobol_engine_draws_pytorchs_points(dimension, kw):
    """Bit for bit: the direction numbers, the scrambling (PyTorch's generator stream for a seed), Gray-code
    drawing in float32 and float64, fast_forward, draw_base2, reset."""
    pytest.importorskip("scipy", reason="the direction numbers are read from SciPy's table")
    a, b = ember.quasirandom.SobolEngine(dimension, **kw), torch.quasirandom.SobolEngine(dimension, **kw)
    np.testing.assert_array_equal(a.sobolstate.numpy(), b.sobolstate.numpy())
    steps = [lambda e: e.draw(5), lambda e: e.draw(3, dtype=getattr(ember if e is a else torch, "float64")),
             lambda e: e.fast_forward(8) and e.draw_base2(4), lambda e: e.reset().draw(1)]
    for step in steps:
        np.testing.assert_array_equal(step(a).numpy(), step(b).numpy())
    assert repr(a) == repr(b) and a.num_generated == b.num_generated


def test_sobol_engine_refusals():
    pytest.importorskip("scipy", reason="the direction numbers are read from SciPy's table")
    for L in (ember, torch):
        with pytest.raises(ValueError, match="Supported range of dimensionality for SobolEngine is \\[1, 21201\\]"):
            L.quasirandom.SobolEngine(0)
        e = L.quasirandom.SobolEngine(2)
        e.draw(3)
        with pytest.raises(ValueError, match="The balance properties of Sobol' points require n to be a power of 2. "
                                             "3 points have been previously generated"):
            e.draw_base2(2)
        out = L.empty(0)
        assert e.draw(2, out=out) is out and tuple(out.shape) == (2, 2)
