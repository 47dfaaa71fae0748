"""Exception classes of PyTorch's core (``c10/util/Exception.h``) that Python code catches by type."""
from __future__ import annotations


class _LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (a singular matrix, one that is not positive-definite...);
    ``torch.linalg.LinAlgError``, a ``RuntimeError`` as in PyTorch."""



class OutOfMemoryError(RuntimeError):
    """An allocation on an accelerator failed (``torch.OutOfMemoryError``, also ``torch.cuda.OutOfMemoryError``)."""


class AcceleratorError(RuntimeError):
    """An error reported by an accelerator runtime (``torch.AcceleratorError``)."""


_WARNED_ONCE: set[str] = set()


def warn_once(key: str, message: str) -> None:
    """``TORCH_WARN_ONCE``: the warning the first time ``key`` warns in this process (deprecations)."""
    if key not in _WARNED_ONCE:
        _WARNED_ONCE.add(key)
        warn_user(message)


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """A warning attributed to the user's line: the first frame outside ember (PyTorch's C++ warnings point
    at the Python line that called into it, ``TORCH_WARN`` from a binding)."""
    import os
    import sys
    import warnings
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    level, frame = 2, sys._getframe(1)
    while os.path.abspath(frame.f_code.co_filename).startswith(root + os.sep) and frame.f_back is not None:
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)
