"""nn modules against PyTorch: default initialisation under one seed, state_dict keys and parameter
order, repr, and (after loading PyTorch's state_dict) outputs, input and parameter gradients and buffers
in train and eval mode."""
import numpy as np
import pytest

import ember
import ember.nn as enn

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
tnn = torch.nn


def _both(ctor):
    return ctor(enn), ctor(tnn)


def _load_torch_into_ember(em, tm):
    sd = {k: ember.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()}
    em.load_state_dict(sd)


# (constructor, input shape(s), integer input?)
MODULES = [
    ("Linear", lambda nn: nn.Linear(5, 3), [(4, 5)]),
    ("Linear-nobias", lambda nn: nn.Linear(5, 3, bias=False), [(2, 3, 5)]),
    ("Bilinear", lambda nn: nn.Bilinear(3, 4, 2), [(5, 3), (5, 4)]),
    ("Conv1d", lambda nn: nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2), [(2, 4, 9)]),
    ("Conv2d", lambda nn: nn.Conv2d(3, 4, (3, 2), padding="same", dilation=(2, 1)), [(2, 3, 6, 5)]),
    ("Conv2d-reflect", lambda nn: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), [(1, 2, 5, 5)]),
    ("Conv2d-circular", lambda nn: nn.Conv2d(2, 3, 3, padding=2, padding_mode="circular"), [(1, 2, 5, 5)]),
    ("Conv3d", lambda nn: nn.Conv3d(2, 2, 2, stride=(1, 2, 1)), [(1, 2, 3, 4, 3)]),
    ("ConvTranspose2d", lambda nn: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1, groups=2),
     [(2, 4, 3, 3)]),
    ("ConvTranspose1d", lambda nn: nn.ConvTranspose1d(3, 2, 4, stride=3), [(2, 3, 5)]),
    ("MaxPool2d", lambda nn: nn.MaxPool2d(3, 2, 1, ceil_mode=True), [(2, 3, 7, 7)]),
    ("MaxPool1d", lambda nn: nn.MaxPool1d(2), [(2, 3, 8)]),
    ("AvgPool2d", lambda nn: nn.AvgPool2d(3, 2, 1, count_include_pad=False), [(2, 3, 7, 6)]),
    ("AvgPool2d-ceil", lambda nn: nn.AvgPool2d(2, ceil_mode=True), [(1, 2, 5, 5)]),
    ("AvgPool1d", lambda nn: nn.AvgPool1d(3, 2, 1), [(2, 3, 8)]),
    ("AdaptiveAvgPool2d", lambda nn: nn.AdaptiveAvgPool2d((3, 2)), [(2, 3, 7, 5)]),
    ("AdaptiveMaxPool2d", lambda nn: nn.AdaptiveMaxPool2d(2), [(2, 3, 5, 5)]),
    ("BatchNorm1d", lambda nn: nn.BatchNorm1d(4), [(6, 4)]),
    ("BatchNorm2d", lambda nn: nn.BatchNorm2d(3, momentum=None), [(4, 3, 3, 3)]),
    ("LayerNorm", lambda nn: nn.LayerNorm((3, 4)), [(2, 3, 4)]),
    ("GroupNorm", lambda nn: nn.GroupNorm(2, 4), [(3, 4, 5)]),
    ("RMSNorm", lambda nn: nn.RMSNorm(4), [(3, 4)]),
    ("InstanceNorm2d", lambda nn: nn.InstanceNorm2d(3, affine=True), [(2, 3, 4, 4)]),
    ("LocalResponseNorm", lambda nn: nn.LocalResponseNorm(3), [(2, 5, 4, 4)]),
    ("Embedding", lambda nn: nn.Embedding(10, 3, padding_idx=0), "embedding"),
    ("Flatten", lambda nn: nn.Flatten(), [(2, 3, 4)]),
    ("Unflatten", lambda nn: nn.Unflatten(1, (2, 3)), [(4, 6)]),
    ("PixelShuffle", lambda nn: nn.PixelShuffle(2), [(1, 8, 2, 3)]),
    ("ReflectionPad2d", lambda nn: nn.ReflectionPad2d((1, 2, 0, 1)), [(1, 2, 4, 4)]),
    ("ReplicationPad1d", lambda nn: nn.ReplicationPad1d(2), [(1, 2, 4)]),
    ("ZeroPad2d", lambda nn: nn.ZeroPad2d(1), [(1, 2, 3, 3)]),
    ("CosineSimilarity", lambda nn: nn.CosineSimilarity(), [(3, 4), (3, 4)]),
    ("PairwiseDistance", lambda nn: nn.PairwiseDistance(), [(3, 4), (3, 4)]),
    ("Upsample-bilinear", lambda nn: nn.Upsample(scale_factor=2, mode="bilinear"), [(1, 2, 3, 4)]),
    ("UpsamplingNearest2d", lambda nn: nn.UpsamplingNearest2d(size=(5, 3)), [(1, 2, 3, 4)]),
    ("Unfold", lambda nn: nn.Unfold(2, stride=2), [(1, 2, 4, 6)]),
    ("Fold", lambda nn: nn.Fold((4, 5), 2), [(2, 8, 12)]),
    ("EmbeddingBag", lambda nn: nn.EmbeddingBag(10, 3, mode="sum"), "embedding"),
    ("GRUCell", lambda nn: nn.GRUCell(3, 4), [(2, 3)]),
    ("Softmax2d", lambda nn: nn.Softmax2d(), [(2, 3, 4, 4)]),
    ("Sequential", lambda nn: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.0), nn.Linear(8, 2)), [(3, 4)]),
]
ACTIVATIONS = ["ReLU", "ReLU6", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Hardtanh", "Hardsigmoid",
               "Hardswish", "LeakyReLU", "Softplus", "Softsign", "Tanhshrink", "Softshrink", "Hardshrink",
               "LogSigmoid", "Sigmoid", "Tanh", "PReLU", "GLU"]
