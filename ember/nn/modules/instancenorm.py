"""``nn.InstanceNorm1d/2d/3d`` (``torch/nn/modules/instancenorm.py``)."""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

from ember.nn import functional as F
from ember.nn.modules.batchnorm import _NormBase


if TYPE_CHECKING:
    from ember._tensor import Tensor


class _InstanceNorm(_NormBase):
    _nd = 2

    def __init__(self, num_features: Any, eps: float = 1e-05, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.dim() not in (self._nd + 1, self._nd + 2):
            raise ValueError(f"expected {self._nd + 1}D or {self._nd + 2}D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        self._check_input_dim(input)
        unbatched = input.dim() == self._nd + 1
        x = input.unsqueeze(0) if unbatched else input
        if x.shape[1] != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim={1 - unbatched} to match num_features "
                             f"({self.num_features}), but got: {x.shape[1]}.")
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats, self.momentum if self.momentum is not None
                              else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    _nd = 2


class InstanceNorm3d(_InstanceNorm):
    _nd = 3
