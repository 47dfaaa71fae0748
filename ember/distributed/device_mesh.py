"""``torch.distributed.device_mesh``: not implemented in ember yet (DeviceMesh / init_device_mesh say so)."""
from __future__ import annotations

from ember.distributed._not_yet import Refused, refusing

__all__ = ["DeviceMesh", "init_device_mesh"]


class DeviceMesh(Refused):
    """An n-dimensional arrangement of ranks: not implemented in ember yet."""

    _name = "DeviceMesh"


init_device_mesh = refusing("init_device_mesh")
