"""``torch.multiprocessing``: Python's ``multiprocessing`` (everything it exports is here), PyTorch's sharing-strategy
switches, and ``spawn`` / ``start_processes``, which run ``fn(i, *args)`` in ``nprocs`` processes and report the
first failure with the child's traceback.

Tensors cross process boundaries by pickling, that is by copy. Memory shared on purpose is the other way:
``Tensor.share_memory_()`` before the processes fork puts the tensor in an anonymous shared mapping that every
forked child writes to and reads from (the Hogwild pattern)."""
from __future__ import annotations

import multiprocessing
import sys
from multiprocessing import *  # noqa: F401,F403

from ember.multiprocessing.spawn import (ENV_VAR_PARALLEL_START, ProcessContext, ProcessExitedException,  # noqa: F401
                                         ProcessRaisedException, SpawnContext, spawn, start_processes)

__all__ = list(multiprocessing.__all__) + ["set_sharing_strategy", "get_sharing_strategy",
                                            "get_all_sharing_strategies", "spawn", "start_processes",
                                            "ProcessContext", "ProcessRaisedException", "ProcessExitedException",
                                            "SpawnContext", "init_reductions"]

_all_sharing_strategies = {"file_system"} if sys.platform == "darwin" else {"file_descriptor", "file_system"}
_sharing_strategy = "file_system" if sys.platform == "darwin" else "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    """How PyTorch passes shared tensors between processes ('file_descriptor' or 'file_system'): recorded and
    reported back (ember's shared memory is an anonymous mapping inherited by fork, whichever is chosen)."""
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"{new_strategy} is not a valid sharing strategy")
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    return _sharing_strategy


def get_all_sharing_strategies() -> set[str]:
    return set(_all_sharing_strategies)


def init_reductions() -> None:
    """PyTorch registers its pickling reductions for tensors here; ember's tensors pickle by value already."""
