"""``ember.autograd.functional`` (mirrors ``torch/autograd/functional.py``): Jacobians, Hessians and their
products, built on reverse mode (``autograd.grad``); ``jvp``/``hvp`` use the double-backward trick."""
from __future__ import annotations

from typing import Any

from ember._generated import aten
from ember.autograd import forward_ad, grad
from ember.autograd.grad_mode import enable_grad


def _tuple(x: Any) -> Any:
    return (tuple(x), True) if isinstance(x, (tuple, list)) else ((x,), False)


def _grad_inputs(inputs: Any, create_graph: Any) -> Any:
    return tuple(t if create_graph and t.requires_grad else t.detach().requires_grad_(True) for t in inputs)


def _fill_none(grads: Any, like: Any) -> Any:
    return tuple(aten.zeros_like(x) if g is None else g for g, x in zip(grads, like))


def _out(t: Any, is_tuple: Any) -> Any:
    return t if is_tuple else t[0]


def _check_outputs(outputs: Any, strict: Any) -> Any:
    for i, o in enumerate(outputs):
        if not o.requires_grad:
            if strict:
                raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The "
                                   "outputs must be computed in a differentiable manner from the input when running "
                                   "in strict mode.")


def vjp(func: Any, inputs: Any, v: Any = None, create_graph: Any = False, strict: Any = False) -> Any:
    """``(func(inputs), v^T J)``."""
    with enable_grad():
        inputs, in_tuple = _tuple(inputs)
        inputs = _grad_inputs(inputs, create_graph)
        outputs, out_tuple = _tuple(func(*inputs))
        _check_outputs(outputs, strict)
        if v is None:
            if any(o.numel() != 1 for o in outputs):
                raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                                   "Tensor with a single element.")
            v = tuple(aten.ones_like(o) for o in outputs)
        v, _ = _tuple(v)
        diff = [(o, g) for o, g in zip(outputs, v) if o.requires_grad]
        grads = grad([o for o, _ in diff], inputs, [g for _, g in diff], create_graph=create_graph,
                                    allow_unused=True) if diff else (None,) * len(inputs)
    outs = tuple(o if create_graph else o.detach() for o in outputs)
    return _out(outs, out_tuple), _out(_fill_none(grads, inputs), in_tuple)


def jvp(func: Any, inputs: Any, v: Any = None, create_graph: Any = False, strict: Any = False) -> Any:
    """``(func(inputs), J v)`` through the double-backward trick."""
    with enable_grad():
        inputs, in_tuple = _tuple(inputs)
        inputs = _grad_inputs(inputs, create_graph)
        if v is None:
            if any(i.numel() != 1 for i in inputs):
                raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                                   "single Tensor with a single element.")
            v = tuple(aten.ones_like(i) for i in inputs)
        v, _ = _tuple(v)
        outputs, out_tuple = _tuple(func(*inputs))
        _check_outputs(outputs, strict)
        dummies = tuple(aten.zeros_like(o).requires_grad_(True) for o in outputs)
        g = grad(outputs, inputs, dummies, create_graph=True, allow_unused=True)
        pairs = [(gi, vi) for gi, vi in zip(g, v) if gi is not None]
        res = grad([p[0] for p in pairs], dummies, [p[1] for p in pairs],
                                  create_graph=create_graph, allow_unused=True) if pairs else (None,) * len(outputs)
    outs = tuple(o if create_graph else o.detach() for o in outputs)
    return _out(outs, out_tuple), _out(_fill_none(res, outputs), out_tuple)


def _jacfwd(func: Any, inputs: Any, strict: Any, vectorize: Any) -> Any:
    """The Jacobian in forward mode: one dual level per input element, its tangent a one-hot tensor (a column of
    the Jacobian per jvp)."""
    if strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `strategy=\"forward-mode\"` are not "
                           "supported together (yet). Please either set `strict=False` or "
                           "`strategy=\"reverse-mode\"`.")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly "
                                  "implemented for `vectorize=True`.")
    inputs, in_tuple = _tuple(inputs)
    cols: list[list[list[Any]]] = []   # [input][element] -> tangents of the outputs
    out_tuple, outputs = False, ()
    for j, x in enumerate(inputs):
        per_elem = []
        for k in range(x.numel()):
            onehot = aten.zeros_like(x).reshape(-1)
            onehot[k] = 1
            with forward_ad.dual_level():
                args = list(inputs)
                args[j] = forward_ad.make_dual(x, onehot.reshape(tuple(x.shape)))
                outs, out_tuple = _tuple(func(*args))
                pairs = [forward_ad.unpack_dual(o) for o in outs]
            outputs = tuple(p.primal for p in pairs)
            per_elem.append([aten.zeros_like(p.primal) if p.tangent is None else p.tangent for p in pairs])
        cols.append(per_elem)
    if not outputs:
        outputs, out_tuple = _tuple(func(*inputs))
    jac = []
    for i, o in enumerate(outputs):
        per_input = []
        for j, x in enumerate(inputs):
            if cols[j]:
                m = aten.stack([c[i] for c in cols[j]], -1)
            else:
                m = aten.zeros(tuple(o.shape) + (0,), dtype=o.dtype, device=o.device)
            per_input.append(m.reshape(tuple(o.shape) + tuple(x.shape)))
        jac.append(_out(tuple(per_input), in_tuple))
    return _out(tuple(jac), out_tuple)


