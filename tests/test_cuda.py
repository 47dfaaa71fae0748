"""The CUDA backend: every op-table sample on the GPU must give the CPU's result, and tensors move, mix and
fail across devices as in PyTorch.

With a GPU (CuPy and a device) these run on it. Without one they run on ``tests/fake_cupy.py``, a NumPy-backed
stand-in for CuPy whose arrays NumPy refuses to take for host arrays: the kernels compute on the CPU, but the
device plumbing -- placement, array-module selection, cross-device copies, mixed-device errors -- is the code a
GPU runs, so the day one is present only the kernels themselves are new."""
import numpy as np
import pytest

import ember
from tests import fake_cupy
from tests.op_db import op_db
from tests.opinfo import Sample
from tests.test_ops import call, samples_of

REAL_GPU = ember.cuda.is_available()


@pytest.fixture(autouse=True)
def cuda_device():
    """A real GPU when there is one; the stand-in otherwise."""
    if REAL_GPU:
        yield "gpu"
    else:
        with fake_cupy.install():
            yield "stand-in"


def _to_cuda(x):
    if isinstance(x, np.ndarray):
        return ember.tensor(x).cuda()
    if isinstance(x, list):
        return [_to_cuda(y) for y in x]
    return x


CASES = [(op, d) for op in op_db for d in op.dtypes]


def _assert_same(got, ref):
    if isinstance(ref, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(ref)
        for g, r in zip(got, ref):
            _assert_same(g, r)
    elif isinstance(ref, ember.Tensor):
        assert isinstance(got, ember.Tensor) and got.device.type == "cuda", f"a result on {got.device}"
        assert not isinstance(got._data, np.ndarray), "a CUDA tensor holds a host (NumPy) array"
        assert got.dtype == ref.dtype and tuple(got.shape) == tuple(ref.shape)
        np.testing.assert_allclose(got.cpu().numpy().astype(np.float64), ref.numpy().astype(np.float64),
                                   rtol=1e-5, atol=1e-6)
    else:
        assert got == ref or (isinstance(ref, float) and np.isclose(got, ref))


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o.name}-{d}-{i}" for i, (o, d) in enumerate(CASES)])
def test_cuda_matches_cpu(op, dtype):
    compared = 0
    for s in samples_of(op, dtype):
        cs = Sample(s.args, {k: _to_cuda(v) for k, v in s.kwargs.items()})  # tensor keywords too
        if not any(isinstance(a, (np.ndarray, list)) for a in list(s.args) + list(s.kwargs.values())):
            cs.kwargs["device"] = "cuda"  # a factory (a window, fftfreq): made on the device
        try:
            ref = call(op, ember, s)
        except Exception as exc:
            with pytest.raises(type(exc)):
                call(op, ember, cs, args=[_to_cuda(a) for a in s.args])
            continue
        _assert_same(call(op, ember, cs, args=[_to_cuda(a) for a in s.args]), ref)
        compared += 1
    assert compared, f"{op.name}: no sample was compared"


def test_device_moves_and_mixed_device_errors():
    x = ember.arange(6.0).reshape(2, 3)
    g = x.cuda()
    assert g.is_cuda and g.device == ember.device("cuda", 0) and not isinstance(g._data, np.ndarray)
    assert g.cpu().tolist() == x.tolist() and isinstance(g.cpu()._data, np.ndarray)
    assert g.to("cpu").device.type == "cpu" and x.to("cuda").device == ember.device("cuda", 0)
    assert ember.zeros(2, device="cuda").device.type == "cuda"
    assert ember.tensor([1.0, 2.0], device="cuda").cpu().tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least two "
                                           "devices, cuda:0 and cpu!"):
        g + x
    assert (g + ember.tensor(1.0)).cpu().tolist() == (x + 1).tolist()  # 0-dim CPU tensors are scalars
    r = ember.tensor(2.0) * g  # ... in any position: the result is on the device (the device guard's)
    assert r.device == ember.device("cuda", 0) and r.cpu().tolist() == (2 * x).tolist()
    r = ember.where(g > 1, ember.tensor(-1.0), g)
    assert r.is_cuda and r.cpu().tolist() == ember.where(x > 1, ember.tensor(-1.0), x).tolist()
    with pytest.raises(TypeError, match=r"can't convert cuda:0 device type tensor to numpy\. Use Tensor\.cpu\(\)"):
        g.numpy()
    assert repr(g).endswith("device='cuda:0')")


def test_cross_device_copies_and_views():
    x = ember.arange(12.0).reshape(3, 4)
    g = ember.zeros(3, 4, device="cuda")
    g.copy_(x)                                   # host -> device
    assert g.cpu().tolist() == x.tolist()
    h = ember.zeros(4, 3)
    h.copy_(g.t())                               # device -> host, from a strided view
    assert h.tolist() == x.t().tolist()
    v = g[1:, ::2]                               # views of a device tensor share its memory
    v.fill_(-1.0)
    assert g.cpu()[1:, ::2].tolist() == [[-1.0, -1.0]] * 2
    assert g.as_strided((2, 2), (4, 1), 1).cpu().tolist() == [[1.0, 2.0], [5.0, -1.0]]


