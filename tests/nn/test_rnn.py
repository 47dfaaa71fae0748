"""RNN / LSTM / GRU, their cells and nn.utils.rnn against PyTorch: initialisation under one seed, repr,
state_dict keys, outputs, final states and every gradient (padded, packed, batch_first, bidirectional,
projections, several layers with dropout), and PyTorch's errors."""
import numpy as np
import pytest

import ember
import ember.nn as enn

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
tnn = torch.nn
ernn, trnn = enn.utils.rnn, tnn.utils.rnn


def _as_tuple(h):
    return h if isinstance(h, tuple) else (h,)


CASES = [
    ("LSTM-2layer-bi", lambda nn: nn.LSTM(3, 5, num_layers=2, bidirectional=True), (4, 2, 3), None),
    ("LSTM-proj-batch_first", lambda nn: nn.LSTM(3, 5, proj_size=2, batch_first=True, bidirectional=True),
     (2, 4, 3), None),
    ("LSTM-packed-proj", lambda nn: nn.LSTM(3, 5, proj_size=3, bidirectional=True, batch_first=True), (3, 4, 3),
     [2, 4, 4]),
    ("LSTM-unbatched", lambda nn: nn.LSTM(3, 4, bias=False), (5, 3), None),
    ("GRU-packed-2layer-bi", lambda nn: nn.GRU(3, 5, num_layers=2, bidirectional=True), (4, 3, 3), [2, 4, 1]),
    ("GRU-unbatched", lambda nn: nn.GRU(3, 5), (4, 3), None),
    ("RNN-relu-nobias", lambda nn: nn.RNN(3, 5, nonlinearity="relu", bias=False), (4, 2, 3), None),
    ("RNN-3layer-bi-packed", lambda nn: nn.RNN(3, 5, num_layers=3, bidirectional=True), (4, 3, 3), [3, 1, 4]),
    ("LSTM-dropout-train", lambda nn: nn.LSTM(3, 4, num_layers=3, dropout=0.4), (5, 2, 3), None),
]


@pytest.mark.parametrize("name,ctor,shape,lengths", CASES, ids=[c[0] for c in CASES])
def test_recurrent_module_matches_pytorch(name, ctor, shape, lengths):
    ember.manual_seed(0)
    torch.manual_seed(0)
    em, tm = ctor(enn), ctor(tnn)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    for (k, a), (_, b) in zip(em.state_dict().items(), tm.state_dict().items()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, err_msg=f"init of {k}")
    em.double()
    tm.double()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    if lengths is not None:
        ei = ernn.pack_padded_sequence(ex, lengths, batch_first=em.batch_first, enforce_sorted=False)
        ti = trnn.pack_padded_sequence(tx, lengths, batch_first=tm.batch_first, enforce_sorted=False)
        np.testing.assert_array_equal(ei.batch_sizes.numpy(), ti.batch_sizes.numpy())
        np.testing.assert_array_equal(ei.sorted_indices.numpy(), ti.sorted_indices.numpy())
    else:
        ei, ti = ex, tx
    ember.manual_seed(1)
    torch.manual_seed(1)
    eo, eh = em(ei)
    to, th = tm(ti)
    if lengths is not None:
        assert isinstance(eo, ernn.PackedSequence)
        eo, elen = ernn.pad_packed_sequence(eo, batch_first=em.batch_first)
        to, tlen = trnn.pad_packed_sequence(to, batch_first=tm.batch_first)
        np.testing.assert_array_equal(elen.numpy(), tlen.numpy())
    eh, th = _as_tuple(eh), _as_tuple(th)
    assert tuple(eo.shape) == tuple(to.shape)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    for a, b in zip(eh, th):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = rng.standard_normal(tuple(to.shape))
    ws = [rng.standard_normal(tuple(h.shape)) for h in th]
    (eo * ember.tensor(w)).sum().add(sum((h * ember.tensor(v)).sum() for h, v in zip(eh, ws))).backward()
    (to * torch.tensor(w)).sum().add(sum((h * torch.tensor(v)).sum() for h, v in zip(th, ws))).backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    for (k, p), (_, q) in zip(em.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=k)


def test_initial_states_get_gradients_and_float32_matches():
    ember.manual_seed(0)
    torch.manual_seed(0)
    em, tm = enn.LSTM(4, 6, num_layers=2), tnn.LSTM(4, 6, num_layers=2)
    rng = np.random.default_rng(3)
    x, h, c = (rng.standard_normal(s).astype(np.float32) for s in [(7, 3, 4), (2, 3, 6), (2, 3, 6)])
    e_in = [ember.tensor(a, requires_grad=True) for a in (x, h, c)]
    t_in = [torch.tensor(a, requires_grad=True) for a in (x, h, c)]
    eo, (eh, ec) = em(e_in[0], (e_in[1], e_in[2]))
    to, (th, tc) = tm(t_in[0], (t_in[1], t_in[2]))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    (eo.sum() + ec.sum()).backward()
    (to.sum() + tc.sum()).backward()
    for a, b in zip(e_in, t_in):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cell,hidden", [("LSTMCell", 2), ("GRUCell", 1), ("RNNCell", 1)])
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_pytorch_and_support_double_backward(cell, hidden, batched):
    ember.manual_seed(0)
    torch.manual_seed(0)
    em, tm = getattr(enn, cell)(3, 4).double(), getattr(tnn, cell)(3, 4).double()
    assert repr(em) == repr(tm)
    for a, b in zip(em.parameters(), tm.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy())
    rng = np.random.default_rng(0)
    lead = (2,) if batched else ()
    x = rng.standard_normal(lead + (3,))
    hs = [rng.standard_normal(lead + (4,)) for _ in range(hidden)]
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eh = [ember.tensor(h) for h in hs]
    th = [torch.tensor(h) for h in hs]
    eo = em(ex, tuple(eh) if hidden == 2 else eh[0])
    to = tm(tx, tuple(th) if hidden == 2 else th[0])
    for a, b in zip(_as_tuple(eo), _as_tuple(to)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-14)
    (g,) = ember.autograd.grad(_as_tuple(eo)[0].pow(2).sum(), ex, create_graph=True)
    (tg,) = torch.autograd.grad(_as_tuple(to)[0].pow(2).sum(), tx, create_graph=True)
    g.sum().backward()
    tg.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def _err(fn_e, fn_t):
    with pytest.raises(Exception) as te:
        fn_t(torch, tnn)
    with pytest.raises(type(te.value)) as ee:
        fn_e(ember, enn)
    assert str(ee.value) == str(te.value).replace("torch.", "ember.")


