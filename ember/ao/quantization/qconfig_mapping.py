"""``QConfigMapping`` (mirrors ``torch/ao/quantization/qconfig_mapping.py``): which qconfig each part of a model
gets in FX graph mode -- a global one, overridden per module / function type and per module name."""
from __future__ import annotations

from typing import Any

from ember.ao.quantization.qconfig import QConfig, get_default_qat_qconfig, get_default_qconfig

__all__ = ["QConfigMapping", "get_default_qconfig_mapping", "get_default_qat_qconfig_mapping"]


class QConfigMapping:
    """``set_global(qconfig)``, ``set_object_type(nn.Linear | F.relu | ..., qconfig)``, ``set_module_name("fc",
    qconfig)``; ``None`` leaves that part in float. The most specific setting wins: module name, then type, then
    global."""

    def __init__(self) -> None:
        self.global_qconfig: QConfig | None = None
        self.object_type_qconfigs: dict[Any, QConfig | None] = {}
        self.module_name_qconfigs: dict[str, QConfig | None] = {}

    def set_global(self, global_qconfig: QConfig | None) -> QConfigMapping:
        self.global_qconfig = global_qconfig
        return self

    def set_object_type(self, object_type: Any, qconfig: QConfig | None) -> QConfigMapping:
        self.object_type_qconfigs[object_type] = qconfig
        return self

    def set_module_name(self, module_name: str, qconfig: QConfig | None) -> QConfigMapping:
        self.module_name_qconfigs[module_name] = qconfig
        return self

    def qconfig_for(self, module_name: str | None, object_type: Any) -> QConfig | None:
        """The qconfig of a module (by its qualified name, a parent's name counting) or of a function."""
        if module_name is not None:
            name = module_name
            while True:
                if name in self.module_name_qconfigs:
                    return self.module_name_qconfigs[name]
                if "." not in name:
                    break
                name = name.rsplit(".", 1)[0]
        if object_type in self.object_type_qconfigs:
            return self.object_type_qconfigs[object_type]
        return self.global_qconfig

    def __repr__(self) -> str:
        return (f"QConfigMapping (\n global_qconfig\n  {self.global_qconfig}\n object_type_qconfigs\n  "
                f"{self.object_type_qconfigs}\n module_name_qconfigs\n  {self.module_name_qconfigs}\n)")


def get_default_qconfig_mapping(backend: str = "x86", version: int = 0) -> QConfigMapping:
    """``get_default_qconfig(backend)`` for everything."""
    return QConfigMapping().set_global(get_default_qconfig(backend, version))


def get_default_qat_qconfig_mapping(backend: str = "x86", version: int = 1) -> QConfigMapping:
    return QConfigMapping().set_global(get_default_qat_qconfig(backend, version))
