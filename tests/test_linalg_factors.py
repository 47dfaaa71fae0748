"""The private operators PyTorch's linear algebra runs (``_linalg_det``, ``_linalg_slogdet``, ``_linalg_solve_ex``,
``_linalg_svd``, ``linalg_lu_solve``, ``triangular_solve``, ``cholesky``) against PyTorch: the values, the factors
they keep for the derivative (LU, pivots: of A^T for a real row-major A in det / slogdet, as LAPACK reads it in
place) with their column-major strides, and the gradients, which reuse those factors."""
import re
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def _np(t):
    return t.detach().resolve_conj().numpy()


def _pair(a, transposed=False):
    """The same matrix in both libraries, requiring grad; ``transposed`` stores it column-major."""
    stored = np.swapaxes(a, -1, -2).copy() if transposed else a
    leaves = ember.tensor(stored, requires_grad=True), torch.tensor(stored, requires_grad=True)
    views = tuple(x.mT if transposed else x for x in leaves)
    return leaves, views


def _same(e, t, strides=True):
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(_np(e), _np(t), rtol=1e-10, atol=1e-12)
    if strides and t.numel() > 1:  # (the stride of a dimension of size 1 is not read)
        def read(x):
            return [st for st, n in zip(x.stride(), x.shape) if n > 1]
        assert read(e) == read(t)


SQUARE = [(3, 3), (2, 4, 4), (1, 1), (0, 0), (2, 0, 0), (5, 2, 2)]


@pytest.mark.parametrize("shape", SQUARE, ids=str)
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("op", ["_linalg_det", "_linalg_slogdet"])
def test_det_and_slogdet_keep_pytorchs_factors(op, dtype, transposed, shape):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dtype == "complex128" else 0)
    (el, tl), (e, t) = _pair(a, transposed)
    got, want = getattr(ember, op)(e), getattr(torch, op)(t)
    for g, w in zip(got, want):
        _same(g, w)
    complex_ = dtype == "complex128"

    def value(r):
        if op == "_linalg_det":
            return r[0].abs() if complex_ else r[0]
        return r[1] + (r[0].real + r[0].imag if complex_ else r[0])
    value(got).sum().backward()
    value(want).sum().backward()
    _same(el.grad, tl.grad, strides=False)


def test_det_of_a_singular_matrix_and_its_derivatives():
    """The value and the first derivative (the cofactor matrix, from the SVD where A^-1 does not exist) as
    PyTorch's when the graph is kept for a second derivative."""
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    (e, t), _ = _pair(a)
    ge, = ember.autograd.grad(ember.linalg.det(e), e, create_graph=True)
    gt, = torch.autograd.grad(torch.linalg.det(t), t, create_graph=True)
    np.testing.assert_allclose(_np(ge), _np(gt), atol=1e-12)
    x = ember.tensor(np.random.default_rng(1).standard_normal((3, 3)), requires_grad=True)
    assert ember.autograd.gradgradcheck(ember.linalg.det, (x,))
    assert ember.autograd.gradgradcheck(lambda m: ember.linalg.slogdet(m)[1], (x,))


SOLVE = [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3, 2)), ((3, 3), (4, 3, 2)), ((1, 3, 3), (4, 3, 2)),
         ((2, 3, 3), (2, 3)), ((0, 0), (0, 2)), ((2, 2), (2, 0))]


@pytest.mark.parametrize("shapes", SOLVE, ids=str)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transposed", [False, True])
def test_solve_ex_keeps_the_lu_of_a_and_its_gradients_match(shapes, left, transposed):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    if not left:
        if b.ndim == a.ndim - 1:
            pytest.skip("a vector right-hand side has no right-hand system")
        b = np.swapaxes(b, -1, -2).copy()
    (ea, ta), (eA, tA) = _pair(a, transposed)
    eb, tb = ember.tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
    got, want = ember._linalg_solve_ex(eA, eb, left=left), torch._linalg_solve_ex(tA, tb, left=left)
    for g, w in zip(got[1:], want[1:]):
        _same(g, w)
    _same(got[0], want[0], strides=not (b.ndim == a.ndim - 1 and b.ndim > 1))
    (ember.linalg.solve(eA, eb, left=left) ** 2).sum().backward()
    (torch.linalg.solve(tA, tb, left=left) ** 2).sum().backward()
    _same(ea.grad, ta.grad, strides=False)
    _same(eb.grad, tb.grad, strides=False)


