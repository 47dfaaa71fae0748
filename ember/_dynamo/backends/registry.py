"""``torch._dynamo.backends.registry``: the backends by name (kept in ``ember/_dynamo/backends/__init__.py``)."""
from ember._dynamo.backends import _BACKENDS, list_backends, lookup_backend, register_backend  # noqa: F401

__all__ = ["list_backends", "lookup_backend", "register_backend"]
