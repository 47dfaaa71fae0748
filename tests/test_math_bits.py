"""Lazy conjugation and negation (Note [Math bits] in ember/aten/math_bits.py), against PyTorch: ``conj()`` is a view
with the conjugate bit, ``imag`` of it a view with the negative bit; every operator reads the values, not the memory,
of such a tensor; writes go through the bit; a dispatch mode sees PyTorch's calls; checkpoints keep the bit."""
from __future__ import annotations


import numpy as np
import pytest

import ember
from tests.op_db import op_db
from tests.test_ops import call, samples_of
from tests.test_torch_dispatch import _mode_class

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def _values(x):
    """Nested results as NumPy values (tensors resolved), for comparison."""
    if isinstance(x, (tuple, list)):
        return [_values(y) for y in x]
    if isinstance(x, (ember.Tensor, torch.Tensor)):
        return x.detach().resolve_conj().resolve_neg().cpu().numpy()
    return x


def _assert_same(a, b):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b)
    else:
        assert a == b


def _run(op, args, kwargs_sample):
    ember.manual_seed(0)
    try:
        return "ok", _values(call(op, ember, kwargs_sample, args=args))
    except Exception as e:       # the same refusal either way
        return "error", type(e).__name__


def _with_bit(sample, pair):
    """The sample's arguments twice, as (plain, lazy) lists: each float or complex array -- also inside a list
    (``cat``) -- becomes ``pair(a)``: the tensor holding its values, and a view with a math bit holding the same
    values; other arrays become two tensors of their own; the rest stays as it is. Also whether any argument got a
    bit."""
    gave = []

    def convert(a):
        if isinstance(a, np.ndarray) and a.dtype.kind in "fc":
            gave.append(True)
            return pair(a)
        if isinstance(a, np.ndarray):
            return ember.tensor(a.copy()), ember.tensor(a.copy())
        if isinstance(a, list) and any(isinstance(x, np.ndarray) for x in a):
            pairs = [convert(x) for x in a]
            return [p for p, _ in pairs], [q for _, q in pairs]
        return a, a
    pairs = [convert(a) for a in sample.args]
    return [p for p, _ in pairs], [q for _, q in pairs], bool(gave)


def _conjugate_pair(rng):
    """A float array made complex (a complex one as it is), as a tensor and as the conjugate view of its conjugate."""
    def pair(a):
        c = a + 1j * rng.uniform(-1, 1, a.shape) if a.dtype.kind == "f" else a
        return ember.tensor(c), ember.tensor(np.conj(c)).conj()
    return pair


def _negative_pair(a):
    return ember.tensor(a.copy()), ember._neg_view(ember.tensor(-a))


@pytest.mark.parametrize("bit", ["conj", "neg"])
@pytest.mark.parametrize("op", op_db, ids=[op.name for op in op_db])
def test_an_operator_reads_the_values_behind_a_math_bit(op, bit):
    """Every op-table entry gives the same results (or the same refusal) on a conjugate / negative view as on the
    tensor holding its values."""
    dtype = "float64" if "float64" in op.dtypes else op.dtypes[0]
    rng = np.random.default_rng(0)
    compared = 0
    for s in samples_of(op, dtype)[:3]:
        plain, lazy, gave = _with_bit(s, _conjugate_pair(rng) if bit == "conj" else _negative_pair)
        if not gave:
            continue
        want, got = _run(op, plain, s), _run(op, lazy, s)
        if op.name == "view_as_real" and bit == "conj":     # PyTorch's refusal (test_refusals_are_pytorchs)
            want = ("error", "RuntimeError")
        assert got[0] == want[0], (got, want)
        if want[0] == "ok":
            _assert_same(got[1], want[1])
        else:
            assert got[1] == want[1]
        compared += 1
    if not compared:
        pytest.skip("no sample has a floating-point or complex input to carry a math bit")


def _both(fn):
    """``fn(lib)`` run with ember and with PyTorch."""
    return fn(ember), fn(torch)


def test_conj_is_a_view_with_the_conjugate_bit():
    def run(L):
        x = L.tensor([1 + 2j, 3 - 4j])
        y = x.conj()
        facts = [y.is_conj(), y._is_view(), y._base is x, y.data_ptr() == x.data_ptr(), y.tolist(),
                 y.imag.is_neg(), y.imag.tolist(), y.real.is_conj(), y.real.is_neg(), y.real.tolist(),
                 x.conj().conj().is_conj(), L.conj_physical(x).is_conj(), y.resolve_conj().is_conj(),
                 y.clone().is_conj(), (y + 1).is_conj(), y.view(2).is_conj(), y[0].is_conj(),
                 y.reshape(1, 2).is_conj(), y.contiguous().is_conj(), y.detach().is_conj(),
                 y.to(L.complex128).is_conj(), y.unsqueeze(0).mT.is_conj(), x.unsqueeze(0).mH.is_conj(),
                 x.unsqueeze(0).adjoint().is_conj(), y.expand(2, 2).is_conj(), y.flip(0).is_conj(),
                 y.sum().item(), y[1].item(), L.tensor(y).tolist(), y.abs().tolist()]
        y[0] = 5 + 5j                                 # writes the conjugate into x
        y.imag[1] = 1.0                               # through both bits
        facts += [x.tolist(), y.tolist()]
        r = L.tensor([1.0, 2.0])
        facts += [r.conj() is r, r.conj().is_conj(), L.is_conj(y), L.is_neg(y.imag)]
        return facts
    got, want = _both(run)
    assert got == want


