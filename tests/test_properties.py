"""Property tests (hypothesis): broadcasting and type promotion of binary ops agree with PyTorch for
random shapes and dtypes."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
hyp = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64"]
OPS = ["add", "mul", "maximum", "eq", "lt", "where"]


@st.composite
def broadcastable(draw):
    ndim = draw(st.integers(0, 4))
    base = [draw(st.integers(1, 4)) for _ in range(ndim)]
    a = [s if draw(st.booleans()) else 1 for s in base]
    b = [s if draw(st.booleans()) else 1 for s in base][draw(st.integers(0, ndim)):]
    return tuple(a), tuple(b)


@settings(max_examples=150, deadline=None)
@given(shapes=broadcastable(), da=st.sampled_from(DTYPES), db=st.sampled_from(DTYPES),
       op=st.sampled_from(OPS), seed=st.integers(0, 2 ** 16))
def test_binary_ops_broadcast_and_promote_like_pytorch(shapes, da, db, op, seed):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shapes[0]) * 5).astype(da)
    b = (rng.standard_normal(shapes[1]) * 5).astype(db)
    if op == "where":
        cond = rng.standard_normal(shapes[0]) > 0
        e = ember.where(ember.tensor(cond), ember.tensor(a), ember.tensor(b))
        t = torch.where(torch.tensor(cond), torch.tensor(a), torch.tensor(b))
    else:
        e = getattr(ember, op)(ember.tensor(a), ember.tensor(b))
        t = getattr(torch, op)(torch.tensor(a), torch.tensor(b))
    assert e.dtype.name == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.numpy().astype(np.float64), t.numpy().astype(np.float64), rtol=1e-6)


@settings(max_examples=100, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), data=st.data())
def test_reshape_view_and_permute_keep_pytorch_strides(shape, data):
    n = int(np.prod(shape))
    perm = data.draw(st.permutations(range(len(shape))))
    e = ember.arange(n).reshape(shape).permute(*perm)
    t = torch.arange(n).reshape(shape).permute(*perm)
    assert e.stride() == t.stride() and e.is_contiguous() == t.is_contiguous()
    np.testing.assert_array_equal(e.reshape(-1).numpy(), t.reshape(-1).numpy())
    np.testing.assert_array_equal(e.contiguous().view(-1).numpy(), t.contiguous().view(-1).numpy())
