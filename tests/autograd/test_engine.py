"""The graph, the engine and the Tensor autograd API against PyTorch: errors in its words, hooks,
retain_grad / retain_graph / create_graph, grad modes, in-place on leaves and views, grad_fn names."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def both(fn):
    return fn(ember), fn(torch)


def close(e, t):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-7)


EXPRESSIONS = [
    "x + y", "x - y", "x * y", "x / y", "x ** 2", "x.exp()", "x.sum()", "x.mean(0)", "x @ y.t()", "x.t()",
    "x.view(6)", "x.reshape(3, 2)", "x[0]", "x[:, 1:]", "x[[0, 1]]", "x.transpose(0, 1)", "x.expand(2, 2, 3)",
    "x.unsqueeze(0)", "x.squeeze()", "x.relu()", "x.sigmoid()", "x.tanh()", "x.abs()", "x.max()", "x.max(1)[0]",
    "torch.cat([x, y])", "torch.stack([x, y])", "x.clone()", "torch.where(x > 0, x, y)", "x.clamp(-1, 1)",
    "x.log_softmax(1)" if False else "x.logsumexp(1)", "x.permute(1, 0)", "x.neg()", "x.sqrt()", "x.pow(y)",
    "torch.mm(x, y.t())", "x.select(0, 1)", "x.narrow(1, 0, 2)", "x.std()", "x.var(1)", "x.cumsum(1)",
    "x.flip(0)", "x.index_select(1, torch.tensor([0, 2]))", "x.gather(1, torch.tensor([[0, 0], [1, 2]]))",
    "x.masked_fill(x > 0, 0.0)", "x.norm()", "x.unbind(0)[0]", "x.split(1)[1]", "torch.addmm(z, x, y.t())",
]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_grad_fn_names_and_gradients_match_pytorch(expr):
    a = np.abs(np.random.default_rng(0).standard_normal((2, 3))) + 0.5
    b = np.random.default_rng(1).standard_normal((2, 3))
    res = {}
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        z = lib.tensor(np.ones((2, 2)), requires_grad=True)
        out = eval(expr, {"torch": lib, "x": x, "y": y, "z": z})
        out.sum().backward()
        res[lib] = (type(out.grad_fn).__name__ if lib is torch else out.grad_fn.name(), x.grad, y.grad, z.grad)
    e, t = res[ember], res[torch]
    assert e[0] == t[0]
    for ge, gt in zip(e[1:], t[1:]):
        assert (ge is None) == (gt is None)
        if gt is not None:
            close(ge, gt)


def test_leaf_and_requires_grad_flags():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    assert x.is_leaf and not y.is_leaf and y.requires_grad and x.grad_fn is None
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"):
        ember.ones(3, dtype=ember.int64).requires_grad_()
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)
    z = ember.ones(2)
    z.requires_grad = True
    assert z.requires_grad and z.is_leaf


def test_backward_errors_in_pytorch_words():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        ember.ones(2).sum().backward()
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors appears to not have been used in the "
                                           "graph. Set allow_unused=True"):
        ember.autograd.grad((a * 2).sum(), [a, b])
    ga, gb = ember.autograd.grad((a * 2).sum(), [a, b], allow_unused=True)
    assert gb is None and ga.tolist() == [2.0, 2.0]
    ga, gb = ember.autograd.grad((a * 2).sum(), [a, b], materialize_grads=True)
    assert gb.tolist() == [0.0, 0.0]


def test_backward_twice_without_saved_tensors_is_allowed():
    x = ember.ones(2, requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_retain_graph_and_accumulation():
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        assert x.grad.tolist() == [4.0, 8.0]


def test_inplace_modification_of_saved_tensor_is_detected():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    z = y * y
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient computation has been modified "
                                           r"by an inplace operation: \[torch.FloatTensor \[3\]\], which is output 0 "
                                           r"of AddBackward0, is at version 1; expected version 0 instead."):
        z.sum().backward()


def test_inplace_on_leaf_is_refused_and_allowed_under_no_grad():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place "
                                           "operation."):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation."):
        x[0].mul_(2)
    with ember.no_grad():
        x.add_(1)
    assert x.tolist() == [2.0, 2.0, 2.0] and x._version == 1


@pytest.mark.parametrize("body", [
    "y = x * 2; y.mul_(3); out = y",
    "y = x * 2; y[0] = 5.0; out = y",
    "y = x * 2; y[:, 1].mul_(w[0]); out = y",
    "y = x * 2; v = y[1]; v.add_(w[:3]); out = y * y",
    "y = x * 1; y[y > 1.5] = 0.0; out = y",
    "y = x.clone(); y[:, [0, 2]] = w.view(3, 2)[:2]; out = y",
    "y = x * 2; y.t()[0].zero_(); out = y",
    "y = torch.zeros(2, 3); y[1] = x[0] * w[:3]; out = y",
    # a view made before another view of the same base is changed in place reads the base's new value (Note
    # [View history]): its history is regenerated from the base's
    "y = x * 1; a = y[0]; y[:, 1].mul_(w[0]); out = torch.stack([a * 2, y[1]])",
    "y = x * 1; a = y.t(); y[1].add_(w[:3]); out = a.t() * w[3]",
    "y = x * 1; a = y[1]; b = y[:, 2]; b.mul_(3.0); a.mul_(w[:3]); out = y",
])
def test_inplace_on_views_and_setitem_in_the_graph(body):
    grads = {}
    for lib in (ember, torch):
        x = lib.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
        w = lib.tensor(np.linspace(0.5, 3.0, 6), requires_grad=True)
        env = {"torch": lib, "x": x, "w": w}
        exec(body, env)
        (env["out"] * lib.tensor(np.arange(6.0).reshape(2, 3))).sum().backward()
        grads[lib] = (env["out"].detach().numpy().copy(), x.grad, w.grad)
    e, t = grads[ember], grads[torch]
    np.testing.assert_allclose(e[0], t[0])
    for ge, gt in zip(e[1:], t[1:]):
        assert (ge is None) == (gt is None)
        if gt is not None:
            close(ge, gt)


def test_hooks_tensor_node_pre_and_post_accumulate():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(("leaf", g.tolist())))
    y = x * 3
    h = y.register_hook(lambda g: g * 10)
    y.grad_fn.register_prehook(lambda gs: seen.append(("pre", gs[0].tolist())))
    y.grad_fn.register_hook(lambda gi, go: seen.append(("post", gi[0].tolist())))
    x.register_post_accumulate_grad_hook(lambda t: seen.append(("acc", t.grad.tolist())))
    y.sum().backward()
    assert x.grad.tolist() == [30.0, 30.0]
    assert seen == [("pre", [10.0, 10.0]), ("post", [30.0, 30.0]), ("leaf", [30.0, 30.0]),
                    ("acc", [30.0, 30.0])]
    h.remove()
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        ember.ones(1).register_hook(lambda g: g)


def test_retain_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.retain_grad()
    assert y.retains_grad
    (y * 2).sum().backward()
    assert y.grad.tolist() == [2.0, 2.0]
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert (x * 2).grad is None


def test_create_graph_third_derivative():
    for lib in (ember, torch):
        x = lib.tensor(1.5, dtype=lib.float64, requires_grad=True)
        y = x ** 4 + x.sin()
        (g1,) = lib.autograd.grad(y, x, create_graph=True)
        (g2,) = lib.autograd.grad(g1, x, create_graph=True)
        (g3,) = lib.autograd.grad(g2, x)
        assert abs(g3.item() - (24 * 1.5 - np.cos(1.5))) < 1e-12


def test_grad_modes_nested_and_as_decorators():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()

    @ember.no_grad()
    def f(t):
        return t * 2

    @ember.enable_grad()
    def g(t):
        return t * 2

    assert not f(x).requires_grad
    with ember.no_grad():
        assert g(x).requires_grad
    with ember.set_grad_enabled(False):
        assert not (x + 1).requires_grad
    assert (x + 1).requires_grad
    ember.set_grad_enabled(False)
    assert not ember.is_grad_enabled()
    ember.set_grad_enabled(True)

    @ember.set_grad_enabled(False)  # as a decorator: the mode is set per call, not where the function is defined
    def k(t):
        return t * 2
    assert ember.is_grad_enabled() and not k(x).requires_grad and ember.is_grad_enabled()
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled() and not (x * 2).requires_grad
    assert not ember.is_inference_mode_enabled()

    @ember.inference_mode()
    def h(t):
        return t * 2
    assert not h(x).requires_grad


def test_detach_and_data():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.data_ptr() == y.data_ptr()
    d.add_(1)
    assert y._version == 1  # detach shares the version counter
    z = x * 2
    w = z * z
    z.data.add_(1)  # .data does not: autograd does not see it
    w.sum().backward()
    assert x.grad is not None
    y2 = x * 3
    y2.detach_()
    assert not y2.requires_grad and y2.is_leaf


def test_out_variants_refuse_inputs_that_require_grad():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="add\\(\\): functions with out=... arguments don't support automatic "
                                           "differentiation, but one of the arguments requires grad."):
        ember.add(x, 1, out=ember.empty(2))


def test_backward_with_inputs_accumulates_only_those():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    (a * b * 3).sum().backward(inputs=[a])
    assert a.grad.tolist() == [3.0, 3.0] and b.grad is None


def test_next_functions_and_accumulate_grad():
    x = ember.ones(2, requires_grad=True)
    y = (x * ember.ones(2)).sum()
    mul = y.grad_fn.next_functions[0][0]
    assert mul.name() == "MulBackward0"
    acc = mul.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad" and acc.variable is x
    assert mul.next_functions[1] == (None, 0)


def test_a_number_operand_records_the_tensor_overloads_node_as_pytorch():
    """``x * 2`` records MulBackward0 with the number saved as a 0-dim tensor, its next function for the number
    None, in place too; the same names, saved values and gradients as PyTorch's."""
    def run(lib):
        x = lib.tensor([1.5, -2.0, 3.0], requires_grad=True)
        ys = [x * 2, 2 * x, x / 4, x + 1, x - 1, 1 - x, x.div(3, rounding_mode="floor"), lib.true_divide(x, 2),
              lib.divide(x, 2), lib.true_divide(x, x)]
        c = x.clone()
        c.mul_(2).div_(4)
        ys.append(c)
        out = []
        for y in ys:
            fn = y.grad_fn
            other = getattr(fn, "_saved_other", None)
            out.append((fn.name(), [n is None for n, _ in fn.next_functions],
                        None if other is None else float(other) if other.dim() == 0 else other.tolist()))
        g, = lib.autograd.grad(sum(y.sum() for y in ys), x)
        return out, g.tolist()
    assert run(ember) == run(torch)


