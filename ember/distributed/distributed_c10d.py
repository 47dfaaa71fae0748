"""Process groups and collectives (``torch/distributed/distributed_c10d.py``) on MPI communicators.

Note [Process groups on MPI]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
PyTorch's default process group is the set of all ranks; here it is an MPI intracommunicator over the
processes MPI's process manager started (``mpiexec``, which ``python -m ember.distributed.run`` calls), in
the rank order the script asked for. ``new_group(ranks)`` is ``Split`` of the default communicator: every
rank calls it, as PyTorch requires, and the ranks outside the group get ``GroupMember.NON_GROUP_MEMBER``.
Whatever backend a script names -- ``"gloo"``, ``"nccl"``, ``"mpi"`` or the default
``"cpu:gloo,cuda:nccl"`` -- the operations run on MPI, and ``get_backend()`` answers the name the script
asked for, so code that branches on it takes the path it takes under PyTorch.

A tensor's elements are handed to MPI where they lie when the tensor is contiguous; otherwise (and for
GPU tensors, staged through the host) through a contiguous copy that is written back when the operation
completes. Reductions of bfloat16 (which MPI has no type for) run in float32 and are rounded back.
``ReduceOp.AVG`` is a sum divided by the group size. Every operation is nonblocking underneath
(Note [Waiting on MPI]): ``async_op=True`` returns a :class:`Work`, and a peer that never arrives ends
the wait after the group's ``timeout`` with ``DistBackendError``.

Object collectives pickle each object into a byte tensor, exchange the sizes and then the bytes, as
PyTorch does.
"""
from __future__ import annotations

import enum
import io
import os
import pickle
import sys
import warnings
from datetime import timedelta
from typing import Any, Callable

import numpy as np

import ember
from ember.distributed import _mpi, _rendezvous
from ember.distributed._mpi import DistBackendError, DistError, DistNetworkError, DistStoreError  # noqa: F401

__all__ = [
    "Backend", "GradBucket", "GroupMember", "P2POp", "ProcessGroup", "ReduceOp", "Work", "all_gather",
    "all_gather_into_tensor", "all_gather_single", "reduce_scatter_single",
    "all_gather_object", "all_reduce", "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv",
    "broadcast", "broadcast_object_list", "destroy_process_group", "gather", "gather_object", "get_backend",
    "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group",
    "init_process_group", "irecv", "is_initialized", "is_mpi_available", "is_gloo_available",
    "is_nccl_available", "isend", "monitored_barrier", "new_group", "recv", "reduce", "reduce_scatter",
    "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
]

default_pg_timeout = timedelta(minutes=30)
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024  # DDP's first gradient bucket


class Backend(str):
    """A backend name (``torch.distributed.Backend``): a string, lower-cased, with the known names as
    attributes. Every name runs on ember's MPI engine (Note [Process groups on MPI])."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    backend_list = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI]
    default_device_backend_map = {"cpu": GLOO, "cuda": NCCL}

    def __new__(cls, name: str) -> Any:
        if not isinstance(name, str):
            raise ValueError("Backend constructor parameter must be string-ish")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            value = name.lower()
        return value


class ReduceOp:
    """The reduction of a collective (``torch.distributed.ReduceOp``); ``ReduceOp.SUM`` and friends are
    members of ``ReduceOp.RedOpType``, as in PyTorch."""

    class RedOpType(enum.IntEnum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8

        def __repr__(self) -> str:
            return f"<RedOpType.{self.name}: {self.value}>"

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM


reduce_op = ReduceOp  # the deprecated name


class ProcessGroup:
    """A group of ranks with the MPI communicator that carries its operations (Note [Process groups on MPI])."""

    def __init__(self, comm: Any, ranks: list[int], backend: str, timeout: timedelta, name: str,
                 desc: str) -> None:
        self._comm = comm
        self._ranks = list(ranks)  # group rank -> global rank
        self._group_rank_of = {g: i for i, g in enumerate(self._ranks)}
        self._backend = Backend(backend)
        self._timeout = timeout
        self.group_name = name
        self.group_desc = desc

    def rank(self) -> int:
        return int(self._comm.Get_rank())

    def size(self) -> int:
        return len(self._ranks)

    def name(self) -> str:
        """The backend serving CPU tensors: the one named, or gloo when the group was made without a name."""
        if self._backend == Backend.UNDEFINED:
            return Backend.GLOO
        if ":" in self._backend:
            return self._backend.split("cpu:")[-1].split(",")[0] if "cpu:" in self._backend else Backend.GLOO
        return str(self._backend)

    @property
    def bound_device_id(self) -> Any:
        return None

    def _describe(self, op: str) -> str:
        return (f"[Rank {_global_rank()}] {op} on process group {self.group_desc or self.group_name!r} "
                f"(size {self.size()})")


class GroupMember:
    """``GroupMember.WORLD`` (the default group, once initialized) and ``NON_GROUP_MEMBER``, what
    ``new_group`` returns on the ranks it leaves out."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER: Any = -100


class group:
    """``torch.distributed.group.WORLD``."""

    WORLD: ProcessGroup | None = None


class _World:
    default: ProcessGroup | None = None
    groups: list[ProcessGroup] = []
    count = 0
    excepthook: Any = None


def is_mpi_available() -> bool:
    return _mpi.mpi_available()


def is_gloo_available() -> bool:
    """True: a ``"gloo"`` group runs on ember's MPI engine."""
    return _mpi.mpi_available()


def is_nccl_available() -> bool:
    """True where ``"nccl"`` groups can be made: they run on the MPI engine like ``"gloo"``."""
    return _mpi.mpi_available()


def is_initialized() -> bool:
    """Whether the default process group has been initialized."""
    return _World.default is not None


def _global_rank() -> int:
    return -1 if _World.default is None else _World.default.rank()


def _get_default_group() -> ProcessGroup:
    if _World.default is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return _World.default


def _group_or_default(group: Any) -> Any:
    if group is None or group is GroupMember.WORLD:
        return _get_default_group()
    if group is GroupMember.NON_GROUP_MEMBER:
        return group
    if not isinstance(group, ProcessGroup):
        raise ValueError(f"Expecting a ProcessGroup, but got a {type(group)}.")
    if group not in _World.groups:
        raise ValueError("Invalid process group specified or has been destroyed.")
    return group


