"""__torch_dispatch__, FakeTensorMode, make_fx and decompositions against PyTorch: the ATen overloads a
TorchDispatchMode sees for the same programs, a wrapper subclass (PyTorch's LoggingTensor pattern) under autograd,
fake tensors' shapes and errors, and make_fx graphs (forward, forward+backward, after the same decompositions)."""
import collections
import importlib
import operator
import pickle

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def _mod(lib, name):
    return importlib.import_module(lib.__name__ + name)


def _mode_class(lib):
    base = _mod(lib, ".utils._python_dispatch").TorchDispatchMode

    class Recorder(base):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(str(func))
            return func(*args, **(kwargs or {}))
    return Recorder


def _seen(lib, fn, *args):
    with _mode_class(lib)() as m:
        fn(lib, *args)
    return m.seen


def _programs():
    def arith(lib, a, b):
        (a + b, a + 1, a * 2.0, a - b, a / 3, lib.add(a, b, alpha=2), 2 - a, lib.sub(a, b, alpha=3))

    def reductions(lib, a, b):
        (a.sum(), lib.sum(a, dim=1, keepdim=True), a.mean(0), a.max(), a.max(dim=1), a.argmax(1), a.std(1))

    def views(lib, a, b):
        (a.view(3, 2), a.t(), a.transpose(0, 1).contiguous(), a[0], a[:, 1:], a.unsqueeze(0), a.reshape(6),
         lib.cat([a, b]), lib.stack([a, b]), a.permute(1, 0), a.expand(4, 2, 3))

    def nn_functional(lib, a, b):
        F = lib.nn.functional
        w = lib.ones(4, 3)
        (F.linear(a, w), F.relu(a), F.gelu(a), F.softmax(a, -1), F.log_softmax(a, -1), F.silu(a), lib.tanh(a),
         F.layer_norm(a, (3,)), F.dropout(a, 0.5, training=False), F.mse_loss(a, b), a.clone(), lib.where(a > 0, a, b))

    def factories(lib, a, b):
        (lib.ones(2, 3), lib.zeros(2, dtype=lib.float64), lib.empty(3), lib.full((2,), 1.5), lib.ones_like(a),
         lib.zeros_like(a), a.new_zeros(3), lib.randn(2))

    def inplace(lib, a, b):
        c = a.clone()
        (c.add_(1), c.mul_(b), c.zero_(), c.copy_(b), c.exp_())

    def backward(lib, a, b):
        x = a.clone().requires_grad_()
        w = b.t().clone().requires_grad_()   # column-major, as PyTorch's clone keeps it: mm's formula transposes
        y = (x @ w).sin().sum()
        lib.autograd.grad(y, (x, w))

    def numbers(lib, a, b):
        """Note [Overloads PyTorch's bindings hide]: a number is wrapped and the Tensor overload called, forward and
        in the node's formula; the aliases show their base's binding call."""
        x = a.clone().requires_grad_()
        y = ((x * 2 + 1 - 3) / 4).div(5, rounding_mode=None)
        z = lib.true_divide(y, 2) + lib.divide(y, 3) + lib.multiply(y, 2) + lib.subtract(y, 1)
        c = z.clone()
        c.mul_(2).div_(3).add_(1)
        lib.autograd.grad(c.sum(), x)

    return [arith, reductions, views, nn_functional, factories, inplace, backward, numbers]


@pytest.mark.parametrize("program", _programs(), ids=lambda p: p.__name__)
def test_dispatch_mode_sees_pytorchs_overloads(program):
    ea, eb = ember.randn(2, 3), ember.randn(2, 3)
    ta, tb = torch.tensor(ea.numpy()), torch.tensor(eb.numpy())
    got = _seen(ember, program, ea, eb)
    want = _seen(torch, program, ta, tb)
    if program.__name__ in ("backward", "numbers"):    # the formulas run in another order: compare which ops, how often
        assert collections.Counter(got) == collections.Counter(want)
    else:
        assert got == want