def test_autograd_and_training_step_on_cuda():
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 2))
    ref = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 2))
    ref.load_state_dict(model.state_dict())
    model = model.cuda()
    assert all(p.is_cuda for p in model.parameters())
    x = ember.randn(5, 4)
    y = ember.tensor([0, 1, 1, 0, 1])
    for m, xx, yy in ((model, x.cuda(), y.cuda()), (ref, x, y)):
        opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            ember.nn.functional.cross_entropy(m(xx), yy).backward()
            opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert p.is_cuda and p.grad.is_cuda
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_checkpoint_of_cuda_tensors_loads_on_cpu(tmp_path):
    g = ember.arange(6.0).reshape(2, 3).cuda()
    ember.save({"w": g}, tmp_path / "c.pt")
    back = ember.load(tmp_path / "c.pt", map_location="cpu")
    assert back["w"].device.type == "cpu" and back["w"].tolist() == g.cpu().tolist()
    assert ember.load(tmp_path / "c.pt")["w"].device == ember.device("cuda", 0)


def test_the_stand_in_refuses_implicit_host_conversion(cuda_device):
    if cuda_device != "stand-in":
        pytest.skip("checks the stand-in itself")
    import cupy
    a = cupy.asarray(np.arange(3.0))
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(a)
    with pytest.raises(TypeError, match="Unsupported type"):
        cupy.add(a, np.ones(3))
    assert isinstance(cupy.exp(a), cupy.ndarray) and np.allclose(cupy.exp(a).get(), np.exp(np.arange(3.0)))


# (no bias where the next layer cancels its gradient -- a convolution's before BatchNorm, the keys' before softmax:
# Adam turns a gradient of rounding noise into full-size steps of either sign)
def _cnn(nn):
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Dropout(0.0), nn.Linear(16, 3))


def _attention(nn):
    F = nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.ln = nn.Embedding(11, 8), nn.LayerNorm(8)
            self.qkv, self.head = nn.Linear(8, 24, bias=False), nn.Linear(8, 3)
            self.mlp = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))

        def forward(self, idx):
            x = self.emb(idx)
            q, k, v = self.qkv(self.ln(x)).view(idx.shape[0], idx.shape[1], 3, 2, 4).permute(2, 0, 3, 1, 4)
            x = x + F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(x.shape)
            return self.head((x + self.mlp(x)).mean(1))
    return Block()


def _recurrent(nn):
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.lstm, self.gru = nn.Embedding(11, 6), nn.LSTM(6, 5, batch_first=True), nn.GRU(5, 4)
            self.head = nn.Linear(4, 3)

        def forward(self, idx):
            out, _ = self.lstm(self.emb(idx))
            out, _ = self.gru(out.transpose(0, 1))
            return self.head(out[-1])
    return LM()


@pytest.mark.parametrize("build,optimizer,make_input", [
    (_cnn, "Adam", lambda: ember.randn(6, 1, 8, 8)),
    (_attention, "AdamW", lambda: ember.randint(0, 11, (6, 5))),
    (_recurrent, "SGD", lambda: ember.randint(0, 11, (6, 5))),
], ids=["cnn-batchnorm-adam", "attention-adamw", "lstm-gru-sgd"])
def test_training_steps_on_cuda_match_the_cpu(build, optimizer, make_input):
    """The layers the benchmark workloads use, trained a few steps on the device from the CPU model's weights:
    the same losses and parameters (the optimizers' state lives on the device too)."""
    import copy
    ember.manual_seed(0)
    ref = build(ember.nn)
    model = copy.deepcopy(ref).cuda()
    x, y = make_input(), ember.randint(0, 3, (6,))
    losses = {}
    for name, m, xx, yy in (("cuda", model, x.cuda(), y.cuda()), ("cpu", ref, x, y)):
        opt = getattr(ember.optim, optimizer)(m.parameters(), lr=0.01, **({"momentum": 0.9} if optimizer == "SGD"
                                                                          else {}))
        losses[name] = []
        for _ in range(3):
            opt.zero_grad()
            loss = ember.nn.functional.cross_entropy(m(xx), yy)
            loss.backward()
            opt.step()
            losses[name].append(loss.item())
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=1e-5)
    for p, q in zip(model.parameters(), ref.parameters()):
        assert p.is_cuda and p.grad.is_cuda
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5)
    for b, c in zip(model.buffers(), ref.buffers()):   # BatchNorm's running statistics
        assert b.is_cuda
        np.testing.assert_allclose(b.cpu().numpy(), c.numpy(), rtol=1e-5, atol=1e-6)


def test_device_queries(cuda_device):
    name = ember.cuda.get_device_name(0)
    props = ember.cuda.get_device_properties("cuda:0")
    assert isinstance(name, str) and name == props.name == ember.cuda.get_device_name()
    assert ember.cuda.get_device_capability() == (props.major, props.minor)
    free, total = ember.cuda.mem_get_info()
    assert 0 < free <= total == props.total_memory
    with pytest.raises(AssertionError, match="Invalid device id"):
        ember.cuda.get_device_properties(ember.cuda.device_count())
    with pytest.raises(ValueError, match="Expected a cuda device"):
        ember.cuda.get_device_name("cpu")
    ember.set_default_device("cuda")    # as PyTorch reports it: with the index the tensors made there carry
    try:
        assert ember.get_default_device() == ember.device("cuda", 0) == ember.ones(1).device
    finally:
        ember.set_default_device(None)
    assert ember.get_default_device() == ember.device("cpu")
    if cuda_device == "gpu":
        before = ember.cuda.memory_allocated()
        x = ember.ones(1 << 20, device="cuda")
        assert ember.cuda.memory_allocated() >= before + x.nbytes
        assert ember.cuda.memory_reserved() >= ember.cuda.memory_allocated()
        import torch
        if torch.cuda.is_available():
            assert name == torch.cuda.get_device_name(0)
            assert ember.cuda.get_device_capability(0) == torch.cuda.get_device_capability(0)
