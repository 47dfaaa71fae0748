"""Learning-rate schedulers and swa_utils against PyTorch: the learning-rate (and momentum) sequences over
35 steps, bit for bit; state_dict contents and resuming; composite schedulers; errors."""
import math
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

STEPS = 35


def make_optimizer(lib, kind="sgd"):
    a = lib.nn.Parameter(lib.zeros(2))
    b = lib.nn.Parameter(lib.zeros(3))
    groups = [{"params": [a]}, {"params": [b], "lr": 0.05}]
    if kind == "adam":
        return lib.optim.Adam(groups, lr=0.1)
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


def _double(epoch):
    return 0.95 ** epoch


class Scale:
    """A callable object (its attributes are saved in state_dict, unlike a function)."""

    def __init__(self, factor):
        self.factor = factor

    def __call__(self, epoch):
        return self.factor ** epoch


SCHEDULERS = {
    "LambdaLR": lambda S, o: S.LambdaLR(o, lambda e: 1 / (1 + e)),
    "LambdaLR-list": lambda S, o: S.LambdaLR(o, [_double, Scale(0.9)]),
    "MultiplicativeLR": lambda S, o: S.MultiplicativeLR(o, lambda e: 0.97),
    "StepLR": lambda S, o: S.StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda S, o: S.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.3),
    "ConstantLR": lambda S, o: S.ConstantLR(o, factor=0.25, total_iters=6),
    "LinearLR": lambda S, o: S.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=12),
    "ExponentialLR": lambda S, o: S.ExponentialLR(o, gamma=0.9),
    "PolynomialLR": lambda S, o: S.PolynomialLR(o, total_iters=20, power=2.0),
    "CosineAnnealingLR": lambda S, o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "CosineAnnealingWarmRestarts": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.01),
    "CyclicLR-triangular": lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "CyclicLR-triangular2": lambda S, o: S.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.2, step_size_up=3,
                                                    step_size_down=5, mode="triangular2"),
    "CyclicLR-exp_range": lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range",
                                                  gamma=0.95),
    "OneCycleLR-cos": lambda S, o: S.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=STEPS + 1),
    "OneCycleLR-linear-3phase": lambda S, o: S.OneCycleLR(o, max_lr=0.3, epochs=6, steps_per_epoch=6,
                                                          anneal_strategy="linear", three_phase=True),
    "ChainedScheduler": lambda S, o: S.ChainedScheduler([S.ExponentialLR(o, 0.9), S.StepLR(o, 5, 0.5)]),
    "SequentialLR": lambda S, o: S.SequentialLR(o, [S.LinearLR(o, 0.1, total_iters=5), S.ExponentialLR(o, 0.9),
                                                    S.CosineAnnealingLR(o, 8)], milestones=[5, 15]),
    "SequentialLR-chained": lambda S, o: S.SequentialLR(o, [S.ChainedScheduler([S.ExponentialLR(o, 0.9),
                                                                                S.StepLR(o, 4, 0.5)]),
                                                            S.ConstantLR(o, 0.5, total_iters=3)],
                                                        milestones=[6]),
}


