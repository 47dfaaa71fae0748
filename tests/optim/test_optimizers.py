"""Optimizers against PyTorch: 25-step trajectories on a non-convex objective (several parameter groups,
with and without weight decay, float64 and float32), the flat-buffer path against the single-tensor path
bit for bit, state_dict layout and round trips through PyTorch and files, hooks and errors."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

SHAPES = [(3, 4), (4,), (5, 3), (2,), ()]

CONFIGS = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.02)),
    ("Adam", dict(lr=0.02, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("AdamW", dict(lr=0.02)),
    ("AdamW", dict(lr=0.02, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.1)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1)),
    ("Adamax", dict(lr=0.02)),
    ("Adamax", dict(lr=0.02, weight_decay=0.1)),
    ("NAdam", dict(lr=0.02)),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.02)),
    ("RAdam", dict(lr=0.02, weight_decay=0.1)),
    ("RAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True)),
    ("ASGD", dict(lr=0.05, t0=5)),
    ("ASGD", dict(lr=0.05, t0=3, lambd=0.01, weight_decay=0.1)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.02, etas=(0.3, 1.5), step_sizes=(1e-4, 0.1), maximize=True)),
]


def make_params(lib, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [lib.nn.Parameter(lib.tensor(rng.standard_normal(s), dtype=getattr(lib, dtype))) for s in SHAPES]


def objective(ps):
    """Non-convex: a sum of sin(p) * p and a coupling term."""
    loss = sum((p.sin() * p).sum() + 0.1 * (p ** 2).sum() for p in ps)
    return loss + (ps[0] @ ps[1]).sum() * ps[3].sum() * 0.05


def groups(ps, name):
    second = {"params": ps[2:], "lr": 0.01}
    if name in ("Adam", "AdamW", "NAdam"):
        second["betas"] = (0.8, 0.99)
    return [{"params": ps[:2]}, second]


def trajectory(lib, name, kw, dtype, steps=25, **extra):
    ps = make_params(lib, dtype)
    opt = getattr(lib.optim, name)(groups(ps, name), **kw, **extra)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        objective(ps).backward()
        opt.step()
        out.append([p.detach().numpy().copy() for p in ps])
    return out, opt


def assert_trajectories_close(a, b, rtol, atol):
    for step, (xs, ys) in enumerate(zip(a, b)):
        for x, y in zip(xs, ys):
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, err_msg=f"step {step}")


@pytest.mark.parametrize("name,kw", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_trajectory_matches_pytorch(name, kw, dtype):
    ref, _ = trajectory(torch, name, kw, dtype)
    tol = dict(rtol=1e-11, atol=1e-13) if dtype == "float64" else dict(rtol=2e-5, atol=2e-6)
    for foreach in (False, None):
        got, _ = trajectory(ember, name, kw, dtype, foreach=foreach)
        assert_trajectories_close(got, ref, **tol)


@pytest.mark.parametrize("name,kw", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_flat_buffers_give_the_single_tensor_numbers_bit_for_bit(name, kw):
    single, o1 = trajectory(ember, name, kw, "float32", foreach=False)
    flat, o2 = trajectory(ember, name, kw, "float32", foreach=True)
    for xs, ys in zip(single, flat):
        for x, y in zip(xs, ys):
            assert np.array_equal(x, y)
    s1, s2 = o1.state_dict()["state"], o2.state_dict()["state"]
    for k in s1:
        for key, v in s1[k].items():
            w = s2[k][key]
            assert np.array_equal(v.numpy(), w.numpy()) if isinstance(v, ember.Tensor) else v == w


def test_flat_path_rebinds_parameters_into_one_buffer_and_keeps_them_correct():
    ps = make_params(ember, "float32")
    opt = ember.optim.Adam(ps, lr=0.01)
    objective(ps).backward()
    opt.step()
    roots = {id(p._data.base) for p in ps}
    assert len(roots) == 1 and all(p._data.base is not None for p in ps)
    states = {id(opt.state[p]["exp_avg"]._data.base) for p in ps}
    assert len(states) == 1
    assert opt.state[ps[0]]["step"].shape == () and opt.state[ps[0]]["step"].dtype == ember.float32


def test_flat_path_falls_back_to_copies_when_a_parameter_is_viewed():
    ref, _ = trajectory(ember, "SGD", dict(lr=0.05, momentum=0.9), "float64", foreach=False)
    ps = make_params(ember, "float64")
    view = ps[0][1]          # a live view: the parameter cannot be re-pointed
    opt = ember.optim.SGD(groups(ps, "SGD"), lr=0.05, momentum=0.9)
    for step in range(25):
        opt.zero_grad()
        objective(ps).backward()
        opt.step()
        assert np.array_equal(view.numpy(), ps[0].detach().numpy()[1])
        for x, p in zip(ref[step], ps):
            assert np.array_equal(x, p.detach().numpy())


def test_flat_path_follows_replaced_data_and_changing_grad_sets():
    ref_ps = make_params(ember, "float64")
    ps = make_params(ember, "float64")
    ref = ember.optim.Adam(ref_ps, lr=0.05, foreach=False)
    opt = ember.optim.Adam(ps, lr=0.05)
    for step in range(12):
        for params, o in ((ref_ps, ref), (ps, opt)):
            o.zero_grad()
            if step == 4:  # replace a parameter's data between steps
                params[2].data = params[2].data * 0.5
            objective(params).backward()
            if step % 3 == 1:  # a parameter without a gradient on some steps
                params[1].grad = None
            o.step()
        for a, b in zip(ref_ps, ps):
            assert np.array_equal(a.detach().numpy(), b.detach().numpy())


def test_params_at_different_steps_after_add_param_group():
    def run(lib, **extra):
        ps = make_params(lib, "float64")
        opt = lib.optim.Adam(ps[:3], lr=0.05, **extra)
        for step in range(8):
            if step == 3:
                opt.add_param_group({"params": ps[3:], "lr": 0.02})
            opt.zero_grad()
            objective(ps).backward()
            opt.step()
        return [p.detach().numpy() for p in ps]
    for a, b in zip(run(ember), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_mixed_dtypes_in_one_group():
    def run(lib):
        rng = np.random.default_rng(3)
        ps = [lib.nn.Parameter(lib.tensor(rng.standard_normal((3, 2)), dtype=lib.float32)),
              lib.nn.Parameter(lib.tensor(rng.standard_normal(4), dtype=lib.float64))]
        opt = lib.optim.RMSprop(ps, lr=0.01, momentum=0.3)
        for _ in range(5):
            opt.zero_grad()
            ((ps[0].sin() ** 2).sum() + (ps[1].cos() * ps[1]).sum()).backward()
            opt.step()
        return [p.detach().numpy() for p in ps]
    for a, b in zip(run(ember), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_complex_parameters_follow_pytorch():
    def run(lib, name, **kw):
        rng = np.random.default_rng(4)
        z = rng.standard_normal(5) + 1j * rng.standard_normal(5)
        p = lib.nn.Parameter(lib.tensor(z))
        opt = getattr(lib.optim, name)([p], **kw)
        for _ in range(6):
            opt.zero_grad()
            (p.abs() ** 2).sum().backward()
            opt.step()
        return p.detach().numpy()
    for name, kw in [("Adam", dict(lr=0.05)), ("SGD", dict(lr=0.05, momentum=0.5)), ("RMSprop", dict(lr=0.01))]:
        np.testing.assert_allclose(run(ember, name, **kw), run(torch, name, **kw), rtol=1e-12)


def rosenbrock(p):
    x, y = p[0], p[1]
    return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


@pytest.mark.parametrize("kw", [dict(line_search_fn="strong_wolfe", max_iter=8),
                                dict(lr=0.5, history_size=5, max_iter=7),
                                dict(line_search_fn="strong_wolfe", history_size=3, max_iter=4)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_lbfgs_matches_pytorch(kw, dtype):
    """Two step() calls on Rosenbrock plus a non-convex term.  (Run long enough, the iterates of both
    libraries drift apart from the order of BLAS dot-product sums, amplified by the ill-conditioning;
    over these iterations they agree to rounding.)"""
    def run(lib):
        rng = np.random.default_rng(1)
        p = lib.nn.Parameter(lib.tensor([-1.5, 2.0], dtype=getattr(lib, dtype)))
        q = lib.nn.Parameter(lib.tensor(rng.standard_normal((2, 3)), dtype=getattr(lib, dtype)))
        opt = lib.optim.LBFGS([p, q], **kw)
        losses = []

        def closure():
            opt.zero_grad()
            loss = rosenbrock(p) + (q.sin() * q).sum()
            loss.backward()
            return loss
        for _ in range(2):
            losses.append(float(opt.step(closure)))
        st = opt.state[p]
        return losses, [p.detach().numpy(), q.detach().numpy()], (st["func_evals"], st["n_iter"])
    (le, pe, ce), (lt, pt, ct) = run(ember), run(torch)
    tol = dict(rtol=1e-9, atol=1e-12) if dtype == "float64" else dict(rtol=5e-3, atol=1e-4)
    np.testing.assert_allclose(le, lt, **tol)
    for a, b in zip(pe, pt):
        np.testing.assert_allclose(a, b, **tol)
    assert ce == ct


def test_lbfgs_rejects_groups_and_unknown_line_search():
    ps = make_params(ember, "float64")
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        ember.optim.LBFGS([{"params": ps[:1]}, {"params": ps[1:]}])
    opt = ember.optim.LBFGS(ps, line_search_fn="armijo")

    def closure():
        opt.zero_grad()
        loss = objective(ps)
        loss.backward()
        return loss
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)


# -- state_dict -------------------------------------------------------------------------------------


def to_torch(obj):
    if isinstance(obj, ember.Tensor):
        return torch.from_numpy(obj.detach().numpy().copy())
    if isinstance(obj, dict):
        return {k: to_torch(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_torch(v) for v in obj)
    return obj


def to_ember(obj):
    if isinstance(obj, torch.Tensor):
        return ember.tensor(obj.detach().numpy().copy())
    if isinstance(obj, dict):
        return {k: to_ember(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_ember(v) for v in obj)
    return obj


def structure(sd):
    """Keys, ids, hyper-parameters and tensor dtypes/shapes of an optimizer state_dict."""
    state = {k: {n: (str(v.dtype).split(".")[-1], tuple(v.shape)) if hasattr(v, "dtype") else v
                 for n, v in s.items()} for k, s in sd["state"].items()}
    return state, sd["param_groups"]


@pytest.mark.parametrize("name,kw", CONFIGS[1::2], ids=[n for n, _ in CONFIGS[1::2]])
def test_state_dict_layout_is_pytorchs(name, kw):
    _, eo = trajectory(ember, name, kw, "float32", steps=2)
    _, to = trajectory(torch, name, kw, "float32", steps=2)
    es, eg = structure(eo.state_dict())
    ts, tg = structure(to.state_dict())
    assert es == ts
    assert [sorted(g) for g in eg] == [sorted(g) for g in tg]
    assert eg == tg


@pytest.mark.parametrize("name,kw", CONFIGS[1::2], ids=[n for n, _ in CONFIGS[1::2]])
def test_state_dict_round_trip_through_pytorch_and_files(name, kw, tmp_path):
    """Train 5 steps in ember, save, load into PyTorch from the file, train 5 more there, save, load
    back into ember, train 5 more; the same 15 steps with the same two file round trips run in PyTorch
    alone must agree (loading casts floating-point state such as ASGD's ``eta`` to the parameter's
    dtype, so the round trips are part of the reference)."""
    def train(ps, opt, n):
        for _ in range(n):
            opt.zero_grad()
            objective(ps).backward()
            opt.step()

    def stage(lib, params, opt_state, n, path):
        ps = [lib.nn.Parameter(t) for t in params]
        opt = getattr(lib.optim, name)(groups(ps, name), **kw)
        if opt_state is not None:
            opt.load_state_dict(opt_state)
        train(ps, opt, n)
        conv = to_torch if lib is ember else (lambda x: x)
        torch.save({"params": conv([p.detach() for p in ps]), "opt": conv(opt.state_dict())}, path)
        ck = torch.load(path, weights_only=True)
        return ck["params"], ck["opt"]

    start = [p.detach().clone() for p in make_params(torch, "float64")]
    ref = ([t.clone() for t in start], None)
    for i in range(3):
        ref = stage(torch, *ref, 5, tmp_path / f"ref{i}.pt")
    ps, st = stage(ember, [ember.tensor(t.numpy()) for t in start], None, 5, tmp_path / "a.pt")
    ps, st = stage(torch, ps, st, 5, tmp_path / "b.pt")
    ps, st = stage(ember, to_ember(ps), to_ember(st), 5, tmp_path / "c.pt")
    for a, b in zip(ps, ref[0]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-11, atol=1e-13)
    assert structure(st) == structure(ref[1])


def test_load_state_dict_casts_to_the_parameter_dtype_but_keeps_step():
    ps = make_params(ember, "float32")
    opt = ember.optim.Adam(ps)
    sd = {"state": {0: {"step": ember.tensor(3.0, dtype=ember.float64),
                        "exp_avg": ember.zeros(3, 4, dtype=ember.float64),
                        "exp_avg_sq": ember.zeros(3, 4, dtype=ember.float64)}},
          "param_groups": opt.state_dict()["param_groups"]}
    opt.load_state_dict(sd)
    st = opt.state[ps[0]]
    assert st["exp_avg"].dtype == ember.float32 and st["step"].dtype == ember.float64
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})
    bad = opt.state_dict()
    bad["param_groups"][0]["params"] = [0]
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict(bad)


def test_named_parameters_and_repr():
    m = ember.nn.Linear(3, 2)
    tm = torch.nn.Linear(3, 2)
    eo = ember.optim.AdamW(m.named_parameters(), lr=0.1)
    to = torch.optim.AdamW(tm.named_parameters(), lr=0.1)
    assert eo.state_dict()["param_groups"] == to.state_dict()["param_groups"]
    assert repr(eo) == repr(to)


# -- hooks, zero_grad, errors ----------------------------------------------------------------------


def test_step_hooks_global_hooks_and_state_dict_hooks():
    ps = make_params(ember, "float64")
    opt = ember.optim.SGD(ps, lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
    g1 = ember.optim.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: calls.append("gpre"))
    g2 = ember.optim.optimizer.register_optimizer_step_post_hook(lambda o, a, k: calls.append("gpost"))
    objective(ps).backward()
    opt.step()
    assert calls == ["gpre", "pre", "post", "gpost"]
    for h in (h1, h2, g1, g2):
        h.remove()
    opt.step()
    assert len(calls) == 4
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    assert opt.state_dict()["extra"] == 1
    seen = []
    opt.register_load_state_dict_pre_hook(lambda o, sd: seen.append("pre"))
    opt.register_load_state_dict_post_hook(lambda o: seen.append("post"))
    opt.load_state_dict(opt.state_dict())
    assert seen == ["pre", "post"]


def test_pre_hook_can_replace_arguments():
    ps = make_params(ember, "float64")
    opt = ember.optim.SGD(ps, lr=0.1)
    box = []

    def closure():
        box.append(1)
        return ember.tensor(0.0)
    opt.register_step_pre_hook(lambda o, a, k: ((o, closure), {}))
    objective(ps).backward()
    opt.step()
    assert box == [1]


def test_zero_grad():
    ps = make_params(ember, "float64")
    opt = ember.optim.SGD(ps, lr=0.1)
    objective(ps).backward()
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any() for p in ps)
    opt.zero_grad()
    assert all(p.grad is None for p in ps)


def test_closure_and_its_loss_are_returned():
    ps = make_params(ember, "float64")
    opt = ember.optim.Adam(ps)

    def closure():
        opt.zero_grad()
        loss = objective(ps)
        loss.backward()
        return loss
    loss = opt.step(closure)
    assert isinstance(loss, ember.Tensor) and loss.requires_grad


def test_signatures_accept_pytorchs_flags():
    import inspect
    for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD",
                 "Rprop", "LBFGS"):
        ep = inspect.signature(getattr(ember.optim, name)).parameters
        tp = inspect.signature(getattr(torch.optim, name)).parameters
        assert list(ep) == list(tp), name
        for p in tp.values():
            if p.default is not inspect.Parameter.empty:
                assert ep[p.name].default == p.default, (name, p.name)
    ps = make_params(ember, "float64")
    opt = ember.optim.AdamW(ps, fused=True)
    objective(ps).backward()
    opt.step()


def errors(fn_e, fn_t):
    with pytest.raises(Exception) as te:
        fn_t()
    with pytest.raises(type(te.value)) as ee:
        fn_e()
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("case", [
    lambda lib, ps: lib.optim.SGD([], lr=0.1),
    lambda lib, ps: lib.optim.SGD(ps[0], lr=0.1),
    lambda lib, ps: lib.optim.SGD([ps[0] * 2], lr=0.1),
    lambda lib, ps: lib.optim.SGD([1.0], lr=0.1),
    lambda lib, ps: lib.optim.SGD(ps[:1], lr=0.1).add_param_group({"params": {ps[1]}}),
    lambda lib, ps: lib.optim.SGD(ps[:1], lr=0.1).add_param_group([ps[1]]),
    lambda lib, ps: lib.optim.SGD([{"params": ps[:2]}, {"params": ps[1:]}], lr=0.1),
    lambda lib, ps: lib.optim.SGD(ps, lr=-1),
    lambda lib, ps: lib.optim.SGD(ps, lr=0.1, momentum=-1),
    lambda lib, ps: lib.optim.SGD(ps, lr=0.1, nesterov=True),
    lambda lib, ps: lib.optim.SGD(ps, lr=0.1, fused=True, foreach=True),
    lambda lib, ps: lib.optim.Adam(ps, betas=(1.0, 0.9)),
    lambda lib, ps: lib.optim.Adam(ps, betas=(0.9, -0.1)),
    lambda lib, ps: lib.optim.Adam(ps, eps=-1),
    lambda lib, ps: lib.optim.AdamW(ps, weight_decay=-1),
    lambda lib, ps: lib.optim.Adadelta(ps, rho=1.5),
    lambda lib, ps: lib.optim.Rprop(ps, etas=(1.2, 0.5)),
    lambda lib, ps: lib.optim.NAdam(ps, momentum_decay=-1),
    lambda lib, ps: lib.optim.Adagrad(ps, lr_decay=-1),
    lambda lib, ps: lib.optim.Adagrad(ps, initial_accumulator_value=-1),
    lambda lib, ps: lib.optim.RMSprop(ps, alpha=-1),
    lambda lib, ps: lib.optim.SGD([{"params": ps}]).add_param_group({"params": ps[:1]}),
    lambda lib, ps: lib.optim.SGD([("a", ps[0]), ps[1]]),
])
def test_errors_match_pytorch(case):
    errors(lambda: case(ember, make_params(ember, "float64")), lambda: case(torch, make_params(torch, "float64")))


def test_duplicate_parameters_warn_and_missing_lr_is_an_error():
    ps = make_params(ember, "float64")
    with pytest.warns(UserWarning, match="duplicate parameters"):
        ember.optim.SGD([ps[0], ps[0]], lr=0.1)
    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        ember.optim.Optimizer([{"params": ps}], {"lr": ember.optim.optimizer.required})


def test_capturable_on_cpu_and_differentiable_are_refused_clearly():
    ps = make_params(ember, "float64")
    opt = ember.optim.Adam(ps, capturable=True)
    objective(ps).backward()
    tps = make_params(torch, "float64")
    topt = torch.optim.Adam(tps, capturable=True)
    objective(tps).backward()
    with pytest.raises(AssertionError) as te:
        topt.step()
    with pytest.raises(AssertionError) as ee:
        opt.step()
    assert str(ee.value) == str(te.value)
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        ember.optim.SGD(ps, lr=0.1, differentiable=True)


def test_a_graph_saved_before_the_step_sees_the_in_place_update():
    p = ember.nn.Parameter(ember.tensor([1.0, 2.0]))
    opt = ember.optim.SGD([p], lr=0.1)
    y = (p * p).sum()
    (p * 3).sum().backward()
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


@pytest.mark.parametrize("name,kw", [("Adam", dict(lr=0.01, weight_decay=0.1)), ("RMSprop", dict(centered=True)),
                                     ("Rprop", {}), ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True))])
def test_chunked_threaded_flat_update_matches_single_tensor(name, kw):
    """Buffers above 2 x arena.CHUNK elements are updated in chunks spread over threads."""
    from ember.aten import arena as _flat

    def run(foreach):
        rng = np.random.default_rng(5)
        ps = [ember.nn.Parameter(ember.tensor(rng.standard_normal(s).astype(np.float32)))
              for s in [(3 * _flat.CHUNK + 17,), (700, 3), (5,)]]
        opt = getattr(ember.optim, name)(ps, foreach=foreach, **kw)
        for i in range(3):
            for p in ps:
                p.grad = ember.tensor(rng.standard_normal(p.shape).astype(np.float32))
            opt.step()
        return [p.detach().numpy() for p in ps]
    for a, b in zip(run(False), run(None)):
        assert np.array_equal(a, b)
