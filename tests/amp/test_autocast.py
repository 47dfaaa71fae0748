"""Autocast against PyTorch: mixed-precision models' values and gradients, the state API, nesting, the weight-cast
cache, custom_fwd / custom_bwd, the deprecated spellings, and GEMMs that round once."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

LOW = {"bfloat16": 2 ** -8, "float16": 2 ** -11}   # half a unit of the low dtype's last place, relative
MANTISSA = {"bfloat16": 7, "float16": 10}


def _np(t):
    return t.detach().float().numpy().astype(np.float64)


def _copy_params(em, tm):
    for (n, p), (tn, tp) in zip(em.state_dict().items(), tm.state_dict().items()):
        assert n == tn
        p.copy_(ember.tensor(tp.numpy().copy()))


def _build(lib, kind):
    nn = lib.nn
    lib.manual_seed(0)
    if kind == "mlp":
        return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 5))
    if kind == "cnn":
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(8, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
    if kind == "attention":
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln = nn.LayerNorm(16)
                self.qkv = nn.Linear(16, 48)
                self.proj = nn.Linear(16, 16)
                self.head = nn.Linear(16, 5)

            def forward(self, x):
                q, k, v = self.qkv(self.ln(x)).view(x.shape[0], x.shape[1], 3, 2, 8).permute(2, 0, 3, 1, 4)
                y = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                y = self.proj(y.transpose(1, 2).reshape(x.shape))
                return self.head((x + y).mean(1))
        return Block()
    raise ValueError(kind)


def _input(kind, rng):
    shape = {"mlp": (16, 20), "cnn": (4, 3, 10, 10), "attention": (3, 6, 16)}[kind]
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("kind", ["mlp", "cnn", "attention"])
def test_mixed_precision_model_matches_pytorch(kind, low):
    rng = np.random.default_rng(1)
    x = _input(kind, rng)
    y = rng.integers(0, 5, x.shape[0])
    tm, em = _build(torch, kind), _build(ember, kind)
    with ember.no_grad():
        _copy_params(em, tm)
    outs = {}
    for lib, m in ((torch, tm), (ember, em)):
        with lib.autocast("cpu", dtype=getattr(lib, low)):
            out = m(lib.tensor(x))
            loss = lib.nn.functional.cross_entropy(out, lib.tensor(y))
        loss.backward()
        outs[lib.__name__] = (out, loss, [p.grad for p in m.parameters()])
    (eo, el, eg), (to, tl, tg) = outs["ember"], outs["torch"]
    assert str(eo.dtype).split(".")[-1] == str(to.dtype).split(".")[-1] == low
    assert el.dtype == ember.float32 and tl.dtype == torch.float32
    # a few roundings to the low dtype on each side, not always the same ones: a handful of its units
    tol = 8 * LOW[low]
    np.testing.assert_allclose(_np(eo), _np(to), rtol=tol, atol=tol * np.abs(_np(to)).max())
    np.testing.assert_allclose(_np(el), _np(tl), rtol=tol)
    for a, b in zip(eg, tg):
        assert a.dtype == ember.float32 and b.dtype == torch.float32      # parameters keep float32 gradients
        scale = max(np.abs(_np(b)).max(), 1e-3)
        np.testing.assert_allclose(_np(a), _np(b), rtol=0, atol=4 * tol * scale)


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", ["mm", "addmm", "bmm", "baddbmm", "addmv", "addbmm"])
def test_low_precision_gemms_accumulate_in_float32_and_round_once(op, low):
    rng = np.random.default_rng(2)
    shapes = {"mm": [(8, 300), (300, 7)], "addmm": [(8, 7), (8, 300), (300, 7)], "bmm": [(3, 8, 300), (3, 300, 7)],
              "baddbmm": [(3, 8, 7), (3, 8, 300), (3, 300, 7)], "addmv": [(8,), (8, 300), (300,)],
              "addbmm": [(8, 7), (3, 8, 300), (3, 300, 7)]}[op]
    arrs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    kw = {} if op in ("mm", "bmm") else dict(beta=0.5, alpha=1.5)
    e = getattr(ember, op)(*[ember.tensor(a).to(getattr(ember, low)) for a in arrs], **kw)
    t = getattr(torch, op)(*[torch.tensor(a).to(getattr(torch, low)) for a in arrs], **kw)
    # the exact product of the rounded inputs, rounded once
    r = [a.astype(getattr(np, "float32")) for a in (torch.tensor(x).to(getattr(torch, low)).float().numpy()
                                                     for x in arrs)]
    r64 = [a.astype(np.float64) for a in r]
    prod = {"mm": lambda a, b: a @ b, "bmm": lambda a, b: a @ b,
            "addmm": lambda c, a, b: 0.5 * c + 1.5 * (a @ b), "baddbmm": lambda c, a, b: 0.5 * c + 1.5 * (a @ b),
            "addmv": lambda c, a, b: 0.5 * c + 1.5 * (a @ b),
            "addbmm": lambda c, a, b: 0.5 * c + 1.5 * (a @ b).sum(0)}[op](*r64)
    exact = torch.tensor(prod).to(getattr(torch, low)).double().numpy()
    got = e.double().numpy()
    assert e.dtype == getattr(ember, low)
    # float32 accumulation is not exact, so the once-rounded result may sit one unit away from the float64 one
    ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(exact), 1e-30))) - MANTISSA[low])
    assert np.all(np.abs(got - exact) <= ulp), "more than one rounding"
    if op != "addbmm":   # PyTorch's CPU addbmm adds the batches' products in the low dtype, one rounding each
        np.testing.assert_allclose(got, t.double().numpy(), rtol=2 * LOW[low], atol=1e-6)


def test_state_api_and_nesting_match_pytorch():
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert not lib.is_autocast_enabled("cpu") and not lib.is_autocast_enabled()
            assert lib.get_autocast_dtype("cpu") == lib.bfloat16 and lib.get_autocast_dtype("cuda") == lib.float16
            assert lib.is_autocast_cache_enabled()
            with lib.autocast("cpu"):
                assert lib.is_autocast_enabled("cpu") and not lib.is_autocast_enabled("cuda")
                assert lib.is_autocast_cpu_enabled()
                with lib.autocast("cpu", dtype=lib.float16, cache_enabled=False):
                    assert lib.get_autocast_dtype("cpu") == lib.float16 and not lib.is_autocast_cache_enabled()
                    with lib.autocast("cpu", enabled=False):
                        assert not lib.is_autocast_enabled("cpu")
                        assert lib.mm(lib.ones(2, 2), lib.ones(2, 2)).dtype == lib.float32
                    assert lib.mm(lib.ones(2, 2), lib.ones(2, 2)).dtype == lib.float16
                assert lib.get_autocast_dtype("cpu") == lib.bfloat16 and lib.is_autocast_cache_enabled()
                assert lib.mm(lib.ones(2, 2), lib.ones(2, 2)).dtype == lib.bfloat16
            assert not lib.is_autocast_enabled("cpu")
            with pytest.raises(RuntimeError, match="unsupported scalarType"):
                lib.autocast("meta")
            with pytest.raises(RuntimeError, match="unsupported autocast device_type 'meta'"):
                lib.autocast("meta", dtype=lib.bfloat16)
            with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
                lib.autocast(lib.device("cpu"))
            with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
                lib.amp.is_autocast_available("gpu")
            with pytest.warns(UserWarning, match="CPU Autocast only supports dtypes of"):
                a = lib.autocast("cpu", dtype=lib.float64)
            with a:
                assert not lib.is_autocast_enabled("cpu")


def test_ops_outside_the_lists_and_float64_and_ints_are_left_alone():
    x64 = np.ones((3, 3))
    for lib in (torch, ember):
        with lib.autocast("cpu"):
            assert lib.mm(lib.tensor(x64), lib.tensor(x64)).dtype == lib.float64          # float64 is not cast
            assert lib.relu(lib.ones(3)).dtype == lib.float32                             # not on a list
            assert lib.cat([lib.ones(2, dtype=lib.bfloat16), lib.ones(2)]).dtype == lib.float32   # promote
            assert lib.cat([lib.ones(2, dtype=lib.bfloat16), lib.ones(2, dtype=lib.bfloat16)]).dtype == lib.bfloat16
            assert (lib.nn.functional.mse_loss(lib.ones(2, dtype=lib.bfloat16), lib.ones(2, dtype=lib.bfloat16)).dtype
                    == lib.float32)                                                        # fp32 list
            i = lib.arange(4).view(2, 2)
            with pytest.raises(RuntimeError):
                lib.mm(i.float(), i)


def test_autocast_is_thread_local_and_a_decorator():
    seen = []

    @ember.autocast("cpu")
    def f():
        seen.append(ember.is_autocast_enabled("cpu"))
        t = threading.Thread(target=lambda: seen.append(ember.is_autocast_enabled("cpu")))
        t.start()
        t.join()
        return ember.mm(ember.ones(2, 2), ember.ones(2, 2))

    assert f().dtype == ember.bfloat16
    assert seen == [True, False] and not ember.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="autocast\\(\\)\\(func\\) requires a callable"):
        ember.autocast("cpu")(3)


def test_weight_casts_are_cached_inside_the_region_only():
    w = ember.randn(4, 4, requires_grad=True)
    x = ember.randn(2, 4)
    with ember.autocast("cpu"):
        a, b = ember.mm(x, w), ember.mm(x, w)
        # one cast of w feeds both products: the same _to_copy node
        assert a.grad_fn.next_functions[1][0] is b.grad_fn.next_functions[1][0]
        with ember.autocast("cpu", cache_enabled=False):
            c = ember.mm(x, w)
        assert c.grad_fn.next_functions[1][0] is not a.grad_fn.next_functions[1][0]
        nonleaf = w * 1
        d, e = ember.mm(x, nonleaf), ember.mm(x, nonleaf)     # only leaves are cached
        assert d.grad_fn.next_functions[1][0] is not e.grad_fn.next_functions[1][0]
    with ember.autocast("cpu"):
        f = ember.mm(x, w)
    assert f.grad_fn.next_functions[1][0] is not a.grad_fn.next_functions[1][0]   # cleared at the exit
    (a.float().sum() + b.float().sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), np.broadcast_to(2 * x.bfloat16().float().numpy().sum(0)[:, None],
                                                                (4, 4)), rtol=1e-2)


def test_custom_fwd_and_custom_bwd_match_pytorch():
    results = {}
    for lib in (torch, ember):
        class Fn(lib.autograd.Function):
            @staticmethod
            @lib.amp.custom_fwd(device_type="cpu", cast_inputs=lib.float32)
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                ctx.inside = lib.is_autocast_enabled("cpu")
                return a.mm(b)

            @staticmethod
            @lib.amp.custom_bwd(device_type="cpu")
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                ctx.bwd_inside = lib.is_autocast_enabled("cpu")
                return g.mm(b.t()), a.t().mm(g)

        class Fn2(lib.autograd.Function):
            @staticmethod
            @lib.amp.custom_fwd(device_type="cpu")
            def forward(ctx, a, b):
                return a.mm(b)

            @staticmethod
            @lib.amp.custom_bwd(device_type="cpu")
            def backward(ctx, g):
                return g, g

        a = lib.ones(2, 3, dtype=lib.bfloat16, requires_grad=True)
        b = lib.ones(3, 2, requires_grad=True)
        with lib.autocast("cpu"):
            y = Fn.apply(a, b)
            y2 = Fn2.apply(lib.ones(2, 2), lib.ones(2, 2))
        y.sum().backward()
        results[lib.__name__] = (str(y.dtype), str(y2.dtype), str(a.grad.dtype), str(b.grad.dtype))
    assert [s.split(".")[-1] for s in results["ember"]] == [s.split(".")[-1] for s in results["torch"]]
    assert results["ember"][0].endswith("float32") and results["ember"][1].endswith("bfloat16")


def test_deprecated_spellings_warn_and_work():
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        ctx = ember.cpu.amp.autocast()
    with ctx:
        assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.bfloat16
    with pytest.warns(FutureWarning, match="torch.cpu.amp.GradScaler"):
        s = ember.cpu.amp.GradScaler(init_scale=4.0)
    assert s.get_scale() == 4.0 and s.is_enabled()
    if not ember.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            with ember.autocast("cuda"):
                assert not ember.is_autocast_enabled("cuda")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert not ember.cuda.amp.GradScaler().is_enabled()
            assert not ember.amp.GradScaler().is_enabled()
    with pytest.warns(DeprecationWarning, match=r"get_autocast_cpu_dtype\(\) is deprecated"):
        assert ember.get_autocast_cpu_dtype() == ember.bfloat16


def test_cuda_autocast_runs_its_lists_on_a_gpu():
    if not ember.cuda.is_available():
        pytest.skip("no GPU: CUDA autocast is exercised by the same test the day one is present")
    a = ember.randn(4, 4, device="cuda")
    with ember.autocast("cuda"):
        assert ember.mm(a, a).dtype == ember.float16
        assert ember.softmax(ember.mm(a, a), 0).dtype == ember.float32
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            ember.nn.functional.binary_cross_entropy(ember.rand(3, device="cuda"), ember.rand(3, device="cuda"))
