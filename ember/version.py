"""``ember.version`` (``torch/version.py``): the PyTorch release whose API ember follows, and the backends it was
built with: none of CUDA, ROCm or XPU in the PyTorch sense (ember's GPU path is CuPy's)."""
from __future__ import annotations

__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "xpu"]

__version__ = "2.13.0"
debug = False
cuda: str | None = None
git_version = "ember"
hip: str | None = None
xpu: str | None = None
