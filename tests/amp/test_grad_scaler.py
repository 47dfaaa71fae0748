"""GradScaler against PyTorch: the scale sequence of a training loop with injected infs, the parameters it leaves
(plain and fused optimizers), unscale_ + clipping, state_dict, the ops underneath, and the errors."""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def _loop(lib, opt_name, fused, clip, steps=12, inf_at=(2, 3, 7)):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(6, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3))
    with lib.no_grad():   # the same weights on both sides
        rng = np.random.default_rng(0)
        for p in model.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3))
    kw = dict(fused=True) if fused else {}
    opt = {"sgd": lambda: lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, **kw),
           "adam": lambda: lib.optim.Adam(model.parameters(), lr=0.01, **kw),
           "adamw": lambda: lib.optim.AdamW(model.parameters(), lr=0.01, **kw),
           "adagrad": lambda: lib.optim.Adagrad(model.parameters(), lr=0.1, **kw)}[opt_name]()
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=3)
    x = lib.tensor(rng.standard_normal((5, 6)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 3, 5))
    scales, skipped = [], []
    for i in range(steps):
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        if i in inf_at:
            next(model.parameters()).grad[0, 0] = float("inf") if i != 3 else float("nan")
        if clip:
            scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        ret = scaler.step(opt)
        skipped.append(ret is None and i in inf_at)
        scaler.update()
        scales.append(scaler.get_scale())
    params = [p.detach().numpy().copy() for p in model.parameters()]
    return scales, params, scaler.state_dict(), opt.state_dict()["state"]


@pytest.mark.parametrize("opt_name,fused,clip", [("sgd", False, False), ("sgd", True, False), ("adam", False, True),
                                                 ("adam", True, False), ("adamw", True, True),
                                                 ("adagrad", True, False)])
def test_training_loop_with_infs_matches_pytorch(opt_name, fused, clip):
    es, ep, esd, est = _loop(ember, opt_name, fused, clip)
    ts, tp, tsd, tst = _loop(torch, opt_name, fused, clip)
    assert es == ts
    assert es[:7] == [1024.0, 1024.0, 512.0, 256.0, 256.0, 256.0, 512.0]   # backoff at inf / NaN, growth after 3
    assert esd == tsd
    for a, b in zip(ep, tp):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for k in tst:
        if "step" in tst[k]:    # skipped steps are not counted
            assert float(est[k]["step"]) == float(tst[k]["step"])


def test_fused_step_leaves_the_gradients_unscaled_and_counts_only_real_steps():
    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.ones(3))
        opt = lib.optim.Adam([p], lr=0.1, fused=True)
        assert opt._step_supports_amp_scaling
        sc = lib.amp.GradScaler("cpu", init_scale=4.0)
        sc.scale((p * 2).sum()).backward()
        assert p.grad.tolist() == [8.0, 8.0, 8.0]
        sc.step(opt)
        sc.update()
        assert p.grad.tolist() == [2.0, 2.0, 2.0] and float(opt.state[p]["step"]) == 1.0
        p.grad = lib.tensor([float("inf"), 1.0, 1.0])
        before = p.detach().clone()
        sc.step(opt)
        sc.update()
        assert lib.equal(p.detach(), before) and float(opt.state[p]["step"]) == 1.0 and sc.get_scale() == 2.0
        assert not getattr(lib.optim.Adam([p]), "_step_supports_amp_scaling", False)


