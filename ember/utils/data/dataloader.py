"""DataLoader (mirrors ``torch/utils/data/dataloader.py``).

Single-process loading fetches and collates in the caller.  With ``num_workers > 0`` each worker is a
process (``multiprocessing``, fork by default on Linux) with its own index queue; results come back on one
queue, tensors through shared memory (``_utils/shared.py``).  Up to ``prefetch_factor * num_workers``
batches are outstanding; ``in_order=False`` hands batches over as they arrive.  Failures surface fast:
the main process waits on the result queue in short slices and checks its workers' exit status in between
(PyTorch installs a SIGCHLD handler for the same purpose), so a worker killed by a signal is reported as
``DataLoader worker (pid N) is killed by signal: Killed.`` within a fraction of a second; exceptions in a
worker are re-raised with its traceback; ``timeout`` raises ``DataLoader timed out after N seconds``.
Workers exit when their loader is shut down (end of epoch, ``del``, garbage collection, interpreter exit)
or when they find their parent process gone, so none outlives the loader or the program.
"""
from __future__ import annotations

import atexit
import itertools
import multiprocessing as python_multiprocessing
import os
import queue
import signal
import time
import warnings
import weakref
from typing import Generic, TypeVar

import ember
from ember.autograd import profiler as _profiler
from ember.utils.data import _utils
from ember.utils.data._utils import ExceptionWrapper, shared, worker
from ember.utils.data._utils.collate import default_collate, default_convert
from ember.utils.data._utils.fetch import create_fetcher
from ember.utils.data._utils.worker import get_worker_info  # noqa: F401
from ember.utils.data.dataset import IterableDataset
from ember.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

_live_iterators: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _shutdown_all() -> None:
    for it in list(_live_iterators):
        it._shutdown_workers()


class _DatasetKind:
    """Which fetcher a loader uses: ``Map`` (indices from a sampler) or ``Iterable`` (the dataset's iterator), with
    ``create_fetcher`` making one (PyTorch's private names, which libraries subclassing the loader use)."""
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        return create_fetcher(kind == _DatasetKind.Iterable, dataset, auto_collation, collate_fn, drop_last)


def _kind(iterable: bool) -> int:
    return _DatasetKind.Iterable if iterable else _DatasetKind.Map


class _InfiniteConstantSampler(Sampler):
    """The sampler of iterable datasets: ``None`` forever (the dataset decides when to stop)."""

    def __iter__(self):
        while True:
            yield None


_T_co = TypeVar("_T_co", covariant=True)


