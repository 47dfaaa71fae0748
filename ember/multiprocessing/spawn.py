"""``torch.multiprocessing.spawn``: start ``nprocs`` processes running ``fn(i, *args)``, join them, and turn the
first failure into an exception carrying the child's traceback (``ProcessRaisedException``) or its exit code /
signal (``ProcessExitedException``); the other processes are then terminated."""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback
import warnings
from typing import Any, Callable

__all__ = ["spawn", "start_processes", "ProcessContext", "SpawnContext", "ProcessRaisedException",
           "ProcessExitedException", "ProcessException", "ENV_VAR_PARALLEL_START"]

ENV_VAR_PARALLEL_START = "TORCH_MP_PARALLEL_START"


class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self) -> Any:
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A child raised: ``msg`` ends with its traceback."""


class ProcessExitedException(ProcessException):
    """A child exited with a non-zero code, or was killed by a signal."""

    __slots__ = ["exit_code"]

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self) -> Any:
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn: Callable[..., Any], i: int, args: tuple[Any, ...], error_queue: Any) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is told by the exit code
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    def __init__(self, processes: list[Any], error_queues: list[Any]) -> None:
        self.error_queues = error_queues
        self.processes = processes
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait for the processes (up to ``timeout`` seconds); True when all have finished successfully. On a
        failure, terminate the others and raise."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        for process in self.processes:
            if process.is_alive():
                process.terminate()
            process.join(grace_period)
        failed = self.processes[error_index]
        if self.error_queues[error_index].empty():
            exitcode = failed.exitcode
            if exitcode < 0:
                name = signal.Signals(-exitcode).name
                raise ProcessExitedException(f"process {error_index} terminated with signal {name}", error_index,
                                             failed.pid, exitcode, name)
            raise ProcessExitedException(f"process {error_index} terminated with exit code {exitcode}", error_index,
                                         failed.pid, exitcode)
        original = self.error_queues[error_index].get()
        msg = f"\n\n-- Process {error_index} terminated with the following error:\n" + original
        raise ProcessRaisedException(msg, error_index, failed.pid)


class SpawnContext(ProcessContext):
    def __init__(self, processes: list[Any], error_queues: list[Any]) -> None:
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", stacklevel=2)
        super().__init__(processes, error_queues)


def start_processes(fn: Callable[..., Any], args: tuple[Any, ...] = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """Start ``nprocs`` processes with ``start_method`` running ``fn(i, *args)``; join them unless ``join`` is
    False (then the ``ProcessContext`` is returned)."""
    mp = multiprocessing.get_context(start_method)
    error_queues, processes = [], []
    for i in range(nprocs):
        error_queue = mp.SimpleQueue()
        process = mp.Process(target=_wrap, args=(fn, i, args, error_queue), daemon=daemon)
        process.start()
        error_queues.append(error_queue)
        processes.append(process)
    context = ProcessContext(processes, error_queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable[..., Any], args: tuple[Any, ...] = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different "
                      "start_method use:\n\t\t torch.multiprocessing.start_processes(...)", FutureWarning,
                      stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
