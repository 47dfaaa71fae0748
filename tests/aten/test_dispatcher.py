"""The dispatcher: key sets, highest key wins, fallthrough, redispatch, thread-local keys, caching."""
import pytest

import ember
from ember.aten.dispatcher import (Dispatcher, ExcludeDispatchKeyGuard, IncludeDispatchKeyGuard, OperatorHandle,
                                   keys_below, tls)
from ember.c10.dispatch_key import KS_CPU, DispatchKey, requiring_grad


def make_op():
    calls = []
    h = OperatorHandle("test_op(Tensor self) -> Tensor")

    def cpu(ks, x):
        calls.append("CPU")
        return x

    def autograd(ks, x):
        calls.append("AutogradCPU")
        return h.redispatch(ks & keys_below(DispatchKey.AutogradCPU), x)

    h.register(DispatchKey.CPU, cpu)
    return h, calls, autograd


def test_fallthrough_and_the_boxed_autograd_fallback():
    h, calls, autograd = make_op()
    # ADInplaceOrView falls through for every op; the Autograd key has a boxed fallback until a kernel exists
    assert h.dispatch_trace(requiring_grad(KS_CPU)) == ["AutogradCPU: autograd_not_implemented[test_op]"]
    only = (1 << DispatchKey.ADInplaceOrView) | (1 << DispatchKey.CPU)
    assert h.dispatch_trace(only) == ["ADInplaceOrView: fallthrough", "CPU: make_op.<locals>.cpu"]
    assert h.call(requiring_grad(KS_CPU), 1) == 1 and calls == ["CPU"]
    # the fallback only redispatches when no input requires grad: tensors that don't skip it (Note [Kernel resolution])
    assert h.dispatch_trace(KS_CPU) == ["ADInplaceOrView: fallthrough", "CPU: make_op.<locals>.cpu"]
    h.register(DispatchKey.AutogradCPU, autograd)  # registration clears the cache
    calls.clear()
    h.call(requiring_grad(KS_CPU), 1)
    assert calls == ["AutogradCPU", "CPU"]
    # a kernel not marked only_for_grad runs for tensors that do not require grad too, as in PyTorch
    calls.clear()
    h.call(KS_CPU, 1)
    assert calls == ["AutogradCPU", "CPU"]
    assert h.dispatch_trace(KS_CPU)[0].startswith("AutogradCPU: ")
    # ... not below ADInplaceOrView (an autograd kernel's own redispatch), nor where a thread excludes it
    calls.clear()
    h.call(1 << DispatchKey.CPU, 1)
    with ExcludeDispatchKeyGuard(DispatchKey.AutogradCPU):
        h.call(KS_CPU, 1)
    assert calls == ["CPU", "CPU"]
    autograd.only_for_grad = True
    h.register(DispatchKey.AutogradCPU, autograd)
    calls.clear()
    h.call(KS_CPU, 1)
    assert calls == ["CPU"]


def test_thread_local_exclude_and_include():
    h, calls, autograd = make_op()
    h.register(DispatchKey.AutogradCPU, autograd)
    with ExcludeDispatchKeyGuard(DispatchKey.AutogradCPU):
        h.call(KS_CPU, 1)
    assert calls == ["CPU"]
    calls.clear()
    with IncludeDispatchKeyGuard(DispatchKey.AutogradCPU):
        h.call(1 << DispatchKey.CPU, 1)
    assert calls == ["AutogradCPU", "CPU"]


def test_missing_backend_kernel_is_a_clear_error():
    h, _, _ = make_op()
    with pytest.raises(NotImplementedError, match="Could not run 'aten::test_op' with arguments from the 'Meta' "
                                                  "backend"):
        h.call(1 << DispatchKey.Meta, 1)


def test_composite_implicit_serves_every_backend():
    h = OperatorHandle("comp(Tensor self) -> Tensor")
    h.register(DispatchKey.CompositeImplicitAutograd, lambda ks, x: ("composite", x))
    assert h.call(KS_CPU, 3) == ("composite", 3)
    assert h.call(1 << DispatchKey.Meta, 3) == ("composite", 3)


def test_cache_is_per_keyset():
    h, calls, _ = make_op()
    h.call(KS_CPU, 1)
    assert KS_CPU & tls.keys[1] in h._cache     # the key set after the thread's exclusions (autocast's keys)
    with ember.autocast("cpu"):
        h.call(KS_CPU, 1)
    assert KS_CPU in h._cache


