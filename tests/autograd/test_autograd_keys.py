"""Note [The Autograd key of a tensor that does not require grad] (ember/c10/dispatch_key.py): a tensor carries its
backend's Autograd key while it requires grad, so a call whose inputs don't require grad skips the autograd kernel.
Every way a tensor comes to require grad must set the key, or its ops would silently record nothing: each test
below makes a tensor require grad one way and checks the gradient that reaches it (the values PyTorch gives)."""
import copy
import io
import pickle

import pytest

import ember
from ember import nn
from ember.aten.dispatcher import Dispatcher, ExcludeDispatchKeyGuard
from ember.c10.dispatch_key import AUTOGRAD_MASK, DispatchKey


def _has_key(t):
    return bool(t._ks & AUTOGRAD_MASK)


def test_leaves_and_recorded_results():
    x = ember.ones(3)
    assert not _has_key(x)
    x.requires_grad_()
    y = x * 2
    assert _has_key(x) and _has_key(y)
    (y * y).sum().backward()
    assert x.grad.tolist() == [8.0, 8.0, 8.0]
    z = ember.ones(3, requires_grad=True)
    (z.exp() * 1).sum().backward()
    assert z.grad.allclose(ember.ones(3).exp())


def test_results_without_history_have_no_key():
    x = ember.ones(3, requires_grad=True)
    with ember.no_grad():
        y = x * 2
        v = x[:2]
    assert not _has_key(y) and not _has_key(v) and not v.requires_grad
    assert not _has_key(x.detach()) and not _has_key(x.data)
    assert not _has_key(ember.ones(2) + ember.ones(2))


def test_a_leaf_that_stops_and_starts_requiring_grad():
    w = ember.ones(2, requires_grad=True)
    w.requires_grad_(False)
    assert (w * 2).grad_fn is None
    w.requires_grad_(True)
    (w * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]


def test_as_subclass_aliases_share_requires_grad():
    class Sub(ember.Tensor):
        pass

    x = ember.ones(2)
    y = x.as_subclass(Sub)
    y.requires_grad_()              # one autograd state for both, as PyTorch's one TensorImpl
    assert x.requires_grad
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_parameters_deepcopies_and_data_assignment():
    p = nn.Parameter(ember.ones(2))
    (p * p).sum().backward()
    assert p.grad.tolist() == [2.0, 2.0]
    w = ember.ones(2, requires_grad=True)
    w.grad = ember.full((2,), 7.0)
    c = copy.deepcopy(w)                # PyTorch's: a leaf of its own, with a copy of .grad
    assert c.is_leaf and c.requires_grad and c.grad.tolist() == [7.0, 7.0] and c.grad is not w.grad
    c.grad = None
    (c * 3).sum().backward()
    assert c.grad.tolist() == [3.0, 3.0] and w.grad.tolist() == [7.0, 7.0]
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(w * 2)
    w.grad = None
    w.data = ember.zeros(2)          # the data changes, the autograd state stays
    (w * 4 + 1).sum().backward()
    assert w.grad.tolist() == [4.0, 4.0]
    m = nn.Linear(2, 1).double()     # module conversions move the parameters' data
    m(ember.ones(1, 2, dtype=ember.float64)).sum().backward()
    assert m.weight.grad.tolist() == [[1.0, 1.0]] and m.bias.grad.tolist() == [1.0]


def test_detach_in_place():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    y.detach_()
    assert not y.requires_grad and (y * 2).grad_fn is None


def test_checkpoints_keep_requires_grad():
    w = ember.ones(2, requires_grad=True)
    buf = io.BytesIO()
    ember.save({"w": w}, buf)
    buf.seek(0)
    w2 = ember.load(buf)["w"]
    (w2 * 5).sum().backward()
    assert w2.grad.tolist() == [5.0, 5.0]
    w3 = pickle.loads(pickle.dumps(nn.Parameter(ember.ones(2))))
    (w3 * 6).sum().backward()
    assert w3.grad.tolist() == [6.0, 6.0]


def test_views_and_in_place_ops_of_tensors_that_do_not_require_grad():
    # their autograd kernels still run: a view keeps its base, an in-place op bumps the version and checks its target
    x = ember.zeros(4)
    v = x[1:3]
    assert v._base is x
    v.add_(1)
    assert x.tolist() == [0.0, 1.0, 1.0, 0.0] and x._version == 1
    leaf = ember.ones(3, requires_grad=True)
    with ember.no_grad():
        view = leaf[:2]
    with pytest.raises(RuntimeError, match="in-place operation"):
        view.mul_(2)
    # an in-place op whose other operand requires grad records on a tensor that did not
    a = ember.zeros(2)
    a.add_(leaf[:2] * 3)
    a.sum().backward()
    assert a.requires_grad and leaf.grad.tolist() == [3.0, 3.0, 0.0]


