"""Details PyTorch programs depend on, found while running them (issue 15 item 7): the LinAlgError class,
complex gradients in PyTorch's convention, AccumulateGrad's name, SGD's empty state without momentum,
cdist's compute modes, and PyTorch's error for any damaged checkpoint."""
from __future__ import annotations

import io
import pickle
import random

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


@pytest.mark.parametrize("call", [
    lambda L: L.linalg.inv(L.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]])),
    lambda L: L.inverse(L.zeros(3, 3)),
    lambda L: L.linalg.cholesky(L.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]])),
    lambda L: L.linalg.cholesky(L.tensor([[1.0, 2.0], [2.0, 1.0]]), upper=True),
    lambda L: L.linalg.solve(L.tensor([[1.0, 2.0], [2.0, 4.0]]), L.ones(2)),
])
def test_linalg_failures_raise_linalgerror_in_pytorchs_words(call):
    with pytest.raises(torch.linalg.LinAlgError) as t:
        call(torch)
    with pytest.raises(ember.linalg.LinAlgError) as e:
        call(ember)
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)
    assert str(e.value) == str(t.value)


def _c(rng, *shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("name,fn,sa,sb", [
    ("mul", lambda L, a, b: a * b, (3,), (3,)), ("div", lambda L, a, b: a / b, (3,), (3,)),
    ("mul scalar", lambda L, a, b: a * (2 + 1j) + b / (1 - 2j), (3,), (3,)),
    ("mm", lambda L, a, b: a.mm(b), (2, 3), (3, 2)), ("bmm", lambda L, a, b: a.bmm(b), (2, 2, 3), (2, 3, 2)),
    ("matmul", lambda L, a, b: a @ b, (2, 2, 3), (3, 4)), ("matmul vec", lambda L, a, b: a @ b, (3,), (3, 2)),
    ("mv", lambda L, a, b: a.mv(b), (2, 3), (3,)), ("dot", lambda L, a, b: a.dot(b).reshape(1), (3,), (3,)),
    ("vdot", lambda L, a, b: L.vdot(a, b).reshape(1), (3,), (3,)), ("outer", lambda L, a, b: L.outer(a, b), (3,), (2,)),
    ("addmm", lambda L, a, b: L.addmm(a @ b, a, b, beta=0.5j, alpha=2 - 1j), (2, 3), (3, 2)),
    ("addcmul", lambda L, a, b: L.addcmul(a, a, b, value=1 + 1j), (3,), (3,)),
    ("addcdiv", lambda L, a, b: L.addcdiv(a, a, b, value=1 - 1j), (3,), (3,)),
    ("solve, mH", lambda L, a, b: L.linalg.solve(a @ a.mH + 3 * L.eye(3, dtype=a.dtype), b), (3, 3), (3, 2)),
])
def test_complex_gradients_follow_pytorchs_conjugate_convention(name, fn, sa, sb):
    rng = np.random.default_rng(0)
    A, B = _c(rng, *sa), _c(rng, *sb)
    grads = []
    for L in (torch, ember):
        a, b = L.tensor(A, requires_grad=True), L.tensor(B, requires_grad=True)
        fn(L, a, b).abs().sum().backward()
        grads.append((a.grad.numpy(), b.grad.numpy()))
    for g_t, g_e in zip(*grads):
        np.testing.assert_allclose(g_e, g_t, rtol=1e-10, atol=1e-12, err_msg=name)


def test_accumulate_grad_is_named_as_in_pytorch():
    x = ember.ones(2, requires_grad=True)
    acc = (x * 2).grad_fn.next_functions[0][0]
    t = (torch.ones(2, requires_grad=True) * 2).grad_fn.next_functions[0][0]
    assert acc.name() == t.name() == "torch::autograd::AccumulateGrad"
    assert repr(acc).startswith("<AccumulateGrad object at ") and repr(t).startswith("<AccumulateGrad object at ")


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_keeps_state_only_with_momentum(momentum):
    states = []
    for L in (torch, ember):
        p = L.nn.Parameter(L.ones(2))
        opt = L.optim.SGD([p], lr=0.1, momentum=momentum)
        for _ in range(2):
            p.grad = L.ones(2)
            opt.step()
        states.append({k: sorted(v) for k, v in opt.state_dict()["state"].items()})
    assert states[0] == states[1]


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
@pytest.mark.parametrize("rows", [4, 30])
def test_cdist_compute_modes(mode, rows):
    rng = np.random.default_rng(1)
    x1, x2 = rng.standard_normal((rows, 5)), rng.standard_normal((rows - 1, 5))
    t = torch.cdist(torch.tensor(x1), torch.tensor(x2), compute_mode=mode).numpy()
    e = ember.cdist(ember.tensor(x1), ember.tensor(x2), compute_mode=mode).numpy()
    np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-12)
    for L in (torch, ember):
        with pytest.raises(ValueError, match="bad is not a valid value for compute_mode"):
            L.cdist(L.tensor(x1), L.tensor(x2), compute_mode="bad")


