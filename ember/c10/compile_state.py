"""The one interface between graph capture and the core (Note [Capture and Python state] in
``ember/_dynamo/capture.py``).

Note [Capture interface]
PyTorch's Dynamo sees Python state change by reading bytecode; ember's capture runs the real code, so the code
that changes state a captured graph cannot replay must say so. It does it only through this module:

* ``state_changing(reason, explanation)`` -- a hook registered or removed, a tensor's ``.data`` replaced, ...:
  stops a capture in progress *before* the change happens (a ``GraphBreak``), so a failed capture leaves nothing
  behind, and moves ``epoch`` so compiled functions re-check their guards on module state;
* ``module_changing(module, name, value, what)`` -- an attribute, parameter, buffer or submodule set (or deleted:
  ``DELETED``); ``module_created(module)``;
* ``graph_break(reason, explanation)`` -- something a graph cannot hold, changing nothing;
* while a capture runs, ``state.capturing`` is the ``Capture`` it installed, whose methods the core calls where a
  capture must see a value other than the stored one: ``.grad`` reads and writes of real tensors, the sums
  ``AccumulateGrad`` would write, a ``backward()`` starting (Note [Backward inside a capture]).

Outside a capture each of these is one thread-local read (and a counter for the changes). ``epoch.epoch`` counts
changes of module structure and tensor metadata; ``redirect`` sends the calls of a compiled module's submodules
to their own compiled functions (Note [Split at a graph break] in ``ember/_dynamo/eval_frame.py``).
"""
from __future__ import annotations

import threading
from typing import Any

__all__ = ["GraphBreak", "Capture", "state", "epoch", "redirect", "DELETED", "capturing", "graph_break",
           "state_changing", "module_changing", "module_created", "bump"]


class GraphBreak(BaseException):
    """Raised inside a capture where the code does something a graph cannot hold. A ``BaseException``, so that a
    ``try: ... except Exception`` in the traced code does not swallow it."""

    def __init__(self, reason: str, explanation: str = "", hints: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.explanation = explanation
        self.hints = hints


class Capture:
    """What the core asks of a capture in progress; ``ember._dynamo.capture`` installs its implementation as
    ``state.capturing`` for the length of one capture. These defaults describe a capture that sees nothing."""

    def module_created(self, module: Any) -> None:
        """``module`` was made inside the capture: the traced code may build it as it likes."""

    def module_changing(self, module: Any, name: str, value: Any, what: str) -> None:
        """``module.name`` is about to become ``value`` (``DELETED``: removed) by ``what`` (``"setattr"``,
        ``"register_buffer"``, ...); raise ``GraphBreak`` if the graph could not replay that."""

    def backward_started(self, create_graph: bool) -> None:
        """``backward()`` runs inside the capture."""

    def read_grad(self, t: Any) -> Any:
        """``t.grad`` of a real tensor as the traced code sees it."""
        return t.__dict__.get("_grad")

    def write_grad(self, t: Any, value: Any) -> None:
        """The traced code assigns ``t.grad`` of a real tensor."""

    def accumulate_grad(self, var: Any, g: Any, node: Any) -> None:
        """``AccumulateGrad`` (``node``) adds ``g`` into ``var.grad``."""


class _State(threading.local):
    """Per thread, as the trace is: a DataLoader thread's calls during a capture are not the capture's."""

    def __init__(self) -> None:
        self.capturing: Capture | None = None


class _Epoch:
    __slots__ = ("epoch",)

    def __init__(self) -> None:
        self.epoch = 0


state = _State()
epoch = _Epoch()
redirect: dict[int, Any] = {}    # id(module) -> its compiled function; process-wide, empty unless a graph broke
DELETED = object()               # module_changing's value for an attribute being deleted


def capturing() -> bool:
    """Whether a capture runs on this thread."""
    return state.capturing is not None


def graph_break(reason: str, explanation: str = "", hints: tuple[str, ...] = ()) -> None:
    """Stop the capture in progress (if any) at this point, with ``reason``."""
    if state.capturing is not None:
        raise GraphBreak(reason, explanation, hints)


def bump() -> None:
    """Module structure or a tensor's metadata changed: compiled functions re-check their guards on it."""
    epoch.epoch += 1


def state_changing(reason: str, explanation: str) -> None:
    """State a graph cannot replay is about to change: stop a capture in progress, then count the change."""
    graph_break(reason, explanation)
    epoch.epoch += 1


def module_changing(module: Any, name: str, value: Any, what: str) -> None:
    """``module.name`` is about to become ``value`` (``DELETED``: removed) by ``what``."""
    capture = state.capturing
    if capture is not None:
        capture.module_changing(module, name, value, what)
    epoch.epoch += 1


def module_created(module: Any) -> None:
    capture = state.capturing
    if capture is not None:
        capture.module_created(module)
