"""vmap over every op of the op table (PyTorch's ``test_vmap_exhaustive``): for each entry's first samples, a batch
of three examples (the sample's arrays, the floating ones perturbed differently per example) run once through
``ember.vmap`` must equal the three examples run one by one and stacked -- with every array batched, and with only
the first batched (the rest shared). An op vmap refuses must refuse with one of PyTorch's vmap errors."""
import warnings

import numpy as np
import pytest

import ember
from ember.utils._pytree import tree_flatten, tree_map
from tests.op_db import op_db
from tests.test_ops import call, samples_of

B = 3

# vmap's own refusals, as PyTorch words them (random ops under randomness='error', data-dependent control flow,
# .item(), non-tensor outputs, a number that differs per example -- ``allclose`` -- and batch norm's shared running
# statistics)
REFUSALS = ("randomness error mode", "data-dependent control flow", "calling .item() on a Tensor",
            "must only return Tensors", "isn't supported", "Batch norm got a batched tensor as input")
# ops whose composite writes a batched value into a buffer it made unbatched: refused with vmap's in-place error
# (PyTorch refuses the recurrent layers too: no batching rule for aten::lstm.input)
INPLACE_REFUSED = {"lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
                   "vander", "stft"}


def _cases():
    out = []
    for op in op_db:
        dt = next((d for d in op.dtypes if d in ("float64", "float32")), None)
        if dt is not None:
            out.append((op, dt))
    return out


CASES = _cases()


def _same(got, want):
    fg, _ = tree_flatten(got)
    fw, _ = tree_flatten(want)
    assert len(fg) == len(fw)
    for g, w in zip(fg, fw):
        if isinstance(w, ember.Tensor):
            assert isinstance(g, ember.Tensor) and type(g) is ember.Tensor
            assert tuple(g.shape) == tuple(w.shape) and g.dtype == w.dtype, (tuple(g.shape), tuple(w.shape))
            a, b = g.detach().numpy(), w.detach().numpy()
            if a.dtype == bool:
                assert (a == b).all()
            else:
                np.testing.assert_allclose(a.astype(np.complex128), b.astype(np.complex128), rtol=1e-6, atol=1e-6,
                                           equal_nan=True)
        else:
            assert g == w or (isinstance(w, float) and np.isnan(w) and np.isnan(g))


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{op.name}-{i}" for i, (op, _) in enumerate(CASES)])
def test_vmap_equals_a_loop_of_examples(op, dtype):
    try:
        samples = samples_of(op, dtype)[:3]
    except Exception:       # noqa: BLE001 - an entry whose samples need what this dtype lacks
        pytest.skip("no samples")
    checked = 0
    for si, s in enumerate(samples):
        idx = [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray)]
        if not idx:
            continue
        rng = np.random.default_rng(si)
        exs = []
        for b in range(B):
            args = list(s.args)
            for i in idx:
                a = args[i]
                if a.dtype.kind == "f" and b:
                    with np.errstate(invalid="ignore", over="ignore"):     # (samples with inf and NaN)
                        a = a + (rng.uniform(-0.01, 0.01, a.shape) * (np.abs(a) + 1)).astype(a.dtype)
                args[i] = a
            exs.append(args)
        for batched in (idx, idx[:1]):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    loop = []
                    for b in range(B):
                        args = [ember.tensor((exs[b] if i in batched else exs[0])[i].copy()) if i in idx else a
                                for i, a in enumerate(s.args)]
                        loop.append(call(op, ember, s, args=args))
                    want = tree_map(lambda *xs: ember.stack(xs) if isinstance(xs[0], ember.Tensor) else xs[0],
                                    loop[0], *loop[1:])
                except Exception:       # noqa: BLE001 - the examples one by one fail: nothing to compare
                    continue
                stacked = [ember.tensor(np.stack([exs[b][i] for b in range(B)])) if i in batched else
                           (ember.tensor(exs[0][i].copy()) if i in idx else a) for i, a in enumerate(s.args)]
                in_dims = tuple(0 if i in batched else None for i in range(len(s.args)))
                try:
                    got = ember.vmap(lambda *a: call(op, ember, s, args=list(a)), in_dims=in_dims)(*stacked)
                except (RuntimeError, ValueError) as e:
                    msg = str(e)
                    assert any(r in msg for r in REFUSALS) or \
                        (op.name in INPLACE_REFUSED and "inplace arithmetic" in msg), msg
                    continue
            _same(got, want)
            checked += 1
    if not checked:
        pytest.skip("no sample vmap can compare")