def _check_single_tensor(param: Any, param_name: str) -> None:
    if not isinstance(param, ember.Tensor):
        raise TypeError(f"""Invalid function argument. Expected parameter `{param_name}` of type torch.Tensor
             but got {type(param)} instead.""")


def _check_tensor_list(param: Any, param_name: str) -> None:
    if not isinstance(param, list):
        raise TypeError(f"""Invalid function argument. Expected parameter `{param_name}` of type List[torch.Tensor]
             but got {type(param)} instead.""")
    if not all(isinstance(p, ember.Tensor) for p in param):
        raise TypeError(f"""Invalid function argument. Expected parameter `{param_name}` of type List[torch.Tensor]
             but got {type(param)} with elements of type {[type(p) for p in param]}.""")


def _ensure_same_dtype(*tensors: Any) -> None:
    last = None
    for t in (x for ts in tensors for x in (ts if isinstance(ts, list) else [ts])):
        dt = t.dtype
        if dt.is_complex:
            dt = ember.float32 if dt == ember.complex64 else ember.float64
        if last is None:
            last = dt
        elif last != dt:
            raise ValueError(f"Invalid usage of tensors with different dtypes"
                             f"Found {last} and  {t.dtype}")


def _member(group: Any, op_name: str) -> ProcessGroup | None:
    """The process group an operation runs on (the default one for None), or None -- with PyTorch's warning --
    on a rank outside it."""
    pg = _group_or_default(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        warnings.warn(f"Running {op_name} on global rank {_global_rank()} which does not belong to the given group.",
                      stacklevel=3)
        return None
    return pg


def _root_list(items: list[Any] | None, arg: str, tensor: Any) -> list[Any]:
    """gather's / scatter's list of tensors (None or empty off the root), checked as PyTorch checks it."""
    if items:
        _check_tensor_list(items, arg)
    _ensure_same_dtype(tensor, items or [])
    return items or []


def _rooted(pg: ProcessGroup, global_rank: int | None, group_rank: int | None, items: list[Any], arg: str,
            role: str) -> tuple[int, bool]:
    """(the root's group rank, whether this rank is it) for gather and scatter (global rank 0 by default), with
    PyTorch's checks that only the root passes the list."""
    if global_rank is None and group_rank is None:
        global_rank = 0
    root = _canonical_rank(pg, global_rank, group_rank)
    mine = pg.rank() == root
    if mine and not items:
        raise ValueError(f"Argument ``{arg}`` must be specified on {role} rank.")
    if not mine and items:
        raise ValueError(f"Argument ``{arg}`` must NOT be specified on non-{role} ranks.")
    return root, mine


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    """The rank in ``group`` of the process with ``global_rank``."""
    if group is GroupMember.WORLD or group is _World.default:
        return global_rank
    if group not in _World.groups:
        raise ValueError(f"Group {group} is not registered, please create group with torch.distributed.new_group "
                         "API")
    if global_rank not in group._group_rank_of:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return group._group_rank_of[global_rank]


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    """The global rank of the process with rank ``group_rank`` in ``group``."""
    if group is GroupMember.WORLD or group is _World.default:
        return group_rank
    if group not in _World.groups:
        raise ValueError(f"Group {group} is not registered, please create group with torch.distributed.new_group "
                         "API")
    if not 0 <= group_rank < len(group._ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return group._ranks[group_rank]


def get_process_group_ranks(group: Any) -> list[int]:
    """The global ranks of ``group``'s members, in group-rank order."""
    return list(_group_or_default(group)._ranks)


def _canonical_rank(pg: ProcessGroup, global_rank: int | None, group_rank: int | None) -> int:
    """The group rank named by either a global or a group rank (PyTorch's ``_canonicalize_group_rank``)."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
        return group_rank
    if global_rank is None:
        raise ValueError("Must specify global_rank or group_rank")
    return get_group_rank(pg, global_rank)


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (the default group if None); -1 outside it."""
    pg = _group_or_default(group)
    return -1 if pg is GroupMember.NON_GROUP_MEMBER else pg.rank()


def get_world_size(group: Any = None) -> int:
    """The number of processes in ``group``; -1 outside it."""
    pg = _group_or_default(group)
    return -1 if pg is GroupMember.NON_GROUP_MEMBER else pg.size()


def get_backend(group: Any = None) -> Backend:
    """The backend name the group was made with (as the script named it)."""
    pg = _group_or_default(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return pg._backend


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
                       "`get_node_local_rank` to work, assuming you are not running in a multi-device context and "
                       "want the code to run locally instead.")


# -- init / destroy ------------------------------------------------------------------------------------------

def _check_backend(backend: str | None) -> str:
    if backend is None:
        return Backend.UNDEFINED  # what PyTorch's get_backend() answers when none was named
    if not isinstance(backend, str):
        raise ValueError("Backend constructor parameter must be string-ish")
    known = {Backend.GLOO, Backend.NCCL, Backend.MPI, Backend.UCC}
    for part in backend.lower().split(","):
        name = part.split(":")[-1].strip()
        if name not in known:
            raise RuntimeError(f"Invalid backend: '{backend}'. ember.distributed runs every process group on MPI and "
                               "accepts the backends gloo, nccl, mpi and ucc.")
    return backend if ":" in backend else str(Backend(backend))


def _env_int(name: str) -> int | None:
    v = os.environ.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment variable {name} "
                         f"is not a number: {v!r}") from None


def init_process_group(backend: str | None = None, init_method: str | None = None, timeout: timedelta | None = None,
                       world_size: int = -1, rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Make the default process group over the job's MPI processes (Note [Process groups on MPI]).

    ``world_size`` and ``rank`` (arguments, or ``WORLD_SIZE`` / ``RANK`` for ``env://``) must describe the
    processes MPI started: the rank order follows ``rank``. ``init_method`` (``env://``, ``tcp://``,
    ``file://``) and ``store`` are accepted; MPI's process manager has already done their rendezvous."""
    if _World.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if init_method is not None and store is not None:
        raise AssertionError("Cannot specify both init_method and store.")
    if store is not None:
        if world_size <= 0:
            raise AssertionError("world_size must be positive if using store")
        if rank < 0:
            raise AssertionError("rank must be non-negative if using store")
    if timeout is not None and not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout)}")
    name = _check_backend(backend)
    init_method = init_method or "env://"
    if init_method.startswith("env://"):
        world_size = world_size if world_size != -1 else (_env_int("WORLD_SIZE") or -1)
        env_rank = _env_int("RANK")
        rank = rank if rank != -1 else (env_rank if env_rank is not None else -1)
    launched = _mpi.launched_size() * _nodes()
    if world_size not in (-1, launched):
        if launched == 1:
            raise RuntimeError(
                f"init_process_group: world_size={world_size}, but this process was started alone. ember.distributed "
                f"runs each rank as an MPI process: start the script with `python -m ember.distributed.run "
                f"--nproc-per-node {world_size} SCRIPT` (or `mpiexec -n {world_size} python SCRIPT`).")
        raise RuntimeError(f"init_process_group: world_size={world_size}, but MPI started {launched} processes for "
                           "this job; start it with as many processes as the world size")
    comm = _rendezvous.world_comm()  # MPI's world, or the launcher's nodes joined (Note [Nodes as MPI jobs])
    _load_fast_path()
    size = comm.Get_size()
    if rank != -1:
        if not 0 <= rank < size:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {size - 1}]")
        comm = comm.Split(0, rank)
        if comm.Get_rank() != rank:
            raise RuntimeError(f"init_process_group: two processes asked for rank {rank}")
    timeout = timeout or default_pg_timeout
    pg = ProcessGroup(comm, list(range(size)), name, timeout, group_name or "0", "default_pg")
    _World.default = pg
    _World.groups = [pg]
    _World.count = 1
    GroupMember.WORLD = pg
    group.WORLD = pg
    _install_excepthook()


def _nodes() -> int:
    return int(os.environ.get("EMBER_DIST_NNODES", "1") or 1)


def destroy_process_group(group: Any = None) -> None:
    """Destroy ``group``, or every group (the default one included) when None."""
    if group is None or group is GroupMember.WORLD or group is _World.default:
        if _World.default is None:
            raise ValueError("Default process group has not been initialized, please make sure to call "
                             "init_process_group.")
        for pg in _World.groups:
            _free(pg)
        _World.default = None
        _World.groups = []
        GroupMember.WORLD = None
        group_attr: Any = globals()["group"]
        group_attr.WORLD = None
        _restore_excepthook()
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group not in _World.groups:
        raise ValueError("Invalid process group specified or has been destroyed.")
    _World.groups.remove(group)
    _free(group)


def _free(pg: ProcessGroup) -> None:
    mpi = _mpi.MPI()
    if pg._comm not in (mpi.COMM_WORLD, mpi.COMM_SELF) and not _mpi.MPI().Is_finalized():
        try:
            pg._comm.Free()
        except _mpi.MPI().Exception:
            pass


def _install_excepthook() -> None:
    """An exception that nobody catches ends every rank of the job (MPI ``Abort``), instead of leaving the
    others waiting for this one until their timeout."""
    if _World.excepthook is not None or _mpi.launched_size() * _nodes() == 1:
        return
    previous = sys.excepthook

    def hook(tp: Any, value: Any, tb: Any) -> None:
        previous(tp, value, tb)
        if _World.default is not None:
            sys.stderr.write(f"[rank {_global_rank()}] ember.distributed: uncaught {tp.__name__}; ending every rank of "
                             "the job\n")
            _mpi.abort_job(1)
    _World.excepthook = previous
    sys.excepthook = hook


def _restore_excepthook() -> None:
    if _World.excepthook is not None:
        sys.excepthook = _World.excepthook
        _World.excepthook = None


def new_group(ranks: Any = None, timeout: timedelta | None = None, backend: str | None = None,
              pg_options: Any = None, use_local_synchronization: bool = False, group_desc: str | None = None,
              device_id: Any = None, sort_ranks: bool = True) -> Any:
    """A group of the given global ranks (all when None); every rank of the default group must call it.
    Returns ``GroupMember.NON_GROUP_MEMBER`` on the ranks left out."""
    world = _get_default_group()
    size = world.size()
    ranks = list(range(size)) if ranks is None or len(ranks) == 0 else [int(r) for r in ranks]
    if sort_ranks:
        ranks = sorted(ranks)
    if len(set(ranks)) != len(ranks):
        raise ValueError("the new group cannot have duplicate ranks")
    for r in ranks:
        if r < 0 or r >= size:
            raise ValueError("The new group's rank should be within the world_size set by init_process_group")
    mpi = _mpi.MPI()
    me = world.rank()
    inside = me in ranks
    comm = world._comm.Split(0 if inside else mpi.UNDEFINED, ranks.index(me) if inside else 0)
    _World.count += 1
    name = str(_World.count - 1)
    if not inside:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, ranks, _check_backend(backend) if backend else world._backend,
                      timeout or world._timeout, name, group_desc or "undefined")
    _World.groups.append(pg)
    return pg