class DataLoader(Generic[_T_co]):
    """Combines a dataset and a sampler and iterates over batches, optionally in worker processes."""
    _dataset_kind = property(lambda self: _kind(self._iterable))

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._iterable = True
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._iterable = False
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        if context is not None:
            if self.num_workers > 0:
                if isinstance(context, str):
                    valid = python_multiprocessing.get_all_start_methods()
                    if context not in valid:
                        raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                         f"{valid!r}, but got multiprocessing_context={context!r}")
                    context = python_multiprocessing.get_context(context)
                if not isinstance(context, python_multiprocessing.context.BaseContext):
                    raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                    f"specifying the start method, but got multiprocessing_context={context}")
            else:
                raise ValueError("multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
        self.__multiprocessing_context = context

    def __setattr__(self, attr, val) -> None:
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    length = length // self.batch_size
                else:
                    length = -(-length // self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    _dataset_kind = property(lambda self: _kind(self._iterable))

    def __init__(self, loader) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and not ember.cuda.is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=3)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # one draw from the loader's generator (or the global one) per iterator, as PyTorch makes it
        self._base_seed = ember.empty((), dtype=ember.int64).random_(generator=loader.generator).item()
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        if _profiler.recorder is not None:      # Note [RecordFunction]: the wait for each batch is a range
            with _profiler.record_function(f"enumerate(DataLoader)#{self.__class__.__name__}.__next__"):
                return self._next()
        return self._next()

    def _next(self):
        data = self._next_data()
        self._num_yielded += 1
        if self._iterable and self._IterableDataset_len_called is not None and \
                self._num_yielded > self._IterableDataset_len_called:
            msg = (f"Length of IterableDataset {self._dataset} was reported to be {self._IterableDataset_len_called}"
                   f"(when accessing len(dataloader)), but {self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                        "IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled", self.__class__.__name__)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader) -> None:
        super().__init__(loader)
        self._fetcher = create_fetcher(self._iterable, self._dataset, self._auto_collation, self._collate_fn,
                                       self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._fetcher.fetch(index)


def _worker_failure(w) -> str | None:
    """PyTorch's message for a worker process that has died, or None while it runs."""
    code = w.exitcode
    if code is None:
        return None
    if code < 0:
        try:
            name = signal.strsignal(-code) or f"signal {-code}"
        except ValueError:
            name = f"signal {-code}"
        msg = f"DataLoader worker (pid {w.pid}) is killed by signal: {name}. "
        if -code == signal.SIGBUS:
            msg += ("It is possible that dataloader's workers are out of shared memory. Please try to raise your "
                    "shared memory limit.")
        return msg
    if code > 0:
        return (f"DataLoader worker (pid {w.pid}) exited unexpectedly with exit code {code}. Details are lost due to "
                "multiprocessing. Rerunning with num_workers=0 may give better error trace.")
    return f"DataLoader worker (pid(s) {w.pid}) exited unexpectedly"


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        ctx = loader.multiprocessing_context or python_multiprocessing.get_context()
        self._worker_result_queue = ctx.Queue()
        self._shutdown = False
        self._workers_done_event = ctx.Event()
        self._index_queues, self._workers = [], []
        self._main_pid = os.getpid()
        for i in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()
            w = ctx.Process(target=worker._worker_loop,
                            args=(self._iterable, self._dataset, index_queue, self._worker_result_queue,
                                  self._workers_done_event, self._auto_collation, self._collate_fn, self._drop_last,
                                  self._base_seed, loader.worker_init_fn, i, self._num_workers, self._main_pid))
            w.daemon = True
            w.start()
            self._index_queues.append(index_queue)
            self._workers.append(w)
        self._data_queue = self._worker_result_queue
        _live_iterators.add(self)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info: dict = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for q in self._index_queues:
                q.put(worker._ResumeIteration())
            remaining = self._num_workers
            while remaining > 0:
                return_idx, _ = self._get_data()
                if isinstance(return_idx, worker._ResumeIteration):
                    remaining -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _check_workers(self) -> None:
        for worker_id, w in enumerate(self._workers):
            if self._workers_status[worker_id] or self._persistent_workers:
                msg = _worker_failure(w)
                if msg is not None:
                    self._shutdown_workers()
                    raise RuntimeError(msg)

    def _get_data(self):
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _utils.MP_STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = min(wait, max(0.0, deadline - time.monotonic()))
            try:
                return self._data_queue.get(timeout=wait)
            except queue.Empty:
                pass
            self._check_workers()
            if deadline is not None and time.monotonic() >= deadline:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._iterable and isinstance(data, worker._IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[idx] += (data,)
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, if any
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                if self._in_order:
                    break
                if self._workers_num_tasks[worker_queue_idx] < max_tasks // sum(self._workers_status):
                    break
        else:
            return
        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._workers_num_tasks[worker_queue_idx] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_idx):
        self._workers_num_tasks[worker_idx] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id, shutdown=False) -> None:
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        if self._shutdown or not hasattr(self, "_workers"):
            return
        self._shutdown = True
        try:
            self._workers_done_event.set()
            for worker_id in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[worker_id]:
                    self._mark_worker_as_unavailable(worker_id, shutdown=True)
            for w in self._workers:
                w.join(timeout=1.0)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=1.0)
            # batches still queued hold shared-memory files: receive (and so free) what is there, then
            # remove any file a worker wrote but never sent
            try:
                while True:
                    self._worker_result_queue.get_nowait()
            except Exception:
                pass
            self._worker_result_queue.cancel_join_thread()
            self._worker_result_queue.close()
            shared.remove_leftovers(self._main_pid, [w.pid for w in self._workers])
            _live_iterators.discard(self)

    def __del__(self) -> None:
        self._shutdown_workers()
