"""Module API against PyTorch: registration errors, state_dict metadata, load_state_dict messages,
hooks, containers and their repr, dtype moves, pickling."""
import copy
import pickle

import numpy as np
import pytest

import ember
import ember.nn as enn

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def _net(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)
            self.blocks = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
            self.register_buffer("scale", (ember if nn is enn else torch).ones(2))
            self.register_buffer("tmp", (ember if nn is enn else torch).zeros(1), persistent=False)

        def forward(self, x):
            x = self.fc(x)
            for b in self.blocks:
                x = b(x)
            return x * self.scale
    return Net()


def _msg(fn):
    with pytest.raises(Exception) as ei:
        fn()
    return type(ei.value).__name__, str(ei.value).replace("torch.Size", "Size").replace("ember.Size", "Size")


def test_state_dict_keys_metadata_and_repr():
    ember.manual_seed(0)
    torch.manual_seed(0)
    e, t = _net(enn), _net(torch.nn)
    assert list(e.state_dict()) == list(t.state_dict())
    assert dict(e.state_dict()._metadata) == dict(t.state_dict()._metadata)
    assert repr(e) == repr(t)  # ModuleList prints "(0-2): 3 x Linear(...)"
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert list(e.state_dict(prefix="m.", keep_vars=True)) == list(t.state_dict(prefix="m.", keep_vars=True))
    assert isinstance(e.state_dict(keep_vars=True)["fc.weight"], enn.Parameter)


def test_load_state_dict_errors_are_pytorchs():
    e, t = _net(enn), _net(torch.nn)
    esd = {k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()}
    tsd = dict(t.state_dict())
    for mutate in (lambda d: d.pop("fc.bias"), lambda d: d.__setitem__("extra.w", d["scale"]),
                   lambda d: d.__setitem__("fc.weight", d["fc.weight"][:1])):
        a, b = dict(esd), dict(tsd)
        mutate(a)
        mutate(b)
        assert _msg(lambda: e.load_state_dict(a)) == _msg(lambda: t.load_state_dict(b))
    a, b = dict(esd), dict(tsd)
    a.pop("fc.bias")
    b.pop("fc.bias")
    a["zzz"] = a["scale"]
    b["zzz"] = b["scale"]
    r1, r2 = e.load_state_dict(a, strict=False), t.load_state_dict(b, strict=False)
    assert (r1.missing_keys, r1.unexpected_keys) == (r2.missing_keys, r2.unexpected_keys)
    assert repr(e.load_state_dict(esd)) == repr(t.load_state_dict(tsd)) == "<All keys matched successfully>"
    np.testing.assert_array_equal(e.fc.weight.detach().numpy(), t.fc.weight.detach().numpy())
    assert _msg(lambda: e.load_state_dict([1])) == _msg(lambda: t.load_state_dict([1]))


def test_load_state_dict_casts_and_assign():
    m = enn.Linear(2, 2)
    w = m.weight
    m.load_state_dict({"weight": ember.ones(2, 2, dtype=ember.float64), "bias": ember.zeros(2)})
    assert m.weight is w and m.weight.dtype == ember.float32 and m.weight.sum().item() == 4
    new = ember.full((2, 2), 3.0)
    m.load_state_dict({"weight": new, "bias": ember.zeros(2)}, assign=True)
    assert isinstance(m.weight, enn.Parameter) and m.weight.requires_grad and m.weight.sum().item() == 12


def test_registration_errors_are_pytorchs():
    e, t = enn.Module(), torch.nn.Module()
    lib = {id(e): ember, id(t): torch}
    cases = [
        lambda m: m.register_parameter("a.b", None),
        lambda m: m.register_parameter("", None),
        lambda m: m.register_parameter("x", lib[id(m)].ones(2)),
        lambda m: m.add_module("m", 3),
        lambda m: m.register_buffer("b", 3),
        lambda m: getattr(m, "nothing"),
    ]
    for c in cases:
        n1, m1 = _msg(lambda: c(e))
        n2, m2 = _msg(lambda: c(t))
        assert n1 == n2
        assert m1.replace("ember.", "torch.").replace("builtins.", "") == m2.replace("builtins.", ""), (m1, m2)


def test_setattr_routes_and_parameter_repr():
    m = enn.Module()
    m.p = enn.Parameter(ember.ones(2))
    m.sub = enn.Linear(1, 1)
    m.buf = enn.Buffer(ember.zeros(1), persistent=False)
    assert "p" in m._parameters and "sub" in m._modules and "buf" in m._buffers
    assert list(m.state_dict()) == ["p", "sub.weight", "sub.bias"]
    with pytest.raises(TypeError, match="cannot assign 'torch.FloatTensor' as parameter 'p'"):
        m.p = ember.ones(2)
    m.p = None
    assert m.p is None and "p" in m._parameters
    assert repr(enn.Parameter(ember.ones(1))).startswith("Parameter containing:\ntensor([1.]")
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        enn.Parameter(ember.ones(2, dtype=ember.int64))


