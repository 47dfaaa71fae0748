"""DTensor's placements (``torch.distributed.tensor.placement_types``): how a tensor lies on one dimension of a
device mesh -- sharded along a tensor dimension, replicated, or a partial sum. Plain values, as in PyTorch."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Partial", "Placement", "Replicate", "Shard"]


class Placement:
    """The base of the placement types."""

    def is_shard(self, dim: int | None = None) -> bool:
        return isinstance(self, Shard) and (dim is None or self.dim == dim)

    def is_replicate(self) -> bool:
        return isinstance(self, Replicate)

    def is_partial(self, reduce_op: str | None = None) -> bool:
        return isinstance(self, Partial) and (reduce_op is None or self.reduce_op == reduce_op)


@dataclass(frozen=True)
class Shard(Placement):
    """Split along tensor dimension ``dim`` over the mesh dimension (as ``torch.chunk`` splits)."""

    dim: int

    def __repr__(self) -> str:
        return f"Shard(dim={self.dim})"

    def __str__(self) -> str:
        return f"S({self.dim})"


@dataclass(frozen=True, repr=False)
class _StridedShard(Placement):
    """A shard of a shard (FSDP over tensor parallelism): ``split_factor`` interleaved pieces. Not a ``Shard``:
    ``is_shard()`` answers False for it, as PyTorch's does."""

    dim: int
    split_factor: int = 1

    def __repr__(self) -> str:
        return f"_StridedShard(dim={self.dim}, sf={self.split_factor})"

    def __str__(self) -> str:
        return f"_S({self.dim}, {self.split_factor})"


@dataclass(frozen=True)
class Replicate(Placement):
    """The whole tensor on every rank of the mesh dimension."""

    def __repr__(self) -> str:
        return "Replicate()"

    def __str__(self) -> str:
        return "R"


@dataclass(frozen=True)
class Partial(Placement):
    """Each rank holds a part that ``reduce_op`` ("sum", "avg", ...) over the mesh dimension makes whole."""

    reduce_op: str = "sum"

    def __repr__(self) -> str:
        return f"Partial({self.reduce_op})"

    def __str__(self) -> str:
        return f"P({self.reduce_op})"
