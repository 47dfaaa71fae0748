"""Python operators (``ember.library``): the same programs as with ``torch.library`` give the same values and
gradients, meta tensors go to the fake implementation, ``ember.ops.<ns>.<name>`` reaches them."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def _define(L, ns):
    def scaled_sin(x, k):
        return (x * k).sin()

    scaled_sin.__annotations__ = {"x": L.Tensor, "k": float, "return": L.Tensor}  # real types, not strings
    scaled_sin = L.library.custom_op(f"{ns}::scaled_sin", mutates_args=())(scaled_sin)

    @scaled_sin.register_fake
    def _(x, k):
        return L.empty_like(x)

    def setup_context(ctx, inputs, output):
        x, k = inputs
        ctx.save_for_backward(x)
        ctx.k = k

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x * ctx.k).cos() * ctx.k, None

    L.library.register_autograd(f"{ns}::scaled_sin", backward, setup_context=setup_context)
    return scaled_sin


def test_custom_op_values_gradients_meta_and_namespace_match_pytorch():
    x = np.random.default_rng(0).standard_normal(5)
    res = []
    for L, ns in ((torch, "embertest_t"), (ember, "embertest_e")):
        op = _define(L, ns)
        t = L.tensor(x, requires_grad=True)
        y = getattr(L.ops, ns).scaled_sin(t, 2.0)
        y.sum().backward()
        m = op(L.ones(3, 4, device="meta"), 1.5)
        res.append((y.detach().numpy(), t.grad.numpy(), tuple(m.shape), m.device.type))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12)
    assert res[1][2:] == res[0][2:] == ((3, 4), "meta")


def test_an_op_without_autograd_refuses_backward_and_kernels_per_device():
    @ember.library.custom_op("embertest::plain", mutates_args=())
    def plain(x):
        return x * 3

    x = ember.ones(2, requires_grad=True)
    y = plain(x)
    with pytest.raises(RuntimeError, match="Autograd has not been implemented for operator embertest::plain"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="There was no fake impl registered"):
        plain(ember.ones(2, device="meta"))
    plain.register_kernel("cpu", lambda t: t * 4)
    assert plain(ember.ones(2)).tolist() == [4.0, 4.0]
    with pytest.raises(AttributeError, match="'embertest' object has no attribute 'nope'"):
        ember.ops.embertest.nope


def test_library_define_and_impl():
    lib = ember.library.Library("embertest_lib", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    lib.impl("twice", lambda x: ember.empty_like(x), "Meta")
    assert ember.ops.embertest_lib.twice(ember.ones(2)).tolist() == [2.0, 2.0]
    assert ember.ops.embertest_lib.twice(ember.ones(2, device="meta")).device.type == "meta"
    lib._destroy()


def _define_lib(L, ns):
    """What a library's C++ does (define, kernels), then what its Python does (fake, autograd, autocast)."""
    lib = L.library.Library(ns, "DEF")
    lib.define("scale_shift(Tensor x, float k, int n=1) -> (Tensor, Tensor)")
    lib.define("scale_shift_backward(Tensor grad, float k) -> Tensor")
    _KEEP.append(lib)        # a Library that is collected takes its registrations with it (PyTorch's too)

    def kernel(x, k, n=1):
        return x * k + n, (x > 0).to(L.int32)
    lib.impl("scale_shift", kernel, "CPU")
    lib.impl("scale_shift_backward", lambda g, k: g * k, "CPU")
    L.library.register_fake(f"{ns}::scale_shift", lambda x, k, n=1: (L.empty_like(x), L.empty_like(x, dtype=L.int32)))
    meta = L.library.Library(ns, "IMPL", "Meta")
    meta.impl(getattr(getattr(L.ops, ns), "scale_shift_backward").default, lambda g, k: L.empty_like(g))

    def setup(ctx, inputs, output):
        ctx.k = inputs[1]

    def backward(ctx, grad, _grad_mask):
        return getattr(L.ops, ns).scale_shift_backward(grad, ctx.k), None, None
    L.library.register_autograd(f"{ns}::scale_shift", backward, setup_context=setup)

    def autocast(x, k, n=1):
        with L._C._ExcludeDispatchKeyGuard(L._C.DispatchKeySet(L._C.DispatchKey.AutocastCPU)):
            out, mask = getattr(L.ops, ns).scale_shift(x.double(), k, n)
            return out.float(), mask
    autocast_lib = L.library.Library(ns, "IMPL")
    autocast_lib.impl("scale_shift", autocast, "AutocastCPU")
    _KEEP.extend([meta, autocast_lib])
    return lib, meta


_KEEP = []


