"""The Tensor API around the ops: conversions, copies, in-place semantics, repr, Python protocols."""
import copy
import pickle

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


@pytest.mark.parametrize("method,dtype", [("float", "float32"), ("double", "float64"), ("half", "float16"),
                                          ("bfloat16", "bfloat16"), ("long", "int64"), ("int", "int32"),
                                          ("short", "int16"), ("char", "int8"), ("byte", "uint8"), ("bool", "bool")])
def test_conversion_methods(method, dtype):
    e = getattr(ember.tensor([1.7, -2.2, 0.0]), method)()
    t = getattr(torch.tensor([1.7, -2.2, 0.0]), method)()
    assert e.dtype.name == dtype == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(e.float().numpy(), t.float().numpy())


def test_to_variants():
    x = ember.ones(2, 3)
    assert x.to(ember.float32) is x
    assert x.to(ember.float64).dtype is ember.float64
    assert x.to("cpu") is x
    assert x.to("meta").is_meta
    assert x.to(ember.zeros(1, dtype=ember.int64)).dtype is ember.int64
    assert x.to("cpu", ember.float16).dtype is ember.float16
    y = x.to(dtype=ember.float32, copy=True)
    assert y is not x and y.data_ptr() != x.data_ptr()
    assert x.type() == "torch.FloatTensor" and x.type(ember.float64).dtype is ember.float64
    assert x.type("torch.LongTensor").dtype is ember.int64
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        x.to("meta").to("cpu")


def test_item_tolist_numpy_and_python_protocols():
    x = ember.tensor([[1.5, 2.0], [3.0, 4.0]])
    assert x.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert x[0, 1].item() == 2.0 and float(x[1, 0]) == 3.0 and int(x[1, 1]) == 4
    assert len(x) == 2 and [r.tolist() for r in x] == [[1.5, 2.0], [3.0, 4.0]]
    assert f"{x[0, 0]:.2f}" == "1.50"
    assert bool(ember.tensor([1])) is True
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(x)
    with pytest.raises(RuntimeError, match="a Tensor with 4 elements cannot be converted to Scalar"):
        x.item()
    idx = ember.tensor(1)
    assert [10, 20, 30][idx] == 20
    assert np.asarray(x).shape == (2, 2)
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ember.tensor(1.0))


@pytest.mark.parametrize("make", [
    lambda L: L.tensor([1.5, 2.25, -3.0]), lambda L: L.tensor([1.0, 2.0]), lambda L: L.tensor([1, 2, 3]),
    lambda L: L.tensor([[1.0, 2.0], [3.0, 4.0]]), lambda L: L.tensor([True, False]), lambda L: L.tensor(3.5),
    lambda L: L.tensor([1e-5, 1.0]), lambda L: L.tensor([1e10, 1.0]), lambda L: L.tensor([0.1, 100.0]),
    lambda L: L.zeros(0), lambda L: L.zeros(2, 0), lambda L: L.tensor([1.0, float("nan"), float("inf")]),
    lambda L: L.arange(2000.0), lambda L: L.arange(24).reshape(2, 3, 4), lambda L: L.tensor([1, 2], dtype=L.int32),
    lambda L: L.tensor([1.5], dtype=L.float64), lambda L: L.arange(12.0).reshape(3, 4) / 7,
    lambda L: L.tensor([-1.0, 2.0]), lambda L: L.tensor([[-1, 20], [300, 4]]),
])
def test_repr_matches_pytorch(make):
    assert repr(make(ember)) == repr(make(torch)).replace("torch.", "ember.")


