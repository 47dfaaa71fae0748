"""Pointwise fusion in ember.compile's generated code (Note [Pointwise fusion] in ember/_inductor/fusion.py): every
operator a fused loop knows, chained with others and run compiled, against PyTorch eager on the same ATen calls
(NaN, infinities, signed zeros and large values included); every input layout a loop reads; results read outside
the loop; the reuse of dead fused arrays; the kernel cache on disk."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember._dynamo as dynamo
from ember._inductor import config, fusion
from ember._inductor.compile_fx import compile_fx
from ember.aten.kernels import compiled

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
pytestmark = pytest.mark.skipif(not compiled.is_enabled(), reason="numba is not installed")


@pytest.fixture(autouse=True)
def _fresh():
    dynamo.reset()
    yield
    dynamo.reset()


def _spy(**config_patches):
    """The inductor backend, keeping the generated functions it makes (``__ember_source__``, ``__ember_kernels__``)."""
    made = []

    def backend(gm, example_inputs):
        made.append(compile_fx(gm, example_inputs, config_patches=config_patches))
        return made[-1]
    return backend, made


def _run(fn, *args):
    """``fn`` compiled through the inductor backend: its result and the generated functions' fused kernels."""
    backend, made = _spy()
    result = ember.compile(fn, backend=backend, fullgraph=True)(*args)
    return result, [src for f in made for src in getattr(f, "__ember_kernels__", [])]


def _values(shape, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2.5).astype(np.float32)
    flat = x.reshape(-1)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 30.0, -30.0, 1e-3, -1e-3, 1.0, -1.0]
    k = min(len(special), flat.size)
    flat[:k] = special[seed % len(special):][:k] + special[:max(0, k - len(special) + seed % len(special))]
    return x


def _both(*arrays):
    return ([ember.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays])


