"""What a ``TorchDispatchMode`` sees of each op of the table (tests/op_db.py), against what PyTorch's sees: the same
ATen overloads in the same order for the op's first samples, each framework given the same input tensors (made
before the mode, so that only the op's own calls are seen); and what a ``TorchFunctionMode`` sees: the same public
functions, by the same ``__name__`` (``linalg_inv``, ``max_pool2d_with_indices``), no internal call of ember's
showing through. Modes, ``make_fx``, compile backends and
``__torch_dispatch__`` subclasses all see an op through this sequence, so a decomposition that differs from
PyTorch's -- another overload (``mul.Tensor`` for ``mul.Scalar``), an operator where PyTorch decomposes, a
decomposition where PyTorch has an operator, another order -- is a difference every such program sees.

``KNOWN`` lists the ops that still differ, by what differs; an op in it that now matches fails the test too, so
that the list only shrinks."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.op_db import op_db
from tests.opinfo import Sample
from tests.test_ops import call, kw_to_lib, samples_of, to_lib
from tests.test_torch_dispatch import _mode_class

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

from torch.overrides import TorchFunctionMode  # noqa: E402

from ember.overrides import TorchFunctionMode as EmberFunctionMode  # noqa: E402

KNOWN: frozenset[str] = frozenset()


class _FunctionLog:
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


_MODES = {"dispatch": (_mode_class(torch), _mode_class(ember)),       # (they record str(func))
          "function": (type("Log", (_FunctionLog, TorchFunctionMode), {}),
                       type("Log", (_FunctionLog, EmberFunctionMode), {}))}


def _seen(op, kind):
    """What each framework's mode of ``kind`` sees for the op's first three samples (a sample PyTorch refuses is
    skipped), as two lists, or None when no sample ran."""
    torch_mode, ember_mode = _MODES[kind]
    dtype = "float32" if "float32" in op.dtypes else op.dtypes[0]
    got, want = [], []
    for s in samples_of(op, dtype)[:3]:
        t_args, e_args = [to_lib(torch, a) for a in s.args], [to_lib(ember, a) for a in s.args]
        t_s, e_s = Sample(s.args, kw_to_lib(torch, s.kwargs)), Sample(s.args, kw_to_lib(ember, s.kwargs))
        try:
            with torch_mode() as t:
                call(op, torch, t_s, args=t_args)
        except Exception:
            continue
        with ember_mode() as e:
            call(op, ember, e_s, args=e_args)
        want.append(t.seen)
        got.append(e.seen)
    return (got, want) if want else None


def _check(op, kind, known):
    seen = _seen(op, kind)
    if seen is None:
        pytest.skip("no sample runs on PyTorch")
    got, want = seen
    if op.name in known:
        # (a name with several table entries is known to differ if any of them does)
        if sum(o.name == op.name for o in op_db) == 1:
            assert got != want, f"{op.name} is now seen as in PyTorch: remove it from the known differences"
    else:
        assert got == want


@pytest.mark.parametrize("op", op_db, ids=[op.name for op in op_db])
def test_a_dispatch_mode_sees_pytorchs_operators(op):
    _check(op, "dispatch", KNOWN)


# PyTorch writes linalg.cond in Python without a __torch_function__ check: a mode sees the calls inside it
KNOWN_FUNCTION = frozenset({"linalg.cond"})


@pytest.mark.parametrize("op", op_db, ids=[op.name for op in op_db])
def test_a_function_mode_sees_pytorchs_functions(op):
    _check(op, "function", KNOWN_FUNCTION)


_RNN_CONFIGS = [   # (module, layers, bidirectional, batch_first, bias, dtype, packed, proj_size)
    ("LSTM", 2, True, True, True, "float32", False, 0),       # oneDNN's layer per layer and direction
    ("LSTM", 1, False, False, False, "float32", False, 0),    # (zeros in place of the biases)
    ("LSTM", 1, True, False, True, "float64", False, 2),      # PyTorch's cells, with the projection
    ("LSTM", 2, True, False, True, "float32", True, 0),       # packed: PackedBidirectionalLayer
    ("GRU", 2, True, True, True, "float32", False, 0),
    ("GRU", 1, True, False, False, "float64", True, 0),
    ("RNN", 2, False, True, True, "float32", True, 0),
]


@pytest.mark.parametrize("config", _RNN_CONFIGS, ids=[str(c) for c in _RNN_CONFIGS])
def test_an_observed_recurrent_layer_runs_pytorchs_operators(config):
    """Note [Observed recurrent layers]: under a dispatch mode an nn.LSTM / GRU / RNN reaches it as PyTorch's CPU
    code runs it (oneDNN's layer, or the cells step by step), with PyTorch's outputs and gradients."""
    cls, layers, bidir, batch_first, bias, dtype, packed, proj = config
    results = {}
    for lib in (ember, torch):
        lib.manual_seed(0)
        kw = dict(num_layers=layers, bidirectional=bidir, batch_first=batch_first, bias=bias)
        if proj:
            kw["proj_size"] = proj
        m = getattr(lib.nn, cls)(2, 3, **kw).to(getattr(lib, dtype))
        x = lib.tensor(np.random.default_rng(0).uniform(-1, 1, (4, 3, 2)), dtype=getattr(lib, dtype))
        if packed:
            x = lib.nn.utils.rnn.pack_padded_sequence(x, [4, 3, 2], enforce_sorted=True)
        with _mode_class(lib)() as mode:
            out = m(x)
        o = out[0].data if packed else out[0]
        h = out[1][0] if cls == "LSTM" else out[1]
        (o.sum() + h.sum()).backward()
        results[lib.__name__] = (mode.seen, o.detach().numpy(), [p.grad.numpy() for p in m.parameters()])
    (e_seen, e_out, e_grads), (t_seen, t_out, t_grads) = results["ember"], results["torch"]
    assert e_seen == t_seen
    np.testing.assert_allclose(e_out, t_out, rtol=1e-5, atol=1e-6)
    for a, b in zip(e_grads, t_grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
