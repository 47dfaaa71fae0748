"""Tensor subclasses ember itself uses (``torch._subclasses``): ``FakeTensor`` and ``FakeTensorMode``."""
from ember._subclasses.fake_tensor import FakeTensor, FakeTensorMode, UnsupportedFakeTensorException  # noqa: F401

__all__ = ["FakeTensor", "FakeTensorMode", "UnsupportedFakeTensorException"]
