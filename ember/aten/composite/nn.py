"""Neural-network ops written in other ops: relu6, softmax / log_softmax with a dtype, layer_norm and
batch_norm over their native kernels (``Activation.cpp``, ``SoftMax.cpp``, ``Normalization.cpp``)."""
from __future__ import annotations

from typing import Any, Callable

import math

import numpy as np

from ember._generated import aten
from ember.aten.context import global_context
from ember.aten.dispatcher import is_tensor_subclass_like, python_key_used
from ember.aten.kernels.grid_sampler import affine_base
from ember.aten.kernels.padding import pad_source_index
from ember.aten.wrap import new_tensor, tensor_from_values, tensor_like
from ember.c10.dtype import scalar_type_name
from ember.c10 import forward_mode as _fw
from ember.c10.device import CPU
from ember.c10.memory_format import strided
from ember.c10.dispatch_key import KS_CPU
from ember.c10.dtype import bool_ as _bool, finfo, float32 as _float32, float64 as _float64, int64 as _int64
from ember.c10.dtype import uint8 as _uint8


def relu6(self: Any) -> Any:
    return aten.hardtanh(self, 0, 6)


# (written as PyTorch's CompositeImplicitAutograd versions are, so autograd records the same nodes:
# ``x @ y`` shows MmBackward0, ``x.narrow(...)`` SliceBackward0, ``x.movedim(...)`` PermuteBackward0)
def softmax_int(self: Any, dim: Any, dtype: Any = None) -> Any:
    x = self if dtype is None else self.to(dtype)
    return aten._softmax(x, dim, False)


def log_softmax_int(self: Any, dim: Any, dtype: Any = None) -> Any:
    x = self if dtype is None else self.to(dtype)
    return aten._log_softmax(x, dim, False)


def layer_norm(input: Any, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: Any = 1e-05,  # noqa: A002
               cudnn_enable: Any = True) -> Any:
    return aten.native_layer_norm(input, normalized_shape, weight, bias, eps)[0]


def batch_norm(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any, training: Any,  # noqa
               momentum: Any, eps: Any, cudnn_enabled: Any) -> Any:
    """PyTorch's _batch_norm_impl_index on the CPU: an empty input is passed through (scaled by the first
    channel's weight and bias, which keeps the graph); anything else is native_batch_norm. PyTorch makes an empty
    byte "reserve" tensor first (cuDNN's workspace, unused on the CPU): only a dispatch mode can see it, so it is
    made once the Python key is in use, and a plain call pays nothing for it."""
    if python_key_used[0]:
        aten.empty_memory_format((0,), dtype=_uint8, layout=strided, device=input.device)
    if input.numel() == 0:
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    return aten.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)[0]


def native_batch_norm_legit(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,  # noqa: A002
                            training: bool, momentum: float, eps: float) -> Any:
    """``_native_batch_norm_legit``: native_batch_norm with its running statistics present (updated in place when
    training) -- the form PyTorch's functional IR writes batch norm in."""
    return aten.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)


def native_batch_norm_legit_no_stats(input: Any, weight: Any, bias: Any, training: bool,  # noqa: A002
                                     momentum: float, eps: float) -> Any:
    return aten.native_batch_norm(input, weight, bias, None, None, training, momentum, eps)


def native_batch_norm_legit_functional(input: Any, weight: Any, bias: Any, running_mean: Any,  # noqa: A002
                                       running_var: Any, training: bool, momentum: float, eps: float) -> Any:
    """``_native_batch_norm_legit`` without mutation: the updated running statistics are two more outputs."""
    new_mean, new_var = aten.clone(running_mean), aten.clone(running_var)
    out, save_mean, save_invstd = aten.native_batch_norm(input, weight, bias, new_mean, new_var, training, momentum,
                                                         eps)
    return out, save_mean, save_invstd, new_mean, new_var


def native_batch_norm_legit_no_training(input: Any, weight: Any, bias: Any, running_mean: Any,  # noqa: A002
                                        running_var: Any, momentum: float, eps: float) -> Any:
    return aten.native_batch_norm(input, weight, bias, running_mean, running_var, False, momentum, eps)


def _conv_nd(input: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any,  # noqa: A002
             groups: Any, nd: int) -> Any:
    """``conv<n>d``: ``convolution`` on a batched input (an unbatched one gets a batch of one), ``padding`` a size per
    dimension or ``'valid'`` / ``'same'`` (asymmetric 'same' padding pads the extra element on the right first)."""
    name = f"conv{nd}d"
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input of "
                           f"size: {list(input.shape)}")
    batched = input.dim() == nd + 2
    x = input if batched else aten.unsqueeze(input, 0)
    stride, dilation = _n_tuple(stride, nd), _n_tuple(dilation, nd)
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if padding == "valid":
            padding = (0,) * nd
        else:
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            total = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
            left = [t // 2 for t in total]
            if any(t % 2 for t in total):
                pad: list[int] = []
                for t, lo in zip(reversed(total), reversed(left)):
                    pad += [0, t - 2 * lo]
                x = aten.constant_pad_nd(x, tuple(pad), 0)
            padding = tuple(left)
    else:
        padding = _n_tuple(padding, nd)
    out = aten.convolution(x, weight, bias, stride, padding, dilation, False, (0,) * nd, groups)
    return out if batched else aten.squeeze_dim(out, 0)


def _n_tuple(v: Any, n: int) -> tuple[int, ...]:
    if isinstance(v, (list, tuple)):
        return tuple(v) if len(v) != 1 else tuple(v) * n
    return (v,) * n


def conv1d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,  # noqa
           groups: Any = 1) -> Any:
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,  # noqa
           groups: Any = 1) -> Any:
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,  # noqa
           groups: Any = 1) -> Any:
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 3)


conv1d_padding, conv2d_padding, conv3d_padding = conv1d, conv2d, conv3d