# each: f(aten, p, y, m) with p a fused value (x * 1.25), y a second tensor, m a bool mask
_OPS = {
    "add.Tensor": lambda A, p, y, m: A.add.Tensor(p, y, alpha=2),
    "add.Scalar": lambda A, p, y, m: A.add.Scalar(p, 3.0),
    "sub.Tensor": lambda A, p, y, m: A.sub.Tensor(p, y),
    "sub.Scalar": lambda A, p, y, m: A.sub.Scalar(p, 0.1),
    "rsub.Tensor": lambda A, p, y, m: A.rsub.Tensor(p, y),
    "rsub.Scalar": lambda A, p, y, m: A.rsub.Scalar(p, 2.0),
    "mul.Tensor": lambda A, p, y, m: A.mul.Tensor(p, y),
    "mul.Scalar": lambda A, p, y, m: A.mul.Scalar(p, 0.1),
    "div.Tensor": lambda A, p, y, m: A.div.Tensor(p, y),
    "div.Scalar": lambda A, p, y, m: A.div.Scalar(p, 3.0),
    "neg.default": lambda A, p, y, m: A.neg.default(p),
    "abs.default": lambda A, p, y, m: A.abs.default(p),
    "reciprocal.default": lambda A, p, y, m: A.reciprocal.default(p),
    "exp.default": lambda A, p, y, m: A.exp.default(p),
    "log.default": lambda A, p, y, m: A.log.default(p),
    "log1p.default": lambda A, p, y, m: A.log1p.default(p),
    "expm1.default": lambda A, p, y, m: A.expm1.default(p),
    "sqrt.default": lambda A, p, y, m: A.sqrt.default(p),
    "rsqrt.default": lambda A, p, y, m: A.rsqrt.default(p),
    "sin.default": lambda A, p, y, m: A.sin.default(p),
    "cos.default": lambda A, p, y, m: A.cos.default(p),
    "erf.default": lambda A, p, y, m: A.erf.default(p),
    "tanh.default": lambda A, p, y, m: A.tanh.default(p),
    "sigmoid.default": lambda A, p, y, m: A.sigmoid.default(p),
    "relu.default": lambda A, p, y, m: A.relu.default(p),
    "silu.default": lambda A, p, y, m: A.silu.default(p),
    "leaky_relu.default": lambda A, p, y, m: A.leaky_relu.default(p, 0.2),
    "pow.Tensor_Scalar": lambda A, p, y, m: A.pow.Tensor_Scalar(A.pow.Tensor_Scalar(p, 2), 1.7),
    "pow.Tensor_Scalar 0.5 3 -1": lambda A, p, y, m: A.add.Tensor(
        A.pow.Tensor_Scalar(p, 0.5), A.add.Tensor(A.pow.Tensor_Scalar(p, 3), A.pow.Tensor_Scalar(p, -1))),
    "pow.Tensor_Tensor": lambda A, p, y, m: A.pow.Tensor_Tensor(p, y),
    "clamp_min.default": lambda A, p, y, m: A.clamp_min.default(p, -0.5),
    "clamp_max.default": lambda A, p, y, m: A.clamp_max.default(p, 0.5),
    "clamp.default": lambda A, p, y, m: A.clamp.default(p, -0.5, 0.5),
    "clamp.default min only": lambda A, p, y, m: A.clamp.default(p, None, 0.25),
    "hardtanh.default": lambda A, p, y, m: A.hardtanh.default(p, -0.3, 0.7),
    "maximum.default": lambda A, p, y, m: A.maximum.default(p, y),
    "minimum.default": lambda A, p, y, m: A.minimum.default(p, y),
    "gelu.default": lambda A, p, y, m: A.gelu.default(p),
    "gelu.default tanh": lambda A, p, y, m: A.gelu.default(p, approximate="tanh"),
    "gelu_backward.default": lambda A, p, y, m: A.gelu_backward.default(y, p),
    "gelu_backward.default tanh": lambda A, p, y, m: A.gelu_backward.default(y, p, approximate="tanh"),
    "threshold_backward.default": lambda A, p, y, m: A.threshold_backward.default(y, p, 0.0),
    "sigmoid_backward.default": lambda A, p, y, m: A.sigmoid_backward.default(y, p),
    "tanh_backward.default": lambda A, p, y, m: A.tanh_backward.default(y, p),
    "silu_backward.default": lambda A, p, y, m: A.silu_backward.default(y, p),
    "where.self": lambda A, p, y, m: A.where.self(m, p, y),
    "masked_fill.Scalar": lambda A, p, y, m: A.masked_fill.Scalar(p, m, -1.5),
    "clone.default": lambda A, p, y, m: A.clone.default(p),
}
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    _OPS[f"{_name}.Tensor"] = (lambda n: lambda A, p, y, m: getattr(A, n).Tensor(p, y))(_name)
    _OPS[f"{_name}.Scalar"] = (lambda n: lambda A, p, y, m: getattr(A, n).Scalar(p, 0.3))(_name)


def test_every_formula_is_tested():
    assert {k.split(" ")[0] for k in _OPS} == set(fusion._FORMULAS)


@pytest.mark.parametrize("key", list(_OPS))
@pytest.mark.parametrize("y_shape", [(8, 33), (33,)], ids=["full", "row"])
def test_fused_operator_matches_pytorch(key, y_shape):
    """``op(x * 1.25, y)`` then a second operator on its result: one loop, PyTorch's values."""
    def f(lib):
        def chain(x, y, m):
            A = lib.ops.aten
            p = A.mul.Scalar(x, 1.25)
            r = _OPS[key](A, p, y, m)
            return A.where.self(r, p, y) if r.dtype == lib.bool else A.add.Scalar(r, 0.5)
        return chain
    if key.startswith("gelu_backward") and y_shape != (8, 33):
        pytest.skip("PyTorch's gelu_backward takes no broadcast gradient")
    x, y = _values((8, 33), 1), _values(y_shape, 2)
    m = np.random.default_rng(3).random((8, 33)) < 0.5
    (ex, ey, em), (tx, ty, tm) = _both(x, y, m)
    got, kernels = _run(f(ember), ex, ey, em)
    assert len(kernels) == 1
    want = f(torch)(tx, ty, tm).numpy()
    if key == "gelu.default":
        # PyTorch computes an exact GELU of a contiguous float32 tensor with oneDNN, whose JIT kernel gives
        # gelu(+inf) = +inf with AVX2 and NaN with AVX-512: ember gives +inf (the limit) on every machine
        want = np.where(np.isposinf(x) & np.isnan(want), np.inf, want)
    np.testing.assert_allclose(got.numpy(), want, rtol=2e-6, atol=1e-6, equal_nan=True)
    assert got.dtype == ember.float32 and got.is_contiguous()