def test_a_singular_system_is_reported_by_solve_ex_and_refused_by_solve():
    a = np.array([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]])
    b = np.ones((2, 2, 1))
    e = ember.linalg.solve_ex(ember.tensor(a), ember.tensor(b))
    t = torch.linalg.solve_ex(torch.tensor(a), torch.tensor(b))
    assert e.info.tolist() == t.info.tolist()
    with pytest.raises(torch.linalg.LinAlgError) as want:
        torch.linalg.solve(torch.tensor(a), torch.tensor(b))
    with pytest.raises(ember.linalg.LinAlgError, match=re.escape(str(want.value))):
        ember.linalg.solve(ember.tensor(a), ember.tensor(b))


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("shapes", [((3, 3), (3, 2)), ((2, 3, 3), (3, 2)), ((3, 3), (2, 3, 2))], ids=str)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve_and_its_gradients_in_the_factors(dtype, shapes, left, adjoint):
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(s) + (1j * rng.standard_normal(s) if dtype == "complex128" else 0) for s in shapes)
    if not left:
        b = np.swapaxes(b, -1, -2).copy()
    tLU, tp = torch.linalg.lu_factor(torch.tensor(a))
    eLU, ep = ember.linalg.lu_factor(ember.tensor(a))
    _same(eLU, tLU)
    tLU, eLU = tLU.detach().requires_grad_(), ember.tensor(_np(eLU), requires_grad=True)
    tb, eb = torch.tensor(b, requires_grad=True), ember.tensor(b, requires_grad=True)
    tx = torch.linalg.lu_solve(tLU, tp, tb, left=left, adjoint=adjoint)
    ex = ember.linalg.lu_solve(eLU, ep, eb, left=left, adjoint=adjoint)
    _same(ex, tx, strides=False)
    (tx.abs() ** 2).sum().backward()
    (ex.abs() ** 2).sum().backward()
    _same(eLU.grad, tLU.grad, strides=False)
    _same(eb.grad, tb.grad, strides=False)