def linear(input: Any, weight: Any, bias: Any = None) -> Any:  # noqa: A002
    """``input @ weight.T + bias`` as PyTorch's ``at::linear`` writes it: one ``addmm`` for a matrix input with a
    bias; a contiguous input of any other rank with a 1-d bias folded to a matrix around that ``addmm``
    (``view``, ``t``, ``addmm``, ``view``); otherwise ``matmul`` and then the bias added."""
    if input.dim() == 2 and bias is not None:
        return aten.addmm(bias, input, aten.t(weight))
    if bias is not None and input.is_contiguous() and (input.dim() == 3 or bias.dim() == 1):
        sizes = tuple(input.shape)
        rows = math.prod(sizes[:-1])
        out = aten.addmm(bias, aten.reshape(input, (rows, sizes[-1])), aten.t(weight))
        return aten.view(out, sizes[:-1] + (out.shape[1],))
    out = aten.matmul(input, aten.t(weight))
    if bias is None:
        return out
    return aten.add_Tensor(out, bias) if is_tensor_subclass_like(bias) else aten.add__Tensor(out, bias)


def apply_loss_reduction(loss: Any, reduction: Any) -> Any:
    """PyTorch's ``apply_loss_reduction``: at::Reduction 0 (none), 1 (mean) or 2 (sum)."""
    return loss.mean() if reduction == 1 else loss.sum() if reduction == 2 else loss


def l1_loss(self: Any, target: Any, reduction: Any = 1) -> Any:
    """``|self - target|`` reduced (PyTorch's composite ``l1_loss``: AbsBackward0 / MeanBackward0 / SumBackward0)."""
    return apply_loss_reduction((self - target).abs(), reduction)


# ------------------------------------------------------------------------------ nll_loss / cross_entropy
# (``LossNLL.cpp``: nll_loss and nll_loss2d take the output of their *_forward kernel; nll_loss_nd picks one by the
# input's rank and views other ranks as 4-d; cross_entropy_loss is log_softmax + nll_loss_nd, or its
# class-probability and label-smoothing forms.)
def nll_loss(self: Any, target: Any, weight: Any = None, reduction: Any = 1, ignore_index: Any = -100) -> Any:
    return aten.nll_loss_forward(self, target, weight, reduction, ignore_index)[0]


def nll_loss2d(self: Any, target: Any, weight: Any = None, reduction: Any = 1, ignore_index: Any = -100) -> Any:
    return aten.nll_loss2d_forward(self, target, weight, reduction, ignore_index)[0]