@pytest.mark.parametrize("y_shape,layout", [((33,), "row"), ((8, 1), "col"), ((), "one"), ((1, 1), "one"),
                                            ((4, 1, 33), "full")])
def test_every_input_layout(y_shape, layout):
    shape = (4, 8, 33) if len(y_shape) == 3 else (8, 33)
    x, y = _values(shape, 4), _values(y_shape, 5) if y_shape else np.array(0.75, np.float32)
    (ex, ey), (tx, ty) = _both(x, y)

    def f(x, y):
        return ((x * y).tanh() - y) * 2.0
    assert fusion._layout(y_shape, shape) == layout
    got, kernels = _run(f, ex, ey)
    assert len(kernels) == 1
    np.testing.assert_allclose(got.numpy(), f(tx, ty).numpy(), rtol=2e-6, atol=1e-6)


def test_a_transposed_input_and_a_scalar_output():
    x = _values((33, 8), 6)
    (ex,), (tx,) = _both(x)
    got, kernels = _run(lambda x: (x.t() * 2.0).sigmoid() + 1.0, ex)
    assert len(kernels) == 1
    np.testing.assert_allclose(got.numpy(), ((tx.t() * 2.0).sigmoid() + 1.0).numpy(), rtol=2e-6)
    got, kernels = _run(lambda a, b: (a * b).exp() - a, ember.tensor(0.5), ember.tensor(2.0))
    assert len(kernels) == 1 and got.shape == () and abs(got.item() - (np.exp(1.0) - 0.5)) < 1e-6


def test_float64_and_a_mask_made_in_the_loop():
    x, y = _values((16, 9), 7).astype(np.float64), _values((16, 9), 8).astype(np.float64)
    (ex, ey), (tx, ty) = _both(x, y)
    got, kernels = _run(lambda x, y: (ember.where(x * 3.0 > y, x * 3.0, y - 1.0).exp(), x * 3.0 <= y), ex, ey)
    want = (torch.where(tx * 3.0 > ty, tx * 3.0, ty - 1.0).exp(), tx * 3.0 <= ty)
    assert kernels and "np.float32(" not in kernels[0]     # float64 values are not rounded to float32
    assert got[0].dtype == ember.float64 and got[1].dtype == ember.bool
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-12, equal_nan=True)
    assert (got[1].numpy() == want[1].numpy()).all()


def test_results_read_outside_the_loop():
    """The loop writes each member read elsewhere (by a reduction, by a later loop, as a result)."""
    x, b = _values((64, 48), 9), _values((48,), 10)
    (ex, eb), (tx, tb) = _both(x, b)

    def f(lib):
        def g(x, b):
            h = lib.nn.functional.gelu(x + b)          # loop 1: add, gelu
            s = h.sum(1, keepdim=True)                 # h read outside the loop
            u = (h * s).tanh() * 0.5 + h               # loop 2 reads h and s
            v = (u * 2.0).relu() - 1.0                 # loop 3 reads u, which the mean also reads
            return v.sum(0) + u.mean(0), s
        return g
    backend, made = _spy()
    got = ember.compile(f(ember), backend=backend)(ex, eb)
    want = f(torch)(tx, tb)
    for a, w in zip(got, want):
        np.testing.assert_allclose(a.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)
    src = made[0].__ember_source__
    assert src.count("# fused:") >= 2


