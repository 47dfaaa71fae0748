"""``gradcheck`` / ``gradgradcheck`` (mirrors ``torch/autograd/gradcheck.py``): the analytical Jacobian
(one backward per output element) against central finite differences, with PyTorch's defaults
``eps=1e-6, atol=1e-5, rtol=1e-3`` meant for float64 inputs."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ember.aten.sparse.compressed import value_positions
from ember.aten.wrap import tensor_like
from ember.autograd import grad
from ember.autograd.functional import _jacfwd
from ember.c10.dtype import complex128, float64
from ember.c10.memory_format import strided
from ember.c10.tensor_impl import TensorImpl

if TYPE_CHECKING:  # isinstance(x, _Tensor) narrows to the frontend's class for type checkers
    from ember._tensor import Tensor as _Tensor
else:
    _Tensor = TensorImpl  # every ember tensor is one


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x: Any) -> Any:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable_outputs(outs: Any) -> Any:
    return [o for o in outs if hasattr(o, "requires_grad") and o.requires_grad]


def _flat_outputs(func: Any, inputs: Any) -> Any:
    return _as_tuple(func(*inputs))


def _output_values(func: Any, inputs: Any) -> Any:
    """float64 NumPy copies of the differentiable outputs of ``func(*inputs)`` (those that require grad,
    decided with grad mode on: outputs marked non-differentiable, like linalg.lu's permutation, are left out
    as PyTorch's gradcheck leaves them out of the Jacobian), flattened."""
    return [_dense(o.detach()).numpy(force=True).astype(np.float64).reshape(-1)
            for o in _differentiable_outputs(_flat_outputs(func, inputs))]


def _dense(t: Any) -> Any:
    return t.to_dense() if t.layout is not strided else t


# Note [gradcheck of sparse inputs]
# A sparse input is perturbed at its stored elements only (PyTorch's ``masked=True``: the gradient of an element
# it does not hold is not checked): the numerical Jacobian has rows for the stored positions, the analytical one
# (densified) is compared at those rows only. Sparse outputs are compared densified.
def _sparse_positions(t: Any) -> Any:
    return value_positions(t) if t.layout is not strided else None


def _numerical_jacobian(func: Any, inputs: Any, outputs: Any, eps: Any) -> Any:
    """jac[i][j]: d output j / d input i, shape (numel(input), numel(output)), by central differences."""
    jac: list[Any] = []
    for t in inputs:
        if not (isinstance(t, _Tensor) and t.requires_grad):
            jac.append(None)
            continue
        cols = [np.zeros((t.numel(), o.numel())) for o in outputs]
        base = t.data  # shares memory, outside autograd and its version checks
        positions = _sparse_positions(t)
        if positions is not None:     # Note [gradcheck of sparse inputs]: its stored elements, at their rows
            flat = (base._values() if t.is_sparse else base.values()).numpy().reshape(-1)
            places: Any = enumerate(positions)

            def read(place: Any) -> Any:
                return flat[place]

            def write(place: Any, v: Any) -> None:
                flat[place] = v
        else:
            places = ((np.unravel_index(k, tuple(t.shape)) if t.dim() else (), k) for k in range(t.numel()))

            def read(place: Any) -> Any:
                return base[place].item()

            def write(place: Any, v: Any) -> None:
                base[place] = v
        for place, row in places:
            orig = read(place)
            write(place, orig - eps)
            lo = _output_values(func, inputs)
            write(place, orig + eps)
            hi = _output_values(func, inputs)
            write(place, orig)
            for j in range(len(outputs)):
                cols[j][row] = (hi[j] - lo[j]) / (2 * eps)
        jac.append(cols)
    return jac


def _fast_gradcheck(func: Any, inputs: Any, outputs: Any, eps: float, atol: float, rtol: float,
                    raise_exception: bool) -> bool:
    """PyTorch's fast mode: instead of whole Jacobians, compare the scalars v^T J u for one random unit
    vector u per input and one random vector v per output; the analytical side costs one backward per
    output, the numerical side one pair of forward calls per input (a central difference along u)."""
    rng = np.random.default_rng(0)
    vs = [rng.uniform(size=tuple(o.shape)) for o in outputs]
    diff = [(i, t) for i, t in enumerate(inputs) if isinstance(t, _Tensor) and t.requires_grad]
    us = {}
    for i, t in diff:
        u = rng.uniform(size=tuple(t.shape))
        us[i] = u / max(float(np.linalg.norm(u)), 1e-300)
    num = {}
    for i, t in diff:
        base = t.data
        orig = base.clone()
        step = tensor_like(eps * us[i], t)
        base.copy_(orig + step)
        hi = _output_values(func, inputs)
        base.copy_(orig - step)
        lo = _output_values(func, inputs)
        base.copy_(orig)
        for j in range(len(outputs)):
            num[i, j] = float(((hi[j] - lo[j]) / (2 * eps) * vs[j].reshape(-1)).sum())
    tensors = [t for _, t in diff]
    for j, o in enumerate(outputs):
        grads = grad([o], tensors, [tensor_like(vs[j], o)], retain_graph=True, allow_unused=True)
        for (i, _), g in zip(diff, grads):
            a = 0.0 if g is None else float((g.detach().numpy(force=True).astype(np.float64) * us[i]).sum())
            n = num[i, j]
            if not abs(a - n) <= atol + rtol * abs(n):
                return _fail(f"Jacobian mismatch for output {j} with respect to input {i},\nnumerical:{n}\n"
                             f"analytical:{a}\n\nThe above quantities relating the numerical and analytical "
                             "jacobians are computed in fast mode (v^T J u for random vectors u and v). Run "
                             "gradcheck with fast_mode=False to compare the whole Jacobians.", raise_exception)
    return True


def _forward_jacobian(func: Any, inputs: Any, n_out: int) -> Any:
    """jac[i][j] as ``_numerical_jacobian``'s, from forward mode: ``autograd.functional``'s forward-mode Jacobian
    (one jvp per input element) of the outputs that require grad with respect to the inputs that do."""
    keep = [k for k, o in enumerate(_flat_outputs(func, inputs)) if getattr(o, "requires_grad", False)]
    diff = [i for i, t in enumerate(inputs) if isinstance(t, _Tensor) and t.requires_grad]

    def f(*xs: Any) -> Any:
        args = list(inputs)
        for i, x in zip(diff, xs):
            args[i] = x
        every = _flat_outputs(func, tuple(args))
        return tuple(every[k] for k in keep)
    jac = _jacfwd(f, tuple(inputs[i].detach() for i in diff), False, True)   # jac[out][in]: out.shape + in.shape
    out: list[Any] = [None] * len(inputs)
    for col, i in enumerate(diff):
        out[i] = [_as_matrix(jac[j][col], inputs[i].numel()) for j in range(n_out)]
    return out


def _as_matrix(block: Any, n_in: int) -> Any:
    """A Jacobian block of shape out.shape + in.shape as gradcheck's (numel(input), numel(output)) matrix."""
    a = block.detach().numpy(force=True).astype(np.float64)
    return a.reshape(-1, n_in).T if n_in else np.zeros((0, a.size))


def _analytical_jacobian(inputs: Any, outputs: Any) -> Any:
    diff_inputs = [t for t in inputs if isinstance(t, _Tensor) and t.requires_grad]
    jac = {id(t): [np.zeros((t.numel(), o.numel())) for o in outputs] for t in diff_inputs}
    for j, o in enumerate(outputs):
        for k in range(o.numel()):
            onehot = np.zeros(tuple(o.shape))
            onehot.reshape(-1)[k] = 1.0
            seed = tensor_like(onehot, o)
            if o.layout is not strided:     # a sparse output's gradient: the one-hot in its layout
                seed = seed.sparse_mask(o.coalesce() if o.is_sparse else o)
            grads = grad([o], diff_inputs, [seed], retain_graph=True, allow_unused=True)
            for t, gi in zip(diff_inputs, grads):
                if gi is not None:
                    jac[id(t)][j][:, k] = _dense(gi.detach()).numpy(force=True).astype(np.float64).reshape(-1)
    for t in diff_inputs:       # Note [gradcheck of sparse inputs]: the stored positions only
        positions = _sparse_positions(t)
        if positions is not None:
            held = np.zeros(t.numel(), bool)
            held[positions] = True
            for block in jac[id(t)]:
                block[~held] = 0.0
    return jac


def gradcheck(func: Any, inputs: Any, *, eps: Any = 1e-06, atol: Any = 1e-05, rtol: Any = 0.001,
              raise_exception: Any = True, nondet_tol: Any = 0.0, check_undefined_grad: Any = True,
              check_grad_dtypes: Any = False, check_batched_grad: Any = False,
              check_batched_forward_grad: Any = False, check_forward_ad: Any = False,
              check_backward_ad: Any = True, fast_mode: Any = False, masked: Any = None) -> bool:
    """Check the gradients computed by autograd for ``func(*inputs)`` against finite differences: the backward
    mode's (``check_backward_ad``) and the forward mode's (``check_forward_ad``, one jvp per input element)."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    inputs = _as_tuple(inputs)
    for t in inputs:
        if isinstance(t, _Tensor) and t.requires_grad and t.dtype not in (float64, complex128):
            warnings.warn(f"Input #{inputs.index(t)} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are not of double "
                          "precision floating point or complex.", UserWarning, stacklevel=2)
    outputs = _differentiable_outputs(_flat_outputs(func, inputs))
    if not outputs:
        return _fail("gradcheck expects at least one output of func to require grad", raise_exception)
    if fast_mode:
        return _fast_gradcheck(func, inputs, outputs, eps, atol, rtol, raise_exception)
    num = _numerical_jacobian(func, inputs, outputs, eps)
    if check_forward_ad:
        fwd = _forward_jacobian(func, inputs, len(outputs))
        for i, t in enumerate(inputs):
            if num[i] is None:
                continue
            for j in range(len(outputs)):
                a, n = fwd[i][j], num[i][j]
                if not np.allclose(a, n, rtol=rtol, atol=atol):
                    return _fail(f"Jacobian computed with forward mode mismatch for output {j} with respect to "
                                 f"input {i},\nnumerical:{n}\nanalytical:{a}\n", raise_exception)
    if not check_backward_ad:
        return True
    ana = _analytical_jacobian(inputs, outputs)
    for i, t in enumerate(inputs):
        if num[i] is None:
            continue
        for j in range(len(outputs)):
            a, n = ana[id(t)][j], num[i][j]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                return _fail(f"Jacobian mismatch for output {j} with respect to input {i},\nnumerical:{n}\n"
                             f"analytical:{a}\n", raise_exception)
    if nondet_tol == 0.0:  # the backward must be deterministic
        again = _analytical_jacobian(inputs, _differentiable_outputs(_flat_outputs(func, inputs)))
        for t in inputs:
            if id(t) in ana:
                for j in range(len(outputs)):
                    if not np.array_equal(ana[id(t)][j], again[id(t)][j]):
                        return _fail("Backward is not reentrant, i.e., running backward with same input and "
                                     "grad_output multiple times gives different values, although analytical "
                                     "gradient matches numerical gradient.", raise_exception)
    return True


def gradgradcheck(func: Any, inputs: Any, grad_outputs: Any = None, *, eps: Any = 1e-06, atol: Any = 1e-05,
                  rtol: Any = 0.001, gen_non_contig_grad_outputs: Any = False, raise_exception: Any = True,
                  nondet_tol: Any = 0.0, check_undefined_grad: Any = True, check_grad_dtypes: Any = False,
                  check_batched_grad: Any = False, check_fwd_over_rev: Any = False,
                  check_rev_over_rev: Any = True, fast_mode: Any = False, masked: Any = False) -> bool:
    """gradcheck of the function ``(inputs, v) -> v^T J(inputs)``: second derivatives."""
    inputs = _as_tuple(inputs)
    outputs = _differentiable_outputs(_flat_outputs(func, inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(tensor_like(rng.standard_normal(tuple(o.shape)), o).requires_grad_(True)
                             for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, _Tensor) and t.requires_grad]

    def vjp(*args: Any) -> Any:
        xs, vs = args[:n_in], args[n_in:]
        outs = _differentiable_outputs(_flat_outputs(func, xs))
        diff = [xs[i] for i in diff_idx]
        gs = grad(outs, diff, vs, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(vjp, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception,
                     nondet_tol=nondet_tol, fast_mode=fast_mode)


def _fail(msg: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(msg)
    return False