def test_a_damaged_checkpoint_raises_pytorchs_errors():
    """Random byte flips and truncations of a checkpoint: loading either works (PyTorch reads such files too,
    when only tensor bytes changed) or raises what PyTorch raises (its reader's RuntimeError, or the weights-only
    unpickler's UnpicklingError), never an error of the zip or pickle machinery underneath."""
    buf = io.BytesIO()
    ember.save({"w": ember.arange(20.0).reshape(4, 5), "b": ember.ones(3), "n": 3}, buf)
    data = buf.getvalue()
    rng = random.Random(0)
    outcomes = {"ok": 0, "RuntimeError": 0, "UnpicklingError": 0}
    for trial in range(600):
        b = bytearray(data)
        if trial % 4 == 0:
            b = b[:rng.randrange(len(b))]
        else:
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        try:
            ember.load(io.BytesIO(bytes(b)), weights_only=True)
            outcomes["ok"] += 1
        except pickle.UnpicklingError:
            outcomes["UnpicklingError"] += 1
        except RuntimeError as exc:
            assert type(exc) is RuntimeError, repr(exc)
            outcomes["RuntimeError"] += 1
    assert outcomes["RuntimeError"] > 100 and outcomes["UnpicklingError"] > 50, outcomes


@pytest.mark.parametrize("call", [
    "x.greater_(y)", "x.greater_(0.5)", "x.less_(y)", "x.less_equal_(0.0)", "x.greater_equal_(y)", "x.not_equal_(y)",
    "x.absolute_()", "x.arccos_()", "x.arcsin_()", "x.arctan_()", "x.arcsinh_()", "x.arctanh_()", "x.negative_()",
    "x.fix_()", "x.arctan2_(y)", "x.multiply_(y)", "x.multiply_(3)", "x.divide_(y)",
    "x.divide_(y, rounding_mode='floor')",
    "x.divide_(2, rounding_mode='trunc')", "x.subtract_(y, alpha=2)", "x.subtract_(1.5)",
    "L.negative_(x)", "L.fix_(x)", "L.arccos_(x)",
])
def test_in_place_aliases_match_pytorch(call):
    """The in-place forms of PyTorch's aliases (the out-of-place ones are in the op table's ``aliases``)."""
    rng = np.random.default_rng(3)
    a, b = rng.uniform(-0.9, 0.9, (3, 4)), rng.uniform(0.2, 0.9, (3, 4))
    out = []
    for L in (torch, ember):
        x, y = L.tensor(a.copy()), L.tensor(b.copy())
        r = eval(call, {"L": L, "x": x, "y": y})
        assert r is x
        out.append(x.numpy())
    np.testing.assert_allclose(out[1], out[0], rtol=1e-12, atol=1e-12)