# -- Work ----------------------------------------------------------------------------------------------------

class Work:
    """A pending operation (``async_op=True``): ``wait()`` completes it and puts its results in place;
    ``is_completed()`` asks without blocking."""

    def __init__(self, pg: ProcessGroup, op: str, requests: list[Any], finish: Callable[[], Any] | None,
                 result: list[Any]) -> None:
        self._pg = pg
        self._op = op
        self._requests = requests
        self._finish = finish
        self._result = result
        self._done = False
        self._exception: BaseException | None = None
        self._future: Any = None
        self._statuses: list[Any] | None = None
        self._source = -1

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()
        if self._future is not None and not self._future.done():
            self._future.set_result(self._result)

    def wait(self, timeout: timedelta | None = None) -> bool:
        if self._done:
            return True
        limit = (timeout or self._pg._timeout).total_seconds()
        try:
            _mpi.wait(self._requests, limit, lambda: self._pg._describe(self._op), self._statuses)
        except DistBackendError as e:
            self._exception = e
            if self._future is not None:
                self._future.set_exception(e)
            raise
        self._complete()
        return True

    def is_completed(self) -> bool:
        if not self._done and _mpi.test(self._requests, self._statuses):
            self._complete()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed() and self._exception is None

    def exception(self) -> BaseException | None:
        return self._exception

    def synchronize(self) -> None:
        self.wait()

    def result(self) -> list[Any]:
        self.wait()
        return self._result

    def source_rank(self) -> int:
        """The global rank a completed receive came from."""
        return self._source

    def get_future(self) -> Any:
        """A ``torch.futures.Future`` completed with the operation's result tensors."""
        if self._future is None:
            from ember.futures import Future
            fut: Any = Future()
            fut._work = self
            self._future = fut
            if self._done:
                fut.set_result(self._result)
        return self._future


