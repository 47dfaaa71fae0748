"""MultiheadAttention and the Transformer modules against PyTorch: initialisation under one seed, repr,
state_dict keys, outputs (and attention weights), input and parameter gradients, masks of both kinds."""
import numpy as np
import pytest

import ember
import ember.nn as enn

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
tnn = torch.nn


def _tensor(lib, a, grad=False):
    return lib.tensor(a, requires_grad=grad) if a.dtype.kind == "f" else lib.tensor(a)


def _check(ctor, arrays, call, train=True):
    ember.manual_seed(0)
    torch.manual_seed(0)
    em, tm = ctor(enn), ctor(tnn)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    assert [k for k, _ in em.named_parameters()] == [k for k, _ in tm.named_parameters()]
    for (k, a), (_, b) in zip(em.state_dict().items(), tm.state_dict().items()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7, err_msg=f"init of {k}")
    em.double().train(train)
    tm.double().train(train)
    e_in = [_tensor(ember, a, True) if a is not None else None for a in arrays]
    t_in = [_tensor(torch, a, True) if a is not None else None for a in arrays]
    eo, to = call(em, *e_in), call(tm, *t_in)
    eo, to = (eo if isinstance(eo, tuple) else (eo,)), (to if isinstance(to, tuple) else (to,))
    rng = np.random.default_rng(5)
    e_loss, t_loss = 0, 0
    for a, b in zip(eo, to):
        assert (a is None) == (b is None)
        if b is None:
            continue
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-11)
        w = rng.standard_normal(tuple(b.shape))
        e_loss = e_loss + (a * ember.tensor(w)).sum()
        t_loss = t_loss + (b * torch.tensor(w)).sum()
    e_loss.backward()
    t_loss.backward()
    for a, b in zip(e_in, t_in):
        if b is not None and b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-8, atol=1e-10)
    for (k, p), (_, q) in zip(em.named_parameters(), tm.named_parameters()):
        if q.grad is None:
            assert p.grad is None, k
            continue
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-8, atol=1e-10, err_msg=k)


R = np.random.default_rng(0)
X = R.standard_normal((5, 2, 8))
Y = R.standard_normal((3, 2, 8))
KPM = np.array([[False, False, True, False, True], [False, False, False, False, False]])
CAUSAL = np.triu(np.full((5, 5), -np.inf), 1)


@pytest.mark.parametrize("name,ctor,arrays,call", [
    ("self-attention", lambda nn: nn.MultiheadAttention(8, 2), [X],
     lambda m, x: m(x, x, x)),
    ("cross, weights per head", lambda nn: nn.MultiheadAttention(8, 4, batch_first=True), [Y.transpose(1, 0, 2),
                                                                                            X.transpose(1, 0, 2)],
     lambda m, q, kv: m(q, kv, kv, average_attn_weights=False)),
    ("kdim/vdim, masks", lambda nn: nn.MultiheadAttention(8, 2, kdim=3, vdim=5), [Y, X[..., :3], X[..., :5], KPM],
     lambda m, q, k, v, kpm: m(q, k, v, key_padding_mask=kpm)),
    ("float attn_mask, no weights", lambda nn: nn.MultiheadAttention(8, 2, bias=False), [X, CAUSAL],
     lambda m, x, am: m(x, x, x, attn_mask=am, need_weights=False)),
    ("bias_kv, zero_attn, bool masks", lambda nn: nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True),
     [X, KPM, np.triu(np.ones((5, 5), bool), 1)], lambda m, x, kpm, am: m(x, x, x, key_padding_mask=kpm,
                                                                         attn_mask=am)),
    ("unbatched", lambda nn: nn.MultiheadAttention(8, 2), [X[:, 0]], lambda m, x: m(x, x, x)),
    ("encoder layer", lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), [X, KPM],
     lambda m, x, kpm: m(x, src_key_padding_mask=kpm)),
    ("encoder layer norm_first gelu", lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu",
                                                                            norm_first=True, batch_first=True),
     [X.transpose(1, 0, 2)], lambda m, x: m(x)),
    ("encoder causal", lambda nn: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2,
                                                        nn.LayerNorm(8)), [X, CAUSAL],
     lambda m, x, am: m(x, mask=am)),
    ("decoder layer", lambda nn: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, activation=nn.GELU()),
     [Y, X, KPM], lambda m, t, mem, kpm: m(t, mem, memory_key_padding_mask=kpm)),
    ("transformer", lambda nn: nn.Transformer(8, 2, 2, 1, 16, dropout=0.0), [X, Y, CAUSAL[:3, :3]],
     lambda m, s, t, tm: m(s, t, tgt_mask=tm)),
])
def test_attention_modules_match_pytorch(name, ctor, arrays, call):
    _check(ctor, arrays, call)


def test_eval_mode_and_square_subsequent_mask():
    _check(lambda nn: nn.TransformerEncoderLayer(8, 2, 16), [X], lambda m, x: m(x), train=False)
    np.testing.assert_array_equal(enn.Transformer.generate_square_subsequent_mask(4).numpy(),
                                  tnn.Transformer.generate_square_subsequent_mask(4).numpy())


def test_attention_dropout_is_applied_in_training_only():
    ember.manual_seed(0)
    m = enn.MultiheadAttention(8, 2, dropout=0.5)
    x = ember.tensor(X)
    m.double()
    _, w_train = m(x, x, x)
    m.eval()
    _, w_eval = m(x, x, x)
    assert np.allclose(w_eval.sum(-1).numpy(), 1)
    assert not np.allclose(w_train.detach().numpy(), w_eval.detach().numpy())


@pytest.mark.parametrize("call", [
    lambda L, nn: nn.MultiheadAttention(8, 3),
    lambda L, nn: nn.MultiheadAttention(0, 2),
    lambda L, nn: nn.MultiheadAttention(8, 2)(L.randn(5, 2, 8), L.randn(5, 2, 8), L.randn(5, 2, 8),
                                              attn_mask=L.zeros(4, 4)),
    lambda L, nn: nn.TransformerEncoderLayer(8, 2, activation="tanh"),
    lambda L, nn: nn.Transformer(8, 2, 1, 1, 16)(L.randn(5, 2, 8), L.randn(3, 3, 8)),
])
def test_errors_match_pytorch(call):
    with pytest.raises(Exception) as te:
        call(torch, tnn)
    with pytest.raises(type(te.value)) as ee:
        call(ember, enn)
    assert str(ee.value) == str(te.value).replace("torch.", "ember.")
