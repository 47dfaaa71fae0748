"""The communicator over every rank of a job, and the joining of nodes.

Note [Nodes as MPI jobs]
~~~~~~~~~~~~~~~~~~~~~~~~
torchrun starts one launcher per node, each starting that node's ranks, and the ranks meet at the master
address. ``python -m ember.distributed.run`` keeps that model: each node's launcher runs its ranks as one
MPI job (``mpiexec -n NPROC``), and the jobs meet through MPI's own dynamic-process interface. Node 0's
launcher starts MPI's name server (``hydra_nameserver``) on the master address and port; every job is
started with ``-nameserver MASTER_ADDR:MASTER_PORT``. Node 0's job opens an MPI port and publishes it under
the run id; each other job looks it up, connects, and the two sides merge into one intracommunicator,
which goes on accepting until every node has joined. A final ``Split`` orders the ranks as torchrun
numbers them: ``node_rank * nproc_per_node + local_rank``. With one node this is just ``COMM_WORLD``.
"""
from __future__ import annotations

import os
import time
from typing import Any

from ember.distributed import _mpi

_WORLD: Any = None


def world_comm() -> Any:
    """The job's world communicator (made once per process; see the note)."""
    global _WORLD
    if _WORLD is None:
        nnodes = int(os.environ.get("EMBER_DIST_NNODES", "1") or 1)
        _WORLD = _join_nodes(nnodes) if nnodes > 1 else _mpi.MPI().COMM_WORLD
    return _WORLD


def _nodes_in(comm: Any) -> int:
    mpi = _mpi.MPI()
    return int(comm.allreduce(1 if int(os.environ.get("LOCAL_RANK", "0")) == 0 else 0, op=mpi.SUM))


def _join_nodes(nnodes: int) -> Any:
    mpi = _mpi.MPI()
    node = int(os.environ["EMBER_DIST_NODE_RANK"])
    service = "ember-" + os.environ.get("EMBER_DIST_RUN_ID", "none")
    timeout = float(os.environ.get("EMBER_DIST_JOIN_TIMEOUT", "900"))
    local = mpi.COMM_WORLD
    port = None
    if node == 0:
        if local.Get_rank() == 0:
            port = mpi.Open_port()
            mpi.Publish_name(service, port)
        merged = local
    else:
        if local.Get_rank() == 0:
            start = time.monotonic()
            while port is None:
                try:
                    port = mpi.Lookup_name(service)
                except mpi.Exception:
                    if time.monotonic() - start > timeout:
                        raise _mpi.DistNetworkError(
                            f"node {node}: node 0 did not publish the job {service!r} on the name server within "
                            f"{int(timeout)} s (is its launcher running with the same --master-addr/--master-port "
                            "and --rdzv-id?)") from None
                    time.sleep(0.1)
        merged = local.Connect(port, root=0).Merge(high=True)
    while _nodes_in(merged) < nnodes:
        # node 0's rank 0 is rank 0 of every merged communicator: it holds the port
        merged = merged.Accept(port, root=0).Merge(high=False)
    if node == 0 and local.Get_rank() == 0:
        mpi.Unpublish_name(service, port)
        mpi.Close_port(port)
    return merged.Split(0, int(os.environ["RANK"]))