def test_overload_objects_match_pytorch():
    for lib in (ember, torch):
        o = lib.ops.aten.add.Tensor
        assert str(o) == "aten.add.Tensor"
        assert repr(o) == "<OpOverload(op='aten.add', overload='Tensor')>"
        assert repr(lib.ops.aten.add) == "<OpOverloadPacket(op='aten.add')>"
        assert o.name() == "aten::add.Tensor" and o.__name__ == "add.Tensor" and o.overloadpacket is lib.ops.aten.add
        assert lib.ops.aten.sum.default.name() == "aten::sum"
        assert str(o._schema) == "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
        s = lib.ops.aten.add_.Tensor._schema
        assert s.is_mutable and s.arguments[0].alias_info.is_write and s.arguments[2].kwarg_only
        assert [a.name for a in s.arguments] == ["self", "other", "alpha"] and s.arguments[2].default_value == 1
        assert not lib.ops.aten.add.Tensor._schema.is_mutable
        if lib is ember:
            assert pickle.loads(pickle.dumps(o)) is o
        assert [r.name for r in lib.ops.aten.max.dim._schema.returns] == ["values", "indices"]
        assert lib.ops.aten.mul.Tensor(lib.ones(2), 3).tolist() == [3.0, 3.0]
        with pytest.raises(AttributeError, match="has no overload name 'nope'"):
            lib.ops.aten.add.nope


def test_mode_arguments_and_nesting():
    """args / kwargs as PyTorch hands them (trailing defaults dropped, kw-only as kwargs), grad mode on but no
    autograd inside the handler, the inner mode sees calls the outer one makes, NotImplemented everywhere is a
    TypeError."""
    def run(lib):
        base = _mod(lib, ".utils._python_dispatch").TorchDispatchMode
        out = []

        class Outer(base):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                r = func(*args, **(kwargs or {}))
                shown = [("T", tuple(a.shape)) if isinstance(a, lib.Tensor) else a for a in args]
                out.append(("outer", str(func), shown, sorted((kwargs or {}).items()), r.grad_fn is None,
                            lib.is_grad_enabled()))
                return r

        class Inner(base):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out.append(("inner", str(func)))
                return func(*args, **(kwargs or {}))
        x = lib.ones(2, 3, requires_grad=True)
        with Outer(), Inner():
            lib.sum(x, dim=1)
            lib.sum(x, 1, True)
            lib.add(x, x, alpha=2)
        class Bad(base):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return NotImplemented
        with pytest.raises(TypeError, match="all __torch_dispatch__ handlers returned NotImplemented"):
            with Bad():
                lib.add(x, x)
        return out
    assert run(ember) == run(torch)


def _logging_tensor(lib):
    from_pytree = _mod(lib, ".utils._pytree").tree_map
    log = []

    class LoggingTensor(lib.Tensor):
        __slots__ = ["elem"]

        @staticmethod
        def __new__(cls, elem, requires_grad=False):
            r = lib.Tensor._make_wrapper_subclass(cls, elem.size(), strides=elem.stride(), dtype=elem.dtype,
                                                  device=elem.device, requires_grad=requires_grad)
            r.elem = elem
            return r

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            def unwrap(e):
                return e.elem if isinstance(e, LoggingTensor) else e

            def wrap(e):
                return LoggingTensor(e) if isinstance(e, lib.Tensor) else e
            log.append(str(func))
            return from_pytree(wrap, func(*from_pytree(unwrap, args), **from_pytree(unwrap, kwargs or {})))
    return LoggingTensor, log


