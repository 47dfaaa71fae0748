"""``torch.distributed.tensor`` (DTensor). The placement types are real; DTensor itself, ``distribute_tensor`` and
``distribute_module`` are not implemented in ember yet and say so when used (the names exist so that libraries
which import them whenever ``torch.distributed`` is available -- Hugging Face transformers -- import)."""
from __future__ import annotations

from ember.distributed._not_yet import Refused, refusing
from ember.distributed.device_mesh import DeviceMesh, init_device_mesh  # noqa: F401
from ember.distributed.tensor.placement_types import Partial, Placement, Replicate, Shard  # noqa: F401

__all__ = ["DTensor", "DeviceMesh", "Partial", "Placement", "Replicate", "Shard", "distribute_module",
           "distribute_tensor", "init_device_mesh"]


class DTensor(Refused):
    """A tensor sharded over a device mesh: not implemented in ember yet."""

    _name = "DTensor"

    @staticmethod
    def from_local(*args: object, **kwargs: object) -> None:
        refusing("DTensor.from_local")()


distribute_tensor = refusing("distribute_tensor")
distribute_module = refusing("distribute_module")
