"""``ember.futures`` (``torch.futures``): a result that arrives later -- a collective's ``Work.get_future()``,
or one set by hand -- with ``then`` / ``add_done_callback`` chains, ``collect_all`` and ``wait_all``.

Nothing here runs on a thread of its own: a future made by an operation completes when somebody waits on it
(or on a future chained to it), which drives the operation to its end and then runs the callbacks in order."""
from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")

_UNSET: Any = object()


class Future(Generic[T]):
    def __init__(self, *, devices: Any = None) -> None:
        self._value: Any = _UNSET
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future[T]], None]] = []
        self._work: Any = None  # the Work whose completion sets this future
        self._parent: Future[Any] | None = None  # the future whose callback sets this one

    def __repr__(self) -> str:
        return f"<torch.Future object at {hex(id(self))}>"

    def done(self) -> bool:
        return self._value is not _UNSET or self._error is not None

    def _drive(self) -> None:
        if self.done():
            return
        if self._work is not None:
            self._work.wait()
        elif self._parent is not None:
            self._parent._drive()
        if not self.done():
            raise RuntimeError("Future.wait(): the future was never completed (set_result was not called)")

    def wait(self) -> T:
        """Block until the value is set (driving the operation behind it), then return it, or raise its error."""
        self._drive()
        if self._error is not None:
            raise self._error
        return self._value

    def value(self) -> T:
        """The value of a completed future (raises its error if it failed)."""
        if self._error is not None:
            raise self._error
        if self._value is _UNSET:
            raise RuntimeError("Future.value() called on a future that has not completed; call wait() first")
        return self._value

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        """A future completed with ``callback(self)`` once this one completes."""
        nxt: Future[S] = Future()
        nxt._parent = self

        def run(fut: Future[T]) -> None:
            try:
                nxt.set_result(callback(fut))
            except BaseException as e:  # noqa: BLE001 -- handed to whoever waits on the chained future
                nxt.set_exception(RuntimeError(f"Got the following error when running the callback: "
                                               f"{type(e).__name__}: {e}"))
        self.add_done_callback(run)
        return nxt

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Run ``callback(self)`` when the future completes (now, if it has)."""
        if self.done():
            callback(self)
        else:
            self._callbacks.append(callback)

    def _complete(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def set_result(self, result: T) -> None:
        if self.done():
            raise RuntimeError("Attempting to mark a completed Future as complete again. Note that a Future can only "
                               "be marked completed once.")
        self._value = result
        self._complete()

    def set_exception(self, result: BaseException) -> None:
        if not isinstance(result, BaseException):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        if self.done():
            raise RuntimeError("Attempting to mark a completed Future as complete again. Note that a Future can only "
                               "be marked completed once.")
        self._error = result
        self._complete()


class _AllOf(Future[list[Future[Any]]]):
    """What ``collect_all`` returns: waiting on it waits on each member."""

    def __init__(self, futures: list[Future[Any]]) -> None:
        super().__init__()
        self._members = list(futures)
        self._pending = len(self._members)
        if not self._members:
            self.set_result([])
        for f in self._members:
            f.add_done_callback(self._one_done)

    def _one_done(self, _fut: Future[Any]) -> None:
        self._pending -= 1
        if self._pending == 0:
            self.set_result(list(self._members))

    def _drive(self) -> None:
        for f in self._members:
            f._drive()


def collect_all(futures: list[Future[Any]]) -> Future[list[Future[Any]]]:
    """A future completed with the list of ``futures`` once all of them have completed."""
    return _AllOf(futures)


def wait_all(futures: list[Future[Any]]) -> list[Any]:
    """Wait for every future; their values (the first error is raised)."""
    return [f.wait() for f in futures]