class GradBucket:
    """What a communication hook receives (``torch.distributed.GradBucket``): a bucket's flat gradient buffer
    and its parameters."""

    def __init__(self, index: int, buffer: Any, params: list[Any], offsets: list[int], last: bool) -> None:
        self._index = index
        self._buffer = buffer
        self._params = params
        self._offsets = offsets
        self._last = last

    def index(self) -> int:
        return self._index

    def buffer(self) -> Any:
        return self._buffer

    def set_buffer(self, buffer: Any) -> None:
        self._buffer = buffer

    def gradients(self) -> list[Any]:
        return [self._buffer[o:o + p.numel()].view(p.shape) for p, o in zip(self._params, self._offsets)]

    def parameters(self) -> list[Any]:
        return list(self._params)

    def is_last(self) -> bool:
        return self._last


def _issue(pg: ProcessGroup, op: str, requests: list[Any], finish: Callable[[], Any] | None, async_op: bool,
           result: list[Any]) -> Work | None:
    work = Work(pg, op, requests, finish, result)
    if async_op:
        return work
    work.wait()
    return None


# -- buffers -------------------------------------------------------------------------------------------------

def _is_host(a: Any) -> bool:
    return isinstance(a, np.ndarray)


class _Buf:
    """A tensor's elements as a C-contiguous host array MPI reads or writes: the tensor's own array when it
    is contiguous on the CPU, else a copy, written back by ``finish()`` when ``write`` is set."""

    __slots__ = ("t", "arr", "copied", "write")

    def __init__(self, t: Any, write: bool) -> None:
        a = t._data
        self.t = t
        self.write = write
        if _is_host(a) and a.flags.c_contiguous:
            self.arr, self.copied = a, False
        else:
            host = a if _is_host(a) else a.get()
            self.arr, self.copied = np.ascontiguousarray(host), True

    def finish(self) -> None:
        if not self.write:
            return
        t = self.t
        if self.copied:
            a = t._data
            if _is_host(a):
                a[...] = self.arr.reshape(a.shape)
            else:
                import cupy  # type: ignore[import-not-found]
                a[...] = cupy.asarray(self.arr.reshape(a.shape))
        t._vc.version += 1


def _finish_all(bufs: list[_Buf], then: Callable[[], Any] | None = None) -> Callable[[], None]:
    def finish() -> None:
        if then is not None:
            then()
        for b in bufs:
            b.finish()
    return finish


# SUM / PRODUCT / MIN / MAX as MPI ops, and MPI's IN_PLACE: all_reduce's short path (filled when MPI is loaded)
_FAST_OPS: dict[Any, Any] = {}
_IN_PLACE: list[Any] = [None]


def _load_fast_path() -> None:
    mpi = _mpi.MPI()
    _IN_PLACE[0] = mpi.IN_PLACE
    _FAST_OPS.update({ReduceOp.SUM: mpi.SUM, ReduceOp.PRODUCT: mpi.PROD, ReduceOp.MIN: mpi.MIN, ReduceOp.MAX: mpi.MAX})


_MPI_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD", ReduceOp.MIN: "MIN",
            ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND", ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}
_BOOL_OPS = {ReduceOp.SUM: "LOR", ReduceOp.MAX: "LOR", ReduceOp.BOR: "LOR", ReduceOp.PRODUCT: "LAND",
             ReduceOp.MIN: "LAND", ReduceOp.BAND: "LAND", ReduceOp.BXOR: "LXOR"}


def _reduction(name: str, arr: np.ndarray, op: Any, pg: ProcessGroup) -> tuple[np.ndarray, Any, Callable[[], None]]:
    """(the array MPI reduces, the MPI op, what turns its result into ``arr``'s) for ``op`` on ``arr``'s dtype."""
    if type(op) is not ReduceOp.RedOpType:
        try:
            op = ReduceOp.RedOpType(op)
        except ValueError:
            raise ValueError(f"{name}: unknown reduce op {op!r}") from None
    kind = arr.dtype.kind
    if op == ReduceOp.PREMUL_SUM:
        raise RuntimeError(f"{name}: ReduceOp.PREMUL_SUM is not supported by ember's MPI backend")
    if kind == "c" and op not in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT):
        raise ValueError(f"{name} does not support {op} on complex tensors")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and kind not in "iub":
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
    mpi = _mpi.MPI()
    if kind == "b":
        if op == ReduceOp.AVG:
            raise RuntimeError("Cannot use ReduceOp.AVG with bool tensors")
        return arr, getattr(mpi, _BOOL_OPS[op]), lambda: None
    work = arr.astype(np.float32) if arr.dtype == _mpi._BF16 else arr
    n = pg.size()

    def after() -> None:
        if op == ReduceOp.AVG:  # as ``tensor / n`` (integers truncated)
            np.divide(work, n, out=work, casting="unsafe")
        if work is not arr:
            arr[...] = work.astype(arr.dtype)
    return work, getattr(mpi, _MPI_OPS[op]), after


# -- collectives ---------------------------------------------------------------------------------------------

