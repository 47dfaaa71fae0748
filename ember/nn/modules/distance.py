"""``nn.PairwiseDistance`` / ``nn.CosineSimilarity`` (``torch/nn/modules/distance.py``)."""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

from ember.nn import functional as F
from ember.nn.modules.module import Module


if TYPE_CHECKING:
    from ember._tensor import Tensor


class PairwiseDistance(Module):
    def __init__(self, p: float = 2.0, eps: float = 1e-06, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Any:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    def __init__(self, dim: int = 1, eps: float = 1e-08) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Any:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