def test_inplace_ops_bump_version_and_refuse_broadcast_outputs():
    x = ember.zeros(3)
    x.add_(1)
    x.mul_(2)
    x[0] = 5
    assert x._version == 3
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        x.add_(ember.ones(2, 3))
    i = ember.zeros(3, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i.add_(1.5)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.zeros(1).expand(3).add_(1)


def test_out_resizes_and_warns():
    out = ember.zeros(5)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        ember.add(ember.ones(2), 1, out=out)
    assert out.tolist() == [2.0, 2.0]
    out_int = ember.zeros(2, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ember.add(ember.ones(2), 1, out=out_int)


def test_copy_fill_zero_clone():
    x = ember.zeros(2, 3)
    x.copy_(ember.tensor([1.0, 2.0, 3.0]))
    assert x.tolist() == [[1, 2, 3], [1, 2, 3]]
    x.fill_(7)
    assert x.tolist() == [[7.0] * 3] * 2
    x.fill_(ember.tensor(2.5))
    x.zero_()
    assert x.sum().item() == 0
    y = x.clone()
    assert y.data_ptr() != x.data_ptr() and y.tolist() == x.tolist()
    z = ember.zeros(3, dtype=ember.int32)
    z.copy_(ember.tensor([1.9, -1.9, 3.0]))
    assert z.tolist() == [1, -1, 3]


_LAYOUTS = {"transposed": lambda L, x: L.tensor(x[:12].reshape(3, 4)).t(),
            "strided slice": lambda L, x: L.tensor(x[:24].reshape(4, 6))[:, ::2],
            "channels last": lambda L, x: L.tensor(x[:120].reshape(2, 3, 4, 5)).permute(0, 2, 3, 1),
            "transposed slice": lambda L, x: L.tensor(x[:24].reshape(4, 6)).t()[::2],
            "expanded rows": lambda L, x: L.tensor(x[:3].reshape(3, 1)).expand(3, 4),
            "expanded columns": lambda L, x: L.tensor(x[:4].reshape(1, 4)).expand(3, 4),
            "permuted slice": lambda L, x: L.tensor(x[:60].reshape(3, 4, 5)).permute(2, 0, 1)[:, 1:, :]}


@pytest.mark.parametrize("layout", list(_LAYOUTS))
def test_clone_keeps_pytorchs_layout(layout):
    """clone's default preserve_format keeps a dense tensor's strides, makes a strided slice dense in the same
    order and an expanded one row-major; contiguous_format, contiguous() and reshape give row-major; channels_last
    puts channels innermost -- the strides PyTorch gives, and the same values."""
    x = np.random.default_rng(0).standard_normal(120).astype(np.float32)
    e, t = _LAYOUTS[layout](ember, x), _LAYOUTS[layout](torch, x)
    for fn in (lambda a, L: a.clone(), lambda a, L: a.clone(memory_format=L.contiguous_format),
               lambda a, L: a.contiguous(), lambda a, L: a.reshape(-1) if a.dim() < 4 else a.reshape(2, -1)):
        ge, gt = fn(e, ember), fn(t, torch)
        assert ge.stride() == gt.stride() and ge.is_contiguous() == gt.is_contiguous()
        np.testing.assert_array_equal(ge.numpy(), gt.numpy())
    if e.dim() == 4:
        assert e.clone(memory_format=ember.channels_last).stride() == \
            t.clone(memory_format=torch.channels_last).stride()


def test_operators_match_pytorch():
    a_np = np.array([[1.0, -2.0], [3.5, 4.0]])
    for expr in ["a + 1", "1 + a", "a - 2", "2 - a", "a * a", "3 * a", "a / 2", "2 / a", "a // 2", "7 // a",
                 "a % 3", "5 % a", "a ** 2", "2 ** a", "-a", "abs(a)", "a @ a", "a == a", "a < 2", "a >= 1",
                 "+a"]:
        e = eval(expr, {"a": ember.tensor(a_np)})
        t = eval(expr, {"a": torch.tensor(a_np)})
        assert e.dtype.name == str(t.dtype).split(".")[-1], expr
        np.testing.assert_allclose(e.numpy().astype(float), t.numpy().astype(float), err_msg=expr)
    i = ember.tensor([6, 3])
    assert (i & 2).tolist() == [2, 2] and (i | 1).tolist() == [7, 3] and (~i).tolist() == [-7, -4]
    assert (i ^ 5).tolist() == [3, 6] and (i << 1).tolist() == [12, 6] and (i >> 1).tolist() == [3, 1]
    x = ember.ones(2)
    x += 1
    x *= 3
    x -= 1
    x /= 5
    assert x.tolist() == [1.0, 1.0] and x._version == 4


def test_integer_division_and_modulo_signs():
    a, b = [5, -5, 7, -7], [3, 3, -2, -2]
    e = ember.tensor(a), ember.tensor(b)
    t = torch.tensor(a), torch.tensor(b)
    assert (e[0] // e[1]).tolist() == (t[0] // t[1]).tolist()
    assert (e[0] % e[1]).tolist() == (t[0] % t[1]).tolist()
    assert ember.fmod(*e).tolist() == torch.fmod(*t).tolist()
    assert ember.div(*e, rounding_mode="trunc").tolist() == torch.div(*t, rounding_mode="trunc").tolist()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.tensor([1]) // 0


def test_pickle_and_deepcopy():
    x = ember.arange(6.0).reshape(2, 3)
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == x.tolist() and y.dtype is x.dtype
    z = copy.deepcopy(x)
    assert z.tolist() == x.tolist() and z.data_ptr() != x.data_ptr()


def test_named_tuple_returns():
    r = ember.tensor([[1.0, 5.0], [7.0, 2.0]]).max(1)
    assert r.values.tolist() == [5.0, 7.0] and r.indices.tolist() == [1, 0]
    v, i = ember.sort(ember.tensor([3, 1, 2]))
    assert v.tolist() == [1, 2, 3] and i.tolist() == [1, 2, 0]
    assert type(r).__name__ == "max"


def test_binding_errors_name_the_signatures():
    with pytest.raises(TypeError, match=r"add\(\) received an invalid combination of arguments - got \(Tensor, str\)"):
        ember.add(ember.ones(1), "x")
    with pytest.raises(TypeError, match="received an invalid combination of arguments"):
        ember.ones(2).view("a")


def test_transpose_properties():
    x = ember.arange(6.0).reshape(2, 3)
    assert x.T.shape == (3, 2) and x.mT.shape == (3, 2)
    assert ember.zeros(2, 3, 4).mT.shape == (2, 4, 3)
    assert x.T.data_ptr() == x.data_ptr()


@pytest.mark.parametrize("call,exc,phrase", [
    (lambda L: L.ones(3, 4).t().view(12), RuntimeError, "view size is not compatible with input tensor's size and "
                                                       "stride"),
    (lambda L: L.ones(2, 3) @ L.ones(4, 5), RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    (lambda L: L.ones(2, 3) + L.ones(4, 5), RuntimeError,
     "The size of tensor a \\(3\\) must match the size of tensor b \\(5\\) at non-singleton dimension 1"),
    (lambda L: L.mm(L.ones(2, 2), L.ones(2, 2, dtype=L.float64)), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda L: L.ones(2, 3).sum(2), IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but "
                                                r"got 2\)"),
    (lambda L: L.ones(2, 3).transpose(0, 5), IndexError, "Dimension out of range"),
    (lambda L: L.ones(2, 3)[2], IndexError, "index 2 is out of bounds for dimension 0 with size 2"),
    (lambda L: L.ones(2, 3).expand(4, 4), RuntimeError, "The expanded size of the tensor"),
    (lambda L: L.ones(3).reshape(2, 2), RuntimeError, r"shape '\[2, 2\]' is invalid for input of size 3"),
    (lambda L: L.cat([L.ones(2, 3), L.ones(2, 4)]), RuntimeError, "Sizes of tensors must match except in dimension 0"),
    (lambda L: L.ones(2).add_(L.ones(2, 2)), RuntimeError, "doesn't match the broadcast shape"),
    (lambda L: L.ones(2, dtype=L.int64).mean(), RuntimeError, "mean\\(\\): could not infer output dtype"),
    (lambda L: L.ones(2).item(), RuntimeError, "a Tensor with 2 elements cannot be converted to Scalar"),
    (lambda L: L.zeros(3).view(-1, -1), RuntimeError, "only one dimension can be inferred"),
    (lambda L: L.zeros(12).view(3, -2, -1), RuntimeError,
     r"invalid shape dimension -2 at index 1 of shape \[3, -2, -1\]"),
    (lambda L: L.zeros(12).reshape(0, -1), RuntimeError, r"shape '\[0, -1\]' is invalid for input of size 12"),
    (lambda L: L.ones(2, 3).narrow(0, 1, 5), RuntimeError, r"start \(1\) \+ length \(5\) exceeds dimension size \(2\)"),
    (lambda L: L.ones(2).to("meta") + L.ones(2), RuntimeError, "Tensor on device cpu is not on the expected device "
                                                               "meta!"),
])
def test_errors_in_pytorch_words(call, exc, phrase):
    with pytest.raises(exc):
        call(torch)
    with pytest.raises(exc, match=phrase):
        call(ember)


def test_in_place_view_ops_and_resize_match_pytorch():
    """squeeze_ / unsqueeze_ / t_ / transpose_ / swapdims_ / as_strided_ change ``self``'s metadata (and take the
    view's place in the graph); resize_ reuses the storage when it is large enough; PyTorch's refusals."""
    torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed")
    res = []
    for L in (torch, ember):
        out = []
        a = L.ones(4, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            a.squeeze_()
        b = a * 2
        b.unsqueeze_(0)
        out += [tuple(b.shape), b._version]
        (b * L.arange(4.0)).sum().backward()
        out.append(a.grad.tolist())
        c = L.arange(6.0)
        ptr = c.untyped_storage().data_ptr()
        c.resize_(2, 2)
        out += [c.tolist(), c.untyped_storage().data_ptr() == ptr]
        c.resize_(3, 4)
        out += [tuple(c.shape), c[0, :2].tolist(), c.stride()]
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            a.resize_(2)
        y = L.arange(6.0).view(2, 3)
        y.t_()
        out += [y.stride(), y.is_contiguous()]
        y.as_strided_((2, 2), (1, 2))
        out.append(y.tolist())
        z = L.zeros(2, 3)
        z.transpose_(0, 1)
        z.swapdims_(0, 1)
        z.swapaxes_(0, 1)
        w = L.zeros(1, 2, 1)
        w.squeeze_(0)
        q = L.zeros(1, 2, 1)
        q.squeeze_((0, 2))
        r = L.ones(2)
        r.resize_as_(L.zeros(3, 1))
        out += [tuple(z.shape), tuple(w.shape), tuple(q.shape), tuple(r.shape)]
        with pytest.raises(RuntimeError, match="Can't detach views in-place"):
            L.ones(4)[1:3].detach_()
        res.append(out)
    assert res[0] == res[1]


def test_detach_and_complex_view_copies_match_pytorch():
    a = np.arange(12.0).reshape(3, 2, 2)
    for fn in (lambda L, t: L.detach_copy(t), lambda L, t: L.view_as_complex_copy(t),
               lambda L, t: L.view_as_real_copy(L.view_as_complex(t)),
               lambda L, t: L.view_as_real_copy(L.view_as_complex(t)[1:])):
        e, t = fn(ember, ember.tensor(a)), fn(torch, torch.tensor(a))
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1] and e.is_contiguous() and t.is_contiguous()
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    src = ember.tensor(a)
    c = ember.view_as_real_copy(ember.view_as_complex(src))
    c[0, 0, 0] = 100.0
    assert src[0, 0, 0].item() == 0.0  # a copy, not a view
    out = ember.empty(0, dtype=ember.complex128)
    ember.view_as_complex_copy(src, out=out)
    assert tuple(out.shape) == (3, 2)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "amax", "amin", "nansum", "logsumexp", "max", "argmax", "all",
                                  "median"])
def test_reductions_of_a_0d_tensor_over_dim_0(name):
    # a 0-d tensor's dim 0 / -1 is all of it (ember raised NumPy's AxisError for sum, mean, prod, ... before)
    got = []
    for L in (ember, torch):
        x = L.tensor(5.0)
        r, rk = getattr(x, name)(0), getattr(x, name)(-1, keepdim=True)
        r, rk = (r[0], rk[0]) if isinstance(r, tuple) else (r, rk)
        got.append((float(r), tuple(rk.shape)))
        with pytest.raises(IndexError, match=r"expected to be in range of \[-1, 0\], but got 1"):
            getattr(x, name)(1)
    assert got[0] == got[1]


@pytest.mark.parametrize("make", [lambda L: L.zeros(3, 4), lambda L: L.zeros(4, 6)[:, ::2], lambda L: L.zeros(4, 6).t(),
                                  lambda L: L.zeros(3, 4, 5)[None].select(1, 1), lambda L: L.zeros(2, 1, 3)[:, :, 1:],
                                  lambda L: L.zeros(()), lambda L: L.zeros(5)[::2]])
def test_unsqueeze_strides_are_pytorchs(make):
    # the new dim's stride is the next dim's extent (1 at the end) and the others are kept, also where NumPy's
    # reshape would pick its own for size-1 dims
    for d in range(make(torch).dim() + 1):
        e, t = make(ember).unsqueeze(d), make(torch).unsqueeze(d)
        assert (tuple(e.shape), e.stride(), e._base is not None) == (tuple(t.shape), t.stride(), t._base is not None)