MODULES += [(a, (lambda a: lambda nn: getattr(nn, a)())(a), [(3, 4)]) for a in ACTIVATIONS]
MODULES += [("GELU-tanh", lambda nn: nn.GELU("tanh"), [(3, 4)]), ("Softmax", lambda nn: nn.Softmax(1), [(3, 4)]),
            ("LogSoftmax", lambda nn: nn.LogSoftmax(-1), [(3, 4)]), ("Softmin", lambda nn: nn.Softmin(0), [(3, 4)])]


@pytest.mark.parametrize("name,ctor,shapes", MODULES, ids=[m[0] for m in MODULES])
def test_module_matches_pytorch(name, ctor, shapes):
    ember.manual_seed(0)
    torch.manual_seed(0)
    em, tm = _both(ctor)
    # default initialisation under the same seed
    tsd = tm.state_dict()
    esd = em.state_dict()
    assert list(esd.keys()) == list(tsd.keys())
    assert [k for k, _ in em.named_parameters()] == [k for k, _ in tm.named_parameters()]
    for k in tsd:
        np.testing.assert_allclose(esd[k].numpy(), tsd[k].numpy(), rtol=1e-6, atol=1e-7, err_msg=f"init of {k}")
    assert repr(em) == repr(tm)
    em.double()
    tm.double()
    rng = np.random.default_rng(0)
    if shapes == "embedding":
        arrays = [rng.integers(0, 10, (3, 4))]
    else:
        arrays = [rng.standard_normal(s) for s in shapes]
    for mode in ("train", "eval"):
        getattr(em, mode)()
        getattr(tm, mode)()
        _load_torch_into_ember(em, tm)
        e_in = [ember.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
        t_in = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
        eo, to = em(*e_in), tm(*t_in)
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
        w = rng.standard_normal(tuple(to.shape))
        (eo * ember.tensor(w)).sum().backward()
        (to * torch.tensor(w)).sum().backward()
        # PyTorch's hardsigmoid backward multiplies by a float literal 1/6 (1.0f / 6.0f) even in float64
        gtol = 1e-7 if name == "Hardsigmoid" else 1e-9
        for a, b in zip(e_in, t_in):
            if b.grad is not None:
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=gtol, atol=1e-11)
        for (k, p), (_, q) in zip(em.named_parameters(), tm.named_parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=k)
        for (k, b1), (_, b2) in zip(em.named_buffers(), tm.named_buffers()):
            np.testing.assert_allclose(b1.numpy(), b2.numpy(), rtol=1e-10, atol=1e-12, err_msg=k)
        em.zero_grad()
        tm.zero_grad()


