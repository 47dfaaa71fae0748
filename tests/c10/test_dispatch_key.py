import ember
from ember.c10.dispatch_key import KS_CPU, DispatchKey, DispatchKeySet


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
    x = ember.zeros(1)
    ks = DispatchKeySet(x._ks)
    assert x._ks == KS_CPU
    # PyTorch's set (torch._C._dispatch_keys): autocast's key too, excluded on every thread until autocast is on
    assert {DispatchKey.CPU, DispatchKey.ADInplaceOrView, DispatchKey.AutogradCPU, DispatchKey.AutocastCPU} == set(ks)
    meta = DispatchKeySet(ember.zeros(1, device="meta")._ks)
    assert meta.has(DispatchKey.AutogradMeta) and not meta.has(DispatchKey.AutocastCPU)