def test_wrapper_subclass_under_autograd():
    """PyTorch's LoggingTensor: ops go to __torch_dispatch__ below autograd, which records the graph on the
    wrapper; backward runs through the subclass too, and the values equal PyTorch's."""
    results = []
    for lib in (ember, torch):
        LT, log = _logging_tensor(lib)
        x = LT(lib.tensor([1.0, 2.0, 3.0]), requires_grad=True)
        w = lib.tensor([0.5, -1.0, 2.0])
        y = (x * w).sin().sum()
        assert type(y) is LT and y.grad_fn.name() == "SumBackward0" and x.is_leaf and x.requires_grad
        y.backward()
        z = LT(lib.arange(6.0).reshape(2, 3))
        r = (type(x.grad).__name__, x.grad.elem.tolist(), y.elem.item(), z.sum(1).elem.tolist(), z.max().item(),
             tuple(z.t().shape), type(x.detach()).__name__)
        results.append((r, [e for e in log if e != "aten.clone.default" and e != "aten.detach.default"]))
    (er, elog), (tr, tlog) = results
    assert er[0] == tr[0] and er[5:] == tr[5:] and er[4] == tr[4]
    np.testing.assert_allclose(er[1], tr[1], rtol=1e-6)
    np.testing.assert_allclose(er[2], tr[2], rtol=1e-6)
    assert er[3] == tr[3]
    assert elog == tlog


def test_fake_tensor_mode():
    def run(lib):
        ft = _mod(lib, "._subclasses.fake_tensor")
        out = []
        with ft.FakeTensorMode() as m:
            a = lib.empty(2, 3)
            b = lib.ones(3, dtype=lib.int64)
            out += [repr(a), repr(b), type(a).__name__, str(a.device), tuple((a @ lib.randn(3, 5)).shape)]
            lin = lib.nn.Linear(3, 4)
            out += [tuple(lin(a).shape), a.t().stride(), a.add_(1) is a, tuple(a[0].shape),
                    isinstance(lin.weight, lib.nn.Parameter), type(lin.weight).__name__]
            c = lib.cat([a, a], 1)
            out += [tuple(c.shape), str(c.dtype).split(".")[1]]
            with pytest.raises(ft.DataDependentOutputException):
                a.sum().item()
            with pytest.raises(ft.DynamicOutputShapeException):
                lib.nonzero(a)
            with pytest.raises(RuntimeError):
                a @ lib.empty(4, 2)
            x = lib.randn(4, 3, requires_grad=True)
            (x * 2).sum().backward()
            out += [type(x.grad).__name__, tuple(x.grad.shape)]
        r = lib.randn(3)
        fr = m.from_tensor(r)
        out += [repr(fr), fr.fake_mode is m, m.from_tensor(r) is fr, repr(fr * 2)]
        with pytest.raises(AssertionError, match="Please convert all Tensors to FakeTensors"):
            with m:
                r + fr
        return out
    assert run(ember) == [s.replace("torch.", "ember.") if isinstance(s, str) else s for s in run(torch)]


def _make_fx(lib):
    return _mod(lib, ".fx.experimental.proxy_tensor").make_fx


def _graph(gm):
    return [(n.op, n.name, str(n.target)) for n in gm.graph.nodes]


def _fn_mlp(lib):
    F = lib.nn.functional

    def f(x, w, b):
        y = F.linear(x, w, b).relu()
        z, _ = y.max(dim=1)
        return (y * 2 + 1).sum() + z.mean(), y.softmax(-1)
    return f


def _fn_block(lib):
    F = lib.nn.functional

    def f(x, w1, b1, w2, b2, tgt):
        h = F.relu(F.linear(x, w1, b1))
        h = F.gelu(F.layer_norm(h, (h.shape[-1],)))
        out = F.linear(h, w2, b2).softmax(-1)
        return F.mse_loss(out, tgt) + F.silu(out).mean() + lib.tanh(out).sum() * 0.5 - out.transpose(0, 1).sum(0).mean()
    return f


def _args(lib, shapes, requires_grad=False):
    rng = np.random.default_rng(0)
    return [lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=requires_grad) for s in shapes]


_BLOCK_SHAPES = [(2, 3), (4, 3), (4,), (5, 4), (5,), (2, 5)]


