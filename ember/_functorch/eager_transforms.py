"""``grad``, ``grad_and_value``, ``vjp``, ``jacrev``, ``hessian``, and the forward-mode ``jvp``, ``jacfwd`` and
``linearize`` (``torch/_functorch/eager_transforms.py``).

Note [Function transforms on the autograd engine]
PyTorch's transforms each open a *level* with its own wrappers; ember's reverse-mode transforms run on the one
autograd engine instead. ``grad(f)(x)`` calls ``f`` on a stand-in for ``x`` that requires grad -- ``x.detach()``
made to require grad, or, when ``x`` already takes part in a graph (an enclosing ``grad``, a user's
``requires_grad``), a view of ``x``, so that the enclosing computation still sees through it -- and returns
``autograd.grad`` of the output with respect to the stand-ins. While an enclosing transform or grad-requiring
input may need to differentiate the result again, the gradient is computed with ``create_graph=True``; the
outermost transform over inputs that require no grad returns plain tensors, as PyTorch's does. An input the output
does not depend on gets a zero gradient. Inside ``vmap`` the stand-ins are batched tensors and every derivative
formula runs through the batching rules (Note [Batched tensors]): ``vmap(grad(f))`` gives per-example gradients,
``jacrev`` is ``vmap`` of a ``vjp`` over the rows of an identity matrix.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

import ember
from ember._functorch.vmap import vmap
from ember._tensor import Tensor
from ember.autograd import forward_ad as _fwad, forward_grad as _fg
from ember.autograd import grad as autograd_grad
from ember.autograd.grad_mode import enable_grad, is_grad_enabled
from ember.utils._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jacrev", "hessian", "jvp", "jacfwd", "linearize"]


class _Depth(threading.local):
    def __init__(self) -> None:
        self.depth = 0


_depth = _Depth()


def _get_name(func: Any) -> str:
    return getattr(func, "__name__", None) or repr(func)


def _slice_argnums(args: tuple[Any, ...], argnums: Any) -> Any:
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        return args[_safe_argnum(argnums, len(args))]
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(args[_safe_argnum(a, len(args))] for a in argnums)


def _safe_argnum(argnum: Any, total: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if argnum >= 0 and argnum < total:
        return argnum
    if argnum < 0 and argnum >= -total:
        return argnum + total
    raise RuntimeError(f"Got argnum={argnum}, but only {total} positional inputs")


def _replace_argnums(args: tuple[Any, ...], argnums: Any, new: Any) -> tuple[Any, ...]:
    out = list(args)
    if isinstance(argnums, int):
        out[_safe_argnum(argnums, len(args))] = new
    else:
        for a, v in zip(argnums, new):
            out[_safe_argnum(a, len(args))] = v
    return tuple(out)


def _stand_in(x: Any) -> Any:
    """A tensor that requires grad in ``x``'s place (Note [Function transforms on the autograd engine])."""
    if not isinstance(x, Tensor):
        return x
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    if x.requires_grad:
        return x.view_as(x)
    return _fg.detached(x).requires_grad_(True)   # (keeping a jvp's tangents: forward-over-reverse)


def _any_requires_grad(tree: Any) -> bool:
    return any(isinstance(t, Tensor) and t.requires_grad for t in tree_flatten(tree)[0])


def _grads(outputs: list[Tensor], inputs: list[Tensor], cotangents: list[Any] | None, create_graph: bool,
           retain_graph: bool) -> list[Tensor]:
    """``autograd.grad`` with zeros for inputs the outputs do not reach."""
    diff = [o for o in outputs if o.requires_grad]
    if not diff:
        return [ember.zeros_like(x) for x in inputs]
    cots = None if cotangents is None else [c for o, c in zip(outputs, cotangents) if o.requires_grad]
    gs = autograd_grad(diff, inputs, cots, retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)
    return [ember.zeros_like(x) if g is None else g for g, x in zip(gs, inputs)]


def _check_tensor_output(flat_out: list[Any], api: str) -> None:
    """PyTorch's ``assert_non_empty_tensor_output``."""
    if (len(flat_out) == 1 and flat_out[0] is None) or len(flat_out) < 1:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {flat_out})")
    for o in flat_out:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")


def _split_aux(out: Any, api: str) -> tuple[Any, Any]:
    """``(output, aux)`` of a function called with ``has_aux=True``."""
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return out


def _finish(tree: Any, keep_graph: bool) -> Any:
    return tree if keep_graph else tree_map(lambda t: _fg.detached(t) if isinstance(t, Tensor) else t, tree)


