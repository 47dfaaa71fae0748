"""``ember.distributed`` (``torch.distributed``): process groups, collectives and point-to-point messages over
MPI (``mpi4py`` with the ``mpich`` library: ``pip install 'ember[distributed]'``). The launcher is
``python -m ember.distributed.run`` (torchrun's arguments); docs/distributed.md tells how PyTorch's process
groups map onto MPI communicators."""
from __future__ import annotations

from ember.distributed._mpi import DistBackendError, DistError, DistNetworkError, DistStoreError
from ember.distributed.distributed_c10d import (  # noqa: F401
    _DEFAULT_FIRST_BUCKET_BYTES, Backend, GradBucket, GroupMember, P2POp, ProcessGroup, ReduceOp, Work, all_gather,
    all_gather_into_tensor, all_gather_object, all_gather_single, reduce_scatter_single, _all_gather_base,
    _reduce_scatter_base, all_reduce, all_to_all, all_to_all_single, barrier, batch_isend_irecv,
    broadcast, broadcast_object_list, default_pg_timeout, destroy_process_group, gather, gather_object, get_backend,
    get_global_rank, get_group_rank, get_node_local_rank, get_process_group_ranks, get_rank, get_world_size, group,
    init_process_group, irecv, is_gloo_available, is_initialized, is_mpi_available, is_nccl_available, isend,
    monitored_barrier, new_group, recv, reduce, reduce_op, reduce_scatter, reduce_scatter_tensor, scatter,
    scatter_object_list, send,
)

__all__ = ["DistBackendError", "DistError", "DistNetworkError", "DistStoreError"]


def is_available() -> bool:
    """Whether collectives can run: the MPI engine (mpi4py) is installed. Importing it waits until a process
    group is made, since importing MPI initializes it."""
    from ember.distributed._mpi import mpi_available
    return mpi_available()


def is_torchelastic_launched() -> bool:
    """Whether this process was started by a launcher that sets torchrun's environment."""
    import os
    return os.getenv("TORCHELASTIC_RUN_ID") is not None
