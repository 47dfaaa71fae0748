"""einsum against PyTorch: the operators a dispatch mode sees (PyTorch's Linear.cpp decomposition: diagonals,
unsqueezes and permutes, then one bmm per pair), the values on both of ember's paths (the decomposition, and
one array-library einsum when nothing observes the call), the gradients, the sublist form and the errors."""
import numpy as np
import pytest

import ember
from tests.test_torch_dispatch import _mode_class

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

CASES = [("ij,jk->ik", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]), ("ij->", [(2, 3)]),
         ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
         ("i,j->ij", [(3,), (4,)]), ("...ij,...jk", [(2, 3, 4), (4, 5)]),
         ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
         ("ii", [(3, 3)]), ("i,i->", [(3,), (3,)]), ("ijk,k->ij", [(2, 3, 4), (4,)]), ("iij->ij", [(3, 3, 2)]),
         ("a...,a...->...", [(2, 3), (2, 3)]), ("ij,ij->ij", [(2, 3), (1, 3)]),
         ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
         ("ji", [(2, 3)]), (" i j , j k -> i k ", [(2, 3), (3, 4)])]


def _run(lib, eq, arrays, record, grad=False):
    ts = [lib.tensor(a, requires_grad=grad) for a in arrays]
    if not record:
        return lib.einsum(eq, *ts), ts, None
    with _mode_class(lib)() as mode:
        out = lib.einsum(eq, *ts)
    return out, ts, mode.seen


@pytest.mark.parametrize("eq,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_is_pytorchs_decomposition(eq, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    want, _, seen_t = _run(torch, eq, arrays, True)
    got, _, seen_e = _run(ember, eq, arrays, True)
    assert seen_e == seen_t
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    direct, _, _ = _run(ember, eq, arrays, False)  # unobserved: one einsum of the array library
    np.testing.assert_allclose(direct.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    out_e, ts_e, _ = _run(ember, eq, arrays, False, grad=True)
    out_t, ts_t, _ = _run(torch, eq, arrays, False, grad=True)
    assert type(out_e.grad_fn).__name__ == type(out_t.grad_fn).__name__
    (out_e * out_e).sum().backward()
    (out_t * out_t).sum().backward()
    for e, t in zip(ts_e, ts_t):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_the_sublist_form_and_the_errors_are_pytorchs():
    a, b = np.ones((2, 3)), np.ones((3, 4))
    for lib in (ember, torch):
        assert tuple(lib.einsum(lib.tensor(a), [0, 1], lib.tensor(b), [1, 2], [0, 2]).shape) == (2, 4)
        assert tuple(lib.einsum(lib.tensor(a), [Ellipsis, 1], lib.tensor(b), [1, 2]).shape) == (2, 4)
    bad = [("ij,jk->ik", (a,)), ("ij->iz", (a,)), ("ij,jk", (a, a)), ("i.j", (a,)), ("ijk", (a,)), ("ii", (a,)),
           ("ij,jk", (a, b.astype(np.float32)))]
    for eq, arrays in bad:
        with pytest.raises(RuntimeError) as want:
            torch.einsum(eq, *[torch.tensor(x) for x in arrays])
        with pytest.raises(RuntimeError) as got:
            ember.einsum(eq, *[ember.tensor(x) for x in arrays])
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("a,b", [((3,), (3,)), ((1, 2, 3), (1, 3, 4)), ((2, 3), (3,)), ((2, 2, 3), (3, 4)),
                                 ((2, 3), (2, 3, 4)), ((3,), (2, 3, 4)), ((2, 3, 4), (4,))], ids=str)
def test_mixed_dtype_products_raise_the_error_of_the_op_matmul_reaches(a, b):
    with pytest.raises(RuntimeError) as want:
        torch.matmul(torch.ones(a, dtype=torch.float64), torch.ones(b))
    with pytest.raises(RuntimeError) as got:
        ember.matmul(ember.ones(a, dtype=ember.float64), ember.ones(b))
    assert str(got.value) == str(want.value)