def test_a_librarys_operators_run_on_the_dispatcher_as_in_pytorch():
    """A namespace of operators declared by schema, with CPU kernels, then fake, autograd and autocast kernels
    registered the way torchvision registers its own: values, gradients, node names, meta shapes, the overload's
    introspection and the autocast kernel agree with PyTorch's."""
    x = np.random.default_rng(1).standard_normal((3, 4))
    res = []
    for L, ns in ((torch, "embertest_lib_t"), (ember, "embertest_lib_e")):
        _define_lib(L, ns)
        op = getattr(L.ops, ns).scale_shift
        t = L.tensor(x, requires_grad=True)
        out, mask = op(t, 2.5, n=3)
        (out * L.arange(12.0, dtype=L.float64).reshape(3, 4)).sum().backward()
        m_out, m_mask = op(L.ones(2, 5, device="meta"), 1.0)
        with L.autocast("cpu", dtype=L.bfloat16):
            ac = op(L.ones(2, dtype=L.float32), 0.5)[0].dtype
        o = op.default
        res.append((out.detach().numpy(), mask.numpy(), t.grad.numpy(), type(out.grad_fn).__name__,
                    tuple(m_out.shape), m_mask.dtype.itemsize, str(ac).split(".")[1], mask.requires_grad,
                    str(o._schema).replace(ns, "NS"), str(o).replace(ns, "NS"), o.name().replace(ns, "NS"),
                    L._C._dispatch_has_kernel_for_dispatch_key(f"{ns}::scale_shift", "Meta"),
                    L._C._dispatch_has_kernel_for_dispatch_key(f"{ns}::scale_shift", "CUDA")))
    for i, (e, t) in enumerate(zip(res[1], res[0])):
        if isinstance(t, np.ndarray):
            np.testing.assert_allclose(e, t, rtol=1e-12)
        else:
            assert e.replace("embertest_lib_e", "embertest_lib_t") == t if isinstance(e, str) else e == t, (i, e, t)


def test_library_operators_under_modes_fake_tensors_and_make_fx():
    from ember._subclasses.fake_tensor import DynamicOutputShapeException, FakeTensorMode
    from ember.fx.experimental.proxy_tensor import make_fx
    from ember.utils._python_dispatch import TorchDispatchMode
    lib, meta = _define_lib(ember, "embertest_modes")
    op = ember.ops.embertest_modes.scale_shift

    class Log(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x = ember.ones(2)
    with Log() as log:
        op(x, 2.0)
    assert log.seen == ["embertest_modes.scale_shift.default"]
    with FakeTensorMode() as mode:
        out, mask = op(mode.from_tensor(ember.ones(3, 2)), 2.0)
        assert tuple(out.shape) == (3, 2) and mask.dtype == ember.int32
    g = make_fx(lambda t: op(t, 2.0)[0] + 1)(ember.ones(2))
    assert "embertest_modes.scale_shift.default" in g.code

    lib2 = ember.library.Library("embertest_dyn", "DEF")
    lib2.define("keep(Tensor x) -> Tensor")
    lib2.impl("keep", lambda t: t[t > 0], "CPU")

    @ember.library.register_fake("embertest_dyn::keep")
    def _(t):
        n = ember.library.get_ctx().new_dynamic_size()
        return t.new_empty(n)
    assert ember.ops.embertest_dyn.keep(ember.tensor([1.0, -1.0, 2.0])).tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="You're trying to run this operator with meta Tensors"):
        ember.ops.embertest_dyn.keep(ember.ones(3, device="meta"))
    with FakeTensorMode() as mode, pytest.raises(DynamicOutputShapeException):
        ember.ops.embertest_dyn.keep(mode.from_tensor(ember.ones(3)))
    for lb in (lib, meta, lib2):
        lb._destroy()
    with pytest.raises(AttributeError, match="'embertest_modes' object has no attribute 'scale_shift'"):
        ember.ops.embertest_modes.scale_shift


def test_registration_errors_are_pytorchs():
    for L in (torch, ember):
        with pytest.raises(RuntimeError, match="operator embertest_none::nope does not exist"):
            L.library.register_fake("embertest_none::nope", lambda x: x)
        with pytest.raises(ValueError, match="is a reserved namespace"):
            L.library.Library("prim", "DEF")
        with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY can be used to register the namespace "
                                               "aten"):
            L.library.Library("aten", "DEF")
    lib = ember.library.Library("embertest_twice", "DEF")
    lib.define("f(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="with the same name and overload name multiple times"):
        lib.define("f(Tensor x) -> Tensor")
    x = ember.ones(2, requires_grad=True)
    lib.impl("f", lambda t: t * 2, "CPU")
    y = ember.ops.embertest_twice.f(x)       # no autograd kernel: backward names the operator
    with pytest.raises(RuntimeError, match="derivative for embertest_twice::f is not implemented"):
        y.sum().backward()
    lib._destroy()


def test_load_library_refuses_what_it_cannot_load_with_oserror(tmp_path):
    missing = str(tmp_path / "libnothing.so")
    for L in (torch, ember):
        with pytest.raises(OSError, match="Could not load this library: .*libnothing.so") as e:
            L.ops.load_library(missing)
        assert "cannot open shared object file: No such file or directory" in str(e.value.__cause__)
    fake = tmp_path / "mylib" / "_ops.so"
    fake.parent.mkdir()
    fake.write_bytes(b"\x7fELF not really")
    with pytest.raises(OSError, match="Could not load this library") as e:
        ember.ops.load_library(str(fake))
    assert "ember cannot load a compiled PyTorch operator library" in str(e.value.__cause__)
    assert str(fake) not in ember.ops.loaded_libraries
