"""Storage sharing, strides in elements, storage offsets and the shared version counter."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def test_views_share_storage_and_version_counter():
    x = ember.arange(12.0).reshape(3, 4)
    v = x[1:, 1::2]
    assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert v.untyped_storage().nbytes() == x.untyped_storage().nbytes() == 48
    assert v._version == x._version == 0
    v.add_(1)
    assert x._version == v._version == 1
    assert x[1, 1].item() == 6.0
    x.zero_()
    assert v._version == 2


@pytest.mark.parametrize("make", [
    lambda lib: lib.arange(24.0).reshape(2, 3, 4),
    lambda lib: lib.arange(24.0).reshape(2, 3, 4).transpose(0, 2),
    lambda lib: lib.arange(24.0).reshape(2, 3, 4)[:, 1:, ::2],
    lambda lib: lib.arange(24.0).reshape(2, 3, 4)[1],
    lambda lib: lib.arange(24.0).reshape(2, 3, 4).permute(1, 2, 0)[1:],
    lambda lib: lib.arange(4.0).expand(3, 4),
    lambda lib: lib.arange(24.0).reshape(4, 6).diagonal(1),
    lambda lib: lib.arange(24.0).reshape(4, 6).unfold(1, 3, 2),
    lambda lib: lib.arange(24.0).reshape(4, 6).t().narrow(0, 2, 3),
])
def test_strides_offsets_contiguity_match_pytorch(make):
    e, t = make(ember), make(torch)
    assert tuple(e.shape) == tuple(t.shape)
    assert e.stride() == t.stride()
    assert e.storage_offset() == t.storage_offset()
    assert e.is_contiguous() == t.is_contiguous()
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    c = e.contiguous()
    assert c.is_contiguous() and c.stride() == t.contiguous().stride()


def test_data_ptr_moves_with_offset():
    x = ember.arange(10, dtype=ember.int64)
    assert x[3:].data_ptr() - x.data_ptr() == 3 * 8
    assert x[3:].storage_offset() == 3


def test_from_numpy_shares_memory_and_clone_does_not():
    a = np.arange(6.0)
    t = ember.from_numpy(a)
    a[0] = 42
    assert t[0].item() == 42
    c = t.clone()
    a[1] = 7
    assert c[1].item() == 1.0
    assert c.data_ptr() != t.data_ptr()


def test_meta_tensors_have_strides_but_no_data():
    m = ember.empty(3, 4, device="meta")
    assert m.stride() == (4, 1) and m.data_ptr() == 0
    mt = m.t()
    assert mt.stride() == (1, 4) and not mt.is_contiguous()
    assert m[1:, 2].storage_offset() == 6
    with pytest.raises(RuntimeError, match="meta"):
        m[0, 0].item()
    assert repr(m) == "tensor(..., device='meta', size=(3, 4))"


def test_version_counter_is_per_tensor_family():
    a = ember.zeros(3)
    b = ember.zeros(3)
    a.add_(1)
    assert a._version == 1 and b._version == 0
    out = ember.empty(3)
    ember.add(a, b, out=out)
    assert out._version == 1
