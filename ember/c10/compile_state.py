"""The state graph capture shares with the core (Note [Capture and Python state] in ``ember/_dynamo/capture.py``).

``state.capturing`` is the capture in progress (None otherwise): the code that changes Python-level state a
captured graph cannot replay -- a module attribute, a tensor's ``requires_grad`` / ``.grad`` / ``.data``, hooks, a
``backward()`` -- asks ``graph_break`` first, which stops the capture *before* the change happens, so a failed
capture leaves nothing behind. ``epoch.epoch`` counts changes of module structure and tensor metadata made
outside a capture; a compiled function re-validates its guards on module state only when it moved.
"""
from __future__ import annotations

import threading
from typing import Any


class GraphBreak(BaseException):
    """Raised inside a capture where the code does something a graph cannot hold. A ``BaseException``, so that a
    ``try: ... except Exception`` in the traced code does not swallow it."""

    def __init__(self, reason: str, explanation: str = "", hints: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.explanation = explanation
        self.hints = hints


class _State(threading.local):
    """Per thread, as the trace is: a DataLoader thread's calls during a capture are not the capture's."""

    def __init__(self) -> None:
        self.capturing: Any = None


class _Epoch:
    __slots__ = ("epoch",)

    def __init__(self) -> None:
        self.epoch = 0


state = _State()
epoch = _Epoch()
# id(module) -> the compiled function its calls go to while a compiled parent that broke its graph runs eagerly
# (Note [Split at a graph break] in ember/_dynamo/eval_frame.py); empty otherwise, which is all a call checks
redirect: dict[int, Any] = {}    # process-wide: a module changed by any thread invalidates what every thread checked


def graph_break(reason: str, explanation: str = "", hints: tuple[str, ...] = ()) -> None:
    """Stop the capture in progress (if any) at this point, with ``reason``."""
    if state.capturing is not None:
        raise GraphBreak(reason, explanation, hints)


def bump() -> None:
    """Module structure or a tensor's metadata changed: compiled functions re-check their guards on it."""
    epoch.epoch += 1
