"""One rank of a job started by ``python -m ember.distributed.run`` (run by ``mpiexec`` as
``python -m ember.distributed._worker MODE TARGET ARGS...``).

It sets the environment torchrun gives each worker (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ...) from
what MPI's process manager says about this process, runs the target -- a script (with ember standing in
for ``torch``, as ``python -m ember`` runs it) or a module -- and, when the target fails, records the error
for the launcher and ends every rank of the job (MPI ``Abort``), so that no rank is left waiting for this
one."""
from __future__ import annotations

import json
import os
import runpy
import sys
import time
import traceback


def _set_env() -> None:
    """torchrun's variables. Under ``python -m ember.distributed.run`` each node is an MPI job of its own
    (``EMBER_DIST_*`` say which node of how many); under one ``mpiexec`` over several hosts, MPI's process
    manager numbers the ranks and says which share a host (``MPI_LOCALRANKID``)."""
    job_rank = int(os.environ.get("PMI_RANK", "0"))
    job_size = int(os.environ.get("PMI_SIZE", "1"))
    local_rank = int(os.environ.get("MPI_LOCALRANKID", job_rank))
    local_size = int(os.environ.get("MPI_LOCALNRANKS", job_size))
    if "EMBER_DIST_NNODES" in os.environ:
        node = int(os.environ.get("EMBER_DIST_NODE_RANK", "0"))
        nnodes = int(os.environ["EMBER_DIST_NNODES"])
        rank, world = node * job_size + job_rank, job_size * nnodes
    else:
        rank, world = job_rank, job_size
        node, nnodes = rank // max(local_size, 1), max(world // max(local_size, 1), 1)
    os.environ.update({
        "RANK": str(rank), "LOCAL_RANK": str(local_rank), "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(local_size), "GROUP_RANK": str(node), "GROUP_WORLD_SIZE": str(nnodes),
        "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(world),
        "ROLE_NAME": os.environ.get("ROLE_NAME", "default"),
        "TORCHELASTIC_RUN_ID": os.environ.get("EMBER_DIST_RUN_ID", "none"),
    })


def _record(code: int, message: str) -> None:
    """The error file the launcher reads to name the first failing rank."""
    d = os.environ.get("EMBER_DIST_ERROR_DIR")
    if not d:
        return
    path = os.path.join(d, f"rank_{os.environ['RANK']}.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"rank": int(os.environ["RANK"]), "local_rank": int(os.environ["LOCAL_RANK"]), "exitcode": code,
                   "time": time.time(), "message": message}, f)
    os.replace(path + ".tmp", path)


def _print_traceback(e: BaseException) -> None:
    """The traceback from the target's first frame on (this wrapper's and runpy's frames left out)."""
    tb = e.__traceback__
    while tb is not None and (tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__)
                              or "runpy" in tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    traceback.print_exception(type(e), e, tb)


def main() -> int:
    mode, target, *args = sys.argv[1:]
    _set_env()
    # whole lines reach MPI's process manager in one write each, promptly, so the ranks' lines don't mix
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(line_buffering=True, write_through=False)
    code = 0
    try:
        if mode == "module":
            sys.argv = [target, *args]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            if mode == "script-torch":
                from ember._torch_shim import install_as_torch
                install_as_torch()
            sys.argv = [target, *args]
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if code:
            if e.code is not None and not isinstance(e.code, int):
                print(e.code, file=sys.stderr)
            _record(code, f"exited with code {code}")
    except BaseException as e:  # noqa: BLE001 -- every failure ends the job, as torchrun's agent does
        _print_traceback(e)
        code = 130 if isinstance(e, KeyboardInterrupt) else 1
        _record(code, "".join(traceback.format_exception_only(type(e), e)).strip())
    if code:  # end every rank (MPI is initialized first if this rank never got that far: the others may be
        from ember.distributed._mpi import abort_job  # waiting for it in their own start-up)
        abort_job(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