def test_process_wide_switches_and_constants_report_as_pytorchs():
    def run(L):
        out = []
        for f in (lambda: L.set_deterministic_debug_mode("bad"), lambda: L.use_deterministic_algorithms("x"),
                  lambda: L.set_deterministic_debug_mode(5)):
            try:
                f()
            except (RuntimeError, TypeError) as exc:
                out.append((type(exc).__name__, str(exc)))
        out.append((L.get_float32_matmul_precision(), L.get_deterministic_debug_mode(),
                    L.are_deterministic_algorithms_enabled(), L.is_anomaly_enabled(), L.is_anomaly_check_nan_enabled()))
        try:
            L.use_deterministic_algorithms(True, warn_only=True)
            out.append((L.get_deterministic_debug_mode(), L.is_deterministic_algorithms_warn_only_enabled()))
            L.set_deterministic_debug_mode("error")
            out.append((L.are_deterministic_algorithms_enabled(), L.is_deterministic_algorithms_warn_only_enabled()))
            L.set_float32_matmul_precision("medium")
            out.append(L.get_float32_matmul_precision())
            L.set_anomaly_enabled(True, check_nan=False)
            out.append((L.is_anomaly_enabled(), L.is_anomaly_check_nan_enabled()))
        finally:
            L.set_deterministic_debug_mode(0)
            L.set_float32_matmul_precision("highest")
            L.set_anomaly_enabled(False)
        out.append((L.newaxis, L.pi, L.e, L.inf, str(L.nan)))
        return out
    assert run(ember) == run(torch)


def test_tensor_properties_as_torch_functions():
    def run(L):
        x = L.tensor(np.array([1 + 2j, 3 - 1j]))
        r = L.ones(2, requires_grad=True)
        y = r * 2
        return (L.real(x).tolist(), L.imag(x).tolist(), L.conj(x).tolist(), L.is_conj(x), L.is_neg(x), x.is_conj(),
                L.is_signed(L.ones(2, dtype=L.uint8)), L.is_signed(r), L.get_device(r), L.resolve_conj(x) is x,
                L.resolve_neg(x) is x, y.output_nr, L.detach(y).requires_grad)
    assert run(ember) == run(torch)


@pytest.mark.parametrize("call", [
    lambda L, A: L.eig(A), lambda L, A: L.symeig(A), lambda L, A: L.solve(A, A), lambda L, A: L.lstsq(A, A),
    lambda L, A: L.matrix_rank(A), lambda L, A: A.eig(), lambda L, A: A.symeig(), lambda L, A: A.solve(A),
    lambda L, A: A.lstsq(A),
])
def test_functions_removed_in_pytorch_1_9_say_what_replaces_them(call):
    with pytest.raises(RuntimeError) as t_err:
        call(torch, torch.eye(2))
    with pytest.raises(RuntimeError) as e_err:
        call(ember, ember.eye(2))
    assert str(e_err.value) == str(t_err.value)


@pytest.mark.filterwarnings("ignore:torch.lu is deprecated", "ignore:torch.cholesky is deprecated")
def test_deprecated_lu_and_cholesky_warn_and_agree_with_pytorch():
    """(Both warn once per process, as PyTorch's TORCH_WARN_ONCE does, so the warning itself is not asserted.)"""
    a = np.array([[4.0, 2.0, 1.0], [2.0, 5.0, 3.0], [1.0, 3.0, 6.0]])
    np.testing.assert_allclose(ember.lu(ember.tensor(a))[0].numpy(), torch.lu(torch.tensor(a))[0].numpy())
    e, t = ember.tensor(a).lu(get_infos=True), torch.tensor(a).lu(get_infos=True)
    assert type(e) is type(t) is tuple and e[2].item() == t[2].item() == 0
    assert type(ember.lu(ember.tensor(a), get_infos=True)).__name__ == "_lu_with_info"
    np.testing.assert_allclose(ember.cholesky(ember.tensor(a), upper=True).numpy(),
                               torch.cholesky(torch.tensor(a), upper=True).numpy())


def test_unravel_index_matches_pytorch():
    for idx, shape in [([5, 7, -1, 0], (2, 4)), ([3], 6), ([[1, 10], [23, 4]], (2, 3, 4))]:
        e = ember.unravel_index(ember.tensor(idx), shape)
        t = torch.unravel_index(torch.tensor(idx), shape)
        assert len(e) == len(t)
        for a, b in zip(e, t):
            assert a.dtype == ember.int64
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype"):
        ember.unravel_index(ember.tensor([1.0]), (2, 2))
