"""ember.fx against torch.fx: the graphs symbolic_trace records for the same modules (ops, node names, targets,
arguments), the generated code and what it computes, graph editing, Interpreter / Transformer, wrap, the errors
of data-dependent control flow, copying and pickling."""
import copy
import importlib
import operator
import pickle

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def _fx(lib):
    return importlib.import_module(lib.__name__ + ".fx")


def _target(t):
    return t if isinstance(t, str) else t.__name__


def _arg(a):
    """A node argument in comparable form: nodes by name, dtypes by name, the rest as they are."""
    if type(a).__name__ == "Node":
        return ("node", a.name)
    if isinstance(a, (tuple, list)):
        return (type(a).__name__, [_arg(x) for x in a])
    if isinstance(a, dict):
        return {k: _arg(v) for k, v in a.items()}
    if isinstance(a, slice):
        return ("slice", _arg(a.start), _arg(a.stop), _arg(a.step))
    if isinstance(a, (ember.dtype, torch.dtype)):
        return str(a).replace("ember.", "torch.")
    return a


def _nodes(gm):
    return [(n.op, n.name, _target(n.target), _arg(n.args), _arg(n.kwargs)) for n in gm.graph.nodes]


# ------------------------------------------------------------------------------------------------ models
def mlp(lib):
    nn = lib.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(6, 8), nn.Linear(8, 3)
            self.drop = nn.Dropout(0.0)

        def forward(self, x):
            x = x.flatten(1)
            return self.fc2(self.drop(nn.functional.relu(self.fc1(x))))
    return MLP(), (lib.randn(4, 2, 3),)


def cnn(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(c)

        def forward(self, x):
            return lib.relu(self.bn(self.conv(x)) + x)

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU())
            self.layers = nn.Sequential(Block(4), Block(4))
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.head = nn.Linear(4, 2)

        def forward(self, x):
            x = self.pool(self.layers(self.stem(x)))
            return self.head(lib.flatten(x, 1)).log_softmax(dim=-1)
    m = CNN()
    m.eval()
    return m, (lib.randn(2, 1, 8, 8),)