def test_writes_through_a_conjugate_view():
    def run(L):
        x = L.tensor([[1 + 2j, 3 - 4j]])
        a = L.tensor([[0.5 - 1j, 2 + 0.25j]])
        out = a.conj()
        L.add(x, x, out=out)              # out= through the bit
        b = x.clone().conj()
        b.add_(1)                         # in place
        b.mul_(L.tensor(2j))
        c = x.clone()
        c.copy_(x.conj())                 # copy_ of a conjugate into a plain tensor, and back
        d = x.clone().conj()
        d.copy_(x)
        e = x.clone().conj()
        e.imag.neg_()                     # the negative bit's own in-place op
        return [a.tolist(), out.tolist(), b.tolist(), b.resolve_conj().tolist(), c.tolist(), d.tolist(),
                d.resolve_conj().tolist(), e.tolist()]
    got, want = _both(run)
    assert got == want


def test_refusals_are_pytorchs():
    for L in (ember, torch):
        y = L.tensor([1 + 2j]).conj()
        with pytest.raises(RuntimeError, match=r"^Can't call numpy\(\) on Tensor that has conjugate bit set. Use "
                                               r"tensor.resolve_conj\(\).numpy\(\) instead.$"):
            y.numpy()
        with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that has negative bit set"):
            y.imag.numpy()
        with pytest.raises(RuntimeError, match="^view_as_real doesn't work on unresolved conjugated tensors.  To "
                                               "resolve the conjugate tensor so you can view it as real, use "
                                               r"self.resolve_conj\(\); however"):
            L.view_as_real(y)
        with pytest.raises(BufferError, match="Can't export tensors with the conjugate bit set"):
            y.__dlpack__()
        np.testing.assert_array_equal(y.numpy(force=True), [1 - 2j])


_TRACED = {
    "conj then ops": lambda L, x: (x.conj() + 1, x.conj() @ x, x.conj().sum(), x.clone().conj().mul_(2)),
    "parts": lambda L, x: (x.conj().real, x.conj().imag + 1, L.view_as_real(x.conj().resolve_conj())),
    "reads": lambda L, x: (x.conj().tolist(), x.conj()[0].item(), x.conj().to(L.complex128)),
    "copies": lambda L, x: (x.clone().copy_(x.conj()), x.clone().conj().copy_(x), L.cat([x.conj(), x])),
    "products": lambda L, x: (x.unsqueeze(0).conj() @ x.unsqueeze(1), L.mm(x.unsqueeze(1), x.unsqueeze(1).mH),
                              L.vdot(x.conj(), x), L.dot(x, x.conj())),
    "spectral": lambda L, x: (L.fft.ihfft(x.real), L.fft.hfft(x), L.fft.hfftn(x.reshape(1, 2))),
}


@pytest.mark.parametrize("name", list(_TRACED))
def test_a_dispatch_mode_sees_pytorchs_calls(name):
    """The fallback's clones, the views that keep the bit and the fall-through products reach a TorchDispatchMode
    as PyTorch's, with the bits the arguments carry."""
    seen = {}
    for L in (ember, torch):
        base = _mode_class(L)

        class Bits(base):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                flat = [a for a in list(args) + list((kwargs or {}).values()) if isinstance(a, L.Tensor)]
                self.seen.append((str(func), [(a.is_conj(), a.is_neg()) for a in flat]))
                return func(*args, **(kwargs or {}))
        x = L.tensor([1 + 2j, 3 - 4j])
        with Bits() as m:
            _TRACED[name](L, x)
        seen[L.__name__] = m.seen
    assert seen["ember"] == seen["torch"]


def test_gradients_through_conjugate_and_negative_views():
    def run(L):
        a = L.tensor([[1 + 2j, -0.5 + 1j], [2 - 1j, 0.25 + 0.5j]], requires_grad=True)
        out = ((a.conj() * a).real.sum() + (a.conj().imag * L.tensor([2.0, 3.0])).sum()
               + (a.conj() @ a).abs().sum())
        out.backward()
        return [str(a.conj().grad_fn).split(" ")[0], str(a.conj().imag.grad_fn).split(" ")[0], a.grad.tolist()]
    got, want = _both(run)
    assert got[:2] == want[:2]
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6)


def test_checkpoints_keep_the_bits_both_ways(tmp_path):
    for save_lib, load_lib in ((ember, torch), (torch, ember)):
        y = save_lib.tensor([1 + 2j, 3 - 4j]).conj()
        n = save_lib.tensor([1 + 2j, 3 - 4j]).conj().imag     # (one storage may not be saved as two dtypes)
        path = tmp_path / f"{save_lib.__name__}.pt"
        save_lib.save({"y": y, "n": n}, path)
        loaded = load_lib.load(path, weights_only=True)
        assert loaded["y"].is_conj() and loaded["n"].is_neg()
        assert loaded["y"].tolist() == [1 - 2j, 3 + 4j] and loaded["n"].tolist() == [-2.0, 4.0]


def test_compiled_functions_read_values():
    """A compiled function given a conjugate view runs eagerly; one that conjugates inside gets values."""
    x = ember.tensor([1 + 2j, 3 - 4j, 0.5 + 0.25j], requires_grad=True)

    def f(z):
        c = z.conj()
        return (c * z).real.sum() + (c.imag * 2).sum(), c @ z, (z * 2 + 1).exp().sum()
    for fullgraph in (False, True):
        ember._dynamo.reset()
        c = ember.compile(f, fullgraph=fullgraph)
        for inp in (x, x.conj()):
            got, want = c(inp), f(inp)
            _assert_same(_values(list(got)), _values(list(want)))
            got[0].backward()
            g = x.grad.clone()
            x.grad = None
            want[0].backward()
            np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-6)
            x.grad = None
