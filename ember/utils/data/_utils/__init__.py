"""DataLoader internals (mirrors ``torch/utils/data/_utils``)."""
from __future__ import annotations

import sys
import traceback

# How often a waiting worker or main process looks at the other side's liveness (seconds).  PyTorch uses
# 5 s plus a SIGCHLD handler; ember polls the workers' exit status at this interval instead.
MP_STATUS_CHECK_INTERVAL = 0.2


class KeyErrorMessage(str):
    """A str whose repr is itself (KeyError would otherwise show the traceback escaped)."""

    __slots__ = ()

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception and its formatted traceback, carried from a worker to the main process."""

    def __init__(self, exc_info=None, where: str = "in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise the same exception type with "Caught X in DataLoader worker process N. Original
        Traceback ..." (RuntimeError when the type cannot be built from one message)."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception
