"""The CUDA backend (CuPy): every op-table sample on the GPU must give the CPU's result.  Skipped, with the
reason, when CuPy or a GPU is missing — the same tests run unchanged the day one is present."""
import numpy as np
import pytest

import ember
from tests.op_db import op_db
from tests.test_ops import call, samples_of

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA device (CuPy and a GPU are needed)")


def _to_cuda(x):
    if isinstance(x, np.ndarray):
        return ember.tensor(x).cuda()
    if isinstance(x, list):
        return [_to_cuda(y) for y in x]
    return x


def _to_host(x):
    if isinstance(x, (tuple, list)):
        return [_to_host(y) for y in x]
    if isinstance(x, ember.Tensor):
        assert x.device.type in ("cuda", "cpu")
        return x.cpu().numpy()
    return x


@pytest.mark.parametrize("op,dtype", [(op, d) for op in op_db for d in op.dtypes if op.name not in ("unique",)],
                         ids=lambda x: getattr(x, "name", str(x)))
def test_cuda_matches_cpu(op, dtype):
    for s in samples_of(op, dtype):
        try:
            ref = call(op, ember, s)
        except Exception as exc:
            with pytest.raises(type(exc)):
                call(op, ember, s, args=[_to_cuda(a) for a in s.args])
            continue
        got = call(op, ember, s, args=[_to_cuda(a) for a in s.args])
        for g, r in zip(np.atleast_1d(np.asarray(_to_host(got), dtype=object)),
                        np.atleast_1d(np.asarray(_to_host(ref), dtype=object))):
            np.testing.assert_allclose(np.asarray(g, dtype=np.float64), np.asarray(r, dtype=np.float64),
                                       rtol=1e-5, atol=1e-6)


def test_device_moves_and_mixed_device_errors():
    x = ember.arange(6.0).reshape(2, 3)
    g = x.cuda()
    assert g.is_cuda and g.device == ember.device("cuda", 0)
    assert g.cpu().tolist() == x.tolist()
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least two "
                                           "devices, cuda:0 and cpu!"):
        g + x
    assert (g + ember.tensor(1.0)).cpu().tolist() == (x + 1).tolist()  # 0-dim CPU tensors are scalars