def test_gradients_are_reduced_over_broadcasting_and_grad_setter():
    x = ember.ones(3, 1, requires_grad=True)
    y = ember.ones(1, 4, requires_grad=True)
    (x * y).sum().backward()
    assert x.grad.tolist() == [[4.0], [4.0], [4.0]] and y.grad.tolist() == [[3.0] * 4]
    with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
        x.grad = ember.ones(2)
    x.grad = None
    assert x.grad is None


def test_derivative_not_implemented_is_reported_at_backward():
    x = ember.tensor([0.5, 2.0], requires_grad=True)
    y = ember.floor_divide(x, 2.0)  # no formula in PyTorch either: its autograd fallback attaches NotImplemented
    assert y.requires_grad and y.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="^derivative for aten::floor_divide is not implemented$"):
        y.sum().backward()
    assert not ember.histc(x, bins=4).requires_grad  # output_differentiability: [False], as in PyTorch


def test_non_differentiable_outputs():
    x = ember.tensor([3.0, 1.0, 3.0], requires_grad=True)
    assert not (x > 1).requires_grad and not x.argmax().requires_grad
    v, i = x.max(0)
    assert v.requires_grad and not i.requires_grad
    u, inv = ember.unique(x, return_inverse=True)  # PyTorch: not_implemented("_unique2"), indices not differentiable
    assert u.requires_grad and not inv.requires_grad
    with pytest.raises(NotImplementedError, match="the derivative for '_unique2' is not implemented."):
        u.sum().backward()