def nll_loss_nd(self: Any, target: Any, weight: Any = None, reduction: Any = 1, ignore_index: Any = -100) -> Any:
    if self.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {self.dim()})")
    if self.dim() != 1 and self.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({self.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    if self.dim() in (1, 2):
        return aten.nll_loss(self, target, weight, reduction, ignore_index)
    if self.dim() == 4:
        return aten.nll_loss2d(self, target, weight, reduction, ignore_index)
    n, c = self.shape[0], self.shape[1]
    out_size = (n,) + tuple(self.shape[2:])
    if tuple(target.shape[1:]) != tuple(self.shape[2:]):
        raise RuntimeError(f"Expected target size [{', '.join(map(str, out_size))}], got "
                           f"[{', '.join(map(str, target.shape))}]")
    x = self.contiguous()
    t = target.contiguous()
    x = aten.view(x, (n, c, 1, -1) if x.numel() > 0 else (n, c, 0, 0))
    t = aten.view(t, (n, 1, -1) if t.numel() > 0 else (n, 0, 0))
    out = aten.nll_loss2d(x, t, weight, reduction, ignore_index)
    return out if reduction != 0 else aten.view(out, out_size)


def _class_weight_view(weight: Any, ndim: Any, class_dim: Any) -> Any:
    shape = [1] * ndim
    shape[class_dim] = weight.shape[0]
    return aten.view(weight, tuple(shape))


def _cross_entropy_prob_target(self: Any, target: Any, weight: Any, reduction: Any, label_smoothing: Any) -> Any:
    class_dim = 0 if self.dim() == 1 else 1
    c = self.shape[class_dim]
    if weight is not None and (weight.dim() != 1 or weight.numel() != c):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {c} classes or no classes "
                           f"but got weight tensor of shape: [{', '.join(map(str, weight.shape))}]")
    logp = aten.log_softmax_int(self, class_dim, self.dtype)
    if label_smoothing > 0.0:
        if label_smoothing > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        target = target * (1 - label_smoothing) + label_smoothing / c
    terms = logp * target
    if weight is not None:
        terms = terms * (_class_weight_view(weight, logp.dim(), 1) if logp.dim() > 1 else weight)
    if reduction == 1:
        if logp.numel() == 0:
            return -(terms.sum().fill_(float("nan")))
        return -terms.sum() / (logp.numel() // c)
    if reduction == 2:
        return -terms.sum()
    if reduction == 0:
        return -terms.sum(class_dim)
    raise RuntimeError(f"Invalid reduction type encountered in cross_entropy: {reduction}")


def _cross_entropy_label_smoothing(self: Any, target: Any, weight: Any, reduction: Any, ignore_index: Any,
                                   label_smoothing: Any) -> Any:
    class_dim = 0 if self.dim() == 1 else 1
    logp = aten.log_softmax_int(self, class_dim, self.dtype)
    nll = aten.nll_loss_nd(logp, target, weight, reduction, ignore_index)
    c = logp.shape[class_dim]
    if weight is not None:
        smooth = -(logp * _class_weight_view(weight, logp.dim(), class_dim)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    ignored = target == ignore_index
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == 1:
        if weight is not None:  # the weights of the targets, ignored ones masked out (no data-dependent shape)
            picked = aten.gather(weight, 0, target.masked_fill(ignored, 0).flatten())
            ret = smooth.sum() / picked.masked_fill(ignored.flatten(), 0).sum()
        else:
            ret = smooth.sum() / (~ignored).sum()
    elif reduction == 2:
        ret = smooth.sum()
    elif reduction == 0:
        ret = smooth
    else:
        raise RuntimeError(f"Invalid reduction type encountered in cross_entropy: {reduction}")
    return (1 - label_smoothing) * nll + ret * (label_smoothing / c)


def cross_entropy_loss(self: Any, target: Any, weight: Any = None, reduction: Any = 1, ignore_index: Any = -100,
                       label_smoothing: Any = 0.0) -> Any:
    """Class indices: ``nll_loss_nd(log_softmax(self))``; a target shaped as the input holds class probabilities."""
    if tuple(self.shape) == tuple(target.shape):
        if not target.dtype.is_floating_point:
            raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                               f"{scalar_type_name(target.dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _cross_entropy_prob_target(self, target, weight, reduction, label_smoothing)
    if label_smoothing > 0.0:
        if label_smoothing > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        return _cross_entropy_label_smoothing(self, target, weight, reduction, ignore_index, label_smoothing)
    class_dim = 0 if self.dim() == 1 else 1
    return aten.nll_loss_nd(aten.log_softmax_int(self, class_dim, self.dtype), target, weight, reduction,
                            ignore_index)


# ------------------------------------------------------------------------------ pooling
def _check1d(name: Any, arg: Any, v: Any) -> Any:
    v = (v,) if isinstance(v, int) else tuple(v)
    if len(v) != 1:
        raise RuntimeError(f"{name}() argument '{arg}' should contain one int (got {len(v)})")
    return v


def avg_pool1d(self: Any, kernel_size: Any, stride: Any = (), padding: Any = 0, ceil_mode: Any = False,
               count_include_pad: Any = True) -> Any:
    """``avg_pool2d`` over a unit height (``Pooling.cpp``)."""
    stride = kernel_size if not isinstance(stride, int) and len(stride) == 0 else stride
    if not 2 <= self.dim() <= 3:
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {self.dim()}-dimensional tensor for argument #1 "
                           "'self' (while checking arguments for avg_pool1d)")
    k = _check1d("avg_pool1d", "kernel_size", kernel_size)
    s = _check1d("avg_pool1d", "stride", stride)
    p = _check1d("avg_pool1d", "padding", padding)
    out = aten.avg_pool2d(aten.unsqueeze(self, -2), (1, k[0]), (1, s[0]), (0, p[0]), ceil_mode, count_include_pad)
    return aten.squeeze_dim(out, -2)


# ------------------------------------------------------------------------------ upsampling
def _upsample_vec_args(input: Any, output_size: Any, scale_factors: Any) -> Any:  # noqa: A002
    """PyTorch's ``compute_output_size`` / ``get_scale_value`` for the ``.vec`` overloads."""
    nd = input.dim() - 2
    if (output_size is None) == (scale_factors is None):
        raise RuntimeError("Must specify exactly one of output_size and scale_factors")
    if output_size is not None:
        return tuple(output_size), [None] * nd
    if len(scale_factors) != nd:
        raise RuntimeError(f"It is expected scale_factors equals to {nd}, but got size {len(scale_factors)}")
    return tuple(int(input.shape[2 + i] * float(f)) for i, f in enumerate(scale_factors)), list(scale_factors)


def _def_upsample_vec(op: Any, interp: Any) -> Any:
    """The ``.vec`` overload of an upsample op: an output size or per-dim scale factors, then the op."""
    fn = getattr(aten, op)
    vec: Callable[..., Any]
    if interp:
        def vec(input: Any, output_size: Any, align_corners: Any, scale_factors: Any) -> Any:  # noqa: A002
            osize, scales = _upsample_vec_args(input, output_size, scale_factors)
            return fn(input, osize, align_corners, *scales)
    else:
        def vec(input: Any, output_size: Any, scale_factors: Any) -> Any:  # noqa: A002
            osize, scales = _upsample_vec_args(input, output_size, scale_factors)
            return fn(input, osize, *scales)
    vec.__name__ = vec.__qualname__ = op.lstrip("_") + "_vec"
    globals()[vec.__name__] = vec


for _nd in (1, 2, 3):
    _def_upsample_vec(f"upsample_nearest{_nd}d", False)
    _def_upsample_vec(f"_upsample_nearest_exact{_nd}d", False)
for _op in ("upsample_linear1d", "upsample_bilinear2d", "upsample_bicubic2d", "upsample_trilinear3d",
            "_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa", "_upsample_lanczos2d_aa"):
    _def_upsample_vec(_op, True)


# ------------------------------------------------------------------------------ adaptive pooling
def adaptive_avg_pool1d(self: Any, output_size: Any) -> Any:
    """``adaptive_avg_pool2d`` over a unit height (``AdaptiveAveragePooling.cpp``)."""
    if not 2 <= self.dim() <= 3:
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {self.dim()}-dimensional tensor for argument #1 "
                           "'self' (while checking arguments for adaptive_avg_pool1d)")
    o = _check1d("adaptive_avg_pool1d", "output_size", output_size)
    return aten.squeeze_dim(aten.adaptive_avg_pool2d(aten.unsqueeze(self, -2), (1, o[0])), -2)


def _adaptive_avg(self: Any, output_size: Any, nd: Any) -> Any:
    name = f"adaptive_avg_pool{nd}d"
    output_size = tuple(output_size)
    if len(output_size) != nd:
        raise RuntimeError(f"{name}: output_size must be {nd}")
    if any(o < 0 for o in output_size):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{', '.join(map(str, output_size))}}}")
    if all(o == 1 for o in output_size) and not self.is_quantized:  # the mean over the spatial dims (as PyTorch)
        return aten.mean_dim(self, tuple(range(-nd, 0)), True)
    return (aten._adaptive_avg_pool2d if nd == 2 else aten._adaptive_avg_pool3d)(self, output_size)


def adaptive_avg_pool2d(self: Any, output_size: Any) -> Any:
    return _adaptive_avg(self, output_size, 2)


def adaptive_avg_pool3d(self: Any, output_size: Any) -> Any:
    return _adaptive_avg(self, output_size, 3)


