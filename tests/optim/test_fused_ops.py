"""The optimizer ops of the operator library (Note [Fused optimizer steps] in ember/aten/arena.py): PyTorch's
``_foreach_add_`` and ``_fused_sgd_`` / ``_fused_adam_`` / ``_fused_adamw_`` / ``_fused_adagrad_`` called directly,
against PyTorch's own, including the AMP arguments (``grad_scale`` divides the gradients, a nonzero ``found_inf``
skips the step)."""
import numpy as np
import pytest

import ember
from ember._generated import aten

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (5,), (2, 2, 2)]


def _lists(lib, rng, n_state, dtype="float32"):
    make = (lambda a: ember.tensor(a)) if lib is ember else (lambda a: torch.tensor(a))
    params = [make(rng.standard_normal(s).astype(dtype)) for s in SHAPES]
    grads = [make(rng.standard_normal(s).astype(dtype)) for s in SHAPES]
    states = [[make(np.abs(rng.standard_normal(s)).astype(dtype)) for s in SHAPES] for _ in range(n_state)]
    return params, grads, states


def _steps(lib, value):
    return [lib.tensor(float(value)) for _ in SHAPES]


def _assert_same(got, ref, rtol=1e-6, atol=1e-7):
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("op", ["_fused_adam_", "_fused_adamw_"])
@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("amp", [None, "scale", "inf"])
def test_fused_adam_matches_pytorch(op, amsgrad, amp):
    out = {}
    for lib in (ember, torch):
        rng = np.random.default_rng(0)
        p, g, (m, v, vmax) = _lists(lib, rng, 3)
        steps = _steps(lib, 3)
        kw = {}
        if amp == "scale":
            kw = dict(grad_scale=lib.tensor(4.0), found_inf=lib.tensor(0.0))
        elif amp == "inf":
            kw = dict(grad_scale=lib.tensor(4.0), found_inf=lib.tensor(1.0))
        fn = getattr(aten, op) if lib is ember else getattr(torch, op)
        fn(p, g, m, v, vmax if amsgrad else [], steps, lr=0.01, beta1=0.9, beta2=0.99, weight_decay=0.1, eps=1e-8,
           amsgrad=amsgrad, maximize=False, **kw)
        out[lib] = p + m + v
    _assert_same(out[ember], out[torch])


@pytest.mark.parametrize("momentum,first", [(0.0, False), (0.9, True), (0.9, False)])
def test_fused_sgd_matches_pytorch(momentum, first):
    out = {}
    for lib in (ember, torch):
        rng = np.random.default_rng(1)
        p, g, (buf,) = _lists(lib, rng, 1)
        fn = aten._fused_sgd_ if lib is ember else torch._fused_sgd_
        fn(p, g, buf if momentum else [], weight_decay=0.01, momentum=momentum, lr=0.1, dampening=0.0,
           nesterov=momentum > 0, maximize=True, is_first_step=first)
        out[lib] = p + (buf if momentum else [])
    _assert_same(out[ember], out[torch])


def test_fused_adagrad_matches_pytorch():
    out = {}
    for lib in (ember, torch):
        rng = np.random.default_rng(2)
        p, g, (sums,) = _lists(lib, rng, 1)
        fn = aten._fused_adagrad_ if lib is ember else torch._fused_adagrad_
        fn(p, g, sums, _steps(lib, 2), lr=0.1, lr_decay=0.01, weight_decay=0.0, eps=1e-10, maximize=False)
        out[lib] = p + sums
    _assert_same(out[ember], out[torch])


def test_foreach_add_matches_pytorch_and_bumps_versions():
    e = [ember.tensor([1.0, 2.0]), ember.tensor(3.0)]
    t = [torch.tensor([1.0, 2.0]), torch.tensor(3.0)]
    versions = [x._version for x in e]
    aten._foreach_add__Scalar(e, 2)
    torch._foreach_add_(t, 2)
    _assert_same(e, t)
    assert [x._version for x in e] == [v + 1 for v in versions]
    assert ember.ops.aten._foreach_add_.Scalar is not None


def test_step_counters_live_in_an_arena_and_the_parameters_in_another():
    """After a fused step the parameters of a group are slots of one arena, and so are their step counters, which
    _foreach_add_ then increments with one operation."""
    from ember.c10 import arena
    ps = [ember.nn.Parameter(ember.randn(*s)) for s in SHAPES]
    opt = ember.optim.Adam(ps, lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        sum((p * p).sum() for p in ps).backward()
        opt.step()
    steps = [opt.state[p]["step"] for p in ps]
    assert arena.span_of([s._data for s in steps]) is not None
    assert arena.span_of([p._data for p in ps]) is not None
    assert [float(s) for s in steps] == [2.0] * 3
