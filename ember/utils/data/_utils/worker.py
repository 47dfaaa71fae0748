"""The worker process loop (mirrors ``torch/utils/data/_utils/worker.py``)."""
from __future__ import annotations

import os
import queue
import random
from dataclasses import dataclass

from ember.utils.data._utils import MP_STATUS_CHECK_INTERVAL, ExceptionWrapper
from ember.utils.data._utils.fetch import create_fetcher

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker."""

    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info():
    """In a DataLoader worker: its ``WorkerInfo`` (id, num_workers, seed, its copy of the dataset);
    ``None`` in the main process."""
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    seed: object = None


def _generate_state(base_seed: int, worker_id: int) -> list:
    """The NumPy seed of a worker: four 32-bit words hashed and mixed from ``(worker_id, base_seed)``
    the way NumPy's SeedSequence does, as PyTorch derives it (so that ``numpy.random`` and ``random``,
    both seeded from ``base_seed + worker_id``, never share a state)."""
    mask = 0xFFFFFFFF
    shift = 16
    mult_a, mult_b = 0x931E8875, 0x58F38DED
    mix_l, mix_r = 0xCA01F9DD, 0x4973F715
    hash_const = [0x43B0D7E5]

    def hashmix(value):
        value = (value ^ hash_const[0]) & mask
        hash_const[0] = (hash_const[0] * mult_a) & mask
        value = (value * hash_const[0]) & mask
        return (value ^ (value >> shift)) & mask

    def mix(x, y):
        r = ((mix_l * x) & mask) - ((mix_r * y) & mask)
        r &= mask
        return (r ^ (r >> shift)) & mask

    pool = [hashmix(v) for v in (worker_id, base_seed & mask, base_seed >> 32, 0)]
    for src in range(4):
        for dst in range(4):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    out, const_b = [], 0x8B51F9DD
    for value in pool:
        value = (value ^ const_b) & mask
        const_b = (const_b * mult_b) & mask
        value = (value * const_b) & mask
        out.append((value ^ (value >> shift)) & mask)
    return out


def _worker_loop(iterable, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn, drop_last,
                 base_seed, init_fn, worker_id, num_workers, main_pid):
    global _worker_info
    import numpy as np

    import ember
    from ember.utils.data._utils import shared
    try:
        shared.install_in_worker(main_pid)
        ember.set_num_threads(1)        # as PyTorch: workers run side by side, one thread each
        seed = base_seed + worker_id
        random.seed(seed)
        ember.manual_seed(seed)
        np.random.seed(_generate_state(base_seed, worker_id))
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)

        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")

        iteration_end = False
        parent = os.getppid()       # the main process, or the fork server that started this worker
        while os.getppid() == parent:  # exit when it is gone
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL * 5)
            except queue.Empty:
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                fetcher = create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
            del data, idx, index, r
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