def test_anomaly_mode_reports_nan_in_backward():
    for lib in (torch, ember):
        x = lib.tensor([0.0], requires_grad=True)
        with pytest.warns(UserWarning):
            with lib.autograd.detect_anomaly():
                y = (x.log() * 0).sum()
                with pytest.raises(RuntimeError, match="Function 'LogBackward0' returned nan values in its 0th "
                                                       "output."):
                    y.backward()


def test_double_backward_through_an_inplace_op_on_a_view():
    """CopySlices' backward is written in ops, so it is differentiable too: the stale views it makes itself get
    their history regenerated, and ``as_strided``'s gradient keeps the input's geometry, not the input."""
    def fn(x):
        y = x.clone()
        y[0:2].mul_(2.0)
        y.unsqueeze(0)[:, 2].mul_(x[0])
        return y
    x = ember.tensor(np.linspace(0.5, 2.0, 12).reshape(3, 4), requires_grad=True)
    assert ember.autograd.gradcheck(fn, (x,)) and ember.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("expr", ["torch.nn.functional.gelu(x)", "x.exp()", "torch.softmax(x, -1)",
                                  "torch.nn.functional.layer_norm(x, (64,))", "(x * x).sum(0)", "x.t().sin()",
                                  "x.view(2048).sin()", "torch.nn.functional.linear(torch.ones(8, 64), x)",
                                  "torch.nn.functional.linear(x, torch.ones(16, 64)).view(-1)"])
def test_a_leaf_takes_the_gradient_without_a_copy_where_pytorch_does(expr):
    """AccumulateGrad steals a gradient nothing else holds, as PyTorch's does: no aten.clone in the backward
    (a kernel's result that is a reshape of an array only it holds counts as owning its memory, so does a view
    tensor whose base tensor only it holds, and no frame of the engine keeps a node's outputs alive) -- and the
    gradient a caller still holds is copied."""
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode as TorchMode

    from ember.utils._python_dispatch import TorchDispatchMode

    def ops(lib, mode_cls):
        seen = []

        class Log(mode_cls):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                seen.append(str(func))
                return func(*args, **(kwargs or {}))
        x = lib.tensor(np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)).requires_grad_()
        y = eval(expr, {"torch": lib, "x": x})
        g = lib.ones(tuple(y.shape))
        with Log():
            y.backward(g)
        return [op for op in seen if "clone" in op or "copy" in op]
    assert bool(ops(ember, TorchDispatchMode)) == bool(ops(torch, TorchMode))   # (a copy is clone or copy_)
    held = ember.ones(3)
    leaf = ember.zeros(3, requires_grad=True)
    (leaf + 0).backward(held)                 # the gradient passes through unchanged: the caller's tensor
    assert leaf.grad is not held and leaf.grad.data_ptr() != held.data_ptr()