@pytest.mark.parametrize("shapes", [((3, 2), (3, 3)), ((2, 3, 2), (3, 3)), ((3, 2), (2, 3, 3))], ids=str)
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("unitriangular", [False, True])
def test_triangular_solve_against_pytorch(shapes, upper, transpose, unitriangular):
    rng = np.random.default_rng(4)
    b, a = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1]) + 3 * np.eye(shapes[1][-1])
    tb, ta = torch.tensor(b, requires_grad=True), torch.tensor(a, requires_grad=True)
    eb, ea = ember.tensor(b, requires_grad=True), ember.tensor(a, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.triangular_solve(tb, ta, upper, transpose, unitriangular)
        got = ember.triangular_solve(eb, ea, upper, transpose, unitriangular)
    for g, w in zip(got, want):
        _same(g, w)
    ((want[0] ** 2).sum() + (want[1] ** 3).sum()).backward()
    ((got[0] ** 2).sum() + (got[1] ** 3).sum()).backward()
    _same(eb.grad, tb.grad, strides=False)
    _same(ea.grad, ta.grad, strides=False)


@pytest.mark.parametrize("upper", [False, True])
def test_the_deprecated_cholesky_is_its_own_operator(upper):
    a = np.random.default_rng(5).standard_normal((2, 3, 3))
    a = a @ np.swapaxes(a, -1, -2) + np.eye(3)
    (e, t), _ = _pair(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = ember.cholesky(e, upper), torch.cholesky(t, upper)
    _same(got, want)
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__
    (got ** 2).sum().backward()
    (want ** 2).sum().backward()
    _same(e.grad, t.grad, strides=False)
    with pytest.raises(torch.linalg.LinAlgError) as err, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.cholesky(-torch.eye(3).expand(2, 3, 3))
    with pytest.raises(ember.linalg.LinAlgError) as mine, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ember.cholesky(-ember.eye(3).expand(2, 3, 3))
    assert str(mine.value) == str(err.value)


@pytest.mark.parametrize("full_matrices", [False, True])
@pytest.mark.parametrize("compute_uv", [True, False])
def test_svd_keeps_pytorchs_layout(full_matrices, compute_uv):
    a = np.random.default_rng(6).standard_normal((2, 4, 3))
    got = ember._linalg_svd(ember.tensor(a), full_matrices, compute_uv)
    want = torch._linalg_svd(torch.tensor(a), full_matrices, compute_uv)
    _same(got[1], want[1])
    for g, w in (got[0], want[0]), (got[2], want[2]):
        assert tuple(g.shape) == tuple(w.shape) and (g.numel() == 0 or g.stride() == w.stride())
        if compute_uv:  # (singular vectors up to their signs)
            np.testing.assert_allclose(np.abs(_np(g)), np.abs(_np(w)), atol=1e-10)
    x = ember.tensor(a, requires_grad=True)
    S = ember._linalg_svd(x, False, False)[1]
    with pytest.raises(RuntimeError, match="compute_uv"):
        S.sum().backward()


def test_vander_is_filled_as_pytorch_fills_it_and_refuses_a_backward_as_pytorch_does():
    """vander copies x into a fresh tensor and overwrites those columns with their cumprod: PyTorch's backward then
    finds cumprod's saved input modified, and ember's does too (the same ops, the same error)."""
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        v = lib.vander(x, 3)
        np.testing.assert_array_equal(_np(v), np.vander([1.0, 2.0, 3.0], 3))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            v.sum().backward()


@pytest.mark.parametrize("pair", [("int8", "float32"), ("uint8", "int8"), ("bool", "int64"), ("bfloat16", "float16"),
                                  ("complex64", "float64")], ids=str)
def test_promote_types_and_can_cast_are_operators_a_mode_sees(pair):
    from tests.test_torch_dispatch import _mode_class
    seen = {}
    for lib in (ember, torch):
        a, b = (getattr(lib, n) for n in pair)
        with _mode_class(lib)() as mode:
            got = (str(lib.promote_types(a, b)).split(".")[-1], lib.can_cast(a, b), lib.can_cast(b, a))
        seen[lib.__name__] = (got, mode.seen)
    assert seen["ember"] == seen["torch"]


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("shapes", [((4, 3), (3,), (4, 2)), ((2, 4, 3), (2, 3), (2, 4, 5)), ((3, 4), (3,), (3, 2)),
                                    ((4, 3), (0,), (4, 2))], ids=str)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_and_householder_product_and_their_gradients(dtype, shapes, left, transpose):
    """The reflectors of geqrf applied as LAPACK's ormqr / orgqr apply them, and the gradients in the reflectors,
    the scales and the other operand (reverse mode through the reflectors) against PyTorch's."""
    rng = np.random.default_rng(7)
    sa, st, so = shapes
    so = so if left else so[:-2] + (so[-1], so[-2])
    arrays = [rng.standard_normal(s) + (1j * rng.standard_normal(s) if dtype == "complex128" else 0)
              for s in (sa, st, so)]
    E = [ember.tensor(x, requires_grad=True) for x in arrays]
    T = [torch.tensor(x, requires_grad=True) for x in arrays]
    try:
        want = torch.ormqr(*T, left, transpose)
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=re.escape(str(e))):
            ember.ormqr(*E, left, transpose)
        return
    got = ember.ormqr(*E, left, transpose)
    _same(got, want, strides=False)
    g = rng.standard_normal(tuple(want.shape)) + (1j * rng.standard_normal(tuple(want.shape))
                                                  if dtype == "complex128" else 0)
    (got * ember.tensor(g)).abs().sum().backward()
    (want * torch.tensor(g)).abs().sum().backward()
    for e, t in zip(E, T):
        if t.grad is None:
            assert e.grad is None
        else:
            _same(e.grad, t.grad, strides=False)
    if left and not transpose and sa[-2] >= sa[-1]:
        qe = ember.linalg.householder_product(E[0].detach(), E[1].detach())
        qt = torch.linalg.householder_product(T[0].detach(), T[1].detach())
        _same(qe, qt, strides=False)