def test_amp_ops_match_pytorch():
    rng = np.random.default_rng(3)
    grads = [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(5).astype(np.float32)]
    out = {}
    for lib in (torch, ember):
        gs = [lib.tensor(g.copy()) for g in grads] + [lib.tensor(grads[1]).to(lib.bfloat16)]
        found = lib.zeros(())
        lib._amp_foreach_non_finite_check_and_unscale_(gs[:2], found, lib.tensor(0.125))
        lib._amp_foreach_non_finite_check_and_unscale_(gs[2:], found, lib.tensor(0.125))
        f1 = float(found)
        gs[1][2] = float("nan")
        lib._amp_foreach_non_finite_check_and_unscale_(gs[:2], found, lib.tensor(1.0))
        scale, tracker = lib.tensor(8.0), lib.tensor(0, dtype=lib.int32)
        seq = []
        for inf in (0.0, 0.0, 1.0, 0.0, 0.0):
            lib._amp_update_scale_(scale, tracker, lib.tensor(inf), 2.0, 0.5, 2)
            seq.append((float(scale), int(tracker)))
        big = lib.tensor(3e38)
        lib._amp_update_scale_(big, lib.tensor(1, dtype=lib.int32), lib.tensor(0.0), 2.0, 0.5, 2)
        out[lib.__name__] = ([g.float().numpy() for g in gs[:1] + gs[2:]], f1, float(found), seq, float(big))
        with pytest.raises(RuntimeError, match="found_inf must be a float tensor"):
            lib._amp_foreach_non_finite_check_and_unscale_(gs[:1], lib.zeros((), dtype=lib.float64), lib.tensor(1.0))
        with pytest.raises(RuntimeError, match="inv_scale must be a 1-element tensor"):
            lib._amp_foreach_non_finite_check_and_unscale_(gs[:1], found, lib.ones(2))
    (eg, e1, e2, eseq, ebig), (tg, t1, t2, tseq, tbig) = out["ember"], out["torch"]
    for a, b in zip(eg, tg):
        np.testing.assert_array_equal(a, b)
    assert (e1, e2, eseq, ebig) == (t1, t2, tseq, tbig) == (0.0, 1.0, tseq, np.float32(3e38))


def test_state_dict_pickle_errors_and_disabled_scaler_match_pytorch():
    for lib in (torch, ember):
        sc = lib.amp.GradScaler("cpu", init_scale=16.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=5)
        assert sc.state_dict() == {"scale": 16.0, "growth_factor": 3.0, "backoff_factor": 0.25,
                                   "growth_interval": 5, "_growth_tracker": 0}
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.1)
        outs = sc.scale([p.sum(), (p * 2).sum(), (p.sum(),)])
        assert isinstance(outs, list) and isinstance(outs[2], tuple) and float(outs[1]) == 64.0
        outs[0].backward()
        sc.unscale_(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this optimizer"):
            sc.unscale_(opt)
        sc.step(opt)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last update"):
            sc.step(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step"):
            sc.unscale_(opt)
        with pytest.raises(AssertionError, match="may only be pickled at the beginning of an iteration"):
            pickle.dumps(sc)
        sc.update()
        sc2 = pickle.loads(pickle.dumps(sc))
        assert sc2.get_scale() == 16.0 and sc2._get_growth_tracker() == 1
        sc3 = lib.amp.GradScaler("cpu")
        sc3.load_state_dict(sc.state_dict())
        assert sc3.state_dict() == sc.state_dict()
        sc.update(4.0)
        assert sc.get_scale() == 4.0
        off = lib.amp.GradScaler("cpu", enabled=False)
        assert off.scale(p) is p and off.state_dict() == {} and off.get_scale() == 1.0
        with pytest.raises(RuntimeError, match="The source state dict is empty"):
            sc3.load_state_dict({})
        with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
            lib.amp.GradScaler("cpu").step(opt)
        with pytest.raises(AssertionError, match="The growth factor must be > 1.0"):
            lib.amp.GradScaler("cpu", growth_factor=1.0)
        with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
            sc.step(opt, closure=lambda: 0)
        h = lib.nn.Parameter(lib.ones(2, dtype=lib.float16))
        h.grad = lib.ones(2, dtype=lib.float16)
        sc.scale(lib.ones(()))
        with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
            sc.unscale_(lib.optim.SGD([h], lr=0.1))


def test_cuda_scaler_without_a_gpu_warns_and_steps_plainly():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.warns(UserWarning, match="torch.cuda.amp.GradScaler is enabled, but CUDA is not available"):
        sc = ember.amp.GradScaler()
    p = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([p], lr=0.5)
    loss = sc.scale(p.sum())
    loss.backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sc.step(opt)
        sc.update()
    assert p.tolist() == [0.5, 0.5]