def jacobian(func: Any, inputs: Any, create_graph: Any = False, strict: Any = False, vectorize: Any = False,
             strategy: Any = 'reverse-mode') -> Any:
    """The Jacobian of ``func`` at ``inputs``: ``J[i][j]`` has shape ``output_i.shape + input_j.shape``; with
    ``strategy="forward-mode"`` (and ``vectorize=True``) computed column by column in forward mode."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` and "
                                      "`strategy=\"forward-mode\"` are not supported together (yet). Please either "
                                      "set `create_graph=False` or `strategy=\"reverse-mode\"`.")
        return _jacfwd(func, inputs, strict, vectorize)
    with enable_grad():
        inputs, in_tuple = _tuple(inputs)
        inputs = _grad_inputs(inputs, create_graph)
        outputs, out_tuple = _tuple(func(*inputs))
        _check_outputs(outputs, strict)
        jac = []
        for o in outputs:
            rows: list[list[Any]] = [[] for _ in inputs]
            flat = o.reshape(-1)
            for k in range(flat.numel()):
                if o.requires_grad:
                    gs = grad(flat[k], inputs, retain_graph=True, create_graph=create_graph,
                                             allow_unused=True)
                else:
                    gs = (None,) * len(inputs)
                for j, (g, x) in enumerate(zip(gs, inputs)):
                    rows[j].append(aten.zeros_like(x) if g is None else g)
            per_input = []
            for j, x in enumerate(inputs):
                m = aten.stack(rows[j]) if rows[j] else \
                    aten.zeros((0,) + tuple(x.shape), dtype=x.dtype, device=x.device)
                per_input.append(m.reshape(tuple(o.shape) + tuple(x.shape)))
            jac.append(_out(tuple(per_input), in_tuple))
    return _out(tuple(jac), out_tuple)


def hessian(func: Any, inputs: Any, create_graph: Any = False, strict: Any = False, vectorize: Any = False,
            outer_jacobian_strategy: Any = 'reverse-mode') -> Any:
    """The Hessian of a scalar ``func``: the Jacobian of its gradient (``outer_jacobian_strategy="forward-mode"``:
    forward-over-reverse, with ``vectorize=True``)."""
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    inputs_t, in_tuple = _tuple(inputs)

    def grad_fn(*xs: Any) -> Any:
        if outer_jacobian_strategy == "forward-mode":
            xs = tuple(x.requires_grad_(True) for x in xs)
        return jacobian(func, xs if in_tuple else xs[0], create_graph=True, strict=strict)

    return jacobian(grad_fn, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                    strategy=outer_jacobian_strategy)


def vhp(func: Any, inputs: Any, v: Any = None, create_graph: Any = False, strict: Any = False) -> Any:
    """``(func(inputs), v^T H)`` for a scalar ``func``."""
    with enable_grad():
        inputs, in_tuple = _tuple(inputs)
        inputs = _grad_inputs(inputs, create_graph)
        out = func(*inputs)
        if out.numel() != 1:
            raise RuntimeError("The function given to hvp should return a single Tensor with a single element.")
        v, _ = _tuple(v)
        g = grad(out, inputs, create_graph=True, allow_unused=True)
        pairs = [(gi, vi) for gi, vi in zip(g, v) if gi is not None]
        res = grad([p[0] for p in pairs], inputs, [p[1] for p in pairs], create_graph=create_graph,
                                  allow_unused=True)
    return (out if create_graph else out.detach()), _out(_fill_none(res, inputs), in_tuple)


def hvp(func: Any, inputs: Any, v: Any = None, create_graph: Any = False, strict: Any = False) -> Any:
    """``(func(inputs), H v)``; the Hessian of a twice-differentiable scalar function is symmetric."""
    return vhp(func, inputs, v, create_graph, strict)