def test_forward_and_backward_hooks_match_pytorch():
    def run(nn, lib):
        lib.manual_seed(0)
        m = nn.Linear(3, 2)
        log = []
        m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        m.register_forward_hook(lambda mod, args, out: out + 1)
        m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 3,))
        m.register_full_backward_hook(lambda mod, gi, go: log.append((gi[0].numpy().copy(), go[0].numpy().copy())))
        x = lib.ones(4, 3, requires_grad=True)
        y = m(x)
        y.sum().backward()
        return y.detach().numpy(), x.grad.numpy(), m.weight.grad.numpy(), log
    ey, ex, ew, elog = run(enn, ember)
    ty, tx, tw, tlog = run(torch.nn, torch)
    np.testing.assert_allclose(ey, ty, rtol=1e-6)
    np.testing.assert_allclose(ex, tx, rtol=1e-6)
    np.testing.assert_allclose(ew, tw, rtol=1e-6)
    assert len(elog) == len(tlog) == 1
    for a, b in zip(elog[0], tlog[0]):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_hook_handles_remove_and_state_dict_hooks():
    m = enn.Linear(2, 2)
    calls = []
    h = m.register_forward_hook(lambda *a: calls.append(1))
    m(ember.ones(1, 2))
    h.remove()
    m(ember.ones(1, 2))
    assert calls == [1]
    m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: (sd.pop(prefix + "bias"), None)[1])
    assert list(m.state_dict()) == ["weight"]
    seen = []
    m.register_load_state_dict_post_hook(lambda mod, keys: seen.append(list(keys.missing_keys)))
    m.load_state_dict({"weight": ember.ones(2, 2)}, strict=False)
    assert seen == [["bias"]]


def test_containers():
    s = enn.Sequential(enn.Linear(2, 3), enn.ReLU())
    s.append(enn.Linear(3, 1))
    s.insert(0, enn.Identity())
    assert len(s) == 4 and isinstance(s[-1], enn.Linear) and isinstance(s[1:3], enn.Sequential)
    assert [type(m).__name__ for m in s] == ["Identity", "Linear", "ReLU", "Linear"]
    del s[0]
    assert list(s._modules) == ["0", "1", "2"]
    d = enn.ModuleDict({"a": enn.Linear(1, 1)})
    d["b"] = enn.ReLU()
    assert list(d.keys()) == ["a", "b"] and "a" in d
    pl = enn.ParameterList([ember.ones(2), enn.Parameter(ember.zeros(3))])
    assert all(isinstance(p, enn.Parameter) for p in pl) and len(list(pl.parameters())) == 2
    pd = enn.ParameterDict({"x": ember.ones(1)})
    assert isinstance(pd["x"], enn.Parameter) and list(dict(pd.named_parameters())) == ["x"]
    t = torch.nn.ParameterList([torch.ones(2), torch.nn.Parameter(torch.zeros(3))])
    assert repr(pl).replace("ember.", "torch.") == repr(t)


def test_moves_zero_grad_train_eval_pickle():
    m = enn.Sequential(enn.Linear(2, 2), enn.BatchNorm1d(2))
    w = m[0].weight
    m.double()
    assert m[0].weight is w and w.dtype == ember.float64 and m[1].running_mean.dtype == ember.float64
    assert m[1].num_batches_tracked.dtype == ember.int64
    m.to(ember.float32)
    assert w.dtype == ember.float32
    m(ember.randn(4, 2)).sum().backward()
    m.zero_grad(set_to_none=False)
    assert w.grad is not None and w.grad.abs().sum().item() == 0
    m.zero_grad()
    assert w.grad is None
    m.eval()
    assert not m.training and not m[1].training
    m2 = pickle.loads(pickle.dumps(m))
    m3 = copy.deepcopy(m)
    for other in (m2, m3):
        for (k, a), (_, b) in zip(m.state_dict().items(), other.state_dict().items()):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert isinstance(m2[0].weight, enn.Parameter)
    assert "weight" in dir(m[0])


def test_clip_grad_norm_matches_pytorch():
    rng = np.random.default_rng(0)
    gs = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    for norm_type in (2.0, 1.0, float("inf")):
        ep = [enn.Parameter(ember.zeros(g.shape, dtype=ember.float64)) for g in gs]
        tp = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64)) for g in gs]
        for p, q, g in zip(ep, tp, gs):
            p.grad = ember.tensor(g)
            q.grad = torch.tensor(g)
        en = enn.utils.clip_grad_norm_(ep, 0.5, norm_type)
        tn = torch.nn.utils.clip_grad_norm_(tp, 0.5, norm_type)
        np.testing.assert_allclose(en.item(), tn.item(), rtol=1e-12)
        for p, q in zip(ep, tp):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)
    vec = enn.utils.parameters_to_vector(ep)
    assert vec.shape == (17,)


def test_module_classes_live_where_pytorchs_do():
    """Whole-module checkpoints name classes by module path (ember.nn.modules.flatten.Flatten is saved as
    torch.nn.modules.flatten.Flatten): every nn class both libraries have must sit in PyTorch's file."""
    wrong = []
    for name in ember.nn.modules.__all__:
        theirs = getattr(torch.nn, name, None)
        ours = getattr(ember.nn, name)
        if theirs is not None and ours.__module__.replace("ember", "torch", 1) != theirs.__module__:
            wrong.append(f"{name}: {ours.__module__} (PyTorch: {theirs.__module__})")
    assert not wrong, wrong
    m = enn.Sequential(enn.Flatten(), enn.ZeroPad1d(1), enn.InstanceNorm1d(4), enn.PixelShuffle(2), enn.Fold((4, 4), 2))
    buf = __import__("io").BytesIO()
    ember.save(m, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)  # PyTorch finds every class (torch.nn.modules.misc is no file)
    assert [type(x).__name__ for x in loaded] == ["Flatten", "ZeroPad1d", "InstanceNorm1d", "PixelShuffle", "Fold"]