@pytest.mark.parametrize("fn,args,kwargs", [
    ("cross_entropy", [(4, 5), "t5"], {}),
    ("cross_entropy", [(4, 5), "t5"], {"label_smoothing": 0.1, "ignore_index": 2}),
    ("cross_entropy", [(4, 5, 3), "t5x3"], {"reduction": "sum", "weight": "w5"}),
    ("cross_entropy", [(4, 5), "p5"], {"label_smoothing": 0.2}),
    ("nll_loss", [(4, 5), "t5"], {"weight": "w5", "ignore_index": 1}),
    ("mse_loss", [(3, 4), (3, 4)], {}),
    ("l1_loss", [(3, 4), (3, 4)], {"reduction": "none"}),
    ("smooth_l1_loss", [(3, 4), (3, 4)], {"beta": 0.5}),
    ("huber_loss", [(3, 4), (3, 4)], {"delta": 0.7}),
    ("binary_cross_entropy", ["prob34", "prob34"], {}),
    ("binary_cross_entropy_with_logits", [(3, 4), "prob34"], {"pos_weight": "w4"}),
    ("kl_div", [(3, 4), "prob34"], {"reduction": "batchmean"}),
    ("soft_margin_loss", [(3, 4), "sign34"], {}),
    ("hinge_embedding_loss", [(3, 4), "sign34"], {}),
    ("poisson_nll_loss", [(3, 4), "prob34"], {}),
    ("multilabel_soft_margin_loss", [(3, 4), "prob34"], {}),
    ("multi_margin_loss", [(4, 5), "t5"], {}),
    ("gaussian_nll_loss", [(3, 4), (3, 4), "prob34"], {}),
])
def test_losses_match_pytorch(fn, args, kwargs):
    rng = np.random.default_rng(1)

    def make(a):
        if isinstance(a, tuple):
            return rng.standard_normal(a)
        return {"t5": rng.integers(0, 5, 4), "t5x3": rng.integers(0, 5, (4, 3)), "w5": rng.random(5) + 0.5,
                "w4": rng.random(4) + 0.5, "prob34": rng.random((3, 4)) * 0.9 + 0.05,
                "p5": rng.dirichlet(np.ones(5), 4), "sign34": np.sign(rng.standard_normal((3, 4)))}[a]
    arrays = [make(a) for a in args]
    kw = {k: make(v) if isinstance(v, str) and v in ("w5", "w4") else v for k, v in kwargs.items()}
    e_in = [ember.tensor(a, requires_grad=a.dtype.kind == "f" and i == 0) for i, a in enumerate(arrays)]
    t_in = [torch.tensor(a, requires_grad=a.dtype.kind == "f" and i == 0) for i, a in enumerate(arrays)]
    ekw = {k: ember.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    eo = getattr(enn.functional, fn)(*e_in, **ekw)
    to = getattr(torch.nn.functional, fn)(*t_in, **tkw)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    eo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(e_in[0].grad.numpy(), t_in[0].grad.numpy(), rtol=1e-9, atol=1e-11)


def test_scaled_dot_product_attention_matches_pytorch():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 3, 5, 4)) for _ in range(3))
    mask = rng.random((5, 5)) > 0.3
    np.fill_diagonal(mask, True)
    for kw in ({}, {"is_causal": True}, {"scale": 0.3}):
        e = enn.functional.scaled_dot_product_attention(*(ember.tensor(a) for a in (q, k, v)), **kw)
        t = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), **kw)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)
    e = enn.functional.scaled_dot_product_attention(*(ember.tensor(a) for a in (q, k, v)), attn_mask=ember.tensor(mask))
    t = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)),
                                                         attn_mask=torch.tensor(mask))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


def test_dropout_draws_the_same_mask_as_pytorch():
    ember.manual_seed(3)
    torch.manual_seed(3)
    e = enn.functional.dropout(ember.ones(64, 64), 0.3)
    t = torch.nn.functional.dropout(torch.ones(64, 64), 0.3)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