def all_reduce(tensor: Any, op: Any = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over the group in place on every rank."""
    _check_single_tensor(tensor, "tensor")
    pg = _member(group, "all_reduce")
    if pg is None:
        return None
    arr = tensor._data
    mop = _FAST_OPS.get(op) if type(arr) is np.ndarray and arr.dtype.kind in "fiu" and arr.dtype != _mpi._BF16 \
        and arr.flags.c_contiguous else None
    if mop is not None:  # the common case, kept short: MPI reduces the tensor's own array in place
        req = pg._comm.Iallreduce(_IN_PLACE[0], arr, op=mop)
        return _issue(pg, "all_reduce", [req], lambda: _bump(tensor), async_op, [tensor])
    b = _Buf(tensor, True)
    work, mop, after = _reduction("all_reduce", b.arr, op, pg)
    req = pg._comm.Iallreduce(_mpi.MPI().IN_PLACE, _mpi.buffer(work), op=mop)
    return _issue(pg, "all_reduce", [req], _finish_all([b], after), async_op, [tensor])


def broadcast(tensor: Any, src: int | None = None, group: Any = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Copy ``tensor`` from rank ``src`` to every rank of the group."""
    _check_single_tensor(tensor, "tensor")
    pg = _member(group, "broadcast")
    if pg is None:
        return None
    root = _canonical_rank(pg, src, group_src)
    b = _Buf(tensor, pg.rank() != root)
    req = pg._comm.Ibcast(_mpi.buffer(b.arr), root=root)
    return _issue(pg, "broadcast", [req], _finish_all([b]), async_op, [tensor])


def reduce(tensor: Any, dst: int | None = None, op: Any = ReduceOp.SUM, group: Any = None, async_op: bool = False,
           group_dst: int | None = None) -> Work | None:
    """Reduce ``tensor`` over the group into rank ``dst``'s ``tensor`` (the others' are left unchanged)."""
    _check_single_tensor(tensor, "tensor")
    pg = _member(group, "reduce")
    if pg is None:
        return None
    root = _canonical_rank(pg, dst, group_dst)
    mine = pg.rank() == root
    b = _Buf(tensor, mine)
    work, mop, after = _reduction("reduce", b.arr, op, pg)
    mpi = _mpi.MPI()
    if mine:
        req = pg._comm.Ireduce(mpi.IN_PLACE, _mpi.buffer(work), op=mop, root=root)
        return _issue(pg, "reduce", [req], _finish_all([b], after), async_op, [tensor])
    req = pg._comm.Ireduce(_mpi.buffer(work), None, op=mop, root=root)
    return _issue(pg, "reduce", [req], None, async_op, [tensor])


def _one_per_rank(pg: ProcessGroup, tensors: list[Any], like: Any, what: str, arg: str) -> None:
    """``tensors`` holds one tensor per rank of ``pg``, each of ``like``'s shape and dtype."""
    if len(tensors) != pg.size():
        raise ValueError(f"{what}: {arg} must have one tensor per rank ({pg.size()}), got {len(tensors)}")
    for t in tensors:
        if t.shape != like.shape or t.dtype != like.dtype:
            raise ValueError(f"{what}: every tensor in {arg} must have the shape {tuple(like.shape)} and dtype "
                             f"{like.dtype}, got {tuple(t.shape)} and {t.dtype}")


def all_gather(tensor_list: list[Any], tensor: Any, group: Any = None, async_op: bool = False) -> Work | None:
    """Gather ``tensor`` from every rank into ``tensor_list`` (one tensor per rank) on every rank."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_single_tensor(tensor, "tensor")
    _ensure_same_dtype(tensor_list, tensor)
    pg = _member(group, "all_gather")
    if pg is None:
        return None
    _one_per_rank(pg, tensor_list, tensor, "all_gather", "tensor_list")
    src = _Buf(tensor, False)
    recv = np.empty((pg.size(),) + src.arr.shape, src.arr.dtype)
    req = pg._comm.Iallgather(_mpi.buffer(src.arr), _mpi.buffer(recv))
    return _issue(pg, "all_gather", [req], _scatter_rows(recv, tensor_list), async_op, tensor_list)


def _scatter_rows(rows: np.ndarray, outs: list[Any]) -> Callable[[], None]:
    """Copy ``rows[i]`` into ``outs[i]`` (the finish of the list-output collectives)."""
    def finish() -> None:
        for i, t in enumerate(outs):
            b = _Buf(t, True)
            b.arr[...] = rows[i].reshape(b.arr.shape)
            b.finish()
    return finish


def _bump(t: Any) -> None:
    t._vc.version += 1


def _gloo_sizes(shape: Any) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ")"


def all_gather_single(output_tensor: Any, input_tensor: Any, group: Any = None,
                      async_op: bool = False) -> Work | None:
    """Gather every rank's ``input_tensor`` into ``output_tensor``: concatenated along dim 0, or stacked
    when ``output_tensor`` has one more dimension."""
    _check_single_tensor(input_tensor, "input_tensor")
    _check_single_tensor(output_tensor, "output_tensor")
    _ensure_same_dtype(output_tensor, input_tensor)
    pg = _member(group, "all_gather_into_tensor")
    if pg is None:
        return None
    if str(pg._backend) == "gloo":
        # gloo gathers into the output's chunks along dim 0: each must have the input's sizes
        rows = output_tensor.shape[0] if output_tensor.dim() else 0
        step = -(-rows // pg.size()) if rows else 0
        count = -(-rows // step) if step else 0       # torch.chunk's number of pieces
        if count != pg.size():
            raise RuntimeError(f"ProcessGroupGloo::allgather: invalid output tensor list at index 0 (expected length "
                               f"{pg.size()}, got {count})")
        for i, lo in enumerate(range(0, rows, step)):
            got = (min(step, rows - lo),) + tuple(output_tensor.shape[1:])
            if got != tuple(input_tensor.shape):
                raise RuntimeError(f"ProcessGroupGloo::allgather: invalid tensor size at index {i} (expected "
                                   f"{_gloo_sizes(input_tensor.shape)}, got {_gloo_sizes(got)})")
    if output_tensor.numel() != input_tensor.numel() * pg.size():
        raise ValueError("output tensor size must be equal to world_size times input tensor size")
    src = _Buf(input_tensor, False)
    out = _Buf(output_tensor, True)
    req = pg._comm.Iallgather(_mpi.buffer(src.arr), _mpi.buffer(out.arr))
    return _issue(pg, "all_gather_into_tensor", [req], _finish_all([out]), async_op, [output_tensor])


def reduce_scatter(output: Any, input_list: list[Any], op: Any = ReduceOp.SUM, group: Any = None,
                   async_op: bool = False) -> Work | None:
    """Reduce ``input_list[i]`` over the group into rank i's ``output``."""
    _check_single_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    _ensure_same_dtype(output, input_list)
    pg = _member(group, "reduce_scatter")
    if pg is None:
        return None
    _one_per_rank(pg, input_list, output, "reduce_scatter", "input_list")
    send = np.stack([_Buf(t, False).arr for t in input_list])
    return _reduce_scatter(pg, "reduce_scatter", send, output, op, async_op)


def _reduce_scatter(pg: ProcessGroup, name: str, send: np.ndarray, output: Any, op: Any,
                    async_op: bool) -> Work | None:
    out = _Buf(output, True)
    work, mop, after = _reduction(name, out.arr, op, pg)
    if work is not out.arr:
        send = send.astype(work.dtype)
    req = pg._comm.Ireduce_scatter_block(_mpi.buffer(np.ascontiguousarray(send)), _mpi.buffer(work), op=mop)
    return _issue(pg, name, [req], _finish_all([out], after), async_op, [output])


def reduce_scatter_single(output: Any, input: Any, op: Any = ReduceOp.SUM, group: Any = None,
                          async_op: bool = False) -> Work | None:
    """Reduce ``input`` over the group and give rank i its i-th part (along dim 0, or of the stacked
    dimension) in ``output``."""
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    _ensure_same_dtype(output, input)
    pg = _member(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    if input.numel() != output.numel() * pg.size():
        raise ValueError("input tensor must be the same size as output size times world size")
    return _reduce_scatter(pg, "reduce_scatter_tensor", _Buf(input, False).arr, output, op, async_op)


# the names PyTorch 2.13 deprecates in favour of the *_single ones (each call warns, as there)
def all_gather_into_tensor(output_tensor: Any, input_tensor: Any, group: Any = None,
                           async_op: bool = False) -> Work | None:
    warnings.warn("`torch.distributed.all_gather_into_tensor` is deprecated. Please use "
                  "`torch.distributed.all_gather_single` instead.", FutureWarning, stacklevel=2)
    return all_gather_single(output_tensor, input_tensor, group, async_op)


def _all_gather_base(output_tensor: Any, input_tensor: Any, group: Any = None, async_op: bool = False) -> Work | None:
    warnings.warn("`torch.distributed._all_gather_base` is a private function and will be deprecated. Please use "
                  "`torch.distributed.all_gather_single` instead.", FutureWarning, stacklevel=2)
    return all_gather_single(output_tensor, input_tensor, group, async_op)


def reduce_scatter_tensor(output: Any, input: Any, op: Any = ReduceOp.SUM, group: Any = None,  # noqa: A002
                          async_op: bool = False) -> Work | None:
    warnings.warn("`torch.distributed.reduce_scatter_tensor` is deprecated. Please use "
                  "`torch.distributed.reduce_scatter_single` instead.", FutureWarning, stacklevel=2)
    return reduce_scatter_single(output, input, op, group, async_op)


def _reduce_scatter_base(output: Any, input: Any, op: Any = ReduceOp.SUM, group: Any = None,  # noqa: A002
                         async_op: bool = False) -> Work | None:
    warnings.warn("`torch.distributed._reduce_scatter_base` is a private function and will be deprecated. Please "
                  "use `torch.distributed.reduce_scatter_single` instead.", FutureWarning, stacklevel=2)
    return reduce_scatter_single(output, input, op, group, async_op)


def gather(tensor: Any, gather_list: list[Any] | None = None, dst: int | None = None, group: Any = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Gather every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (global rank 0 by default)."""
    _check_single_tensor(tensor, "tensor")
    gather_list = _root_list(gather_list, "gather_list", tensor)
    pg = _member(group, "gather")
    if pg is None:
        return None
    root, mine = _rooted(pg, dst, group_dst, gather_list, "gather_list", "destination")
    src = _Buf(tensor, False)
    if not mine:
        req = pg._comm.Igather(_mpi.buffer(src.arr), None, root=root)
        return _issue(pg, "gather", [req], None, async_op, [])
    _one_per_rank(pg, gather_list, tensor, "gather", "gather_list")
    recv = np.empty((pg.size(),) + src.arr.shape, src.arr.dtype)
    req = pg._comm.Igather(_mpi.buffer(src.arr), _mpi.buffer(recv), root=root)
    return _issue(pg, "gather", [req], _scatter_rows(recv, gather_list), async_op, gather_list)


def scatter(tensor: Any, scatter_list: list[Any] | None = None, src: int | None = None, group: Any = None,
            async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Give rank i ``scatter_list[i]`` of rank ``src`` (global rank 0 by default) in ``tensor``."""
    _check_single_tensor(tensor, "tensor")
    scatter_list = _root_list(scatter_list, "scatter_list", tensor)
    pg = _member(group, "scatter")
    if pg is None:
        return None
    root, mine = _rooted(pg, src, group_src, scatter_list, "scatter_list", "source")
    out = _Buf(tensor, True)
    send = None
    if mine:
        _one_per_rank(pg, scatter_list, tensor, "scatter", "scatter_list")
        send = _mpi.buffer(np.stack([_Buf(t, False).arr for t in scatter_list]))
    req = pg._comm.Iscatter(send, _mpi.buffer(out.arr), root=root)
    return _issue(pg, "scatter", [req], _finish_all([out]), async_op, [tensor])


def _alltoallv(pg: ProcessGroup, name: str, send: np.ndarray, send_counts: list[int], recv: np.ndarray,
               recv_counts: list[int], finish: Callable[[], None], async_op: bool, result: list[Any]) -> Work | None:
    sd = np.concatenate([[0], np.cumsum(send_counts)[:-1]]).astype(int).tolist()
    rd = np.concatenate([[0], np.cumsum(recv_counts)[:-1]]).astype(int).tolist()
    st, rt = _mpi.element_type(send), _mpi.element_type(recv)
    sbuf = send.view(np.uint16) if send.dtype == _mpi._BF16 else send
    rbuf = recv.view(np.uint16) if recv.dtype == _mpi._BF16 else recv
    req = pg._comm.Ialltoallv([sbuf, (send_counts, sd), st], [rbuf, (recv_counts, rd), rt])
    return _issue(pg, name, [req], finish, async_op, result)


def all_to_all_single(output: Any, input: Any, output_split_sizes: list[int] | None = None,
                      input_split_sizes: list[int] | None = None, group: Any = None,
                      async_op: bool = False) -> Work | None:
    """Split ``input`` along dim 0 (evenly, or by ``input_split_sizes``), send part i to rank i, and
    concatenate what arrives into ``output`` (by ``output_split_sizes``)."""
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    _ensure_same_dtype(output, input)
    pg = _member(group, "all_to_all_single")
    if pg is None:
        return None
    n = pg.size()
    sin, sout = _Buf(input, False), _Buf(output, True)
    row_in = int(np.prod(input.shape[1:])) if input.dim() > 0 else 1
    row_out = int(np.prod(output.shape[1:])) if output.dim() > 0 else 1

    def counts(splits: Any, t: Any, row: int, what: str) -> list[int]:
        if splits is None or len(splits) == 0:
            if t.shape[0] % n:
                raise ValueError(f"all_to_all_single: the {what} tensor's size {t.shape[0]} in dim 0 must divide "
                                 f"evenly by the world size {n} when no split sizes are given")
            return [t.shape[0] // n * row] * n
        if len(splits) != n:
            raise ValueError(f"all_to_all_single: {what}_split_sizes must have one entry per rank ({n})")
        if sum(splits) != t.shape[0]:
            raise ValueError(f"all_to_all_single: {what}_split_sizes sum to {sum(splits)}, but the {what} tensor has "
                             f"{t.shape[0]} rows")
        return [int(s) * row for s in splits]
    sc = counts(input_split_sizes, input, row_in, "input")
    rc = counts(output_split_sizes, output, row_out, "output")
    return _alltoallv(pg, "all_to_all_single", sin.arr.reshape(-1), sc, sout.arr.reshape(-1), rc,
                      _finish_all([sout]), async_op, [output])


def all_to_all(output_tensor_list: list[Any], input_tensor_list: list[Any], group: Any = None,
               async_op: bool = False) -> Work | None:
    """Send ``input_tensor_list[i]`` to rank i; receive rank i's tensor for this rank in
    ``output_tensor_list[i]``."""
    _check_tensor_list(output_tensor_list, "output_tensor_list")
    _check_tensor_list(input_tensor_list, "input_tensor_list")
    _ensure_same_dtype(output_tensor_list, input_tensor_list)
    pg = _member(group, "all_to_all")
    if pg is None:
        return None
    n = pg.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all: both tensor lists must have one tensor per rank ({n})")
    dt = input_tensor_list[0]._data.dtype
    send = np.concatenate([_Buf(t, False).arr.reshape(-1) for t in input_tensor_list]) if n else np.empty(0, dt)
    rc = [t.numel() for t in output_tensor_list]
    recv = np.empty(sum(rc), dt)
    offs = np.concatenate([[0], np.cumsum(rc)]).astype(int)

    def finish() -> None:
        for i, t in enumerate(output_tensor_list):
            b = _Buf(t, True)
            b.arr[...] = recv[offs[i]:offs[i + 1]].reshape(b.arr.shape)
            b.finish()
    return _alltoallv(pg, "all_to_all", send, [t.numel() for t in input_tensor_list], recv, rc, finish, async_op,
                      output_tensor_list)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None,
            timeout: timedelta | None = None) -> Work | None:
    """Wait until every rank of the group has reached the barrier."""
    pg = _member(group, "barrier")
    if pg is None:
        return None
    work = Work(pg, "barrier", [pg._comm.Ibarrier()], None, [])
    if async_op:
        return work
    work.wait(timeout)
    return None


def monitored_barrier(group: Any = None, timeout: timedelta | None = None, wait_all_ranks: bool = False) -> None:
    """A barrier that fails after ``timeout`` naming the ranks that did not arrive: rank 0 hears from every
    other rank, then answers each."""
    pg = _member(group, "monitored_barrier")
    if pg is None:
        return
    limit = (timeout or pg._timeout).total_seconds()
    comm = pg._comm
    tag = 0x7E3B
    token = np.zeros(1, np.uint8)
    if pg.rank() != 0:
        _mpi.wait([comm.Isend(token, dest=0, tag=tag)], limit, lambda: pg._describe("monitored_barrier"))
        _mpi.wait([comm.Irecv(np.zeros(1, np.uint8), source=0, tag=tag)], limit,
                  lambda: pg._describe("monitored_barrier (waiting for rank 0)"))
        return
    pending = {r: comm.Irecv(np.zeros(1, np.uint8), source=r, tag=tag) for r in range(1, pg.size())}
    import time as _time
    start = _time.monotonic()
    while pending:
        for r in [r for r, q in pending.items() if q.Test()]:
            del pending[r]
        if pending and _time.monotonic() - start > limit:
            missing = sorted(pg._ranks[r] for r in pending)
            for q in pending.values():
                q.Cancel()
            if wait_all_ranks:
                raise DistBackendError(f"Ranks {', '.join(map(str, missing))} failed to pass monitoredBarrier in "
                                       f"{int(limit * 1000)} ms")
            raise DistBackendError(f"Rank {missing[0]} failed to pass monitoredBarrier in {int(limit * 1000)} ms")
        if pending:
            _time.sleep(0.0005)
    _mpi.wait([comm.Isend(token, dest=r, tag=tag) for r in range(1, pg.size())], limit,
              lambda: pg._describe("monitored_barrier"))


# -- point to point ------------------------------------------------------------------------------------------

def _peer(pg: ProcessGroup, global_rank: int | None, group_rank: int | None, what: str) -> int:
    r = _canonical_rank(pg, global_rank, group_rank)
    if r == pg.rank():
        raise ValueError(f"Invalid {what} rank: {what} rank should not be the same as the rank of the current process.")
    return r


def isend(tensor: Any, dst: int | None = None, group: Any = None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:
    """Start sending ``tensor`` to rank ``dst``; the Work completes when the buffer may be reused."""
    _check_single_tensor(tensor, "tensor")
    pg = _member(group, "isend")
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "destination")
    b = _Buf(tensor, False)
    req = pg._comm.Isend(_mpi.buffer(b.arr), dest=peer, tag=tag)
    return Work(pg, "send", [req], None, [tensor])


def irecv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0,
          group_src: int | None = None) -> Work | None:
    """Start receiving into ``tensor`` from rank ``src`` (any rank when None)."""
    _check_single_tensor(tensor, "tensor")
    pg = _member(group, "irecv")
    if pg is None:
        return None
    mpi = _mpi.MPI()
    peer = mpi.ANY_SOURCE if src is None and group_src is None else _peer(pg, src, group_src, "source")
    b = _Buf(tensor, True)
    req = pg._comm.Irecv(_mpi.buffer(b.arr), source=peer, tag=tag)
    work = Work(pg, "recv", [req], None, [tensor])
    work._statuses = [mpi.Status()]

    def finish() -> None:
        b.finish()
        assert work._statuses is not None
        work._source = pg._ranks[work._statuses[0].Get_source()]
    work._finish = finish
    return work


def send(tensor: Any, dst: int | None = None, group: Any = None, tag: int = 0, group_dst: int | None = None) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it has been taken."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0, group_src: int | None = None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work.source_rank()


class P2POp:
    """One point-to-point operation for :func:`batch_isend_irecv`."""

    def __init__(self, op: Callable[..., Any], tensor: Any, peer: int | None = None, group: Any = None, tag: int = 0,
                 group_peer: int | None = None) -> None:
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        _check_single_tensor(tensor, "tensor")
        self.op = op
        self.tensor = tensor
        self.peer = peer
        self.group = group
        self.tag = tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work]:
    """Start every operation of the list; returns their Works."""
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type ``torch.distributed.P2POp``.")
    if not all(p.group == p2p_op_list[0].group for p in p2p_op_list):
        raise ValueError("All ops need to use the same group.")
    works = []
    for p in p2p_op_list:
        w = p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer)
        if w is not None:
            works.append(w)
    return works