def grad_and_value(func: Callable[..., Any], argnums: Any = 0, has_aux: bool = False) -> Callable[..., Any]:
    """``torch.func.grad_and_value``: ``(gradient of func's scalar output w.r.t. the argnums inputs, output)``."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        outer = is_grad_enabled() and (_depth.depth > 0 or _any_requires_grad((args, kwargs)))
        diff = _slice_argnums(args, argnums)
        stand = tree_map(_stand_in, diff)
        _depth.depth += 1
        try:
            with enable_grad():
                out = func(*_replace_argnums(args, argnums, stand), **kwargs)
                aux = None
                if has_aux:
                    out, aux = _split_aux(out, "grad_and_value(f)(*args)")
                if not isinstance(out, Tensor):
                    raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                       f"{type(out)}")
                if out.dim() != 0:
                    raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, "
                                       f"got tensor with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev "
                                       f"APIs instead?")
                flat, spec = tree_flatten(stand)
                gs = _grads([out], flat, None, create_graph=outer, retain_graph=outer)
        finally:
            _depth.depth -= 1
        g = tree_unflatten(gs, spec)
        result = (_finish(g, outer), _finish(out, outer))
        if has_aux:
            return result[0], (result[1], _finish(aux, outer))
        return result
    return wrapper


def grad(func: Callable[..., Any], argnums: Any = 0, has_aux: bool = False) -> Callable[..., Any]:
    """``torch.func.grad``: the gradient of ``func``'s scalar output with respect to its ``argnums`` inputs."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = gv(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g
    return wrapper


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``torch.func.vjp``: ``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` gives the vector-Jacobian products
    with respect to every primal (a tuple, one per primal)."""
    outer = is_grad_enabled() and (_depth.depth > 0 or _any_requires_grad(primals))
    stand = tree_map(_stand_in, primals)
    _depth.depth += 1
    try:
        with enable_grad():
            out = func(*stand)
            aux = None
            if has_aux:
                out, aux = _split_aux(out, "vjp(f, *primals)")
    finally:
        _depth.depth -= 1
    flat_out, out_spec = tree_flatten(out)
    _check_tensor_output(flat_out, "vjp(f, *primals)")
    flat_primals, primal_spec = tree_flatten(stand)

    def vjp_fn(cotangents: Any, *, retain_graph: bool = True, create_graph: Any = None) -> Any:
        flat_cot, cot_spec = tree_flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {cot_spec}, primal output: {out_spec}")
        for o, c in zip(flat_out, flat_cot):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {tuple(c.shape)} and "
                                   f"output[0] has a shape of {tuple(o.shape)}.")
        keep = outer or _depth.depth > 0 or _any_requires_grad(cotangents)
        make_graph = keep if create_graph is None else create_graph
        _depth.depth += 1
        try:
            with enable_grad():
                gs = _grads(flat_out, flat_primals, flat_cot, create_graph=make_graph,
                            retain_graph=retain_graph or make_graph)
        finally:
            _depth.depth -= 1
        return _finish(tree_unflatten(gs, primal_spec), make_graph)

    result = _finish(out, outer)
    if has_aux:
        return result, vjp_fn, _finish(aux, outer)
    return result, vjp_fn


def jacrev(func: Callable[..., Any], argnums: Any = 0, *, has_aux: bool = False, chunk_size: Any = None,
           _preallocate_and_copy: bool = False) -> Callable[..., Any]:
    """``torch.func.jacrev``: the Jacobian of ``func`` with respect to its ``argnums`` inputs, by ``vmap`` of a
    ``vjp`` over the rows of an identity matrix (one row per output element). ``_preallocate_and_copy`` is PyTorch's
    memory layout switch for chunked Jacobians; ember's chunks are concatenated either way (the same values)."""
    if not (chunk_size is None or (isinstance(chunk_size, int) and chunk_size > 0)):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        diff = _slice_argnums(args, argnums)

        def partial_f(*d: Any) -> Any:
            return func(*_replace_argnums(args, argnums, d if isinstance(argnums, tuple) else d[0]), **kwargs)
        primals = diff if isinstance(argnums, tuple) else (diff,)
        res = vjp(partial_f, *primals, has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        flat_out, out_spec = tree_flatten(out)
        sizes = [o.numel() for o in flat_out]
        total = sum(sizes)
        basis = ember.eye(total, dtype=flat_out[0].dtype, device=flat_out[0].device) if flat_out else None
        cots, start = [], 0
        for o, n in zip(flat_out, sizes):
            cots.append(basis[:, start:start + n].reshape((total,) + tuple(o.shape)))
            start += n

        def one_row(*c: Any) -> Any:
            return vjp_fn(tree_unflatten(list(c), out_spec))
        rows = vmap(one_row, chunk_size=chunk_size)(*cots)          # tuple over primals of (total, *primal)
        flat_primals, primal_spec = tree_flatten(primals)
        flat_rows = tree_flatten(rows)[0]
        per_output = []
        start = 0
        for o, n in zip(flat_out, sizes):
            jac = [r[start:start + n].reshape(tuple(o.shape) + tuple(p.shape))
                   for r, p in zip(flat_rows, flat_primals)]
            j = tree_unflatten(jac, primal_spec)
            per_output.append(j if isinstance(argnums, tuple) else j[0])
            start += n
        result = tree_unflatten(per_output, out_spec)
        if has_aux:
            return result, res[2]
        return result
    return wrapper


def hessian(func: Callable[..., Any], argnums: Any = 0) -> Callable[..., Any]:
    """``torch.func.hessian``: the Jacobian of the Jacobian, forward-over-reverse (``jacfwd(jacrev(f))``) as
    PyTorch takes it."""
    return jacfwd(jacrev(func, argnums), argnums)


# -- forward mode ----------------------------------------------------------------------------------------------
# Note [Forward-mode transforms]
# ``jvp`` enters a dual level of its own (ember/autograd/forward_grad.py), makes each primal dual with its tangent,
# calls ``func`` and unpacks the outputs. Levels nest, so ``jvp`` of a ``jvp`` (``jacfwd(jacfwd(f))``) carries a
# tangent of the inner tangent, as PyTorch's functorch levels do. ``jacfwd`` is ``vmap`` of ``jvp`` over the
# columns of an identity matrix: the tangents are batched tensors and every forward formula runs through the
# batching rules; ``hessian`` is ``jacfwd(jacrev(f))``. Inside a jvp the reverse-mode stand-ins and results keep their
# tangents (``forward_grad.detached``), so that forward-over-reverse differentiates the backward pass.

_JVP = "jvp(f, primals, tangents)"


def _check_tensors(flat: list[Any], argname: str) -> None:
    if len(flat) == 0:
        raise RuntimeError(f"{_JVP}: Expected {argname} to contain at least one Tensor.")
    for t in flat:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{_JVP}: Expected {argname} to only contain Tensors, got {type(t)}")


def _unpack_output(dual: Any, level: int, strict: bool) -> tuple[Any, Any]:
    primal, tangent = _fwad._unpack_dual(dual, level)
    if tangent is None:
        if strict:
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the "
                               "inputs. This is not allowed with strict=True.")
        tangent = ember.zeros_like(primal)
    return primal, tangent


def _without_level(tree: Any, level: int) -> Any:
    """``aux`` as the caller sees it: no tangent of the jvp's level."""
    return tree_map(lambda t: _fwad._unpack_dual(t, level)[0] if isinstance(t, Tensor) else t, tree)


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> Any:
    """``torch.func.jvp``: ``(func(*primals), J(primals) @ tangents)`` in forward mode (Note [Forward-mode
    transforms]); with ``has_aux``, ``func`` returns ``(output, aux)`` and ``aux`` comes third."""
    return _jvp_with_argnums(func, primals, tangents, None, strict=strict, has_aux=has_aux)


def _jvp_with_argnums(func: Callable[..., Any], primals: Any, tangents: Any, argnums: Any, *, strict: bool = False,
                      has_aux: bool = False) -> Any:
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    diff_args = primals if argnums is None else _slice_argnums(primals, argnums)
    flat_primals, primals_spec = tree_flatten(diff_args)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python structure. For example, "
                           f"if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{primals_spec} and tangents with structure {tangents_spec}")
    _check_tensors(flat_primals, "primals")
    _check_tensors(flat_tangents, "tangents")
    level = _fg.enter_level()
    outer_current = _fwad._current_level
    _fwad._current_level = level
    try:
        with _fg.fwd_grad_enabled(True):
            flat_duals = [_fwad.make_dual(p, t, level=level) for p, t in zip(flat_primals, flat_tangents)]
            duals = tree_unflatten(flat_duals, primals_spec)
            args = duals if argnums is None else _replace_argnums(primals, argnums, duals)
            result = func(*args)
            aux: Any = None
            if has_aux:
                result, aux = _split_aux(result, _JVP)
                aux = _without_level(aux, level)
            flat_out, spec = tree_flatten(result)
            _check_tensor_output(flat_out, _JVP)
            pairs = [_unpack_output(o, level, strict) for o in flat_out]
    finally:
        _fg.exit_level(level)
        _fwad._current_level = outer_current
    primals_out = tree_unflatten([p for p, _ in pairs], spec)
    tangents_out = tree_unflatten([t for _, t in pairs], spec)
    if has_aux:
        return primals_out, tangents_out, aux
    return primals_out, tangents_out


def _standard_basis(flat: list[Any]) -> tuple[list[Any], list[int]]:
    """For each tensor a (total, *its shape) block of the identity over all their elements together."""
    numels = [t.numel() for t in flat]
    total = sum(numels)
    eye = ember.eye(total, dtype=flat[0].dtype, device=flat[0].device)
    out, start = [], 0
    for t, n in zip(flat, numels):
        out.append(eye[:, start:start + n].reshape((total,) + tuple(t.shape)))
        start += n
    return out, numels


def _error_if_complex(api: str, tree: Any, is_input: bool) -> None:
    for idx, t in enumerate(tree_flatten(tree)[0]):
        if isinstance(t, Tensor) and t.dtype.is_complex:
            which = "inputs" if is_input else "outputs"
            raise RuntimeError(f"{api}: Expected all {which} to be real but received complex tensor at flattened "
                               f"input idx: {idx}")


def jacfwd(func: Callable[..., Any], argnums: Any = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable[..., Any]:
    """``torch.func.jacfwd``: the Jacobian of ``func`` with respect to its ``argnums`` inputs in forward mode, by
    ``vmap`` of ``jvp`` over the columns of an identity matrix (Note [Forward-mode transforms])."""

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        _error_if_complex("jacfwd", args, True)
        primals = _slice_argnums(args, argnums)
        flat_primals, primals_spec = tree_flatten(primals)
        flat_basis, numels = _standard_basis(flat_primals)
        basis = tree_unflatten(flat_basis, primals_spec)

        def push_jvp(b: Any) -> Any:
            out = _jvp_with_argnums(func, args, b, argnums, has_aux=has_aux)
            _error_if_complex("jacfwd", out[0], False)
            return (out[1], out[2]) if has_aux else out[1]
        results = vmap(push_jvp, randomness=randomness)(basis)
        aux: Any = None
        if has_aux:
            results, aux = results
            flat_aux, aux_spec = tree_flatten(aux)
            aux = tree_unflatten([a[0] if isinstance(a, Tensor) else a for a in flat_aux], aux_spec)
        jac_outs, spec = tree_flatten(results)
        per_out = []
        for jac_out in jac_outs:
            parts = jac_out.movedim(0, -1).split(numels, dim=-1)
            ins = [part.reshape(tuple(part.shape[:-1]) + tuple(p.shape)) for p, part in zip(flat_primals, parts)]
            per_out.append(ins[0] if isinstance(argnums, int) else tree_unflatten(ins, primals_spec))
        result = tree_unflatten(per_out, spec)
        return (result, aux) if has_aux else result
    return wrapper


def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``torch.func.linearize``: ``(func(*primals), jvp_fn)``, ``jvp_fn(*tangents)`` giving the Jacobian-vector
    product at ``primals``. PyTorch traces the tangent computation once into a graph; ember's ``jvp_fn`` runs ``jvp``
    again at the same primals (the same values; for many tangents at once, ``vmap(jvp_fn)`` batches them)."""
    output = func(*primals)
    _, output_spec = tree_flatten(output)
    flat_primals, primals_argspec = tree_flatten(primals)
    meta = [(tuple(p.shape), p.device, p.dtype) for p in flat_primals]
    frozen = tuple(p.detach() for p in flat_primals)

    def jvp_fn(*tangents: Any) -> Any:
        flat_tangents, tangent_argspec = tree_flatten(tangents)
        if tangent_argspec != primals_argspec:
            raise RuntimeError(f"Expected the tangents {tangent_argspec} to have the same argspec as the primals "
                               f"{primals_argspec}")
        for idx, (t, (shape, device, dtype)) in enumerate(zip(flat_tangents, meta)):
            if tuple(t.shape) != shape:
                raise RuntimeError(f"tangent:{idx} with shape {t.shape} in flattened pytree doesn't match the shape "
                                   f"{ember.Size(shape)} of the corresponding primal.")
            if t.device != device:
                raise RuntimeError(f"tangent:{idx} with device {t.device} in flattened pytree doesn't match the "
                                   f"device {device} of the corresponding primal.")
            if t.dtype != dtype:
                raise RuntimeError(f"tangent:{idx} with dtype {t.dtype} in flattened pytree doesn't match the dtype "
                                   f"{dtype} of the corresponding primal.")
        args = tree_unflatten(list(frozen), primals_argspec)
        _, out_t = jvp(func, tuple(args), tuple(tangents))
        return tree_unflatten(tree_flatten(out_t)[0], output_spec)
    return output, jvp_fn