def adaptive_max_pool1d(self: Any, output_size: Any) -> Any:
    if not 2 <= self.dim() <= 3:
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {self.dim()}-dimensional tensor for argument #1 "
                           "'self' (while checking arguments for adaptive_max_pool1d)")
    o = _check1d("adaptive_max_pool1d", "output_size", output_size)
    v, i = aten.adaptive_max_pool2d(aten.unsqueeze(self, -2), (1, o[0]))
    return aten.squeeze_dim(v, -2), aten.squeeze_dim(i, -2)


# ------------------------------------------------------------------------------ embedding_bag
def embedding_bag_padding_idx(weight: Any, indices: Any, offsets: Any, scale_grad_by_freq: Any, mode: Any,
                              sparse: Any, per_sample_weights: Any, include_last_offset: Any, padding_idx: Any) -> Any:
    """``EmbeddingBag.cpp``'s ``embedding_bag``: a negative padding_idx counts from the end; None is no padding."""
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, {-num} through {num - 1}, but "
                               f"got {padding_idx}")
        padding_idx = padding_idx + num if padding_idx < 0 else padding_idx
    else:
        padding_idx = -1
    # a weight that needs no gradient takes the forward-only operator (the same kernel), as in PyTorch
    # (PyTorch's test reads no grad mode: a weight that requires grad or is dual)
    op = aten._embedding_bag if weight._rg or _fw.state.on and _fw.dual(weight) else \
        aten._embedding_bag_forward_only
    return op(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights, include_last_offset,
              padding_idx)


def embedding_bag(weight: Any, indices: Any, offsets: Any, scale_grad_by_freq: Any = False, mode: Any = 0,
                  sparse: Any = False, per_sample_weights: Any = None, include_last_offset: Any = False) -> Any:
    return embedding_bag_padding_idx(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                                     include_last_offset, None)


def embedding_bag_backward(grad: Any, indices: Any, offsets: Any, offset2bag: Any, bag_size: Any,
                           maximum_indices: Any, num_weights: Any, scale_grad_by_freq: Any, mode: Any,
                           sparse: Any, per_sample_weights: Any, padding_idx: Any = -1) -> Any:
    """The weight gradient of _embedding_bag, in ops (so its own gradient is automatic): each index's row gets its
    bag's gradient (over the bag size for mean, times its per-sample weight); for max, each bag's maximum row per
    column gets it."""
    d = grad.shape[1]
    zeros = grad.new_zeros((num_weights, d))
    if mode == 2:
        live = (bag_size > 0).unsqueeze(1).to(grad.dtype)
        return zeros.scatter_add(0, maximum_indices, grad * live)
    g = aten.index_select(grad, 0, offset2bag)
    if mode == 1:
        g = g / aten.index_select(bag_size, 0, offset2bag).clamp(min=1).unsqueeze(1).to(grad.dtype)
    if per_sample_weights is not None:
        g = g * per_sample_weights.unsqueeze(1)
    idx = indices.reshape(-1).to(offset2bag.dtype)
    if sparse:      # a COO gradient, one row per looked-up index (PyTorch's _embedding_bag_sparse_backward)
        if scale_grad_by_freq:
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
        if padding_idx >= 0:
            keep = idx != padding_idx
            idx, g = idx[keep], g[keep]
        return aten._sparse_coo_tensor_unsafe(idx.reshape(1, -1).long(), g, (num_weights, d))
    if padding_idx >= 0:
        g = g * (idx != padding_idx).unsqueeze(1).to(grad.dtype)
    if scale_grad_by_freq:
        # PyTorch's CPU kernel (_embedding_bag_dense_backward_cpu_sum_mean) scales the entries of the k-th distinct
        # index by 1 / counts[sorted_indices[k]] -- the count of the value at position k of the sorted indices, not
        # of the index itself; ember does the same, so that gradients match PyTorch's.
        counts = grad.new_zeros((num_weights,)).index_add(0, idx, aten.ones_like(idx, dtype=grad.dtype))
        rank = aten._unique2(idx, True, True, False)[1]
        sorted_idx = aten.sort(idx)[0]
        g = g / aten.index_select(counts, 0, aten.index_select(sorted_idx, 0, rank)).unsqueeze(1)
    return zeros.index_add(0, idx, g)


def embedding_bag_per_sample_weights_backward(grad: Any, weight: Any, indices: Any, offsets: Any,
                                              offset2bag: Any, mode: Any, padding_idx: Any = -1) -> Any:
    if mode != 0:
        raise RuntimeError("embedding_bag_backward: per_sample_weights only supported for mode='sum'")
    idx = indices.reshape(-1).to(offset2bag.dtype)
    out = (aten.index_select(grad, 0, offset2bag) * aten.index_select(weight, 0, idx)).sum(1)
    if padding_idx >= 0:
        out = out * (idx != padding_idx).to(out.dtype)
    return out


