"""native_batch_norm / native_layer_norm and their fused backward kernels against PyTorch: outputs, saved
statistics, running-statistic updates, gradients (plain and create_graph), mixed precision and errors."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def _pair(a, requires_grad=False):
    return (ember.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _close(e, t, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(e.detach().float().numpy(), t.detach().float().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5), (2, 4, 3, 3), (2, 2, 2, 3, 2)])
@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_matches_pytorch(dtype, shape, training):
    rng = np.random.default_rng(0)
    c = shape[1]
    x = (rng.standard_normal(shape) * 3 + 5).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    ex, tx = _pair(x, True)
    ew, tw = _pair(rng.uniform(0.5, 2, c).astype(dtype), True)
    eb, tb = _pair(rng.standard_normal(c).astype(dtype), True)
    erm, trm = _pair(rng.standard_normal(c).astype(dtype))
    erv, trv = _pair(rng.uniform(0.5, 2, c).astype(dtype))
    eo = ember.native_batch_norm(ex, ew, eb, erm, erv, training, 0.2, 1e-3)
    to = torch.native_batch_norm(tx, tw, tb, trm, trv, training, 0.2, 1e-3)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    for e, t in zip(eo, to):
        assert tuple(e.shape) == tuple(t.shape) and str(e.dtype)[6:] == str(t.dtype)[6:]
        _close(e, t, rtol, rtol)
    _close(erm, trm, rtol, rtol)                      # running statistics updated in place (unbiased variance)
    _close(erv, trv, rtol, rtol)
    eo[0].backward(ember.tensor(g))
    to[0].backward(torch.tensor(g))
    for e, t in ((ex, tx), (ew, tw), (eb, tb)):
        _close(e.grad, t.grad, 1e-4 if dtype == "float32" else 1e-10, 1e-4 if dtype == "float32" else 1e-10)


def test_batch_norm_double_backward_matches_pytorch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 3, 4))
    w = rng.uniform(0.5, 2, 3)
    res = []
    for lib in (ember, torch):
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        y = lib.nn.functional.batch_norm(xt, None, None, wt, None, training=True)
        gx, gw = lib.autograd.grad((y ** 3).sum(), (xt, wt), create_graph=True)
        (gx.square().sum() + gw.sum()).backward()
        res.append((gx, gw, xt.grad, wt.grad))
    for e, t in zip(*res):
        _close(e, t, 1e-10, 1e-10)


def test_batch_norm_module_and_mixed_precision():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 4, 3)).astype(np.float32)
    for train in (True, False):
        em, tm = ember.nn.BatchNorm1d(4), torch.nn.BatchNorm1d(4)
        em.train(train), tm.train(train)
        eo = em(ember.tensor(x).to(ember.bfloat16))       # bfloat16 input, float32 parameters and statistics
        to = tm(torch.tensor(x).to(torch.bfloat16))
        assert eo.dtype == ember.bfloat16 and to.dtype == torch.bfloat16
        _close(eo, to, 1e-2, 1e-2)
        _close(em.running_mean, tm.running_mean, 1e-2, 1e-2)
        assert int(em.num_batches_tracked) == int(tm.num_batches_tracked)


def test_batch_norm_empty_batch_and_meta():
    for lib in (ember, torch):
        x = lib.zeros(0, 3, 2, requires_grad=True)
        w = lib.ones(3, requires_grad=True)
        rm = lib.zeros(3)
        y = lib.nn.functional.batch_norm(x, rm, lib.ones(3), w, None, training=True)
        assert tuple(y.shape) == (0, 3, 2)
        y.sum().backward()
        assert float(w.grad.abs().sum()) == 0 and float(rm.abs().sum()) == 0
    msgs = []
    for lib in (ember, torch):                   # the native op itself refuses an empty batch in training
        with pytest.raises(RuntimeError) as e:
            lib.native_batch_norm(lib.zeros(0, 3, 2), None, None, None, None, True, 0.1, 1e-5)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    m = ember.empty(4, 3, 5, device="meta")
    out, mean, invstd = ember.native_batch_norm(m, None, None, ember.zeros(3, device="meta"),
                                                ember.ones(3, device="meta"), True, 0.1, 1e-5)
    assert out.device.type == "meta" and tuple(out.shape) == (4, 3, 5) and tuple(mean.shape) == (3,)


def _bn_error(lib, xd, wd=None, rmd=None, shape=(4, 3, 5), training=True, wn=3):
    x = lib.ones(shape, dtype=getattr(lib, xd))
    w = None if wd is None else lib.ones(wn, dtype=getattr(lib, wd))
    rm = None if rmd is None else lib.zeros(3, dtype=getattr(lib, rmd))
    rv = None if rmd is None else lib.ones(3, dtype=getattr(lib, rmd))
    return lib.batch_norm(x, w, None, rm, rv, training, 0.1, 1e-5, False)


@pytest.mark.parametrize("case", [
    dict(xd="float64", wd="float32"), dict(xd="float32", wd="float64"), dict(xd="float32", rmd="float64"),
    dict(xd="float64", rmd="float32"), dict(xd="float16", wd="float64"),
    dict(xd="float32", wd="float32", rmd="float64"),
    dict(xd="bfloat16", wd="float32", rmd="bfloat16"), dict(xd="int32"), dict(xd="float32", wd="float32", wn=4),
    dict(xd="float32", training=False), dict(xd="float32", shape=(3,))
])
def test_batch_norm_errors_match_pytorch(case):
    with pytest.raises(Exception) as te:
        _bn_error(torch, **case)
    with pytest.raises(type(te.value)) as ee:
        _bn_error(ember, **case)
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("shape,norm", [((4, 6), (6,)), ((2, 3, 4, 5), (4, 5)), ((3, 5), (3, 5))])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_backward_kernel_matches_pytorch(shape, norm, affine):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    wa, ba = rng.uniform(0.5, 2, norm).astype(np.float32), rng.standard_normal(norm).astype(np.float32)
    res = []
    for lib in (ember, torch):
        xt = lib.tensor(x, requires_grad=True)
        w = lib.tensor(wa, requires_grad=True) if affine else None
        b = lib.tensor(ba, requires_grad=True) if affine else None
        y = lib.nn.functional.layer_norm(xt, norm, w, b)
        y.backward(lib.tensor(g))
        res.append([y, xt.grad] + ([w.grad, b.grad] if affine else []))
    for e, t in zip(*res):
        _close(e, t, 1e-4, 1e-5)