def sequence(lib, name, kind="sgd"):
    opt = make_optimizer(lib, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = SCHEDULERS[name](lib.optim.lr_scheduler, opt)
        out = [(list(sched.get_last_lr()), [g.get("momentum", g.get("betas")) for g in opt.param_groups])]
        for _ in range(STEPS):
            opt.step()
            sched.step()
            out.append((list(sched.get_last_lr()), [g.get("momentum", g.get("betas")) for g in opt.param_groups]))
    return out, sched, opt


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_learning_rate_sequence_is_pytorchs_bit_for_bit(name):
    got, _, _ = sequence(ember, name)
    ref, _, _ = sequence(torch, name)
    assert got == ref


@pytest.mark.parametrize("name", ["CyclicLR-triangular", "OneCycleLR-cos"])
def test_momentum_cycling_of_adam_betas(name):
    assert sequence(ember, name, "adam")[0] == sequence(torch, name, "adam")[0]


def _plain(sd):
    """A state_dict with the callables that cannot be compared removed."""
    return {k: v for k, v in sd.items() if k not in ("_scale_fn_ref", "anneal_func")}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_state_dict_is_pytorchs_and_resumes(name):
    _, es, eo = sequence(ember, name)
    _, ts, _ = sequence(torch, name)
    esd, tsd = es.state_dict(), ts.state_dict()
    assert sorted(esd) == sorted(tsd)
    if "_schedulers" not in esd:
        assert {k: v for k, v in esd.items()} == {k: v for k, v in tsd.items()}
    # resume half-way: a fresh scheduler loaded from the state continues the same sequence
    full, _, _ = sequence(ember, name)
    opt = make_optimizer(ember)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = SCHEDULERS[name](ember.optim.lr_scheduler, opt)
        for _ in range(10):
            opt.step()
            sched.step()
        state, opt_state = sched.state_dict(), opt.state_dict()
        opt2 = make_optimizer(ember)
        sched2 = SCHEDULERS[name](ember.optim.lr_scheduler, opt2)
        opt2.load_state_dict(opt_state)
        sched2.load_state_dict(state)
        rest = []
        for _ in range(STEPS - 10):
            opt2.step()
            sched2.step()
            rest.append(list(sched2.get_last_lr()))
    assert rest == [lrs for lrs, _ in full[11:]]


def test_reduce_lr_on_plateau():
    metrics = [1.0, 0.9, 0.95, 0.96, 0.97, 0.98, 0.5, 0.6, 0.61, 0.62, 0.63, 0.64, 0.65, 0.4] * 3

    def run(lib, **kw):
        opt = make_optimizer(lib)
        s = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
        out = []
        for m in metrics:
            opt.step()
            s.step(m)
            out.append(list(s.get_last_lr()))
        return out, s.state_dict()
    for kw in [dict(patience=2), dict(mode="max", factor=0.5, patience=1, cooldown=2),
               dict(threshold_mode="abs", threshold=0.05, patience=1, min_lr=[0.01, 0.02]),
               dict(patience=0, min_lr=0.03, eps=1e-3)]:
        (a, sa), (b, sb) = run(ember, **kw), run(torch, **kw)
        assert a == b
        assert sa == sb


def test_step_with_epoch_uses_the_closed_form_and_warns():
    def run(lib):
        opt = make_optimizer(lib)
        s = lib.optim.lr_scheduler.StepLR(opt, 3, 0.5)
        with pytest.warns(UserWarning, match="The epoch parameter"):
            s.step(7)
        return s.get_last_lr()
    assert run(ember) == run(torch)


def test_warnings_match_pytorch():
    opt = make_optimizer(ember)
    s = ember.optim.lr_scheduler.StepLR(opt, 3)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        s.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        s.get_lr()


@pytest.mark.parametrize("case", [
    lambda S, o: S.StepLR(o, 3, last_epoch=4),
    lambda S, o: S.StepLR(object(), 3),
    lambda S, o: S.ConstantLR(o, factor=2.0),
    lambda S, o: S.LinearLR(o, start_factor=0),
    lambda S, o: S.LinearLR(o, end_factor=1.5),
    lambda S, o: S.LambdaLR(o, [lambda e: 1.0]),
    lambda S, o: S.MultiplicativeLR(o, [1.0, 2.0]),
    lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=0),
    lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=0),
    lambda S, o: S.CyclicLR(o, 0.01, 0.1, mode="zigzag"),
    lambda S, o: S.CyclicLR(o, [0.01], 0.1),
    lambda S, o: S.OneCycleLR(o, 0.1),
    lambda S, o: S.OneCycleLR(o, 0.1, total_steps=0),
    lambda S, o: S.OneCycleLR(o, 0.1, total_steps=10, pct_start=1),
    lambda S, o: S.OneCycleLR(o, 0.1, total_steps=10, anneal_strategy="exp"),
    lambda S, o: S.ReduceLROnPlateau(o, factor=1.0),
    lambda S, o: S.ReduceLROnPlateau(o, mode="avg"),
    lambda S, o: S.ReduceLROnPlateau(o, min_lr=[0.1]),
    lambda S, o: S.SequentialLR(o, [S.StepLR(o, 2)], milestones=[3]),
    lambda S, o: S.SequentialLR(o, [S.StepLR(o, 2), S.ReduceLROnPlateau(o)], milestones=[3]),
    lambda S, o: S.ChainedScheduler([]),
    lambda S, o: [s.step() for s in [S.OneCycleLR(o, 0.1, total_steps=2)] for _ in range(3)],
])
def test_errors_match_pytorch(case):
    with pytest.raises(Exception) as te:
        case(torch.optim.lr_scheduler, make_optimizer(torch))
    with pytest.raises(type(te.value)) as ee:
        case(ember.optim.lr_scheduler, make_optimizer(ember))
    assert str(ee.value) == str(te.value)


# -- swa_utils -----------------------------------------------------------------------------------------


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.ReLU(), lib.nn.Linear(4, 2))


@pytest.mark.parametrize("mode", ["swa", "ema", "ema-multi", "buffers"])
def test_averaged_model(mode):
    def run(lib):
        model = _model(lib)
        sw = lib.optim.swa_utils
        kw = {"ema": dict(avg_fn=sw.get_ema_avg_fn(0.9)), "ema-multi": dict(multi_avg_fn=sw.get_ema_multi_avg_fn(0.8)),
              "buffers": dict(use_buffers=True), "swa": {}}[mode]
        avg = sw.AveragedModel(model, **kw)
        opt = lib.optim.SGD(model.parameters(), lr=0.1)
        rng = np.random.default_rng(0)
        for _ in range(6):
            x = lib.tensor(rng.standard_normal((8, 3)), dtype=lib.float32)
            opt.zero_grad()
            model(x).pow(2).sum().backward()
            opt.step()
            avg.update_parameters(model)
        return {k: v.detach().numpy() for k, v in avg.state_dict().items()}
    e, t = run(ember), run(torch)
    assert list(e) == list(t)
    for k in e:
        np.testing.assert_allclose(e[k], t[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_update_bn():
    def run(lib):
        model = _model(lib)
        rng = np.random.default_rng(1)
        data = [(lib.tensor(rng.standard_normal((5, 3)), dtype=lib.float32), 0) for _ in range(4)]
        model.eval()
        lib.optim.swa_utils.update_bn(data, model)
        bn = model[1]
        return bn.running_mean.numpy(), bn.running_var.numpy(), int(bn.num_batches_tracked), model.training, \
            bn.momentum
    for a, b in zip(run(ember), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-5)


@pytest.mark.parametrize("kw", [dict(swa_lr=0.05, anneal_epochs=5), dict(swa_lr=[0.01, 0.2], anneal_epochs=3,
                                                                          anneal_strategy="linear"),
                                dict(swa_lr=0.05, anneal_epochs=0)])
def test_swalr_sequence(kw):
    def run(lib):
        opt = make_optimizer(lib)
        s = lib.optim.swa_utils.SWALR(opt, **kw)
        out = [list(s.get_last_lr())]
        for _ in range(12):
            opt.step()
            s.step()
            out.append(list(s.get_last_lr()))
        return out, _plain(s.state_dict())
    (a, sa), (b, sb) = run(ember), run(torch)
    assert a == b
    assert sa == sb
    assert not math.isnan(a[-1][0])
