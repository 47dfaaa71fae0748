"""ember.export against torch.export: graph signatures, the recorded operators of the training IR and of
``run_decompositions()``, printed programs, dynamic shapes (``Dim``) and their range constraints, ``module()``
against eager, and PyTorch's errors."""
import math
import re

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


# -- models written once for both libraries -------------------------------------------------------------------------
def mlp(lib):
    nn = lib.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(lib.relu(self.fc1(x))).softmax(-1)
    return MLP()


def cnn(lib):
    nn = lib.nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
            self.pool, self.fc, self.drop = nn.AdaptiveAvgPool2d(1), nn.Linear(8, 10), nn.Dropout(0.0)

        def forward(self, x):
            x = lib.relu(self.bn(self.conv(x)))
            return self.fc(self.drop(lib.flatten(self.pool(x), 1)))
    return CNN()


def gpt_block(lib):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self, d=32, h=4, maxlen=64):
            super().__init__()
            self.h = h
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.register_buffer("mask", lib.tril(lib.ones(maxlen, maxlen)).view(1, 1, maxlen, maxlen),
                                 persistent=False)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q = q.view(B, T, self.h, C // self.h).transpose(1, 2)
            k = k.view(B, T, self.h, C // self.h).transpose(1, 2)
            v = v.view(B, T, self.h, C // self.h).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
            y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
            x = x + self.proj(y)
            return x + self.mlp(self.ln2(x))
    return Block()


def lstm_net(lib):
    nn = lib.nn

    class LSTMNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm, self.head = nn.LSTM(6, 5, num_layers=2, batch_first=True), nn.Linear(5, 2)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.head(out[:, -1])
    return LSTMNet()


def pair(make, train=False):
    """The model in both libraries, with PyTorch's weights in ember's."""
    torch.manual_seed(0)
    t = make(torch).train(train)
    e = make(ember).train(train)
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return e, t


def inputs(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return tuple(ember.tensor(a) for a in arrays), tuple(torch.tensor(a) for a in arrays)


def export_both(make, shapes, dynamic=None, train=False):
    e, t = pair(make, train)
    ex, tx = inputs(*shapes)
    ds_e = dynamic(ember.export.Dim) if dynamic else None
    ds_t = dynamic(torch.export.Dim) if dynamic else None
    return ember.export.export(e, ex, dynamic_shapes=ds_e), torch.export.export(t, tx, dynamic_shapes=ds_t), (e, t)


def targets(ep):
    return [_target(n.target) if n.op == "call_function" else n.op for n in ep.graph.nodes]


def _target(t):
    return str(t) if type(t).__name__ == "OpOverload" else t.__name__


def specs(ep):
    return str(ep.graph_signature)


def specs_modulo_numbers(ep):
    """The signature without the numbers fx appends to names (PyTorch counts names across the whole trace)."""
    return re.sub(r"_\d+:", ":", specs(ep))


def code_lines(ep):
    """The printed program without source comments, blank lines and the numbers fx appends to names."""
    text = str(ep)
    lines = [ln for ln in text.split("\n") if ln.strip() and not ln.strip().startswith("# ")]
    return [re.sub(r"(sym_size_int|getitem|mul|add)_\d+", r"\1", ln) for ln in lines]


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


# -- the training IR and its signature -------------------------------------------------------------------------------
def test_mlp_prints_as_pytorchs_program():
    ep, tep, (e, t) = export_both(mlp, [(5, 4)])
    assert code_lines(ep) == code_lines(tep)
    assert ep.graph_signature.parameters == tep.graph_signature.parameters
    assert ep.graph_signature.user_inputs == tep.graph_signature.user_inputs
    assert ep.graph_signature.inputs_to_parameters == tep.graph_signature.inputs_to_parameters
    assert list(ep.state_dict) == list(tep.state_dict)
    x = ember.randn(5, 4)
    close(ep.module()(x), e(x))
    with pytest.raises(RuntimeError, match="Unable to call ExportedProgram directly"):
        ep(x)


def test_cnn_in_training_mutates_its_buffers_as_pytorchs():
    ep, tep, (e, t) = export_both(cnn, [(4, 3, 8, 8)], train=True)
    assert targets(ep) == targets(tep)
    assert specs(ep) == specs(tep)
    dep, dtep = ep.run_decompositions(), tep.run_decompositions()
    assert targets(dep) == targets(dtep)
    assert specs(dep) == specs(dtep)          # running stats and the counter as BUFFER_MUTATION outputs
    assert dep.graph_signature.buffers_to_mutate == dtep.graph_signature.buffers_to_mutate
    # module() shares the exported model's state (as PyTorch's) and updates its buffers as eager does
    ex, _ = inputs((4, 3, 8, 8), seed=1)
    for decompose in (False, True):
        model = pair(cnn, True)[0]
        program = ember.export.export(model, inputs((4, 3, 8, 8))[0])
        m = (program.run_decompositions() if decompose else program).module()
        before = {k: v.clone() for k, v in model.state_dict().items()}
        out = m(*ex)
        eager = pair(cnn, True)[0]
        close(out, eager(*ex))
        shared = dict(model.named_buffers())
        for k, v in dict(m.named_buffers()).items():
            assert v is shared[k]
        for k, v in eager.state_dict().items():
            close(model.state_dict()[k], v)
            if "running" in k:
                assert not np.allclose(before[k].numpy(), v.numpy())


def test_cnn_in_evaluation_with_a_dynamic_batch():
    ep, tep, (e, t) = export_both(cnn, [(4, 3, 8, 8)], dynamic=lambda Dim: {"x": {0: Dim("b", min=2, max=32)}})
    assert code_lines(ep) == code_lines(tep)
    assert str(ep.range_constraints) == str(tep.range_constraints) == "{s77: VR[2, 32]}"
    dep, dtep = ep.run_decompositions(), tep.run_decompositions()
    assert targets(dep) == targets(dtep)
    assert specs(dep) == specs(dtep)
    x = ember.randn(7, 3, 8, 8)
    close(dep.module()(x), e(x))
    with pytest.raises(AssertionError, match=re.escape("Guard failed: x.size()[0] <= 32")):
        ep.module()(ember.randn(33, 3, 8, 8))
    with pytest.raises(AssertionError, match=re.escape("Guard failed: x.size()[1] == 3")):
        ep.module()(ember.randn(4, 2, 8, 8))


def test_gpt_block_with_a_dynamic_sequence_length():
    ep, tep, (e, t) = export_both(gpt_block, [(2, 8, 32)],
                                  dynamic=lambda Dim: {"x": {1: Dim("T", min=2, max=63)}})
    assert targets(ep) == targets(tep)
    assert specs(ep) == specs(tep)
    assert str(ep.range_constraints) == str(tep.range_constraints)
    # the sizes of every tensor in the graph, as symbols
    forward = [ln for ln in code_lines(ep) if "def forward" in ln]
    assert forward == [ln for ln in code_lines(tep) if "def forward" in ln]
    assert 'x: "f32[2, s27, 32]"' in forward[0]
    dep, dtep = ep.run_decompositions(), tep.run_decompositions()
    assert targets(dep) == targets(dtep)
    for T in (3, 13, 63):
        x = ember.randn(2, T, 32)
        want = e(x)
        close(ep.module()(x), want, 1e-4)
        close(dep.module()(x), want, 1e-4)
        close(want, t(torch.tensor(x.numpy())), 1e-4)


def test_lstm():
    ep, tep, (e, t) = export_both(lstm_net, [(3, 7, 6)])
    assert targets(ep) == targets(tep)
    assert specs(ep) == specs(tep)
    x = ember.randn(3, 7, 6)
    close(ep.module()(x), e(x))
    close(ep.run_decompositions().module()(x), e(x))


def test_lstm_sequence_length_stays_dynamic_in_ember():
    """PyTorch specializes a Dim.AUTO sequence length of an LSTM (its decomposition unrolls the time steps);
    ember's fused layer runs any length, so the dimension stays dynamic and the program runs at other lengths."""
    e = pair(lstm_net)[0]
    ep = ember.export.export(e, (ember.randn(3, 7, 6),), dynamic_shapes={"x": {1: ember.export.Dim.AUTO}})
    assert [str(v) for v in ep.range_constraints.values()] == ["VR[2, int_oo]"]
    for T in (2, 11):
        x = ember.randn(3, T, 6)
        close(ep.module()(x), e(x))


def test_inputs_of_every_structure_and_specialized_numbers():
    def model(lib):
        class M(lib.nn.Module):
            def forward(self, x, n, xs, d=None, *, scale=2.0):
                return x * n + xs[0] + xs[1] * d["a"] * scale, None, 3
        return M()

    def make_args(lib):
        g = np.random.default_rng(0)
        v = [lib.tensor(g.standard_normal(2).astype(np.float32)) for _ in range(4)]
        return (v[0], 3, [v[1], v[2]]), {"d": {"a": v[3]}, "scale": 1.5}
    (ea, ek), (ta, tk) = make_args(ember), make_args(torch)
    ep = ember.export.export(model(ember), ea, ek)
    tep = torch.export.export(model(torch), ta, tk)
    assert code_lines(ep) == code_lines(tep)
    assert [str(s) for s in ep.graph_signature.input_specs] == [str(s) for s in tep.graph_signature.input_specs]
    assert [type(s.arg).__name__ for s in ep.graph_signature.output_specs] == \
        [type(s.arg).__name__ for s in tep.graph_signature.output_specs]
    m = ep.module()
    out = m(*ea, **ek)
    assert out[1] is None and out[2] == 3
    with pytest.raises(AssertionError, match="Guard failed: n == 3"):
        m(ea[0], 4, ea[2], **ek)


def test_constants_are_lifted():
    def model(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.table = lib.arange(3.0)
                self.register_buffer("scratch", lib.ones(3), persistent=False)

            def forward(self, x):
                return x + self.table + self.scratch + lib.tensor([1.0, 2.0, 3.0])
        return M()
    ep = ember.export.export(model(ember), (ember.ones(3),))
    tep = torch.export.export(model(torch), (torch.ones(3),))
    assert specs(ep) == specs(tep)
    assert sorted(ep.constants) == sorted(tep.constants)
    close(ep.constants["lifted_tensor_0"], tep.constants["lifted_tensor_0"])
    close(ep.module()(ember.ones(3)), model(ember)(ember.ones(3)))


def test_user_input_mutation_becomes_an_output():
    def model(lib):
        class M(lib.nn.Module):
            def forward(self, x):
                x.add_(1)
                return x * 2
        return M()
    ep = ember.export.export(model(ember), (ember.ones(3),))
    tep = torch.export.export(model(torch), (torch.ones(3),))
    assert specs(ep) == specs(tep)
    dep, dtep = ep.run_decompositions(), tep.run_decompositions()
    assert specs(dep) == specs(dtep)
    assert dep.graph_signature.user_inputs_to_mutate == {"add": "x"}
    x = ember.zeros(3)
    close(dep.module()(x), ember.full((3,), 2.0))
    close(x, ember.ones(3))


def test_dim_api():
    Dim = ember.export.Dim
    tD = torch.export.Dim
    for args in [("b",), ("b", 2, 64), ("b", 0, None), ("b", 4, None)]:
        name, lo, hi = (args + (None, None))[:3]
        assert repr(Dim(name, min=lo, max=hi)) == repr(tD(name, min=lo, max=hi))
    assert repr(Dim.AUTO) == repr(tD.AUTO) and repr(Dim.DYNAMIC(max=8)) == repr(tD.DYNAMIC(max=8))
    b = Dim("b", min=2, max=10)
    assert repr(2 * b + 1) == "2*b + 1" and (2 * b + 1).min == 5 and (2 * b + 1).max == 21
    with pytest.raises(AssertionError, match="Cannot create Dim with inconsistent min=5, max=3"):
        Dim("d", min=5, max=3)
    with pytest.raises(NotImplementedError, match="Attempted to negate b"):
        1 - b
    assert [d.__name__ for d in ember.export.dims("a", "c")] == ["a", "c"]


def test_derived_and_shared_dims():
    def model(lib):
        class M(lib.nn.Module):
            def forward(self, x, y, z):
                return lib.cat([x, y]).sum(0) + z[1:].sum(0) * 0
        return M()
    ex, tx = inputs((4, 3), (5, 3), (5, 3))

    def ds(Dim):
        b = Dim("b", min=2, max=20)
        return {"x": {0: b}, "y": {0: b + 1}, "z": {0: b + 1}}
    ep = ember.export.export(model(ember), ex, dynamic_shapes=ds(ember.export.Dim))
    tep = torch.export.export(model(torch), tx, dynamic_shapes=ds(torch.export.Dim))
    assert targets(ep) == targets(tep)
    m = ep.module()
    a, b_, c = ember.randn(6, 3), ember.randn(7, 3), ember.randn(7, 3)
    close(m(a, b_, c), model(ember)(a, b_, c))
    with pytest.raises(AssertionError, match="Guard failed"):
        m(a, ember.randn(8, 3), ember.randn(8, 3))


def test_auto_dims_that_must_be_equal_become_one_symbol_and_static_ones_specialize():
    def model(lib):
        class M(lib.nn.Module):
            def forward(self, x, y):
                return (x + y).view(-1, 4) @ lib.ones(4, 2)
        return M()
    ex, tx = inputs((6, 4), (6, 4))
    ds = {"x": {0: ember.export.Dim.AUTO, 1: ember.export.Dim.AUTO}, "y": {0: ember.export.Dim.AUTO}}
    ep = ember.export.export(model(ember), ex, dynamic_shapes=ds)
    tds = {"x": {0: torch.export.Dim.AUTO, 1: torch.export.Dim.AUTO}, "y": {0: torch.export.Dim.AUTO}}
    tep = torch.export.export(model(torch), tx, dynamic_shapes=tds)
    assert len(ep.range_constraints) == len(tep.range_constraints) == 1
    x = ember.randn(9, 4)
    close(ep.module()(x, x), model(ember)(x, x))


def test_named_dim_that_the_program_fixes_is_refused():
    class M(ember.nn.Module):
        def forward(self, x):
            return x.view(2, 3) if x.shape[0] == 6 else x
    with pytest.raises(ember._dynamo.exc.UserError, match=r"Constraints violated \(b\)"):
        ember.export.export(M(), (ember.randn(6),), dynamic_shapes={"x": {0: ember.export.Dim("b")}})
    # the same with Dim.AUTO: the dimension is static
    ep = ember.export.export(M(), (ember.randn(6),), dynamic_shapes={"x": {0: ember.export.Dim.AUTO}})
    assert ep.range_constraints == {}


def test_errors_as_pytorchs():
    class Branchy(ember.nn.Module):
        def forward(self, x):
            return x + 1 if x.sum() > 0 else x - 1
    from ember.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
    with pytest.raises(GuardOnDataDependentSymNode, match="Could not guard on data-dependent expression"):
        ember.export.export(Branchy(), (ember.randn(3),))
    with pytest.raises(ember._dynamo.exc.UserError, match="Expecting `args` to be a tuple"):
        ember.export.export(Branchy(), [ember.randn(3)])
    with pytest.raises(ValueError, match="Expected `mod` to be an instance of `torch.nn.Module`"):
        ember.export.export(lambda x: x, (ember.randn(3),))
    with pytest.raises(ember._dynamo.exc.UserError, match="top-level keys must be the arg names"):
        ember.export.export(Branchy(), (ember.randn(3),), dynamic_shapes={"y": {0: ember.export.Dim("b")}})
    assert isinstance(GuardOnDataDependentSymNode("x"), RuntimeError)


def test_make_fx_pre_dispatch_keeps_composite_ops():
    from ember.fx.experimental.proxy_tensor import make_fx
    from torch.fx.experimental.proxy_tensor import make_fx as tmake_fx

    def f(lib):
        lin = lib.nn.Linear(3, 2)

        def g(x):
            with lib.no_grad():
                y = x * 2
            return lin(x).reshape(-1).add_(1), y
        return g
    gm = make_fx(f(ember), pre_dispatch=True)(ember.randn(4, 3))
    tgm = tmake_fx(f(torch), pre_dispatch=True)(torch.randn(4, 3))
    names = [_target(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    tnames = [_target(n.target) for n in tgm.graph.nodes if n.op == "call_function"]
    assert names == tnames
    assert "aten.linear.default" in names and "aten.add_.Tensor" in names


def test_sym_size_and_symbolic_sizes_print_as_sympy():
    from ember.fx.experimental.symbolic_shapes import SymExpr, symbol_name
    x = ember.randn(3, 4)
    assert ember.ops.aten.sym_size.int(x, 1) == 4 and not hasattr(ember, "sym_size")
    a, b = SymExpr.of(ember.fx.experimental.symbolic_shapes.Symbol("s77")), \
        SymExpr.of(ember.fx.experimental.symbolic_shapes.Symbol("s17"))
    assert str(4 * a + 4 * b) == "4*s17 + 4*s77" and str(a - 1) == "s77 - 1" and str(a * b) == "s17*s77"
    assert symbol_name("L['x'].size()[0]", set()) == "s77"


# -- .pt2 archives across the two libraries ----------------------------------------------------------------------------
SAVE_CASES = {
    "mlp": (mlp, [(5, 4)], None, False),
    "cnn-train": (cnn, [(4, 3, 8, 8)], None, True),
    "cnn-dynamic": (cnn, [(4, 3, 8, 8)], lambda Dim: {"x": {0: Dim("b", min=2, max=32)}}, False),
    "gpt": (gpt_block, [(2, 8, 32)], lambda Dim: {"x": {1: Dim("T", min=2, max=63)}}, False),
    "lstm": (lstm_net, [(3, 7, 6)], None, False),
}


@pytest.mark.parametrize("decompose", [False, True], ids=["training-ir", "decomposed"])
@pytest.mark.parametrize("case", list(SAVE_CASES))
def test_pt2_archives_load_in_the_other_library(case, decompose, tmp_path):
    make, shapes, dynamic, train = SAVE_CASES[case]
    ep, tep, (e, t) = export_both(make, shapes, dynamic, train)
    if decompose:
        ep, tep = ep.run_decompositions(), tep.run_decompositions()
    ember.export.save(ep, tmp_path / "e.pt2")
    torch.export.save(tep, tmp_path / "t.pt2")
    in_torch = torch.export.load(tmp_path / "e.pt2")
    in_ember = ember.export.load(tmp_path / "t.pt2")
    again = ember.export.load(tmp_path / "e.pt2")
    assert specs(in_torch) == specs(again) == specs(ep)
    assert specs(in_ember) == specs(tep)
    assert specs_modulo_numbers(ep) == specs_modulo_numbers(tep)
    assert str(in_torch.range_constraints) == str(ep.range_constraints) == str(tep.range_constraints)
    assert str(in_ember.range_constraints) == str(tep.range_constraints)
    assert targets(in_ember) == targets(tep)
    assert code_lines(again) == code_lines(ep)
    sizes = [tuple(s) for s in shapes]
    if dynamic:      # another size of the dynamic dimension
        d = 0 if case.startswith("cnn") else 1
        sizes[0] = sizes[0][:d] + (sizes[0][d] + 3,) + sizes[0][d + 1:]
    ex, tx = inputs(*sizes, seed=3)
    if train:        # every module shares (and updates) its program's state: compare the first call of each
        close(in_ember.module()(*ex), e(*ex), 1e-4)
        close(again.module()(*ex), pair(make, train)[0](*ex), 1e-4)
    else:
        want = e(*ex)
        for program in (in_ember, again):
            close(program.module()(*ex), want, 1e-4)
        np.testing.assert_allclose(in_torch.module()(*tx).detach().numpy(), want.detach().numpy(), atol=1e-4)


def test_pt2_with_constants_and_specialized_inputs(tmp_path):
    def model(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.table = lib.arange(3.0)

            def forward(self, x, n, ys):
                return (x * n + self.table + ys[0] * ys[1], lib.tensor([1.0, 2.0, 3.0]) * 1)
        return M()
    args_e = (ember.ones(3), 2, [ember.ones(3), ember.full((3,), 2.0)])
    args_t = (torch.ones(3), 2, [torch.ones(3), torch.full((3,), 2.0)])
    ep = ember.export.export(model(ember), args_e)
    ember.export.save(ep, str(tmp_path / "c.pt2"))
    tep = torch.export.load(str(tmp_path / "c.pt2"))
    assert specs(tep) == specs(torch.export.export(model(torch), args_t))
    got = tep.module()(*args_t)
    np.testing.assert_allclose(got[0].numpy(), [4.0, 5.0, 6.0])
    np.testing.assert_allclose(got[1].numpy(), [1.0, 2.0, 3.0])
    back = ember.export.load(tmp_path / "c.pt2")
    close(back.module()(*args_e)[0], ember.tensor([4.0, 5.0, 6.0]))
    with pytest.raises(AssertionError, match="Guard failed: n == 2"):
        back.module()(args_e[0], 3, args_e[2])
    with pytest.raises(TypeError, match="must be an instance of 'ExportedProgram'"):
        ember.export.save(model(ember), tmp_path / "bad.pt2")


# -- torch.cond ----------------------------------------------------------------------------------------------------
def cond_model(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(3, 3)

        def forward(self, x):
            def t(x):
                return self.fc(x).relu()

            def f(x):
                return x.cos() * 2
            return lib.cond(x.sum() > 0, t, f, (x,)) + 1
    return M()


def test_cond_eager_and_exported(tmp_path):
    e, t = pair(cond_model)
    for sign in (1.0, -1.0):
        x = np.full((4, 3), sign, np.float32)
        close(e(ember.tensor(x)), t(torch.tensor(x)))
    xe = ember.ones(4, 3, requires_grad=True)
    e(xe).sum().backward()
    xt = torch.ones(4, 3, requires_grad=True)
    t(xt).sum().backward()
    close(xe.grad, xt.grad)
    ep = ember.export.export(e, (ember.randn(4, 3),))
    tep = torch.export.export(t, (torch.randn(4, 3),))
    assert specs(ep) == specs(tep)
    assert targets(ep) == targets(tep)
    assert [type(m).__name__ for m in (ep.graph_module.true_graph_0, ep.graph_module.false_graph_0)] == \
        ["GraphModule"] * 2
    assert [_target(n.target) for n in ep.graph_module.true_graph_0.graph.nodes if n.op == "call_function"] == \
        ["aten.linear.default", "aten.relu.default"]
    dep = ep.run_decompositions()
    assert [_target(n.target) for n in dep.graph_module.true_graph_0.graph.nodes if n.op == "call_function"] == \
        ["aten.permute.default", "aten.addmm.default", "aten.relu.default"]
    ember.export.save(ep, tmp_path / "e.pt2")
    torch.export.save(tep, tmp_path / "t.pt2")
    for sign in (1.0, -1.0):
        x = np.full((4, 3), sign, np.float32)
        want = e(ember.tensor(x))
        for program in (ep, dep, ember.export.load(tmp_path / "e.pt2"), ember.export.load(tmp_path / "t.pt2")):
            close(program.module()(ember.tensor(x)), want)
        close(want, torch.export.load(tmp_path / "e.pt2").module()(torch.tensor(x)))


def test_cond_errors():
    x = ember.randn(4, 3)
    with pytest.raises(RuntimeError, match="Expected pred to be bool or single-element tensor"):
        ember.cond(ember.tensor([True, False]), lambda x: x, lambda x: x, (x,))
    close(ember.cond(True, lambda x: x + 1, lambda x: x - 1, (x,)), x + 1)
    assert ember.ops.higher_order.cond is ember.cond

    class Mismatch(ember.nn.Module):
        def forward(self, x):
            return ember.cond(x.sum() > 0, lambda x: x.sum(0), lambda x: x * 2, (x,))
    with pytest.raises(RuntimeError, match="same number, sizes and dtypes"):
        ember.export.export(Mismatch(), (x,))

    class Mutates(ember.nn.Module):
        def forward(self, x):
            return ember.cond(x.sum() > 0, lambda x: x.add_(1), lambda x: x * 2, (x,))
    from ember._higher_order_ops import UnsupportedAliasMutationException
    with pytest.raises(UnsupportedAliasMutationException, match="might be modifying the input"):
        ember.export.export(Mutates(), (x,))


def while_model(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(lib.full((3,), 0.5))

        def forward(self, i, x):
            def c(i, x):
                return i < 3

            def b(i, x):
                return i + 1, x * self.w + 1
            return lib.while_loop(c, b, (i, x))
    return M()


def test_while_loop_eager_and_exported(tmp_path):
    e, t = while_model(ember), while_model(torch)
    for start in (0, 2, 5):
        got = e(ember.tensor(start), ember.zeros(3))
        want = t(torch.tensor(start), torch.zeros(3))
        assert int(got[0]) == int(want[0])
        close(got[1], want[1])
    ep = ember.export.export(e, (ember.tensor(0), ember.randn(3)))
    tep = torch.export.export(t, (torch.tensor(0), torch.randn(3)))
    assert specs(ep) == specs(tep)
    assert targets(ep) == targets(tep)
    for name in ("while_loop_cond_graph_0", "while_loop_body_graph_0"):
        assert [_target(n.target) for n in getattr(ep.graph_module, name).graph.nodes if n.op == "call_function"] \
            == [_target(n.target) for n in getattr(tep.graph_module, name).graph.nodes if n.op == "call_function"]
    ember.export.save(ep, tmp_path / "w.pt2")
    for start in (0, 1, 4):
        want = e(ember.tensor(start), ember.zeros(3))
        for program in (ep, ep.run_decompositions(), ember.export.load(tmp_path / "w.pt2")):
            got = program.module()(ember.tensor(start), ember.zeros(3))
            assert int(got[0]) == int(want[0])
            close(got[1], want[1])
        tgot = torch.export.load(tmp_path / "w.pt2").module()(torch.tensor(start), torch.zeros(3))
        close(want[1], tgot[1])
    with pytest.raises(RuntimeError, match="Expected body_fn_output and carried_inputs to have same metadata"):
        ember.while_loop(lambda i: i < 3, lambda i: (i + 1.0,), (ember.tensor(0),))


def test_map_eager_and_exported(tmp_path):
    from torch._higher_order_ops.map import map as torch_map

    from ember._higher_order_ops.map import map as ember_map

    def model(lib, mapper):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = lib.nn.Parameter(lib.full((3,), 2.0))

            def forward(self, xs, y):
                return mapper(lambda x, y: (x * self.w + y).relu(), xs, y)
        return M()
    e, t = model(ember, ember_map), model(torch, torch_map)
    (xe, ye), (xt, yt) = inputs((4, 3), (3,))
    close(e(xe, ye), t(xt, yt))
    ep = ember.export.export(e, (xe, ye))
    tep = torch.export.export(t, (xt, yt))
    assert specs(ep) == specs(tep) and targets(ep) == targets(tep)
    assert [_target(n.target) for n in ep.graph_module.body_graph_0.graph.nodes if n.op == "call_function"] == \
        [_target(n.target) for n in tep.graph_module.body_graph_0.graph.nodes if n.op == "call_function"]
    ember.export.save(ep, tmp_path / "m.pt2")
    (xe, ye), (xt, yt) = inputs((4, 3), (3,), seed=5)
    want = e(xe, ye)
    for program in (ep, ep.run_decompositions(), ember.export.load(tmp_path / "m.pt2")):
        close(program.module()(xe, ye), want)
    close(want, torch.export.load(tmp_path / "m.pt2").module()(xt, yt))
    with pytest.raises(RuntimeError, match="Leading dimensions of mapped xs must be consistent"):
        ember_map(lambda a, b: a + b, (ember.ones(2, 3), ember.ones(3, 3)))


@pytest.mark.parametrize("case", ["mlp", "cnn-train", "gpt", "lstm"])
def test_unflatten_gives_the_module_tree(case):
    make, shapes, dynamic, train = SAVE_CASES[case]
    ep, tep, (e, t) = export_both(make, shapes, dynamic, train)
    u, tu = ember.export.unflatten(ep), torch.export.unflatten(tep)
    assert [n for n, _ in u.named_modules()] == [n for n, _ in tu.named_modules()]
    assert [n for n, _ in u.named_parameters()] == [n for n, _ in tu.named_parameters()]
    for name, m in u.named_modules():
        if name:        # each module's own operators, as PyTorch's unflatten gives them
            tm = tu.get_submodule(name)
            assert [(n.op, _target(n.target) if n.op == "call_function" else str(n.target)) for n in m.graph.nodes
                    if n.op in ("call_function", "call_module")] == \
                [(n.op, _target(n.target) if n.op == "call_function" else str(n.target)) for n in tm.graph.nodes
                 if n.op in ("call_function", "call_module")]
    ex, _ = inputs(*shapes, seed=7)
    if train:
        before = e.bn.running_mean.clone()
        close(u(*ex), pair(make, train)[0](*ex))
        assert not np.allclose(before.numpy(), e.bn.running_mean.numpy())
    else:
        close(u(*ex), e(*ex), 1e-5)
    with pytest.raises(TypeError, match="expects an ExportedProgram"):
        ember.export.unflatten(e)


def test_unflatten_a_module_called_twice():
    def model(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1, self.fc2, self.act = lib.nn.Linear(3, 3), lib.nn.Linear(3, 3), lib.nn.ReLU()

            def forward(self, x):
                return self.act(self.fc1(x)) + self.act(self.fc2(x))
        return M()
    e, t = pair(model)
    (xe,), (xt,) = inputs((2, 3))
    u = ember.export.unflatten(ember.export.export(e, (xe,)))
    tu = torch.export.unflatten(torch.export.export(t, (xt,)))
    assert [n for n, _ in u.named_modules()] == [n for n, _ in tu.named_modules()]
    calls = [str(n.target) for n in u.graph.nodes if n.op == "call_module"]
    assert calls == [str(n.target) for n in tu.graph.nodes if n.op == "call_module"]
    close(u(xe), e(xe))


def test_tied_weights_are_lifted_under_each_name():
    def model(lib):
        class LM(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb, self.head = lib.nn.Embedding(10, 8), lib.nn.Linear(8, 10, bias=False)
                self.head.weight = self.emb.weight

            def forward(self, ids):
                return self.head(self.emb(ids))
        return LM()
    e, t = pair(model)
    ids = np.random.default_rng(0).integers(0, 10, (2, 5))
    ep = ember.export.export(e, (ember.tensor(ids),))
    tep = torch.export.export(t, (torch.tensor(ids),))
    assert code_lines(ep) == code_lines(tep)
    assert list(ep.state_dict) == list(tep.state_dict) == ["emb.weight", "head.weight"]
    close(ep.module()(ember.tensor(ids)), e(ember.tensor(ids)))


def test_no_grad_blocks_become_wrap_with_set_grad_enabled(tmp_path):
    def model(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(3, 3)

            def forward(self, x):
                y = x + 1
                with lib.no_grad():
                    z = self.fc(y) * 2
                    w = z.relu()
                return (w + x).sum(), z
        return M()
    e, t = pair(model)
    (xe,), (xt,) = inputs((3,))
    ep, tep = ember.export.export(e, (xe,)), torch.export.export(t, (xt,))
    assert targets(ep) == targets(tep) and specs(ep) == specs(tep)
    assert [_target(n.target) for n in ep.graph_module.submod_1.graph.nodes if n.op == "call_function"] == \
        [_target(n.target) for n in tep.graph_module.submod_1.graph.nodes if n.op == "call_function"]
    assert targets(ep.run_decompositions()) == targets(tep.run_decompositions())
    ember.export.save(ep, tmp_path / "g.pt2")
    x = ember.ones(3, requires_grad=True)
    for program in (ep, ember.export.load(tmp_path / "g.pt2")):
        out = program.module()(x)
        assert out[0].requires_grad and not out[1].requires_grad
        close(out[0], e(x)[0])
    tout = torch.export.load(tmp_path / "g.pt2").module()(torch.ones(3, requires_grad=True))
    assert tout[0].requires_grad and not tout[1].requires_grad
