"""``BatchNorm1d/2d/3d`` (mirrors ``torch/nn/modules/batchnorm.py``)."""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

import ember
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter


if TYPE_CHECKING:
    from ember._tensor import Tensor


def _affine_parameters(module: Any, shape: Any, affine: Any, bias: Any, device: Any, dtype: Any) -> Any:
    """Register ``weight`` (and ``bias`` unless ``bias=False``) of ``shape``, or both as None."""
    if affine:
        module.weight = Parameter(ember.empty(shape, device=device, dtype=dtype))
        if bias:
            module.bias = Parameter(ember.empty(shape, device=device, dtype=dtype))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(module: Any) -> Any:
    """PyTorch's default: weight 1, bias 0."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class _NormBase(Module):
    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features: Any, eps: float = 1e-05, momentum: float = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_parameters(self, num_features, affine, bias, device, dtype)
        if self.track_running_stats:
            self.register_buffer("running_mean", ember.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ember.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", ember.tensor(0, dtype=ember.long, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict: Any, prefix: Any, local_metadata: Any, strict: Any,
                              missing_keys: Any, unexpected_keys: Any, error_msgs: Any) -> Any:
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None and \
                    self.num_batches_tracked.device != ember.device("meta") else ember.tensor(0, dtype=ember.long)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class _BatchNorm(_NormBase):
    def _average_factor(self) -> float:
        """The running statistics' update weight for this forward, counting the batch when training."""
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        return factor

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        self._check_input_dim(input)
        exponential_average_factor = self._average_factor()
        bn_training = True if self.training else (self.running_mean is None) and (self.running_var is None)
        return F.batch_norm(input,
                            self.running_mean if not self.training or self.track_running_stats else None,
                            self.running_var if not self.training or self.track_running_stats else None,
                            self.weight, self.bias, bn_training, exponential_average_factor, self.eps)


class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose statistics are computed over every process of ``process_group`` (the default
    group when None) while training (Note [Synchronized batch statistics]); in evaluation, or with one process,
    it is ``BatchNorm`` over any input of 2 or more dims. PyTorch's CPU build refuses SyncBatchNorm; ember's
    runs it on the CPU."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Any = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group: Any = None, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input: Tensor) -> None:  # noqa: A002
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        group = self._sync_group()
        if group is None:
            return super().forward(input)
        factor = self._average_factor()
        running = self.track_running_stats
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, self.running_mean if running else None,
                                            self.running_var if running else None, self.eps, factor, group)

    def _sync_group(self) -> Any:
        """The process group to share statistics over, or None when this forward needs no sharing."""
        if not self.training:
            return None
        import ember.distributed as dist
        if not dist.is_initialized():
            return None
        group = self.process_group if self.process_group is not None else dist.group.WORLD
        return group if dist.get_world_size(group) > 1 else None

    @classmethod
    def convert_sync_batchnorm(cls, module: Any, process_group: Any = None) -> Any:
        """``module`` with every ``BatchNorm*d`` replaced by a SyncBatchNorm holding the same parameters and
        statistics (recursively)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group)
            if module.affine:
                with ember.no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out


# Note [Synchronized batch statistics]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# As PyTorch's SyncBatchNorm does it: each rank computes its channels' mean and inverse standard deviation and
# its element count; one all_gather brings every rank's three to every rank; the per-rank variances (recovered
# from the inverse standard deviations) are merged with the counts into the statistics of the whole batch
# (Chan's parallel formula), which normalize the input and update the running statistics (the variance
# unbiased with the total count). Backward sums dy and dy * (x - mean) per channel on each rank, all-reduces
# the two sums, and forms the input gradient of batch norm over the whole batch; the weight and bias gradients
# stay local, for DistributedDataParallel to average. Ranks with an empty batch take no part in the statistics.

class _SyncBatchNormFunction(ember.autograd.Function):
    @staticmethod
    def forward(ctx: Any, input: Tensor, weight: Any, bias: Any, running_mean: Any, running_var: Any,  # noqa: A002
                eps: float, momentum: float, group: Any) -> Tensor:
        import ember.distributed as dist
        x = input.contiguous()
        C = x.shape[1]
        dims = [0] + list(range(2, x.dim()))
        n = x.numel() // C
        if n > 0:
            var, mean = ember.var_mean(x, dims, correction=0)
            mine = ember.cat([mean, ember.rsqrt(var + eps), ember.full((1,), float(n), dtype=x.dtype)])
        else:
            mine = ember.zeros(2 * C + 1, dtype=x.dtype)
        world = dist.get_world_size(group)
        flat = ember.empty(world * (2 * C + 1), dtype=x.dtype)    # concatenated, as every backend accepts
        dist.all_gather_single(flat, mine, group=group)
        gathered = flat.view(world, 2 * C + 1)
        gathered = gathered[gathered[:, -1] >= 1]
        means, invstds, counts = gathered[:, :C], gathered[:, C:2 * C], gathered[:, -1:]
        total = counts.sum()
        mean = (means * counts).sum(0) / total
        var_each = 1.0 / (invstds * invstds) - eps
        var = ((var_each + (means - mean) ** 2) * counts).sum(0) / total
        invstd = ember.rsqrt(var + eps)
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
        if running_var is not None:
            unbiased = var * (total / (total - 1)) if total.item() > 1 else var
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
        shape = [1, C] + [1] * (x.dim() - 2)
        scale = invstd if weight is None else invstd * weight
        out = (x - mean.view(shape)) * scale.view(shape)
        if bias is not None:
            out = out + bias.view(shape)
        ctx.save_for_backward(x, weight, mean, invstd)
        ctx.total = total
        ctx.group = group
        return out

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> Any:
        import ember.distributed as dist
        x, weight, mean, invstd = ctx.saved_tensors
        C = x.shape[1]
        dims = [0] + list(range(2, x.dim()))
        shape = [1, C] + [1] * (x.dim() - 2)
        dy = grad_output.contiguous()
        xmu = x - mean.view(shape)
        sum_dy = dy.sum(dims)
        sum_dy_xmu = (dy * xmu).sum(dims)
        grad_weight = sum_dy_xmu * invstd if weight is not None and ctx.needs_input_grad[1] else None
        grad_bias = sum_dy.clone() if ctx.needs_input_grad[2] else None
        grad_input = None
        if ctx.needs_input_grad[0]:
            both = ember.cat([sum_dy, sum_dy_xmu])
            dist.all_reduce(both, group=ctx.group)
            mean_dy, mean_dy_xmu = both[:C] / ctx.total, both[C:] / ctx.total
            scale = invstd if weight is None else invstd * weight
            grad_input = (dy - mean_dy.view(shape) - xmu * (invstd * invstd * mean_dy_xmu).view(shape)) \
                * scale.view(shape)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None


def __getattr__(name: str) -> Any:
    # PyTorch defines the lazy modules' base here; ember's lives in lazy.py (which imports this module)
    if name == "_LazyNormBase":
        from ember.nn.modules.lazy import _LazyNormBase
        return _LazyNormBase
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