@pytest.mark.parametrize("call", [
    lambda L, nn: nn.LSTM(3, 4)(L.randn(2, 3, 5)),
    lambda L, nn: nn.LSTM(3, 4)(L.randn(2, 3, 3), (L.randn(1, 2, 4), L.randn(1, 3, 4))),
    lambda L, nn: nn.LSTM(3, 4)(L.randn(2, 3, 3), (L.randn(1, 3, 4), L.randn(1, 2, 4))),
    lambda L, nn: nn.LSTM(3, 4)(L.randn(3, 3), (L.randn(1, 3, 4), L.randn(1, 3, 4))),
    lambda L, nn: nn.LSTM(3, 4)(L.randn(2, 3, 3, 3)),
    lambda L, nn: nn.GRU(3, 4)(L.randn(2, 3, 3), L.randn(3, 4)),
    lambda L, nn: nn.GRU(3, 4)(L.randn(2, 3, 3, 3)),
    lambda L, nn: nn.RNN(3, 4)(L.randn(2, 3, 3, 3)),
    lambda L, nn: nn.RNN(3, 4)(L.randn(3, 3), L.randn(1, 3, 4)),
    lambda L, nn: nn.RNN(3, 4).double()(L.randn(2, 3, 3)),
    lambda L, nn: nn.LSTMCell(3, 4)(L.randn(2, 5)),
    lambda L, nn: nn.LSTMCell(3, 4)(L.randn(2, 3), (L.randn(3, 4), L.randn(3, 4))),
    lambda L, nn: nn.GRUCell(3, 4)(L.randn(2, 3), L.randn(2, 5)),
    lambda L, nn: nn.RNNCell(3, 4)(L.randn(2, 3, 3)),
    lambda L, nn: nn.LSTM(3, 4, dropout=1.5),
    lambda L, nn: nn.GRU(3, 4, proj_size=2),
    lambda L, nn: nn.LSTM(3, 4, proj_size=4),
    lambda L, nn: nn.RNN(3, 4, nonlinearity="gelu"),
    lambda L, nn: nn.utils.rnn.pack_padded_sequence(L.randn(3, 2, 1), [2, 3]),
    lambda L, nn: nn.utils.rnn.pack_padded_sequence(L.randn(3, 2, 1), [3, 0]),
    lambda L, nn: nn.utils.rnn.pad_packed_sequence(nn.utils.rnn.pack_sequence([L.randn(3), L.randn(2)]),
                                                   total_length=2),
])
def test_errors_match_pytorch(call):
    _err(call, call)


def test_dropout_warning_for_one_layer():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        enn.LSTM(3, 4, dropout=0.5)


def test_rnn_utils_match_pytorch():
    rng = np.random.default_rng(0)
    seqs = [rng.standard_normal((n, 2)) for n in (3, 5, 1, 5)]
    es, ts = [ember.tensor(s, requires_grad=True) for s in seqs], [torch.tensor(s, requires_grad=True) for s in seqs]
    for bf in (False, True):
        for side in ("right", "left"):
            a = ernn.pad_sequence(es, batch_first=bf, padding_value=-1.0, padding_side=side)
            b = trnn.pad_sequence(ts, batch_first=bf, padding_value=-1.0, padding_side=side)
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    ep, tp = ernn.pack_sequence(es, enforce_sorted=False), trnn.pack_sequence(ts, enforce_sorted=False)
    for f in ("data", "batch_sizes", "sorted_indices", "unsorted_indices"):
        np.testing.assert_array_equal(getattr(ep, f).detach().numpy(), getattr(tp, f).detach().numpy())
    (ep.data * 2).sum().backward()
    (tp.data * 2).sum().backward()
    for a, b in zip(es, ts):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
    eu, tu = ernn.unpack_sequence(ep), trnn.unpack_sequence(tp)
    for a, b in zip(eu, tu):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    epad, elen = ernn.pad_packed_sequence(ep, batch_first=True, total_length=7, padding_value=3.0)
    tpad, tlen = trnn.pad_packed_sequence(tp, batch_first=True, total_length=7, padding_value=3.0)
    np.testing.assert_array_equal(epad.detach().numpy(), tpad.detach().numpy())
    np.testing.assert_array_equal(elen.numpy(), tlen.numpy())
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        ernn.pack_sequence(es)
    assert ep.double().data.dtype == ember.float64 and ep.to(ember.float32).data.dtype == ember.float32
