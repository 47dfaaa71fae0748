"""Handing tensors from worker processes to the main process through shared memory.

In a worker, pickling an ember tensor for the result queue (``ForkingPickler``, which
``multiprocessing.Queue`` uses) writes its data once into a new file under ``/dev/shm`` and pickles only
the file's name, dtype and shape.  The main process maps the file, unlinks it at once (the mapping keeps
the memory until the last array over it is freed) and wraps the mapping in a tensor without copying.
Files are named ``ember-dl-<main pid>-<worker pid>-<n>`` so the main process can remove any that were
written but never received (a loader shut down mid-epoch, a worker killed mid-write).
"""
from __future__ import annotations

import glob
import itertools
import mmap
import os
import tempfile

import numpy as np

SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
_counter = itertools.count()
_main_pid = None


def _prefix(main_pid) -> str:
    return os.path.join(SHM_DIR, f"ember-dl-{main_pid}-")


def _reduce_tensor(t):
    src = t.detach().numpy()
    arr = np.ascontiguousarray(src).reshape(src.shape)   # (ascontiguousarray makes 0-d arrays 1-d)
    if arr.nbytes == 0 or t.device.type != "cpu":
        return (_rebuild_plain, (arr, t.requires_grad))
    path = f"{_prefix(_main_pid)}{os.getpid()}-{next(_counter)}"
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, arr.nbytes)
        with mmap.mmap(fd, arr.nbytes) as m:
            np.frombuffer(m, dtype=np.uint8)[:] = arr.reshape(-1).view(np.uint8)
    finally:
        os.close(fd)
    dtype = str(t.dtype).split(".")[-1]
    return (_rebuild_shared, (path, dtype, tuple(arr.shape), t.requires_grad))


def _rebuild_plain(arr, requires_grad):
    import ember
    return ember.from_numpy(arr).requires_grad_(requires_grad)


def _rebuild_shared(path, dtype, shape, requires_grad):
    import ember
    fd = os.open(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        m = mmap.mmap(fd, size)
    finally:
        os.close(fd)
        os.unlink(path)
    np_dtype = getattr(ember, dtype).np
    arr = np.frombuffer(m, dtype=np_dtype).reshape(shape)
    return ember.from_numpy(arr).requires_grad_(requires_grad)


def install_in_worker(main_pid: int) -> None:
    """Make the worker's result queue send tensors through shared memory."""
    global _main_pid
    from multiprocessing.reduction import ForkingPickler

    import ember
    from ember.nn.parameter import Parameter
    _main_pid = main_pid
    for cls in (ember.Tensor, Parameter):
        ForkingPickler.register(cls, _reduce_tensor)


def remove_leftovers(main_pid: int, worker_pids) -> None:
    """Unlink the shared-memory files the given workers wrote but nobody received."""
    for pid in worker_pids:
        for path in glob.glob(f"{_prefix(main_pid)}{pid}-*"):
            try:
                os.unlink(path)
            except OSError:
                pass
