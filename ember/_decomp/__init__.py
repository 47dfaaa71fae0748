"""Decomposition tables (``torch._decomp``): ATen overloads written in other, more basic ATen overloads.

Note [Decompositions]
A decomposition is a Python function registered for one or more ``OpOverload``s (``register_decomposition``).
``make_fx(f, decomposition_table=...)`` runs it in place of the operator, under the tracer, so the graph holds the
ops it is written in (Note [make_fx]). ``core_aten_decompositions()`` is the table that lowers every operator
registered here to the core set a backend has to implement: views become ``permute`` / ``view`` / ``alias``, the
pointwise backward ops (``tanh_backward``, ``threshold_backward``, ``gelu_backward``, ...) and losses become the
pointwise arithmetic they are, ``*_like`` factories become ``full`` / ``empty`` with explicit options. The
formulas are PyTorch's (``torch/_decomp/decompositions.py``, ``torch/_refs``), written in ember's public API,
so a graph decomposed by either framework calls the same ops.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import ember
from ember._ops import OpOverload, OpOverloadPacket, ops
from ember.c10.dtype import float32

__all__ = ["decomposition_table", "register_decomposition", "get_decompositions", "core_aten_decompositions"]

aten = ops.aten
decomposition_table: dict[OpOverload, Callable[..., Any]] = {}


def _overloads(op: Any) -> list[OpOverload]:
    if isinstance(op, OpOverloadPacket):
        return list(op._overloads)
    if isinstance(op, OpOverload):
        return [op]
    raise TypeError(f"expected an OpOverload or OpOverloadPacket, got {op!r}")


def register_decomposition(aten_op: Any, registry: dict[Any, Callable[..., Any]] | None = None, *,
                           type: str = "post_autograd", unsafe: bool = False) -> Callable[..., Any]:  # noqa: A002
    """Decorator: register ``fn`` as the decomposition of ``aten_op`` (an overload, a packet -- every overload --
    or a list of them)."""
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        table = decomposition_table if registry is None else registry
        ops_ = aten_op if isinstance(aten_op, (list, tuple)) else [aten_op]
        for op in ops_:
            for o in _overloads(op):
                if o in table and registry is None:
                    raise RuntimeError(f"duplicate registrations for {o}")
                table[o] = fn
        return fn
    return register


def get_decompositions(aten_ops: Iterable[Any], type: str = "post_autograd") -> dict[OpOverload, Callable[..., Any]]:  # noqa: A002
    """The registered decompositions of ``aten_ops`` (packets stand for all their overloads)."""
    out: dict[OpOverload, Callable[..., Any]] = {}
    for op in aten_ops:
        for o in _overloads(op):
            if o in decomposition_table:
                out[o] = decomposition_table[o]
    return out


def core_aten_decompositions() -> dict[OpOverload, Callable[..., Any]]:
    """Every decomposition registered here: what lowers ember's operators to the core ATen set."""
    return dict(decomposition_table)


# --------------------------------------------------------------------------------------------------- views
@register_decomposition(aten.t.default)
def t(self: Any) -> Any:
    if self.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    return ember.transpose(self, 0, 0 if self.dim() < 2 else 1)


@register_decomposition(aten.transpose.int)
def transpose(self: Any, dim0: int, dim1: int) -> Any:
    n = self.dim()
    d0, d1 = (dim0 % n, dim1 % n) if n else (0, 0)
    if n <= 1 or d0 == d1:
        return aten.alias.default(self)
    perm = list(range(n))
    perm[d0], perm[d1] = d1, d0
    return ember.permute(self, perm)


@register_decomposition(aten._reshape_alias.default)
def _reshape_alias(self: Any, size: Any, *stride: Any) -> Any:
    return aten.view.default(self, list(size))


@register_decomposition(aten._unsafe_view.default)
def _unsafe_view(self: Any, size: Any) -> Any:
    return aten.view.default(self, list(size))