_VIEW_OPS = {
    "view": lambda t: t.view(-1), "t": lambda t: t.t(), "transpose": lambda t: t.transpose(0, 1),
    "permute": lambda t: t.permute(1, 0), "expand": lambda t: t[:1].expand(3, 4), "squeeze": lambda t: t[:1].squeeze(0),
    "unsqueeze": lambda t: t.unsqueeze(1), "select": lambda t: t[1], "slice": lambda t: t[1:, ::2],
    "unbind": lambda t: t.unbind(0)[1], "split": lambda t: t.split(2)[1], "chunk": lambda t: t.chunk(2, 1)[0],
    "diagonal": lambda t: t.diagonal(), "unfold": lambda t: t.unfold(1, 2, 1), "narrow": lambda t: t.narrow(1, 1, 2),
    "as_strided": lambda t: t.as_strided((2, 2), (1, 2)), "movedim": lambda t: t.movedim(0, 1),
    "detach": lambda t: t.detach(), "reshape": lambda t: t.reshape(12), "flatten": lambda t: t.flatten(),
    "view_as_real": lambda t: t.real,
}


@pytest.mark.parametrize("name", sorted(_VIEW_OPS))
@pytest.mark.parametrize("of_a_view", [False, True])
def test_views_keep_their_base_below_autograd(name, of_a_view):
    """Note [Views keep their base below autograd] (ember/aten/dispatcher.py): a view op on tensors that don't require
    grad goes straight to its CPU wrapper, which sets the base the autograd kernel would: PyTorch's ``_base`` and
    ``_is_view()``, the root base for a view of a view, none for ``detach``."""
    torch = pytest.importorskip("torch")
    op = _VIEW_OPS[name]
    got = []
    for lib in (ember, torch):
        x = lib.arange(12.0).reshape(3, 4)
        if name == "view_as_real":
            x = x * (1 + 1j)
        r = op(x[:, :] if of_a_view else x)
        got.append((r._is_view(), r._base is x, r.tolist()))
    assert got[0] == got[1]


def test_views_of_a_subclass_and_under_a_mode_keep_their_base():
    # the Python key's kernel is no base-keeping wrapper: the autograd kernel runs and sets the base on what comes back
    from ember.utils._python_dispatch import TorchDispatchMode

    class Passthrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    x = ember.zeros(3, 4)
    with Passthrough():
        v = x.view(-1)
        w = v[2:]
    assert v._base is x and w._base is x
    m = ember.empty(3, 4, device="meta")
    assert m.t()._base is m and m.t()._is_view()


def test_a_thread_that_excludes_the_autograd_key():
    x = ember.ones(3, requires_grad=True)
    with ExcludeDispatchKeyGuard(DispatchKey.AutogradCPU):
        y = x * 2
        v = ember.ones(3)[:2]
        w = x[:2]
    assert y.grad_fn is None and w.grad_fn is None and v.tolist() == [1.0, 1.0]


def test_custom_op_with_a_registered_autograd_formula():
    lib = ember.library.Library("autograd_keys_test", "DEF")
    try:
        lib.define("scale(Tensor x) -> Tensor")
        lib.impl("scale", lambda x: x * 3, "CPU")
        ember.library.register_autograd("autograd_keys_test::scale", lambda ctx, g: g * 3)
        op = ember.ops.autograd_keys_test.scale
        assert op(ember.ones(2)).tolist() == [3.0, 3.0]
        x = ember.ones(2, requires_grad=True)
        op(x).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]
    finally:
        lib._destroy()


def test_fake_tensors_keep_requires_grad():
    from ember._subclasses.fake_tensor import FakeTensorMode
    mode = FakeTensorMode()
    f = mode.from_tensor(ember.ones(2, requires_grad=True))
    assert f.requires_grad and _has_key(f)
    with mode:
        assert (f * 2).grad_fn is not None


def test_the_view_op_autograd_kernel_is_implied():
    # dispatch_trace shows the walk: a plain add goes to the CPU kernel, a view through its autograd kernel
    from ember.c10.dispatch_key import KS_CPU
    assert Dispatcher.find("aten::add.Tensor").dispatch_trace(KS_CPU)[-1].startswith("CPU: ")
    assert Dispatcher.find("aten::add_.Tensor").dispatch_trace(KS_CPU)[0] == "AutogradCPU: _ag_add__Tensor"


def test_the_audit_finds_a_tensor_without_its_key():
    # EMBER_CHECK_AUTOGRAD_KEYS=1 makes every call check its tensors (the whole suite passes under it)
    import subprocess
    import sys
    code = ("import ember\nfrom ember.c10.dispatch_key import not_requiring_grad\n"
            "x = ember.ones(2, requires_grad=True)\nx._ks = not_requiring_grad(x._ks)\n"
            "try:\n    x * 2\nexcept AssertionError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "EMBER_CHECK_AUTOGRAD_KEYS": "1"})
    assert "a tensor that requires grad lacks its Autograd key" in out.stdout, out.stderr
    assert "aten::mul.Scalar" in out.stdout