def test_dead_fused_arrays_take_later_results():
    x = _values((32, 64), 11)
    (ex,), (tx,) = _both(x)

    def f(x):
        a = (x * 2.0).exp() - 1.0          # loop 1: a is read only by loop 2
        b = (a * 0.5).tanh()               # loop 2 ... its result read by a reduction
        c = b.sum()
        d = (x - c).sigmoid() + 0.25       # loop 3: a is dead and of d's size
        return d * 3.0 + b.abs().sum()
    backend, made = _spy()
    got = ember.compile(f, backend=backend)(ex)
    np.testing.assert_allclose(got.numpy(), f(tx).numpy(), rtol=1e-5)
    calls = [ln for ln in made[0].__ember_source__.splitlines() if "# fused:" in ln]
    assert any("(None" not in ln.split("), (")[-1] for ln in calls), made[0].__ember_source__


def test_training_with_fusion_matches_without():
    """A GELU MLP trained compiled, with fused loops and without, step by step (forward and backward graphs)."""
    def train(fused):
        config.pointwise_fusion = fused
        try:
            dynamo.reset()
            ember.manual_seed(0)
            m = ember.nn.Sequential(ember.nn.Linear(12, 32), ember.nn.GELU(approximate="tanh"),
                                    ember.nn.Linear(32, 32), ember.nn.SiLU(), ember.nn.Linear(32, 4))
            opt = ember.optim.SGD(m.parameters(), lr=0.05)
            step = ember.compile(m)
            x, y = ember.randn(16, 12), ember.randint(0, 4, (16,))
            losses = []
            for _ in range(4):
                opt.zero_grad()
                loss = ember.nn.functional.cross_entropy(step(x) * 2.0 + 0.1, y)
                loss.backward()
                opt.step()
                losses.append(loss.item())
            return losses, [p.detach().numpy().copy() for p in m.parameters()]
        finally:
            config.pointwise_fusion = True
    (l1, p1), (l0, p0) = train(True), train(False)
    np.testing.assert_allclose(l1, l0, rtol=1e-5)
    for a, b in zip(p1, p0):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_kernels_are_cached_on_disk(tmp_path):
    """A second process finds the loop's file and numba's machine code in the cache directory: no compilation."""
    prog = (
        "import ember\n"
        "from ember._inductor import fusion\n"
        "f = ember.compile(lambda x: ((x * 2.0).exp() + 1.0).log())\n"
        "x = ember.randn(10, 10)\n"
        "assert (f(x) - ((x * 2.0).exp() + 1.0).log()).abs().max().item() < 1e-5\n"
        "stats = [loop.stats for loop, driver in fusion._loaded.values()]\n"
        "print(len(stats), sum(sum(s.cache_hits.values()) for s in stats),"
        " sum(sum(s.cache_misses.values()) for s in stats))\n")
    env = dict(os.environ, EMBER_INDUCTOR_CACHE_DIR=str(tmp_path))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runs = [subprocess.run([sys.executable, "-c", prog], env=env, cwd=root, capture_output=True, text=True,
                           timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout.split() == ["1", "0", "1"]          # compiled and saved
    assert runs[1].stdout.split() == ["1", "1", "0"]          # loaded
    files = [p.name for p in (tmp_path / "kernels").iterdir()]
    assert any(n.startswith("fused_") and n.endswith(".py") for n in files) and "__pycache__" in files


def test_fusion_turned_off_by_an_option():
    x = ember.randn(8, 8)
    spy, made = _spy(pointwise_fusion=False)
    ember.compile(lambda x: (x * 2.0).exp() + 1.0, backend=spy)(x)
    assert made[0].__ember_kernels__ == [] and "# fused" not in made[0].__ember_source__
    assert config.pointwise_fusion is True                   # restored after compiling
    out = ember.compile(lambda x: (x * 2.0).exp() - 1.0, options={"pointwise_fusion": False})(x)
    np.testing.assert_allclose(out.numpy(), ((x * 2.0).exp() - 1.0).numpy(), rtol=1e-6)


_SUMS = {
    "sum()": (lambda t: t.sum(), True),
    "sum(-1)": (lambda t: t.sum(-1), True),
    "sum(-1, keepdim)": (lambda t: t.sum(-1, keepdim=True), True),
    "sum(all dims, keepdim)": (lambda t: t.sum((0, 1, 2), keepdim=True), True),
    "mean()": (lambda t: t.mean(), True),
    "mean(-1)": (lambda t: t.mean(-1), True),
    "mean(2, keepdim)": (lambda t: t.mean(2, keepdim=True), True),
    "sum(0)": (lambda t: t.sum(0), False),                    # not the last dimension: its own kernel
    "sum(-1, dtype=float64)": (lambda t: t.sum(-1, dtype=t.new_zeros(()).double().dtype), False),
}


@pytest.mark.parametrize("name", list(_SUMS))
def test_sums_accumulate_in_the_loop(name):
    """A sum or mean over the last dimension or all of them is accumulated by the loop of the chain it sums."""
    red, fused = _SUMS[name]
    x, y = _values((3, 5, 17), 12), _values((17,), 13)
    x[np.isnan(x) | np.isinf(x)] = 0.5
    (ex, ey), (tx, ty) = _both(x, y)

    def f(x, y):
        d = (x - y) * 1.5
        return red(d.tanh() * d), d          # d is also read outside: written by the same loop
    (got, d), kernels = _run(f, ex, ey)
    want, tw = f(tx, ty)
    assert (len(kernels) == 1) and (("acc0" in kernels[0]) == fused)
    assert got.shape == tuple(want.shape) and got.dtype == getattr(ember, str(want.dtype).split(".")[1])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(d.numpy(), tw.numpy(), rtol=1e-6)


def test_a_member_never_reads_its_own_loops_sum():
    """``x - x.mean(-1, keepdim=True)``: the mean is complete only after its row, so what reads it runs after."""
    x = _values((6, 40), 14)
    x[np.isnan(x) | np.isinf(x)] = 2.0
    (ex,), (tx,) = _both(x)

    def f(x):
        h = x * 2.0 + 1.0
        c = h - h.mean(-1, keepdim=True)
        return (c * c).mean(-1).sqrt()
    got, kernels = _run(f, ex)
    np.testing.assert_allclose(got.numpy(), f(tx).numpy(), rtol=1e-5)
    assert len(kernels) == 2


def test_fused_sums_in_a_training_step_match_pytorch():
    """An MSE loss (a fused mean) and its backward, compiled, against PyTorch's step."""
    def run(lib):
        lib.manual_seed(0)
        m = lib.nn.Linear(7, 5)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.linspace(-1, 1, 35).reshape(5, 7).astype(np.float32)))
            m.bias.zero_()
        x = lib.tensor(_values((16, 7), 15).clip(-3, 3))
        y = lib.tensor(np.cos(np.arange(80)).reshape(16, 5).astype(np.float32))
        opt = lib.optim.SGD(m.parameters(), lr=0.1)

        def step():
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean() + (m(x).tanh() * 0.1).sum(-1).mean()
            loss.backward()
            opt.step()
            return loss
        step = (ember.compile if lib is ember else (lambda f: f))(step)
        return [step().item() for _ in range(3)], m.weight.detach().numpy()
    (l1, w1), (l0, w0) = run(ember), run(torch)
    np.testing.assert_allclose(l1, l0, rtol=1e-5)
    np.testing.assert_allclose(w1, w0, rtol=1e-5, atol=1e-6)
