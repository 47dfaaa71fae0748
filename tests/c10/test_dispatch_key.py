import ember
from ember.c10.dispatch_key import (AUTOGRAD_MASK, KS_CPU, KS_META, DispatchKey, DispatchKeySet,
                                   keyset_bits_for_backend, not_requiring_grad, requiring_grad)


def test_priority_order_follows_pytorch():
    order = [DispatchKey.CPU, DispatchKey.CUDA, DispatchKey.Meta, DispatchKey.ADInplaceOrView,
             DispatchKey.AutogradCPU, DispatchKey.AutocastCPU, DispatchKey.PythonDispatcher]
    assert order == sorted(order)


def test_keyset_is_a_bitset():
    ks = DispatchKeySet([DispatchKey.CPU, DispatchKey.AutogradCPU])
    assert ks.has(DispatchKey.CPU) and DispatchKey.AutogradCPU in ks and not ks.has(DispatchKey.CUDA)
    assert ks.highestPriorityTypeId() is DispatchKey.AutogradCPU
    assert ks.remove(DispatchKey.AutogradCPU).highestPriorityTypeId() is DispatchKey.CPU
    assert (ks | DispatchKeySet(DispatchKey.Meta)).has(DispatchKey.Meta)
    assert repr(ks) == "DispatchKeySet(CPU, AutogradCPU)"
    assert list(ks) == [DispatchKey.AutogradCPU, DispatchKey.CPU]


def test_tensors_carry_backend_and_autograd_keys():
    # PyTorch's set (torch._C._dispatch_keys): autocast's key too, excluded on every thread until autocast is on
    pytorchs = {DispatchKey.CPU, DispatchKey.ADInplaceOrView, DispatchKey.AutogradCPU, DispatchKey.AutocastCPU}
    assert set(DispatchKeySet(keyset_bits_for_backend(DispatchKey.CPU))) == pytorchs
    # Note [The Autograd key of a tensor that does not require grad]: the Autograd key only while it requires grad
    x = ember.zeros(1)
    assert x._ks == KS_CPU and set(DispatchKeySet(x._ks)) == pytorchs - {DispatchKey.AutogradCPU}
    assert set(DispatchKeySet(x.requires_grad_()._ks)) == pytorchs
    y = x * 2                                   # recorded: it requires grad, so it has the key
    assert set(DispatchKeySet(y._ks)) == pytorchs
    no_autograd = pytorchs - {DispatchKey.AutogradCPU}
    assert set(DispatchKeySet(y.detach()._ks)) == set(DispatchKeySet(y.data._ks)) == no_autograd
    with ember.no_grad():
        assert not (x * 2)._ks & AUTOGRAD_MASK and not x[:1]._ks & AUTOGRAD_MASK
    meta = DispatchKeySet(ember.zeros(1, device="meta", requires_grad=True)._ks)
    assert meta.has(DispatchKey.AutogradMeta) and not meta.has(DispatchKey.AutocastCPU)
    assert requiring_grad(KS_META) == keyset_bits_for_backend(DispatchKey.Meta)
    assert not_requiring_grad(requiring_grad(KS_CPU)) == KS_CPU
    # a quantized tensor cannot require grad and keeps PyTorch's whole set
    assert ember.quantize_per_tensor(ember.ones(2), 0.1, 0, ember.quint8)._ks & AUTOGRAD_MASK
