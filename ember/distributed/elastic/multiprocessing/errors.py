"""``torch.distributed.elastic.multiprocessing.errors``: ``@record`` on a worker's entry point.

Under ``python -m ember.distributed.run`` a failing rank's error is recorded for the launcher's summary
whether or not ``@record`` is used (the rank's wrapper records it); the decorator records it too, from where
the exception was raised, and re-raises it, so a script written for torchrun runs unchanged."""
from __future__ import annotations

import functools
import os
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["ChildFailedError", "record"]


class ChildFailedError(Exception):
    """Raised by PyTorch's launcher API when a worker failed (the name scripts catch)."""

    def __init__(self, name: str, failures: Any = None) -> None:
        self.name = name
        self.failures = failures or {}
        super().__init__(f"{name} FAILED")


def record(fn: F, error_handler: Any = None) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SystemExit:
            raise
        except BaseException as e:
            if os.environ.get("EMBER_DIST_ERROR_DIR") and "RANK" in os.environ:
                import traceback

                from ember.distributed._worker import _record
                _record(1, "".join(traceback.format_exception_only(type(e), e)).strip())
            raise
    return wrapper  # type: ignore[return-value]