def test_real_ops_are_registered_with_pytorch_names():
    add = Dispatcher.find("aten::add.Tensor")
    assert add.schema == "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    assert DispatchKey.CPU in add.kernels and add.resolve(1 << DispatchKey.Meta).__name__ == "meta_add_Tensor"
    assert ember.ops.aten.add.Tensor(ember.ones(2), ember.ones(2), alpha=3).tolist() == [4.0, 4.0]
    assert ember.ops.aten.add(ember.ones(2), 2).tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="No such operator"):
        Dispatcher.find("aten::nonexistent")


def test_a_call_goes_through_the_dispatcher():
    h = Dispatcher.find("aten::mul.Tensor")
    seen = []
    orig = h.kernels[DispatchKey.CPU]
    h.register(DispatchKey.CPU, lambda ks, a, b: (seen.append(ks), orig(ks, a, b))[1])
    try:
        r = ember.ones(2, requires_grad=True) * ember.ones(2)
        r2 = ember.ones(2) * ember.ones(2)
    finally:
        h.register(DispatchKey.CPU, orig)
    # the Autograd kernel ran first and redispatched below itself: the CPU kernel sees only the CPU key; without an
    # input that requires grad, the call went straight to the CPU kernel (ADInplaceOrView fell through)
    assert seen == [1 << DispatchKey.CPU, 1 << DispatchKey.CPU | 1 << DispatchKey.ADInplaceOrView]
    assert r.tolist() == r2.tolist() == [1.0, 1.0] and r.grad_fn.name() == "MulBackward0" and r2.grad_fn is None
    assert h.dispatch_trace(requiring_grad(KS_CPU))[0] == "AutogradCPU: _ag_mul_Tensor"
    assert h.dispatch_trace(KS_CPU)[0] == "ADInplaceOrView: fallthrough"
    # a view op's autograd kernel only keeps the view's base when nothing requires grad, and so does its CPU wrapper
    # (Note [Views keep their base below autograd]): the call goes to the wrapper; with the Python key it does not
    view = Dispatcher.find("aten::view")
    assert view.dispatch_trace(KS_CPU) == ["ADInplaceOrView: fallthrough", "CPU: view_default"]
    assert view.dispatch_trace(requiring_grad(KS_CPU))[0] == "AutogradCPU: _ag_view_default"
    assert view.dispatch_trace(KS_CPU | 1 << DispatchKey.Python)[0] == "AutogradCPU: _ag_view_default"


def test_one_wrapper_per_op_serves_cpu_and_cuda():
    """Note [Backend kernels]: the CUDA registration is the CPU wrapper behind the device check and guard; every
    row of the generated table is registered that way."""
    from ember._generated.registrations import _BACKEND_KERNELS
    assert len(_BACKEND_KERNELS) > 500
    for op, factory, keys, *_ in _BACKEND_KERNELS:
        fn = op.kernels[DispatchKey.CPU]
        assert fn.__code__ in factory.__code__.co_consts   # the kernel its row's factory made
        assert ("CUDA" in keys) == (DispatchKey.CUDA in op.kernels)
        if "CUDA" in keys:
            assert op.kernels[DispatchKey.CUDA].__wrapped__ is fn
        assert DispatchKey.Meta not in op.kernels  # derived by the Meta fallback


def test_meta_is_a_boxed_fallback():
    """Note [The Meta fallback]: a Meta kernel derived from the table row, or PyTorch's error for an op without one."""
    m = ember.empty(2, 3, device="meta")
    mx = Dispatcher.find("aten::max.dim")
    assert mx.resolve(1 << DispatchKey.Meta).__name__ == "meta_max_dim"
    v, i = ember.max(m, 1)
    assert v.shape == (2,) and i.dtype == ember.int64 and v.device.type == "meta"
    with pytest.raises(NotImplementedError, match=r"Could not run 'aten::nonzero' with arguments from the 'Meta' "
                                                  r"backend\. 'aten::nonzero' is only available for these backends: "
                                                  r"\[CPU, CUDA\]\."):
        ember.nonzero(m)
    out = ember.empty(0, device="meta")
    assert ember.add(m, 1, out=out) is out and out.shape == (2, 3)
    assert m.add_(1) is m and m.t().shape == (3, 2)
    with pytest.raises(RuntimeError, match="Tensor on device cpu is not on the expected device meta!"):
        ember.add(m, ember.ones(2, 3))