@register_decomposition(aten.split.Tensor)
def split(self: Any, split_size: int, dim: int = 0) -> Any:
    """``split`` by one size as ``split_with_sizes`` (the last piece takes what is left)."""
    dim_size = self.shape[dim]
    if split_size == 0:
        if dim_size != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {dim_size}")
        return (aten.alias.default(self),)
    chunks = max((dim_size + split_size - 1) // split_size, 1)
    sizes = [split_size] * chunks
    sizes[-1] = split_size - (split_size * chunks - dim_size)
    return aten.split_with_sizes.default(self, sizes, dim)


@register_decomposition(aten.detach.default)
def detach(self: Any) -> Any:
    return aten.alias.default(self)


# --------------------------------------------------------------------------------------------- reductions
@register_decomposition(aten.sum.default)
def sum_default(self: Any, *, dtype: Any = None) -> Any:
    return aten.sum.dim_IntList(self, [], dtype=dtype)


# ------------------------------------------------------------------------------------------------ factories
def _like_options(self: Any, dtype: Any, device: Any) -> dict[str, Any]:
    return {"dtype": self.dtype if dtype is None else dtype, "layout": ember.strided,
            "device": self.device if device is None else device, "pin_memory": False}


@register_decomposition(aten.zeros_like.default)
def zeros_like(self: Any, *, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
               memory_format: Any = None) -> Any:
    return aten.full_like.default(self, 0, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
                                  memory_format=memory_format)


@register_decomposition(aten.ones_like.default)
def ones_like(self: Any, *, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
              memory_format: Any = None) -> Any:
    return aten.full_like.default(self, 1, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
                                  memory_format=memory_format)


@register_decomposition(aten.new_zeros.default)
def new_zeros(self: Any, size: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
              pin_memory: Any = None) -> Any:
    return aten.full.default(list(size), 0, **_like_options(self, dtype, device))


@register_decomposition(aten.new_ones.default)
def new_ones(self: Any, size: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
             pin_memory: Any = None) -> Any:
    return aten.full.default(list(size), 1, **_like_options(self, dtype, device))


@register_decomposition(aten.new_empty.default)
def new_empty(self: Any, size: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
              pin_memory: Any = None) -> Any:
    return aten.empty.memory_format(list(size), **_like_options(self, dtype, device))


@register_decomposition(aten.zeros.default)
def zeros(size: Any, *, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None) -> Any:
    return aten.full.default(list(size), 0, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory)


@register_decomposition(aten.ones.default)
def ones(size: Any, *, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None) -> Any:
    return aten.full.default(list(size), 1, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory)


# ---------------------------------------------------------------------------------------------- random
@register_decomposition(aten.dropout.default)
def dropout(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """``native_dropout`` when it drops anything, else a copy (PyTorch's decomposition: eager returns the input
    itself, a traced program a new tensor)."""
    if train and p != 0:
        return aten.native_dropout.default(input, p, train)[0]
    return aten.clone.default(input)


# -------------------------------------------------------------------------------------------- arithmetic
@register_decomposition(aten.masked_fill.Scalar)
def masked_fill_scalar(self: Any, mask: Any, value: Any) -> Any:
    fill = aten.scalar_tensor.default(value, dtype=self.dtype, layout=ember.strided, device=self.device)
    return aten.where.self(mask, fill, self)


@register_decomposition(aten.masked_fill.Tensor)
def masked_fill_tensor(self: Any, mask: Any, value: Any) -> Any:
    if value.dim() != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.dim()} dimension(s).")
    return aten.where.self(mask, value.to(self.dtype), self)


@register_decomposition([aten.rsub.Tensor, aten.rsub.Scalar])
def rsub(self: Any, other: Any, alpha: Any = 1) -> Any:
    return ember.sub(other, self, alpha=alpha)


@register_decomposition(aten.addcmul.default)
def addcmul(self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
    return self + value * tensor1 * tensor2 if value != 1 else self + tensor1 * tensor2


@register_decomposition(aten.addcdiv.default)
def addcdiv(self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
    return self + value * (tensor1 / tensor2) if value != 1 else self + tensor1 / tensor2


# ---------------------------------------------------------------------------------------- activations
@register_decomposition(aten.silu.default)
def silu(self: Any) -> Any:
    return self * ember.sigmoid(self)


def _conj(x: Any) -> Any:
    """``conj_physical``, which PyTorch's decompositions call: for a real tensor it is the tensor itself (a
    CompositeImplicit op there, so no call is recorded)."""
    return x.conj_physical() if x.is_complex() else x


@register_decomposition(aten.tanh_backward.default)
def tanh_backward(out_grad: Any, y: Any) -> Any:
    return out_grad * _conj(1 - y * y)


@register_decomposition(aten.sigmoid_backward.default)
def sigmoid_backward(out_grad: Any, y: Any) -> Any:
    return out_grad * _conj(y * (1 - y))


@register_decomposition(aten.threshold_backward.default)
def threshold_backward(grad_output: Any, self: Any, threshold: Any) -> Any:
    return ember.where(self <= threshold, 0, grad_output)


@register_decomposition(aten.silu_backward.default)
def silu_backward(grad_output: Any, self: Any) -> Any:
    sigmoid = ember.sigmoid(self)
    return grad_output * sigmoid * (1 + self * (1 - sigmoid))


@register_decomposition(aten.leaky_relu_backward.default)
def leaky_relu_backward(grad_output: Any, self: Any, negative_slope: Any, self_is_result: bool) -> Any:
    return ember.where(self > 0, grad_output, grad_output * negative_slope)


@register_decomposition(aten.gelu_backward.default)
def gelu_backward(grad: Any, self: Any, approximate: str = "none") -> Any:
    sqrt2, sqrt1_2, two_sqrtpi = math.sqrt(2.0), math.sqrt(0.5), 2.0 / math.sqrt(math.pi)
    if approximate == "tanh":
        beta, kappa = sqrt2 * two_sqrtpi * 0.5, 0.044715
        x_sq = self * self
        x_cube = x_sq * self
        inner = beta * (self + kappa * x_cube)
        tanh_inner = ember.tanh(inner)
        left = 0.5 * self
        right = 1 + tanh_inner
        left_derivative = 0.5 * right
        tanh_derivative = 1 - tanh_inner * tanh_inner
        inner_derivative = beta * (1 + 3 * kappa * x_sq)
        right_derivative = left * tanh_derivative * inner_derivative
        return grad * (left_derivative + right_derivative)
    kAlpha = sqrt1_2
    kBeta = two_sqrtpi * sqrt1_2 * 0.5
    cdf = 0.5 * (1 + ember.erf(self * kAlpha))
    pdf = kBeta * ember.exp(self * self * -0.5)
    return grad * (cdf + self * pdf)


@register_decomposition(aten._softmax_backward_data.default)
def _softmax_backward_data(grad_output: Any, output: Any, dim: int, input_dtype: Any) -> Any:
    new_grad_output = grad_output * output
    grad_input = new_grad_output - output * ember.sum(new_grad_output, dim=dim, keepdim=True)
    if grad_input.dtype != input_dtype:
        grad_input = grad_input.to(input_dtype)
    return grad_input.contiguous()


@register_decomposition(aten._log_softmax_backward_data.default)
def _log_softmax_backward_data(grad_output: Any, output: Any, dim: int, input_dtype: Any) -> Any:
    grad_input = grad_output - ember.exp(output) * ember.sum(grad_output, dim=dim, keepdim=True)
    return grad_input if grad_input.dtype == input_dtype else grad_input.to(input_dtype)


# ---------------------------------------------------------------------------------------------- norms
@register_decomposition(aten.native_layer_norm_backward.default)
def native_layer_norm_backward(grad_out: Any, input: Any, normalized_shape: Any, mean: Any, rstd: Any,  # noqa: A002
                               weight: Any, bias: Any, output_mask: Any) -> Any:
    """The three gradients of layer norm written in pointwise ops and sums (PyTorch's decomposition): with
    x_hat = (x - mean) rstd and g = grad * weight over the N normalized elements,
    d_input = rstd / N (N g - sum(g) - x_hat sum(g x_hat)), d_weight = sum(grad x_hat), d_bias = sum(grad)."""
    cdt = float32 if input.dtype in (ember.float16, ember.bfloat16) else input.dtype
    grad_c, input_c, weight_c, bias_c = (x.to(cdt, memory_format=ember.contiguous_format) if x is not None else None
                                         for x in (grad_out, input, weight, bias))
    shape, ndim = tuple(input.shape), input.dim()
    axis = ndim - len(normalized_shape)
    inner = list(range(axis, ndim))
    outer = list(range(axis))
    N = math.prod(shape[axis:])
    M = math.prod(shape[:axis])
    if M == 0 or N == 0:
        return (input.new_zeros(shape) if output_mask[0] else None,
                input.new_zeros(shape[axis:]) if output_mask[1] else None,
                input.new_zeros(shape[axis:]) if output_mask[2] else None)
    while mean.dim() < ndim:
        mean = mean.unsqueeze(-1)
    while rstd.dim() < ndim:
        rstd = rstd.unsqueeze(-1)
    x_hat = (input_c - mean) * rstd
    grad_x_hat = grad_c * weight_c if weight_c is not None else grad_c
    a = grad_x_hat * N
    b = ember.sum(grad_x_hat, inner, True)
    c1 = ember.mul(grad_x_hat, x_hat)
    c2 = ember.sum(c1, inner, True)
    c3 = ember.mul(x_hat, c2)
    inner_sum = a - b - c3
    d_input = d_weight = d_bias = None
    if output_mask[0]:
        d_input = (rstd / N) * inner_sum
    if output_mask[1] and weight_c is not None:
        d_weight = ember.sum(grad_c * x_hat, outer, False) if outer else grad_c * x_hat
    if output_mask[2] and bias_c is not None:
        d_bias = ember.sum(grad_c, outer, False) if outer else grad_c.clone()
    return (None if d_input is None else d_input.to(input.dtype),
            None if d_weight is None else d_weight.to(weight.dtype),
            None if d_bias is None else d_bias.to(bias.dtype))


@register_decomposition(aten.native_batch_norm.default)
def native_batch_norm(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,  # noqa: A002
                      training: bool, momentum: float, eps: float) -> Any:
    """Batch norm in the forms with explicit running statistics (PyTorch's): their mutation is declared, so
    functionalization turns it into outputs (``_native_batch_norm_legit_functional``)."""
    if running_mean is None and running_var is None:
        return aten._native_batch_norm_legit.no_stats(input, weight, bias, training, momentum, eps)
    if running_mean is None or running_var is None:
        raise RuntimeError("running_mean and running_var must either both be None or neither be None")
    if training:
        return aten._native_batch_norm_legit.default(input, weight, bias, running_mean, running_var, training,
                                                     momentum, eps)
    return aten._native_batch_norm_legit_no_training.default(input, weight, bias, running_mean, running_var,
                                                             momentum, eps)

# ------------------------------------------------------------------------------------------------ losses
def _reduce(loss: Any, reduction: int) -> Any:
    if reduction == 1:
        return ember.mean(loss)
    if reduction == 2:
        return ember.sum(loss)
    return loss


@register_decomposition(aten.mse_loss.default)
def mse_loss(self: Any, target: Any, reduction: int = 1) -> Any:
    return _reduce((self - target) ** 2, reduction)


@register_decomposition(aten.mse_loss_backward.default)
def mse_loss_backward(grad_output: Any, input: Any, target: Any, reduction: int) -> Any:  # noqa: A002
    norm = 2.0 / input.numel() if reduction == 1 else 2.0
    return norm * (input - target) * grad_output


@register_decomposition(aten.l1_loss.default)
def l1_loss(self: Any, target: Any, reduction: int = 1) -> Any:
    return _reduce(ember.abs(self - target), reduction)
