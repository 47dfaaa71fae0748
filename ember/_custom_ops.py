"""``ember._custom_ops`` (``torch/_custom_ops.py``): the earlier spelling of ``ember.library``'s custom operators,
which libraries still import (torchvision's fake functions call ``get_ctx``)."""
from __future__ import annotations

from typing import Any, Callable

from ember.library import custom_op as _custom_op
from ember.library import get_ctx, register_autograd, register_fake

__all__ = ["custom_op", "impl", "impl_abstract", "get_ctx", "register_autograd"]


def custom_op(qualname: str, func_or_schema: Any = None) -> Any:
    """Declare an operator from a prototype function (its annotations give the schema) or a schema string."""
    if isinstance(func_or_schema, str):
        from ember.library import define
        define(qualname, func_or_schema)
        return None

    def make(f: Callable[..., Any]) -> Any:
        return _custom_op(qualname, f, mutates_args=())
    return make if func_or_schema is None else make(func_or_schema)


def impl(qualname: str, *, device_types: Any = ("cpu", "cuda"), func: Callable[..., Any] | None = None) -> Any:
    from ember.library import impl as _impl
    return _impl(qualname, device_types, func)


def impl_abstract(qualname: str, *, func: Callable[..., Any] | None = None) -> Any:
    return register_fake(qualname, func) if func is not None else register_fake(qualname)