# ------------------------------------------------------------------------------ grid sampling
def grid_sampler(input: Any, grid: Any, interpolation_mode: Any, padding_mode: Any, align_corners: Any) -> Any:
    """``GridSampler.cpp``'s checks, then grid_sampler_2d or grid_sampler_3d."""
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has {input.dtype} "
                           f"and grid has {grid.dtype}")
    sizes = f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
    if input.dim() not in (4, 5) or input.dim() != grid.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got "
                           f"{sizes}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got {sizes}")
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    for i in range(2, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {i} being empty")
    fn = aten.grid_sampler_2d if input.dim() == 4 else aten.grid_sampler_3d
    return fn(input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator_backward(grad: Any, size: Any, align_corners: Any) -> Any:
    """theta's gradient: the base grid's transpose times ``grad`` (in ops, as PyTorch's, so it has a gradient too)."""
    base, spatial = affine_base(size, align_corners, "float64")
    b = tensor_like(base.T.copy(), grad)
    g = grad.reshape(size[0], -1, len(spatial))
    return aten.matmul(b, g).transpose(1, 2)


# ------------------------------------------------------------------------------ CTC
def ctc_loss_IntList(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any, blank: Any = 0,
                     reduction: Any = 1, zero_infinity: Any = False) -> Any:
    """``LossCTC.cpp``'s ctc_loss: _ctc_loss on a batched input (targets as int64), zero_infinity, the reduction
    (the mean divides each loss by its target length first)."""
    batched = log_probs.dim() == 3
    lp = log_probs if batched else aten.unsqueeze(log_probs, 1)
    res = aten._ctc_loss(lp, targets.to(dtype=_int64), tuple(input_lengths), tuple(target_lengths), blank,
                         zero_infinity)[0]
    if zero_infinity:
        res = aten.where_self(res == float("inf"), aten.zeros_like(res), res)
    if reduction == 1:
        lengths = aten.clamp_min(tensor_from_values([int(v) for v in target_lengths], res), 1)
        return (res / lengths).mean()
    if reduction == 2:
        return res.sum()
    return res if batched else aten.squeeze_dim(res, 0)


def ctc_loss_Tensor(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any, blank: Any = 0,
                    reduction: Any = 1, zero_infinity: Any = False) -> Any:
    for name, t in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == _bool:
            raise RuntimeError(f"{name} must be integral")
    return ctc_loss_IntList(log_probs, targets, input_lengths.reshape(-1).tolist(), target_lengths.reshape(-1).tolist(),
                            blank, reduction, zero_infinity)


# ------------------------------------------------------------------------------ pointwise losses' backward
# (in ops, so each loss has a second derivative; PyTorch's formulas)
def _loss_norm(self: Any, reduction: Any) -> Any:
    return 1.0 / self.numel() if reduction == 1 else 1.0


def smooth_l1_loss_backward(grad_output: Any, self: Any, target: Any, reduction: Any, beta: Any) -> Any:
    """``-1`` below -beta, ``1`` above beta, ``x / beta`` between (x = self - target), times grad (over numel)."""
    return (self - target).clamp(-beta, beta) / beta * _loss_norm(self, reduction) * grad_output


def huber_loss_backward(grad_output: Any, self: Any, target: Any, reduction: Any, delta: Any) -> Any:
    return (self - target).clamp(-delta, delta) * _loss_norm(self, reduction) * grad_output


def binary_cross_entropy_backward(grad_output: Any, self: Any, target: Any, weight: Any = None,
                                  reduction: Any = 1) -> Any:
    """``(x - t) / max(x (1 - x), 1e-12)`` times grad and weight (over numel for the mean)."""
    g = (self - target) / ((1 - self) * self).clamp(min=1e-12) * grad_output
    if weight is not None:
        g = g * weight
    return g * _loss_norm(self, reduction)


# ------------------------------------------------------------------------------ activations' backward
# (PyTorch's backward kernels of Activation.cpp, written in ops so that each has a second derivative)
def _where(cond: Any, a: Any, b: Any) -> Any:
    return aten.where_self(cond, a, b)


def mish_backward(grad_output: Any, self: Any) -> Any:
    s = self.sigmoid()
    t = aten.softplus(self).tanh()
    return grad_output * (t + self * s * (1 - t * t))


def hardswish_backward(grad_output: Any, self: Any) -> Any:
    """0 up to -3, ``x / 3 + 1/2`` inside (-3, 3), 1 from 3 on, times grad (PyTorch's kernel)."""
    zero = aten.zeros_like(grad_output)
    return _where(self <= -3, zero, _where(self < 3, grad_output * (self / 3 + 0.5), grad_output))


def hardsigmoid_backward(grad_output: Any, self: Any) -> Any:
    return _where((self > -3) & (self < 3), grad_output / 6, aten.zeros_like(grad_output))


def leaky_relu_backward(grad_output: Any, self: Any, negative_slope: Any, self_is_result: Any) -> Any:
    return _where(self > 0, grad_output, grad_output * negative_slope)


def elu_backward(grad_output: Any, alpha: Any, scale: Any, input_scale: Any, is_result: Any,
                 self_or_result: Any) -> Any:
    x = self_or_result
    if is_result:
        neg = grad_output * input_scale * (x + alpha * scale)
    else:
        neg = grad_output * (input_scale * alpha * scale) * (x * input_scale).exp()
    return _where(x <= 0, neg, grad_output * scale)


def hardtanh_backward(grad_output: Any, self: Any, min_val: Any, max_val: Any) -> Any:
    return _where((self <= min_val) | (self >= max_val), aten.zeros_like(grad_output), grad_output)


def softplus_backward(grad_output: Any, self: Any, beta: Any, threshold: Any) -> Any:
    z = (self * beta).exp()
    return _where(self * beta > threshold, grad_output, grad_output * z / (z + 1))


def log_sigmoid(self: Any) -> Any:
    return aten.log_sigmoid_forward(self)[0]


def log_sigmoid_backward(grad_output: Any, self: Any, buffer: Any) -> Any:
    """``grad * sigmoid(-x)`` (PyTorch's kernel computes the same value by branches on the sign of x)."""
    return grad_output * (-self).sigmoid()


def glu_backward(grad_output: Any, self: Any, dim: Any) -> Any:
    a, b = self.chunk(2, dim)
    sb = b.sigmoid()
    return aten.cat([grad_output * sb, grad_output * a * sb * (1 - sb)], dim)


def shrink_backward(grad_out: Any, self: Any, lambd: Any) -> Any:
    """softshrink_backward and hardshrink_backward: the gradient passes where ``|x| > lambd``."""
    return _where((self >= -lambd) & (self <= lambd), aten.zeros_like(grad_out), grad_out)


# ------------------------------------------------------------------------------ group_norm
def group_norm(input: Any, num_groups: Any, weight: Any = None, bias: Any = None, eps: Any = 1e-05,  # noqa: A002
               cudnn_enabled: Any = True) -> Any:
    """``Normalization.cpp``'s group_norm: its checks, then native_group_norm on (N, C, H*W)."""
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, but "
                               f"got {name} of shape {list(weight.shape)} and input of shape {list(input.shape)}")
    hxw = 1
    for s in input.shape[2:]:
        hxw *= s
    return aten.native_group_norm(input.contiguous(), weight, bias, n, c, hxw, num_groups, eps)[0]


def native_group_norm_backward(grad_out: Any, input: Any, mean: Any, rstd: Any, weight: Any, N: Any, C: Any,
                               HxW: Any, group: Any, output_mask: Any) -> Any:  # noqa: A002
    """The gradients of native_group_norm, written in ops (so they have gradients too): with x^ the normalised
    input, dx = rstd (dx^ - mean(dx^) - x^ mean(dx^ x^)) over each group, dx^ = dy * weight."""
    x = input.reshape(N, group, -1)
    xhat = (x - mean.unsqueeze(-1)) * rstd.unsqueeze(-1)
    dy = grad_out.reshape(N, C, -1)
    gi = gw = gb = None
    if output_mask[0]:
        dxhat = dy * weight.reshape(1, C, 1) if weight is not None else dy
        dxhat = dxhat.reshape(N, group, -1)
        gi = (rstd.unsqueeze(-1) * (dxhat - dxhat.mean(-1, keepdim=True)
                                    - xhat * (dxhat * xhat).mean(-1, keepdim=True))).reshape(input.shape)
    if output_mask[1] and weight is not None:
        gw = (dy * xhat.reshape(N, C, -1)).sum((0, 2))
    if output_mask[2]:
        gb = dy.sum((0, 2))
    return gi, gw, gb


# ------------------------------------------------------------------------------ rms norm (layer_norm.cpp)
def rms_norm(input: Any, normalized_shape: Any, weight: Any = None, eps: Any = None) -> Any:  # noqa: A002
    """``x / sqrt(mean(x^2) + eps)`` over the trailing ``normalized_shape`` dimensions, computed in the op-math
    type (float32 for half types) and cast back, then times ``weight``; ``eps`` defaults to that type's epsilon."""
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0:
        raise RuntimeError(f"Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           f"element, but got normalized_shape = {list(normalized_shape)}")
    if weight is not None and tuple(weight.shape) != normalized_shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {list(normalized_shape)}")
    if input.dim() < k or tuple(input.shape[input.dim() - k:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape [*, "
                           f"{', '.join(str(s) for s in normalized_shape)}], but got input of size{list(input.shape)}")
    opmath = input.dtype if input.dtype in (_float32, _float64) or input.dtype.is_complex else _float32
    x = input.to(opmath)
    if eps is None:
        eps = finfo(opmath).eps
    dims = tuple(input.dim() - i - 1 for i in range(k))
    result = x.mul(aten.rsqrt(x.pow(2).mean(dims, keepdim=True).add_(eps))).type_as(input)
    return result.mul(weight) if weight is not None else result


# ------------------------------------------------------------------------------ instance norm, channel shuffle
def _repeat_if_defined(t: Any, n: Any) -> Any:
    return t.repeat([n]) if t is not None else None


def instance_norm(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any, use_input_stats: Any,
                  momentum: Any, eps: Any, cudnn_enabled: Any) -> Any:  # noqa: A002
    """``Normalization.cpp``: batch_norm over (1, N*C, *), with the affine parameters and running statistics repeated
    per sample; the running statistics get the mean over the samples of the updated copies."""
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    b, c = input.shape[0], input.shape[1]
    shape = [1, b * c] + list(input.shape[2:])
    weight_, bias_ = _repeat_if_defined(weight, b), _repeat_if_defined(bias, b)
    running_mean_ = _repeat_if_defined(running_mean, b)
    running_var_ = _repeat_if_defined(running_var, b)
    out = aten.batch_norm(input.contiguous().view(shape), weight_, bias_, running_mean_, running_var_, use_input_stats,
                          momentum, eps, cudnn_enabled)
    for run, upd in ((running_mean, running_mean_), (running_var, running_var_)):
        if run is not None:
            aten.alias(run).copy_(upd.view([b, c]).mean(0))
    return out.view(list(input.shape))


# ------------------------------------------------------------------------------ prelu, rrelu (Activation.cpp)
def prelu(self: Any, weight: Any) -> Any:
    """Checks, then ``_prelu_kernel`` with the weight reshaped to broadcast over the channel dimension (1)."""
    if self.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {scalar_type_name(self.dtype)} and "
                           f"{scalar_type_name(weight.dtype)}")
    self_dim = self.dim()
    if weight.numel() != 1:
        if self_dim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channel_size = self.shape[1] if self_dim > 1 else 1
        if channel_size != weight.numel():
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channel_size}.")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    if self_dim != weight.dim():
        dim_w = [1] * self_dim
        if self_dim > 1:
            dim_w[1] = weight.numel()
        weight = weight.reshape(dim_w)
    return aten._prelu_kernel(self, weight)


def _prelu_kernel_backward(grad_output: Any, self: Any, weight: Any) -> Any:
    """(grad_self, grad_weight): ``grad`` where x > 0 else ``weight * grad``; ``x * grad`` where x <= 0, summed to
    the weight's shape."""
    pos = self > 0
    grad_self = aten.where_self(pos, grad_output, weight * grad_output)
    grad_weight = aten.where_self(pos, aten.zeros_like(grad_output), self * grad_output)
    return grad_self, grad_weight.sum_to_size(list(weight.shape))


def rrelu(self: Any, lower: Any = 0.125, upper: Any = 1.0 / 3, training: Any = False, generator: Any = None) -> Any:
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    return aten.rrelu_with_noise(self, aten.empty_like(self), lower, upper, training, generator=generator)


def rrelu_(self: Any, lower: Any = 0.125, upper: Any = 1.0 / 3, training: Any = False, generator: Any = None) -> Any:
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    return aten.rrelu_with_noise_(self, aten.empty_like(self), lower, upper, training, generator=generator)


def rrelu_with_noise_backward(grad_output: Any, self: Any, noise: Any, lower: Any, upper: Any, training: Any,
                              self_is_result: Any) -> Any:
    """``grad * noise`` in training (the slopes drawn); leaky_relu's gradient with the mean slope otherwise."""
    if training and upper - lower > 1e-6:
        return grad_output * noise
    return aten.leaky_relu_backward(grad_output, self, (lower + upper) / 2, self_is_result)


# ------------------------------------------------------------------------------ attention (attention.cpp)
def _bool_mask_to_float(mask: Any, dtype: Any) -> Any:
    """A bool mask (True = may attend) as an additive one: 0 where True, -inf where False."""
    if mask is None or mask.dtype != _bool:
        return mask
    # (PyTorch's convert_boolean_attn_mask: ``where(mask, 0, -inf)``, the -inf wrapped first)
    neg = aten.scalar_tensor(float("-inf"), dtype=dtype, device=mask.device)
    zero = aten.scalar_tensor(0.0, dtype=dtype, layout=strided, device=mask.device)
    return aten.where_self(mask, zero, neg)


def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: Any = 0.0,
                                 is_causal: Any = False, scale: Any = None, enable_gqa: Any = False) -> Any:
    """PyTorch's input checks, then the math path (ember has no fused attention kernel)."""
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if not (query.device == key.device == value.device):
        raise RuntimeError(f"Expected query, key, and value to have the same device type, but got query.device: "
                           f"{query.device} key.device: {key.device} and value.device: {value.device} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    if attn_mask is not None and attn_mask.dtype not in (_bool, query.dtype) and not attn_mask.dtype.is_floating_point:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {attn_mask.dtype} and  query.dtype: {query.dtype} instead.")
    mask = _bool_mask_to_float(attn_mask, query.dtype)
    if is_causal and mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if _use_flash_attention(query, key, value, mask, dropout_p):
        return aten._scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p, is_causal,
                                                                attn_mask=mask, scale=scale)[0]
    return aten._scaled_dot_product_attention_math(query, key, value, mask, dropout_p, is_causal, None, scale=scale,
                                                   enable_gqa=enable_gqa)[0]