# -- objects -------------------------------------------------------------------------------------------------

def _to_bytes(obj: Any) -> np.ndarray:
    f = io.BytesIO()
    pickle.Pickler(f).dump(obj)
    return np.frombuffer(f.getvalue(), np.uint8).copy()


def _from_bytes(b: np.ndarray) -> Any:
    return pickle.loads(b.tobytes())


def _wait(pg: ProcessGroup, op: str, req: Any) -> None:
    _mpi.wait([req], pg._timeout.total_seconds(), lambda: pg._describe(op))


def _sizes(pg: ProcessGroup, op: str, n: int) -> list[int]:
    sizes = np.zeros(pg.size(), np.int64)
    _wait(pg, op, pg._comm.Iallgather(np.array([n], np.int64), sizes))
    return sizes.tolist()


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """Gather a picklable object from every rank into ``object_list`` on every rank."""
    pg = _member(group, "all_gather_object")
    if pg is None:
        return
    data = _to_bytes(obj)
    sizes = _sizes(pg, "all_gather_object", data.size)
    recv = np.empty(sum(sizes), np.uint8)
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    _wait(pg, "all_gather_object",
          pg._comm.Iallgatherv(data, [recv, (sizes, offs[:-1].tolist()), _mpi.MPI().BYTE]))
    for i in range(pg.size()):
        object_list[i] = _from_bytes(recv[offs[i]:offs[i + 1]])


