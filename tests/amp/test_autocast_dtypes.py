"""Every op of the op table under autocast: the dtypes of its outputs are PyTorch's, for bfloat16 and float16
on the CPU (the op lists, their policies and the ops that fall through are all exercised)."""
from __future__ import annotations

import warnings

import pytest

import ember
from tests.op_db import op_db
from tests.test_ops import call, samples_of

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

CASES = [(op, d) for op in op_db for d in ("float32", "float64") if d in op.dtypes]


def _dtypes(x):
    if isinstance(x, (tuple, list)):
        return [_dtypes(y) for y in x]
    if isinstance(x, (ember.Tensor, torch.Tensor)):
        return (str(x.dtype).split(".")[-1], tuple(x.shape))
    return type(x).__name__


def _run(lib, op, s, low):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autocast("cpu", dtype=getattr(lib, low)):
            return call(op, lib, s)


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{op.name}-{d}-{i}" for i, (op, d) in enumerate(CASES)])
def test_output_dtypes_match_pytorch_under_autocast(op, dtype, low):
    compared = 0
    for s in samples_of(op, dtype):
        try:
            t = _run(torch, op, s, low)
        except Exception:   # PyTorch has no low-precision CPU kernel for this sample: nothing to compare
            continue
        e = _run(ember, op, s, low)
        assert _dtypes(e) == _dtypes(t), f"{op.name}{s.args if len(str(s.args)) < 200 else ''} {s.kwargs}"
        compared += 1
    if not compared:
        pytest.skip("PyTorch refuses every sample under autocast")