_FLASH_ATTENTION = 1          # at::SDPBackend::flash_attention


def _use_flash_attention(query: Any, key: Any, value: Any, mask: Any, dropout_p: Any) -> bool:
    """PyTorch's use_flash_attention_cpp (sdp_utils_cpp): the fused CPU op serves 4-d CPU inputs of one batch size,
    one head count and one head size, nonempty sequences, unit last-dim strides, no dropout, and a 2-d or 4-d
    mask that needs no gradient and broadcasts over (batch, heads) -- when the flash backend is allowed."""
    if _FLASH_ATTENTION not in global_context.sdp_enabled or dropout_p > 0.0 or query.device.type != "cpu":
        return False
    if not (query.dim() == key.dim() == value.dim() == 4) or not query.dtype.is_floating_point:
        return False
    (B, H, L, E), (Bk, Hk, S, Ek), (Bv, Hv, Sv, Ev) = query.shape, key.shape, value.shape
    if not (B == Bk == Bv and H == Hk == Hv and E == Ek == Ev and L and S and Sv == S):
        return False
    if query.stride(-1) != 1 or key.stride(-1) != 1 or value.stride(-1) != 1:
        return False
    if mask is not None:
        if mask.dim() not in (2, 4) or mask.requires_grad or mask.size(-2) not in (L, 1) or mask.size(-1) not in (S, 1):
            return False
        return mask.dim() == 2 or (mask.size(0) in (1, B) and mask.size(1) in (1, H))
    return True