def gather_object(obj: Any, object_gather_list: list[Any] | None = None, dst: int | None = None, group: Any = None,
                  group_dst: int | None = None) -> None:
    """Gather a picklable object from every rank into ``object_gather_list`` on rank ``dst``."""
    pg = _member(group, "gather_object")
    if pg is None:
        return
    if dst is None and group_dst is None:
        dst = 0
    root = _canonical_rank(pg, dst, group_dst)
    mine = pg.rank() == root
    if mine and object_gather_list is None:
        raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    if not mine and object_gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    data = _to_bytes(obj)
    sizes = _sizes(pg, "gather_object", data.size)
    if not mine:
        _wait(pg, "gather_object", pg._comm.Igatherv(data, None, root=root))
        return
    assert object_gather_list is not None
    recv = np.empty(sum(sizes), np.uint8)
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    _wait(pg, "gather_object",
          pg._comm.Igatherv(data, [recv, (sizes, offs[:-1].tolist()), _mpi.MPI().BYTE], root=root))
    for i in range(pg.size()):
        object_gather_list[i] = _from_bytes(recv[offs[i]:offs[i + 1]])


def broadcast_object_list(object_list: list[Any], src: int | None = None, group: Any = None, device: Any = None,
                          group_src: int | None = None) -> None:
    """Replace ``object_list``'s items on every rank with those of rank ``src`` (pickled)."""
    pg = _member(group, "broadcast_object_list")
    if pg is None:
        return
    if src is None and group_src is None:
        src = 0
    root = _canonical_rank(pg, src, group_src)
    mine = pg.rank() == root
    n = len(object_list)
    parts = [_to_bytes(o) for o in object_list] if mine else []
    sizes = np.array([p.size for p in parts] if mine else [0] * n, np.int64)
    _wait(pg, "broadcast_object_list", pg._comm.Ibcast(sizes, root=root))
    data = np.concatenate(parts) if mine and parts else np.empty(int(sizes.sum()), np.uint8)
    _wait(pg, "broadcast_object_list", pg._comm.Ibcast(data, root=root))
    if not mine:
        offs = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        for i in range(n):
            object_list[i] = _from_bytes(data[offs[i]:offs[i + 1]])


