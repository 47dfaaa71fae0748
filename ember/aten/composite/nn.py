"""Neural-network ops written in other ops: relu6, softmax / log_softmax with a dtype, layer_norm and
batch_norm over their native kernels (``Activation.cpp``, ``SoftMax.cpp``, ``Normalization.cpp``)."""
from __future__ import annotations

from ember._generated import aten


def relu6(self):
    return aten.clamp(self, 0, 6)


# (written as PyTorch's CompositeImplicitAutograd versions are, so autograd records the same nodes:
# ``x @ y`` shows MmBackward0, ``x.narrow(...)`` SliceBackward0, ``x.movedim(...)`` PermuteBackward0)
def softmax_int(self, dim, dtype=None):
    x = self if dtype is None else self.to(dtype)
    return aten._softmax(x, dim, False)


def log_softmax_int(self, dim, dtype=None):
    x = self if dtype is None else self.to(dtype)
    return aten._log_softmax(x, dim, False)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):  # noqa: A002
    return aten.native_layer_norm(input, normalized_shape, weight, bias, eps)[0]


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):  # noqa
    """PyTorch's _batch_norm_impl_index on the CPU: an empty input is passed through (scaled by the first
    channel's weight and bias, which keeps the graph); anything else is native_batch_norm."""
    if input.numel() == 0:
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    return aten.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)[0]


def linear(input, weight, bias=None):  # noqa: A002
    """``input @ weight.T + bias``: one addmm for a matrix input with a bias (PyTorch's ``at::linear``)."""
    if input.dim() == 2 and bias is not None:
        return aten.addmm(bias, input, weight.t())
    out = input.matmul(weight.t())
    return out + bias if bias is not None else out


def mse_loss_backward(grad_output, self, target, reduction):
    """d mse_loss / d self: ``2 (self - target) grad``, over ``numel`` for the mean. Written in ops, so the
    loss's double backward needs no formula of its own."""
    norm = 2.0 / self.numel() if reduction == 1 else 2.0
    return (self - target) * norm * grad_output


def apply_loss_reduction(loss, reduction):
    """PyTorch's ``apply_loss_reduction``: at::Reduction 0 (none), 1 (mean) or 2 (sum)."""
    return loss.mean() if reduction == 1 else loss.sum() if reduction == 2 else loss


def l1_loss(self, target, reduction=1):
    """``|self - target|`` reduced (PyTorch's composite ``l1_loss``: AbsBackward0 / MeanBackward0 / SumBackward0)."""
    return apply_loss_reduction((self - target).abs(), reduction)