def _gqa_expand(query: Any, key: Any, value: Any, enable_gqa: Any) -> Any:
    if not enable_gqa:
        return key, value
    q_heads, k_heads, v_heads = query.size(-3), key.size(-3), value.size(-3)
    if q_heads % k_heads or q_heads % v_heads:
        raise RuntimeError(f"Number of heads in key and value must divide the number of heads in query, but got "
                           f"query heads {q_heads}, key heads {k_heads} and value heads {v_heads}")
    return (key.repeat_interleave(q_heads // k_heads, -3), value.repeat_interleave(q_heads // v_heads, -3))


def _scaled_dot_product_attention_math(query: Any, key: Any, value: Any, attn_mask: Any = None,
                                       dropout_p: Any = 0.0, is_causal: Any = False, dropout_mask: Any = None,
                                       scale: Any = None, enable_gqa: Any = False) -> Any:
    """(output, attention weights): ``softmax(q k^T * scale + mask) v``, the scale's square root applied to q and k
    each (for stability), fully masked rows giving zeros."""
    negative = scale is not None and scale < 0
    s = abs(scale) if negative else (scale if scale is not None else 1.0 / math.sqrt(query.size(-1)))
    factor = math.sqrt(s)
    query = query * (-factor if negative else factor)
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        L, S = query.size(-2), key.size(-2)
        attn_mask = _bool_mask_to_float(aten.ones((L, S), dtype=_bool, device=query.device).tril(), query.dtype)
    key, value = _gqa_expand(query, key, value, enable_gqa)
    attn = aten.matmul(query, key.transpose(-2, -1) * factor)
    if attn_mask is not None:
        attn = attn + attn_mask
    attn = aten._safe_softmax(attn, -1)
    if dropout_p > 0.0:
        if dropout_mask is not None:
            attn = attn.masked_fill(dropout_mask.logical_not(), 0.0) * (1.0 / (1.0 - dropout_p))
        else:
            attn = aten.dropout(attn, dropout_p, True)
    return aten.matmul(attn, value), attn


# ------------------------------------------------------------------------------ padding (PadNd.cpp)
_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(self: Any, pad: Any, mode: str = "constant", value: Any = None) -> Any:
    """``aten::pad``: constant padding of any dims; reflect / replicate / circular of the last 1, 2 or 3 dims of an
    input with one or two leading dims (PyTorch's supported combinations)."""
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > self.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {self.dim()}")
    if mode == "constant":
        return aten.constant_pad_nd(self, tuple(pad), 0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    nd = len(pad) // 2
    if nd in (1, 2, 3) and self.dim() in (nd + 1, nd + 2):
        if mode == "circular":
            return aten._pad_circular(self, tuple(pad))
        return getattr(aten, f"{'reflection' if mode == 'reflect' else 'replication'}_pad{nd}d")(self, tuple(pad))
    raise NotImplementedError(f"Padding size {len(pad)} is not supported for {self.dim()}D input tensor.\n"
                              "Supported combinations for non-constant padding:\n"
                              "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                              "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                              "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _pad_circular(self: Any, pad: Any) -> Any:
    """Each padded dim (the last first) wraps around (PadNd.cpp): the cropped input copied into an empty result,
    then each side's padding copied from the other end of the result (corners written more than once)."""
    nd = len(pad) // 2
    in_shape = list(self.shape)
    out_shape = list(in_shape)
    lead = self.dim() - nd
    for i in range(nd):
        lo, hi = pad[2 * (nd - i - 1)], pad[2 * (nd - i - 1) + 1]
        size = in_shape[lead + i]
        out_shape[lead + i] = size + lo + hi
        if lo > size or hi > size:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if out_shape[lead + i] < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
    out = self.new_empty(out_shape)
    out_slice, in_slice = out, self
    for i in range(nd):
        d, lo, hi = self.dim() - 1 - i, pad[2 * i], pad[2 * i + 1]
        out_slice = aten.slice_Tensor(out_slice, d, max(lo, 0), out_shape[d] - max(hi, 0))
        in_slice = aten.slice_Tensor(in_slice, d, max(-lo, 0), in_shape[d] - max(-hi, 0))
    out_slice.copy_(in_slice)
    for i in range(nd):
        d, lo, hi = self.dim() - 1 - i, pad[2 * i], pad[2 * i + 1]
        if lo > 0:
            aten.slice_Tensor(out, d, 0, lo).copy_(
                aten.slice_Tensor(out, d, out_shape[d] - lo - max(hi, 0), out_shape[d] - max(hi, 0)))
        if hi > 0:
            aten.slice_Tensor(out, d, out_shape[d] - hi, out_shape[d]).copy_(
                aten.slice_Tensor(out, d, max(lo, 0), max(lo, 0) + hi))
    return out


def _index_tensor(index: Any, like: Any) -> Any:
    """A NumPy index array as an int64 tensor on ``like``'s device."""
    t = new_tensor(np.asarray(index, np.int64), KS_CPU, CPU)
    return t if like.device == CPU else aten._to_copy(t, device=like.device)


def _pad_backward(grad_output: Any, self: Any, padding: Any, reflect: bool) -> Any:
    """The gradient of reflection / replication padding: each output gradient added to the input position it
    copied, dim by dim (in ops, so it has a gradient too)."""
    g = grad_output
    for i in reversed(range(len(padding) // 2)):
        dim = self.dim() - 1 - i
        n = self.shape[dim]
        src = pad_source_index(n, padding[2 * i], padding[2 * i + 1], reflect)
        shape = list(g.shape)
        shape[dim] = n
        g = aten.zeros(tuple(shape), dtype=g.dtype, device=g.device).index_add(dim, _index_tensor(src, self), g)
    return g


def _def_pad_backward(name: str, reflect: bool) -> None:
    def backward(grad_output: Any, self: Any, padding: Any) -> Any:
        return _pad_backward(grad_output, self, padding, reflect)
    backward.__name__ = backward.__qualname__ = name
    globals()[name] = backward


for _nd in (1, 2, 3):
    _def_pad_backward(f"reflection_pad{_nd}d_backward", True)
    _def_pad_backward(f"replication_pad{_nd}d_backward", False)


def one_hot(self: Any, num_classes: int = -1) -> Any:
    """``[..., num_classes]`` int64 with a 1 at each value's class (``Onehot.cpp``)."""
    if self.dtype != _int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if self.device.type == "meta":  # no values to check or count (PyTorch's Meta path)
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from meta tensor.")
    elif self.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return aten.empty_memory_format(tuple(self.shape) + (num_classes,), dtype=_int64, device=self.device)
    else:
        lo, hi = aten.aminmax(self)
        if int(lo.item()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        top = int(hi.item())
        if num_classes == -1:
            num_classes = top + 1
        elif top >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    out = aten.zeros(tuple(self.shape) + (num_classes,), dtype=_int64, device=self.device)
    return out.scatter_(-1, self.unsqueeze(-1), 1)


def conv_tbc(self: Any, weight: Any, bias: Any, pad: Any = 0) -> Any:
    """A 1-D convolution over (time, batch, channel) input with a (width, in, out) weight: conv1d on the
    (batch, channel, time) view."""
    if self.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if self.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = aten.convolution(self.permute(1, 2, 0), weight.permute(2, 1, 0), bias, (1,), (pad,), (1,), False, (0,), 1)
    return out.permute(2, 0, 1)


def norm_except_dim(v: Any, pow: Any = 2, dim: Any = 0) -> Any:  # noqa: A002
    """The ``pow``-norm over every dimension but ``dim`` (kept as size 1 elsewhere; the whole norm for -1): weight
    normalization's g (WeightNorm.cpp: a 2-d view reduced along one side)."""
    if dim == -1:
        return aten.norm_Scalar(v, pow)
    if dim == 0:
        shape = [v.shape[0]] + [1] * (v.dim() - 1)
        return aten.norm_ScalarOpt_dim(v.contiguous().view(v.shape[0], -1), pow, (1,), False).view(shape)
    if dim == v.dim() - 1:
        shape = [1] * (v.dim() - 1) + [v.shape[-1]]
        return aten.norm_ScalarOpt_dim(v.contiguous().view(-1, v.shape[-1]), pow, (0,), False).view(shape)
    return aten.norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)