def gpt_block(lib):
    nn, F = lib.nn, lib.nn.functional

    class Attention(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.h = h
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)
            q = q.view(B, T, self.h, C // self.h).transpose(1, 2)
            k = k.view(B, T, self.h, C // self.h).transpose(1, 2)
            v = v.view(B, T, self.h, C // self.h).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(8), nn.LayerNorm(8)
            self.attn = Attention(8, 2)
            self.mlp = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
    return Block(), (lib.randn(2, 5, 8),)


def lstm_model(lib):
    nn = lib.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(20, 6)
            self.lstm = nn.LSTM(6, 7, batch_first=True)
            self.out = nn.Linear(7, 20)

        def forward(self, tokens):
            h, (hn, cn) = self.lstm(self.emb(tokens))
            return self.out(h), hn.squeeze(0)
    return LM(), (lib.randint(0, 20, (3, 4)),)


def functions(lib):
    nn = lib.nn

    class Fns(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(lib.ones(3))
            self.register_buffer("b", lib.arange(3.0))

        def forward(self, x, scale=2.0):
            y = lib.matmul(x, x.t()).sum(dim=1, keepdim=True) * scale
            z = (x - self.b) / (self.w + 1) ** 2
            z = lib.cat([z, -z, abs(z)], dim=0)
            return y.mean() + z[1:, ::2].max(), lib.where(z > 0, z, lib.zeros_like(z)), z.shape[0]
    return Fns(), (lib.randn(3, 3),)


MODELS = {"mlp": mlp, "cnn": cnn, "gpt_block": gpt_block, "lstm": lstm_model, "functions": functions}


def _trace(name, lib):
    lib.manual_seed(0)
    model, inputs = MODELS[name](lib)
    return model, inputs, _fx(lib).symbolic_trace(model)


def _values(out):
    if isinstance(out, (tuple, list)):
        return [_values(o) for o in out]
    return np.asarray(out.detach().numpy()) if hasattr(out, "detach") else out


@pytest.mark.parametrize("name", list(MODELS))
def test_traced_graph_equals_pytorchs(name):
    _, _, egm = _trace(name, ember)
    _, _, tgm = _trace(name, torch)
    assert _nodes(egm) == _nodes(tgm)
    assert str(egm.graph).replace("torch.nn.functional.", "").replace("torch._C._nn.", "") == \
        str(tgm.graph).replace("torch.nn.functional.", "").replace("torch._C._nn.", "")


@pytest.mark.parametrize("name", list(MODELS))
def test_graph_module_computes_what_the_module_computes(name):
    model, inputs, gm = _trace(name, ember)
    want, got = _values(model(*inputs)), _values(gm(*inputs))
    for a, b in zip(want if isinstance(want, list) else [want], got if isinstance(got, list) else [got]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert list(gm.state_dict()) == list(_trace(name, torch)[2].state_dict())


def test_generated_code_equals_pytorchs():
    def code(lib):
        _, _, gm = _trace("functions", lib)
        return gm.code
    assert code(ember) == code(torch)


def test_graph_editing_interpreter_and_transformer():
    def program(lib):
        fx = _fx(lib)
        _, inputs, gm = _trace("mlp", lib)
        out = []
        # replace relu by gelu, insert a call after fc1, then dead-code elimination
        for n in gm.graph.nodes:
            if n.op == "call_function" and n.target is lib.nn.functional.relu:
                n.target = lib.nn.functional.gelu
                n.kwargs = {}
            if n.op == "call_module" and n.target == "fc1":
                with gm.graph.inserting_after(n):
                    extra = gm.graph.call_function(operator.mul, (n, 2.0))
                n.replace_all_uses_with(extra)
                extra.args = (n, 2.0)
                with gm.graph.inserting_after(extra):
                    gm.graph.call_method("abs", (extra,))    # unused: DCE removes it
        out.append(gm.graph.eliminate_dead_code())
        gm.graph.lint()
        gm.recompile()
        out.append(gm.code)
        out.append(_values(gm(*inputs)).round(5).tolist())
        out.append(_values(fx.Interpreter(gm).run(*inputs)).round(5).tolist())

        class NegateLinear(fx.Transformer):
            def call_module(self, target, args, kwargs):
                r = super().call_module(target, args, kwargs)
                return -r if target == "fc2" else r
        tgm = NegateLinear(gm).transform()
        out.append(tgm.code)
        out.append(_values(tgm(*inputs)).round(5).tolist())
        # a graph built by hand
        g = fx.Graph()
        x = g.placeholder("x")
        y = g.call_function(lib.add, (x, 1))
        g.output(g.call_method("relu", (y,)))
        built = fx.GraphModule(lib.nn.Module(), g)
        out.append(built.code)
        out.append(built(lib.tensor([-3.0, 2.0])).tolist())
        return out
    got, want = program(ember), program(torch)
    assert got[0] == want[0]
    assert got[1:] == want[1:]   # F.gelu printed as torch._C._nn.gelu, where PyTorch implements it


def test_lint_and_erase_errors():
    def program(lib):
        fx = _fx(lib)
        g = fx.Graph()
        x = g.placeholder("x")
        y = g.call_function(lib.relu, (x,))
        g.output(y)
        msgs = []
        try:
            g.erase_node(y)
        except RuntimeError as e:
            msgs.append(str(e).split(" in the graph")[0])
        with g.inserting_before(y):
            z = g.call_function(lib.neg, (y,))
        try:
            g.lint()
        except RuntimeError as e:
            msgs.append(str(e).split("!")[0])
        g.erase_node(z)
        g.lint()
        return msgs, [n.name for n in g.nodes]
    assert program(ember) == program(torch)


def test_control_flow_on_values_is_a_trace_error():
    def program(lib):
        fx = _fx(lib)

        def f(x):
            return x if x.sum() > 0 else -x

        def g(x):
            return len(x)

        def h(x, flag):
            return x + 1 if flag else x - 1
        out = []
        for fn in (f, g):
            try:
                fx.symbolic_trace(fn)
            except Exception as e:
                out.append((type(e).__name__, str(e)))
        gm = fx.symbolic_trace(h, concrete_args={"flag": True})
        out.append([n.op for n in gm.graph.nodes])
        out.append(gm(lib.tensor([1.0]), True).tolist())
        return out
    assert program(ember) == program(torch)


def _wrapped_len(x):
    return x.shape[0] * 2


def test_wrap_and_tracer_customization():
    def program(lib):
        fx = _fx(lib)
        mod = importlib.import_module(__name__)
        mod.__dict__["_wrapped_len"] = _wrapped_len
        g = {"_wrapped_len": _wrapped_len, "__name__": "wrapped_mod", "fx": fx}
        exec("fx.wrap('_wrapped_len')\ndef fn(x):\n    return x + _wrapped_len(x)\n", g)
        gm = fx.symbolic_trace(g["fn"])
        nodes = [(n.op, n.name) for n in gm.graph.nodes]

        class AllLeaves(fx.Tracer):
            def is_leaf_module(self, m, qualname):
                return True
        model, _ = mlp(lib)
        graph = AllLeaves().trace(model)
        return nodes, gm(lib.ones(3)).tolist(), [(n.op, n.target) for n in graph.nodes if n.op == "call_module"]
    assert program(ember) == program(torch)


def test_copy_and_pickle_keep_code_and_results():
    model, inputs, gm = _trace("cnn", ember)
    for other in (copy.deepcopy(gm), pickle.loads(pickle.dumps(gm))):
        assert other.code == gm.code
        np.testing.assert_allclose(_values(other(*inputs)), _values(gm(*inputs)), rtol=1e-6)


def _meta(m):
    if isinstance(m, (tuple, list)) and not hasattr(m, "_fields"):
        return [_meta(x) for x in m]
    if hasattr(m, "_fields") and type(m).__name__ == "TensorMetadata":
        fmt = str(m.memory_format).split(".")[-1]
        return (list(m.shape), str(m.dtype).split(".")[-1], m.requires_grad, tuple(m.stride), fmt)
    return m


@pytest.mark.parametrize("name", list(MODELS))
def test_shape_prop_records_pytorchs_metadata(name):
    def program(lib):
        shape_prop = importlib.import_module(lib.__name__ + ".fx.passes.shape_prop")
        _, inputs, gm = _trace(name, lib)
        shape_prop.ShapeProp(gm).propagate(*inputs)
        return [(n.name, _meta(n.meta.get("tensor_meta")), n.meta["type"].__name__) for n in gm.graph.nodes]
    assert program(ember) == program(torch)


def test_replace_pattern_as_pytorch():
    """subgraph_rewriter.replace_pattern: the documented cat -> stack example, a pattern whose placeholder binds a
    literal, a pattern that must not match (an inner node used outside), and an ATen-level pattern."""
    def run(lib):
        fx = _fx(lib)

        class M(lib.nn.Module):
            def forward(self, x, w1, w2):
                m1 = lib.cat([w1, w2]).sum()
                m2 = lib.cat([w1, w2]).sum()
                return x + lib.max(m1) + lib.max(m2)

        class N(lib.nn.Module):
            def forward(self, x):
                a = lib.relu(x) * 2
                b = lib.relu(x + 1) * 3
                return a + b

        class Shared(lib.nn.Module):
            def forward(self, x):
                r = lib.relu(x)
                return r * 2 + r

        out = []
        gm = fx.symbolic_trace(M())
        ms = fx.subgraph_rewriter.replace_pattern(gm, lambda w1, w2: lib.cat([w1, w2]),
                                                  lambda w1, w2: lib.stack([w1, w2]))
        out += [len(ms), [(m.anchor.name, sorted((k.name, v.name) for k, v in m.nodes_map.items())) for m in ms],
                gm.code, gm(lib.ones(2), lib.ones(2), lib.ones(2)).tolist()]
        gm = fx.symbolic_trace(N())
        ms = fx.subgraph_rewriter.replace_pattern(gm, lambda x, y: lib.relu(x) * y,
                                                  lambda x, y: lib.sigmoid(x) * y)
        out += [len(ms), gm.code, [round(v, 5) for v in gm(lib.arange(3.0)).tolist()]]
        gm = fx.symbolic_trace(Shared())
        out.append(len(fx.subgraph_rewriter.replace_pattern(gm, lambda x: lib.relu(x) * 2, lambda x: x)))
        return out
    assert run(ember) == run(torch)


def test_replace_pattern_on_aten_graphs():
    """Patterns traced with make_fx match ATen overload calls, the defaults of their schema filled in."""
    def run(lib):
        fx = _fx(lib)
        make_fx = importlib.import_module(lib.__name__ + ".fx.experimental.proxy_tensor").make_fx
        x = lib.randn(3, 4)
        gm = make_fx(lambda x: lib.tanh(x) * 2 + lib.tanh(x + 1) * 2)(x)
        pattern = make_fx(lambda a: lib.tanh(a) * 2)(x)
        replacement = make_fx(lambda a: lib.sigmoid(a) * 2)(x)
        ms = fx.subgraph_rewriter.replace_pattern(gm, pattern, replacement)
        return len(ms), [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert run(ember) == run(torch)


def test_split_module_as_pytorch():
    """passes.split_module on PyTorch's documented example: the same submodules, top-level code, per-submodule
    code, qualname map and outputs; a partitioning with a cycle is refused."""
    def run(lib):
        fx = _fx(lib)
        split_module = importlib.import_module(lib.__name__ + ".fx.passes.split_module").split_module

        class MyModule(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.param = lib.nn.Parameter(lib.ones(3, 4) * 0.5)
                self.linear = lib.nn.Linear(4, 5)

            def forward(self, x, y):
                z = self.linear(x + self.param).clamp(min=0.0, max=1.0)
                w = self.linear(y).clamp(min=0.0, max=1.0)
                return z + w
        m = MyModule()
        with lib.no_grad():
            m.linear.weight.copy_(lib.arange(20.0).reshape(5, 4) / 40)
            m.linear.bias.fill_(0.1)
        traced = fx.symbolic_trace(m)
        counter = [0]

        def mod_partition(node):
            p = counter[0] % 3
            counter[0] += 1
            return p
        qm = {}
        split = split_module(traced, m, mod_partition, qualname_map=qm)
        x, y = lib.ones(3, 4) * 0.3, lib.ones(3, 4) * 0.7
        out = [split.code, [getattr(split, f"submod_{i}").code for i in range(3)], sorted(qm.items()),
               [name for name, _ in split.named_children()], lib.equal(split(x, y), traced(x, y)),
               str(split).replace("ember.", "torch.")]
        with pytest.raises(RuntimeError, match="cycle exists between partitions"):
            split_module(traced, m, lambda n: 0 if n.op == "call_module" else 1)
        return out
    assert run(ember) == run(torch)


def test_varargs_and_kwargs_in_traced_forward():
    def run(lib):
        fx = _fx(lib)

        class M(lib.nn.Module):
            def forward(self, x, *args, **kwargs):
                return x + args[0] * kwargs["scale"]

        def f(*xs):
            return lib.cat(xs)
        gm, g2 = fx.symbolic_trace(M()), fx.symbolic_trace(f)
        gm3 = pickle.loads(pickle.dumps(gm))
        return [str(gm.graph), gm.code, gm(lib.ones(2), lib.ones(2) * 3, scale=2.0).tolist(), g2.code,
                g2(lib.ones(1), lib.zeros(2)).tolist(), gm3(lib.ones(1), lib.ones(1), scale=1.0).tolist()]
    assert run(ember) == run(torch)


def test_graph_drawer_as_pytorch():
    pytest.importorskip("pydot", reason="pydot (an optional extra) is not installed")

    def run(lib):
        fx = _fx(lib)
        passes = lib.__name__ + ".fx.passes"
        FxGraphDrawer = importlib.import_module(passes + ".graph_drawer").FxGraphDrawer
        ShapeProp = importlib.import_module(passes + ".shape_prop").ShapeProp
        split_module = importlib.import_module(passes + ".split_module").split_module

        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = lib.nn.Linear(4, 5)
                self.bn = lib.nn.BatchNorm1d(5)

            def forward(self, x):
                return lib.relu(self.bn(self.linear(x))).clamp(min=0.0, max=1.0).sum(dim=1, keepdim=True)
        gm = fx.symbolic_trace(M())
        ShapeProp(gm).propagate(lib.randn(3, 4))
        main = FxGraphDrawer(gm, "m").get_dot_graph().to_string()
        s = split_module(gm, None, lambda n: 0 if n.op == "call_module" else 1)
        d = FxGraphDrawer(s, "s")
        return [main.replace("ember.", "torch."), sorted(d.get_all_dot_graphs()),
                d.get_submod_dot_graph("submod_1").to_string().replace("ember.", "torch.")]
    assert run(ember) == run(torch)


def test_symbolic_trace_records_the_module_stack_as_pytorch_does():
    """``meta["nn_module_stack"]``: the modules a node was made in, outermost first, keyed by path (``@n`` on a
    module's later calls), leaves included, nothing for the root's own nodes."""
    stacks = {}
    for lib in (torch, ember):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(4, 4)
                self.seq = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Linear(4, 2))

            def forward(self, x):
                return self.seq(self.fc(self.fc(x) + 1)) * 2

        class Through(lib.fx.Tracer):
            def is_leaf_module(self, m, name):
                return isinstance(m, lib.nn.ReLU)
        out = []
        for graph in (lib.fx.symbolic_trace(Net()).graph, Through().trace(Net())):
            out.append([(n.name, None if n.meta.get("nn_module_stack") is None else
                         [(k, p, t.__name__) for k, (p, t) in n.meta["nn_module_stack"].items()])
                        for n in graph.nodes])
        stacks[lib.__name__] = out
    assert stacks["ember"] == stacks["torch"]
