"""Exception classes of PyTorch's core (``c10/util/Exception.h``) that Python code catches by type."""
from __future__ import annotations


class _LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (a singular matrix, one that is not positive-definite...);
    ``torch.linalg.LinAlgError``, a ``RuntimeError`` as in PyTorch."""

