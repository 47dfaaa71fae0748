"""The MPI engine under ``ember.distributed``: MPI loaded on first use, NumPy arrays handed to MPI as
(buffer, datatype) pairs without copies, PyTorch's reduce ops mapped onto MPI's, and the wait loop.

Note [Waiting on MPI]
~~~~~~~~~~~~~~~~~~~~~
Every collective and point-to-point call is issued as a nonblocking MPI operation (``Iallreduce``,
``Ibcast``, ``Isend``, ...) and completed by :func:`wait`, which tests the requests in a tight loop for the
first milliseconds (a small message completes there, at the speed of a blocking call) and then sleeps
between tests, backing off to a millisecond. Two things follow, and both are what PyTorch's process groups
promise: an operation can time out (``init_process_group(timeout=...)``) with an error naming the
operation and the rank instead of hanging forever, and a rank waiting for a slower peer leaves the CPU to
the other ranks on the same machine (a blocking MPI call spins at 100%). ``async_op=True`` returns the
pending requests in a :class:`Work` whose ``wait()`` runs the same loop.
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable

import ml_dtypes
import numpy as np

_MPI: Any = None
_BF16 = np.dtype(ml_dtypes.bfloat16)
_SPIN_S = 0.002  # test without sleeping for this long (Note [Waiting on MPI])
_MAX_SLEEP_S = 0.001


def mpi_available() -> bool:
    """Whether mpi4py can be imported (without importing it: importing initializes MPI)."""
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


def MPI() -> Any:
    """The ``mpi4py.MPI`` module, imported (and MPI initialized) on first use."""
    global _MPI
    if _MPI is None:
        try:
            from mpi4py import MPI as mod
        except ImportError as e:
            raise RuntimeError("ember.distributed runs on MPI through mpi4py, which is not installed: "
                               "pip install 'ember[distributed]' (mpi4py and the mpich library)") from e
        _MPI = mod
    return _MPI


def launched_size() -> int:
    """The number of processes MPI's process manager started together with this one (1 for a process
    started on its own), read from the environment so that MPI itself need not be loaded."""
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE"):
        if var in os.environ:
            return int(os.environ[var])
    return 1


class DistError(RuntimeError):
    """``torch.distributed.DistError``: the base class of the errors the distributed package raises."""


class DistBackendError(DistError):
    """An error of the communication backend (a failed or timed-out collective)."""


class DistNetworkError(DistError):
    """A network error during rendezvous."""


class DistStoreError(DistError):
    """An error of the key-value store used for rendezvous."""


def buffer(a: np.ndarray) -> Any:
    """``a`` (C-contiguous) as an MPI buffer: the array itself, or a same-size view with an explicit
    datatype where MPI has no name for the element type (bfloat16 is moved as 16-bit words)."""
    if a.dtype == _BF16:
        return [a.view(np.uint16), MPI().UINT16_T]
    return a


def element_type(a: np.ndarray) -> Any:
    """The MPI datatype of one element of ``a``."""
    mpi = MPI()
    if a.dtype == _BF16:
        return mpi.UINT16_T
    return mpi.Datatype.fromcode(a.dtype.char) if a.dtype.char != "?" else mpi.C_BOOL


def abort_job(code: int) -> None:
    """End every rank of the job (MPI ``Abort``) after giving MPI's process manager a moment to pass on what this
    process has printed: it tears the job down without draining the ranks' output first."""
    import sys
    sys.stdout.flush()
    sys.stderr.flush()
    time.sleep(0.3)
    MPI().COMM_WORLD.Abort(code)


def wait(requests: list[Any], timeout_s: float, describe: Callable[[], str], statuses: list[Any] | None = None) -> None:
    """Complete ``requests`` (Note [Waiting on MPI]), filling ``statuses`` if given; past ``timeout_s`` seconds
    raise DistBackendError with ``describe()``, the operation and the rank."""
    mpi = MPI()
    if not requests or mpi.Request.Testall(requests, statuses):
        return
    start = time.monotonic()
    delay = 0.0
    while not mpi.Request.Testall(requests, statuses):
        waited = time.monotonic() - start
        if waited > timeout_s:
            raise DistBackendError(f"{describe()} timed out after {int(timeout_s * 1000)} ms: a peer rank did not "
                                   "take part (it may have exited, failed or be waiting on another collective)")
        if waited > _SPIN_S:
            time.sleep(delay)
            delay = min(max(delay * 2, 2e-5), _MAX_SLEEP_S)


def test(requests: list[Any], statuses: list[Any] | None = None) -> bool:
    """Whether ``requests`` have all completed (progresses them; never blocks)."""
    return not requests or bool(MPI().Request.Testall(requests, statuses))