def scatter_object_list(scatter_object_output_list: list[Any], scatter_object_input_list: list[Any] | None = None,
                        src: int | None = None, group: Any = None, group_src: int | None = None) -> None:
    """Put item i of rank ``src``'s ``scatter_object_input_list`` in rank i's ``scatter_object_output_list[0]``."""
    pg = _member(group, "scatter_object_list")
    if pg is None:
        return
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    if src is None and group_src is None:
        src = 0
    root = _canonical_rank(pg, src, group_src)
    mine = pg.rank() == root
    if mine and scatter_object_input_list is None:
        raise ValueError("source rank must provide non-None scatter_object_input_list")
    sizes = np.zeros(pg.size(), np.int64)
    send = None
    if mine:
        assert scatter_object_input_list is not None
        parts = [_to_bytes(o) for o in scatter_object_input_list]
        if len(parts) != pg.size():
            raise ValueError(f"scatter_object_list: scatter_object_input_list must have one object per rank "
                             f"({pg.size()}), got {len(parts)}")
        sizes = np.array([p.size for p in parts], np.int64)
        send = np.concatenate(parts)
    _wait(pg, "scatter_object_list", pg._comm.Ibcast(sizes, root=root))
    mine_size = int(sizes[pg.rank()])
    recv = np.empty(mine_size, np.uint8)
    offs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
    mpi = _mpi.MPI()
    sbuf = [send, (sizes.tolist(), offs), mpi.BYTE] if mine else None
    _wait(pg, "scatter_object_list", pg._comm.Iscatterv(sbuf, recv, root=root))
    scatter_object_output_list[0] = _from_bytes(recv)