@pytest.mark.parametrize("mode", ["real", "fake"])
def test_make_fx_forward_graph_equals_pytorchs(mode):
    graphs, outs = [], []
    for lib in (ember, torch):
        args = _args(lib, [(2, 3), (4, 3), (4,)])
        gm = _make_fx(lib)(_fn_mlp(lib), tracing_mode=mode)(*args)
        graphs.append(_graph(gm))
        outs.append([o.detach().numpy() for o in gm(*args)])
        assert "torch.ops.aten.addmm.default(b_1, x_1, t)" in gm.code
    assert graphs[0] == graphs[1]
    for e, t in zip(*outs):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)


def test_make_fx_with_core_decompositions_equals_pytorchs():
    graphs = []
    for lib in (ember, torch):
        table = _mod(lib, "._decomp").core_aten_decompositions()
        gm = _make_fx(lib)(_fn_block(lib), decomposition_table=table)(*_args(lib, _BLOCK_SHAPES))
        graphs.append([str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
        assert "aten.t.default" not in graphs[-1] and "aten.permute.default" in graphs[-1]
    assert graphs[0] == graphs[1]


@pytest.mark.parametrize("decompose", [False, True], ids=["aten", "core"])
def test_make_fx_forward_and_backward_code_equals_pytorchs(decompose):
    """autograd.grad inside the traced function (linear, relu, layer_norm, gelu, softmax, mse_loss, silu, tanh,
    transpose, sum, mean): the forward+backward graph prints as PyTorch's, saved outputs' detaches included --
    as recorded, and after the core decompositions."""
    def code(lib):
        f = _fn_block(lib)

        def g(x, w1, b1, w2, b2, tgt):
            return lib.autograd.grad(f(x, w1, b1, w2, b2, tgt), (x, w1, b1, w2, b2))
        table = _mod(lib, "._decomp").core_aten_decompositions() if decompose else None
        return _make_fx(lib)(g, decomposition_table=table)(*_args(lib, _BLOCK_SHAPES, requires_grad=True)).code
    assert code(ember) == code(torch)


def test_make_fx_forward_and_backward():
    """autograd.grad inside the traced function: the graph holds the backward's ops too and computes PyTorch's
    gradients."""
    def grads(lib):
        f = _fn_block(lib)

        def g(x, w1, b1, w2, b2, tgt):
            return lib.autograd.grad(f(x, w1, b1, w2, b2, tgt), (x, w1, b1, w2, b2))
        return g
    results = []
    for lib in (ember, torch):
        args = _args(lib, _BLOCK_SHAPES, requires_grad=True)
        gm = _make_fx(lib)(grads(lib))(*args)
        plain = [a.detach() for a in args]
        results.append([o.detach().numpy() for o in gm(*plain)])
        ops = collections.Counter(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        assert ops["aten.mm.default"] >= 4 and "aten.native_layer_norm_backward.default" in ops
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-4, atol=1e-6)


def test_make_fx_constants_and_backward_call():
    def f_lib(lib):
        c = lib.tensor([1.0, 2.0, 3.0])

        def f(x):
            y = (x * c).sum()
            y.backward()
            return x.grad + 0
        return f
    for lib in (ember, torch):
        x = lib.randn(3, requires_grad=True)
        gm = _make_fx(lib)(f_lib(lib))(x)
        names = [n.name for n in gm.graph.nodes]
        assert "_tensor_constant0" in names
        assert gm(lib.randn(3, requires_grad=True)).tolist() == [1.0, 2.0, 3.0]


def test_make_fx_graph_runs_and_pickles():
    args = _args(ember, [(2, 3), (4, 3), (4,)])
    gm = _make_fx(ember)(_fn_mlp(ember))(*args)
    gm2 = pickle.loads(pickle.dumps(gm))
    for a, b in zip(gm(*args), gm2(*args)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert all(n.meta.get("val") is not None for n in gm.graph.nodes if n.op == "call_function")


def test_decomposition_registry():
    from ember._decomp import get_decompositions, register_decomposition
    d = get_decompositions([ember.ops.aten.t, ember.ops.aten.rsub])
    assert set(map(str, d)) == {"aten.t.default", "aten.rsub.Tensor", "aten.rsub.Scalar"}
    mine = {}

    @register_decomposition(ember.ops.aten.relu.default, registry=mine)
    def relu(x):
        return ember.clamp_min(x, 0)
    gm = _make_fx(ember)(lambda x: ember.relu(x) * 2, decomposition_table=mine)(ember.randn(3))
    assert [str(n.target) for n in gm.graph.nodes if n.op == "call_function"] == \
        ["aten.clamp_min.default", "aten.mul.Tensor"]
    x = ember.randn(5)
    np.testing.assert_array_equal(gm(x).numpy(), (ember.relu(x) * 2).numpy())


def test_python_key_not_on_plain_tensors():
    """A plain tensor never carries the Python key, and the key is included only while a mode is active."""
    from ember._python_key import PYTHON_BIT
    from ember.aten.dispatcher import tls
    x = ember.randn(3)
    assert not x._ks & PYTHON_BIT and not tls.keys[0] & PYTHON_BIT
    with _mode_class(ember)():
        assert tls.keys[0] & PYTHON_BIT
    assert not tls.keys[0] & PYTHON_BIT
    kernel = ember.ops.aten.mul.Tensor.handle._lookup_key(ember.DispatchKey.Python)
    assert kernel.__qualname__ == "python_fallback[aten::mul.Tensor]"


def test_operator_getitem_nodes_for_tuple_results():
    gm = _make_fx(ember)(lambda x: ember.max(x, 1)[0])(ember.randn(2, 3))
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets.count(operator.getitem) == 2


def test_three_graphs_of_a_module_print_as_pytorchs():
    """docs/fx.md's example: the fx graph, the ATen graph and the decomposed graph of one module, code for code."""
    def codes(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(4, 3)

            def forward(self, x):
                return lib.nn.functional.silu(self.fc(x)).sum(dim=1) * 2
        net, x = Net(), lib.randn(2, 4)
        make_fx = _make_fx(lib)
        table = _mod(lib, "._decomp").core_aten_decompositions()
        return [_mod(lib, ".fx").symbolic_trace(net).code, make_fx(net)(x).code,
                make_fx(net, decomposition_table=table)(x).code]
    assert codes(ember) == codes(torch)


def test_wrapper_subclass_prints_no_made_up_values():
    """A wrapper subclass has no data of its own: its default repr shows its metadata (PyTorch fails to format one
    without a __repr__), never the placeholder memory; a subclass with real data prints its values, and viewing it
    as a plain Tensor drops the Python key."""
    from ember._python_key import PYTHON_BIT
    LT, _ = _logging_tensor(ember)      # defines no __repr__
    x = LT(ember.tensor([1.5, 2.0]))
    assert repr(x) == "LoggingTensor(..., size=(2,))"
    assert repr(LT(ember.tensor([1, 2]))) == "LoggingTensor(..., size=(2,), dtype=ember.int64)"

    class Sub(ember.Tensor):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            unwrap = lambda e: e.as_subclass(ember.Tensor) if isinstance(e, Sub) else e  # noqa: E731
            return func(*[unwrap(a) for a in args], **(kwargs or {}))
    s = ember.tensor([1.0, 2.0]).as_subclass(Sub)
    assert s._ks & PYTHON_BIT and not s.as_subclass(ember.Tensor)._ks & PYTHON_BIT
    assert repr(s) == "tensor([1., 2.])" and (s + 1).tolist() == [2.0, 3.0]


# composites that read their input's values through NumPy: no fake (or meta) evaluation of them (none left: the
# factorizations report failures through _linalg_check_errors, which a fake tensor skips as PyTorch's does)
_NUMPY_COMPOSITES: set[str] = set()


def test_every_op_table_sample_runs_under_fake_tensor_mode():
    """Every sample of the op table (tests/op_db.py) run under FakeTensorMode gives the shapes and dtypes of the
    eager run: through the Python key, the OpOverload call, the Meta kernels, and for ops without one the real
    kernel on zeros (PyTorch's fallback kernels). Data-dependent ops raise PyTorch's exceptions."""
    from tests.test_ops import CASES, _shapes, call, samples_of
    ft = _mod(ember, "._subclasses.fake_tensor")
    compared, fake, refused = 0, 0, set()
    for op, dtype in CASES:
        for s in samples_of(op, dtype)[:2]:
            try:
                ref = call(op, ember, s)
            except Exception:
                continue
            try:
                with ft.FakeTensorMode(allow_non_fake_inputs=True):
                    got = call(op, ember, s)
            except (ft.DataDependentOutputException, ft.DynamicOutputShapeException):
                continue
            except RuntimeError as e:
                assert op.name in _NUMPY_COMPOSITES and "not supported for tensor subclasses" in str(e), op.name
                refused.add(op.name)
                continue
            assert _shapes(got) == _shapes(ref), op.name
            flat = got if isinstance(got, (tuple, list)) else [got]
            fake += any(type(g).__name__ == "FakeTensor" for g in flat)   # (positive(x) returns x itself)
            compared += 1
    assert compared > 2500 and fake > 0.95 * compared and refused == _NUMPY_COMPOSITES


def test_fake_elementwise_results_are_laid_out_as_real_and_pytorch_ones():
    """An elementwise op on a permuted or sliced input keeps the input's layout (PyTorch's TensorIterator, NumPy's
    K order): the fake result's strides equal the real result's and PyTorch's (a graph traced on fake tensors
    decides view against reshape by them)."""
    ft = _mod(ember, "._subclasses.fake_tensor")
    layouts = [lambda t: t.transpose(0, 2), lambda t: t.permute(1, 0, 2), lambda t: t[:, ::2],
               lambda t: t.transpose(1, 2)]
    for mk in layouts:
        for op in (lambda a, b: a * 0.5, lambda a, b: a + b, lambda a, b: b - a, lambda a, b: (a * b).exp()):
            x = mk(ember.randn(2, 4, 6))
            other = ember.randn(x.shape[-1])
            real = op(x, other).stride()
            with ft.FakeTensorMode(allow_non_fake_inputs=True) as mode:
                fake = op(mk(mode.from_tensor(ember.randn(2, 4, 6))), other).stride()
            tx = mk(torch.randn(2, 4, 6))
            ref = op(tx, torch.randn(tx.shape[-1])).stride()
            assert real == fake == ref, (real, fake, ref)


def test_an_op_overload_takes_its_arguments_as_pytorchs():
    """Note [Fast binders of an OpOverload]: ``ops.aten.<op>.<overload>(...)`` binds through the public function's
    fast binder where it can and through the schema otherwise, with PyTorch's results: the schema's names as
    keywords (``self=`` included), a list for an ``int[]``, a number for a Tensor through the Scalar overload;
    ``input=`` (the public binding's name, not the schema's) and ``out=`` on a functional overload refused."""
    torch = pytest.importorskip("torch")
    for lib in (ember, torch):
        A = lib.ops.aten
        a = lib.arange(6.0).reshape(2, 3)
        calls = [A.add.Tensor(a, a), A.add.Tensor(self=a, other=a, alpha=2), A.add(self=a, other=a),
                 A.mul.Tensor(a, 2), A.sum.dim_IntList(a, [1]), A.sum.dim_IntList(a, dim=[0], keepdim=True),
                 A.view.default(a, [3, 2]), A.permute.default(a, [1, 0])]
        if lib is ember:
            ours = [c.numpy() for c in calls]
        else:
            for o, t in zip(ours, calls):
                np.testing.assert_array_equal(o, t.numpy())
        for bad in (lambda: A.add.Tensor(input=a, other=a), lambda: A.add.Tensor(a, a, out=lib.empty(2, 3))):
            with pytest.raises((TypeError, RuntimeError)):
                bad()
