"""``python -m ember.distributed.run``: torchrun for ember, starting the ranks through MPI's process manager.

    python -m ember.distributed.run --nproc-per-node 2 train.py --epochs 3
    python -m ember.distributed.run --nnodes 2 --node-rank 0 --master-addr HOST --master-port 29500 train.py

Each node's ranks run as one MPI job (``mpiexec -n NPROC``); several nodes join into one world through
MPI's name server (Note [Nodes as MPI jobs] in ``_rendezvous.py``). Every rank gets torchrun's environment
(``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``, ...). A
script runs with ember standing in for ``torch`` (as under ``python -m ember``), so a PyTorch DDP script
runs unchanged; ``-m`` runs a module, ``--no-python`` a program. A rank that fails ends the others; the
launcher prints which rank failed first and exits with its status. ``--tee`` prefixes each line with its
rank, ``--local-ranks-filter`` shows only some ranks, ``--log-dir`` keeps each rank's output in files,
``--max-restarts`` reruns a failed job, as torchrun does.
"""
from __future__ import annotations

import argparse
import codecs
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from typing import Any, TextIO

_MARK = "@@ember-rank="
_MARK_ANY = re.compile(r"@@ember-rank=(\d+)@@ ")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                description="Start a distributed ember (or PyTorch) training script on several "
                                            "ranks through MPI, with torchrun's arguments.")

    def arg(*names: str, **kw: Any) -> None:
        flags = []
        for n in names:
            flags.append(n)
            if n.startswith("--") and "-" in n[2:]:
                flags.append("--" + n[2:].replace("-", "_"))
        p.add_argument(*flags, **kw)
    arg("--nnodes", default="1", help="number of nodes, or MIN:MAX (the two must agree: no elastic resizing)")
    arg("--nproc-per-node", default="1", help="ranks per node: an int, auto, cpu or gpu")
    arg("--node-rank", type=int, default=0, help="this node's rank (multi-node)")
    arg("--master-addr", default="127.0.0.1", help="address of node 0 (multi-node)")
    arg("--master-port", type=int, default=29500, help="port of node 0's MPI name server (multi-node)")
    arg("--standalone", action="store_true", help="a single-node job on a free local port")
    arg("--rdzv-backend", default="static", help="accepted; the rendezvous is MPI's")
    arg("--rdzv-endpoint", default="", help="HOST[:PORT] of node 0 (instead of --master-addr/--master-port)")
    arg("--rdzv-id", default="none", help="the job's id (names it on the MPI name server)")
    arg("--rdzv-conf", default="", help="accepted and ignored")
    arg("--max-restarts", type=int, default=0, help="rerun the whole job this many times after a failure")
    arg("--monitor-interval", type=float, default=0.1, help="accepted and ignored")
    arg("--start-method", default="spawn", choices=["spawn", "fork", "forkserver"], help="accepted; MPI starts ranks")
    arg("--role", default="default", help="the workers' role name")
    arg("--log-dir", default=None, help="keep each rank's stdout / stderr under this directory")
    arg("--redirects", "-r", default="0", help="with --log-dir: 0 none, 1 stdout, 2 stderr, 3 both to files only")
    arg("--tee", "-t", default="0", help="0 none, 1 stdout, 2 stderr, 3 both: to files and the console, prefixed")
    arg("--local-ranks-filter", default="", help="show only these local ranks' output on the console (0,2)")
    arg("--local-addr", default=None, help="accepted and ignored")
    arg("--no-python", action="store_true", help="run the program directly, not through python")
    p.add_argument("-m", "--module", action="store_true", help="run training_script as a module (python -m)")
    arg("--run-path", action="store_true", help="run the script with runpy.run_path (the default here)")
    arg("--no-torch-alias", action="store_true", help="don't let `import torch` resolve to ember in the script")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _nproc(value: str) -> int:
    if value in ("auto", "gpu", "cpu"):
        if value != "cpu":
            try:
                import ember
                if ember.cuda.is_available():
                    return int(ember.cuda.device_count())
            except Exception:  # noqa: BLE001 -- no GPU stack: count CPUs
                pass
            if value == "gpu":
                raise ValueError("--nproc-per-node gpu: no GPU is available")
        return os.cpu_count() or 1
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"Unsupported nproc_per_node value: {value}") from None
    if n < 1:
        raise ValueError(f"--nproc-per-node must be at least 1, got {n}")
    return n


def _nnodes(value: str) -> int:
    lo, _, hi = value.partition(":")
    if hi and int(lo) != int(hi):
        raise ValueError(f"--nnodes {value}: ember's MPI jobs have a fixed size; give one number (or MIN:MAX with "
                         "MIN == MAX)")
    return int(lo)


def _tool(name: str) -> str:
    """An MPI program: EMBER_MPIEXEC's directory, then beside this Python, then PATH."""
    override = os.environ.get("EMBER_MPIEXEC")
    if override:
        cand = override if name == "mpiexec" else os.path.join(os.path.dirname(override), name)
        if os.path.exists(cand):
            return cand
    here = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(here):
        return here
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} not found: install the MPI engine with pip install 'ember[distributed]' "
                                "(mpi4py and mpich), or put your MPI's bin directory on PATH")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _streams(value: str) -> set[str]:
    v = {"0": set(), "1": {"stdout"}, "2": {"stderr"}, "3": {"stdout", "stderr"}}
    if value in v:
        return v[value]
    m = re.fullmatch(r"(\d+):(\d)", value)  # per-rank form LOCAL_RANK:N, applied to every rank here
    if m:
        return v[m.group(2)]
    raise ValueError(f"--tee / --redirects: expected 0, 1, 2 or 3, got {value!r}")


class _Router:
    """Reads one of mpiexec's streams (each line marked with its local rank) and sends each line where the
    options say: the console (prefixed with --tee, filtered with --local-ranks-filter) and the rank's file."""

    def __init__(self, src: Any, console: TextIO, stream: str, opts: Any, files: dict[int, Any]) -> None:
        self.src, self.console, self.stream, self.files = src, console, stream, files
        self.prefix = stream in _streams(opts.tee)
        self.to_file_only = stream in _streams(opts.redirects) and opts.log_dir
        self.only = {int(x) for x in opts.local_ranks_filter.split(",") if x.strip()} if opts.local_ranks_filter \
            else None
        self.template = os.environ.get("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE")
        self.role, self.node, self.nproc = opts.role, opts.node_rank, opts.nproc
        self.lines: dict[int, str] = {}
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def _prefix(self, local: int) -> str:
        if self.template:
            return (self.template.replace("${role_name}", self.role).replace("${local_rank}", str(local))
                    .replace("${rank}", str(self.node * self.nproc + local)))
        return f"[{self.role}{local}]:"

    def run(self) -> None:
        """mpiexec marks the start of each chunk a rank writes (not of each line), so the stream is split at the
        marks, each chunk added to its rank's pending line, and whole lines sent on."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        fd = self.src.fileno()
        pending, rank = "", -1
        while True:
            data = os.read(fd, 1 << 16)
            pending += decoder.decode(data, final=not data)
            pos = 0
            for m in _MARK_ANY.finditer(pending):
                self._text(rank, pending[pos:m.start()])
                rank, pos = int(m.group(1)), m.end()
            rest = pending[pos:]
            cut = next((i for i in range(max(0, len(rest) - 24), len(rest)) if _partial_mark(rest[i:])), len(rest))
            self._text(rank, rest[:cut])
            pending = rest[cut:]
            if not data:
                break
        self._text(rank, pending)
        for r in list(self.lines):
            if self.lines[r]:
                self._line(r, self.lines.pop(r) + "\n")

    def _text(self, rank: int, text: str) -> None:
        if not text:
            return
        buf = self.lines.get(rank, "") + text
        *whole, last = buf.split("\n")
        self.lines[rank] = last
        for line in whole:
            self._line(rank, line + "\n")

    def _line(self, local: int, text: str) -> None:
        f = self.files.get(local)
        if f is not None and (self.to_file_only or self.prefix):
            f[self.stream].write(text)
            f[self.stream].flush()
        if self.to_file_only or (self.only is not None and local not in self.only and local >= 0):
            return
        self.console.write((self._prefix(local) + text) if self.prefix and local >= 0 else text)
        self.console.flush()


def _partial_mark(tail: str) -> bool:
    """Whether ``tail`` (the end of what was read) may be the start of a rank mark cut by the read."""
    head = _MARK
    if len(tail) <= len(head):
        return head.startswith(tail)
    return tail.startswith(head) and re.fullmatch(r"\d*(@(@)?)?", tail[len(head):]) is not None


def _command(opts: Any, nproc: int) -> list[str]:
    if opts.no_python:
        target = [opts.training_script]
    else:
        mode = "module" if opts.module else ("script" if opts.no_torch_alias else "script-torch")
        target = [sys.executable, "-m", "ember.distributed._worker", mode, opts.training_script]
    cmd = [_tool("mpiexec"), "-n", str(nproc)]
    if opts.nnodes > 1:
        cmd += ["-nameserver", f"{opts.master_addr}:{opts.master_port}"]
    if _routed(opts):
        cmd += ["-prepend-pattern", _MARK + "%r@@ "]
    return cmd + target + list(opts.training_script_args)


def _routed(opts: Any) -> bool:
    return bool(_streams(opts.tee) or (opts.log_dir and _streams(opts.redirects)) or opts.local_ranks_filter)


def _failure(err_dir: str) -> dict[str, Any] | None:
    found = []
    for name in os.listdir(err_dir):
        if name.startswith("rank_") and name.endswith(".json"):
            with open(os.path.join(err_dir, name)) as f:
                found.append(json.load(f))
    return min(found, key=lambda e: e["time"]) if found else None


def _report(opts: Any, code: int, first: dict[str, Any] | None) -> None:
    bar = "=" * 60
    lines = [bar, f"{opts.training_script} FAILED", "-" * 60, "Root Cause (first observed failure):"]
    if first is not None:
        lines += [f"  time      : {time.strftime('%Y-%m-%d_%H:%M:%S', time.localtime(first['time']))}",
                  f"  host      : {socket.gethostname()}",
                  f"  rank      : {first['rank']} (local_rank: {first['local_rank']})",
                  f"  exitcode  : {first['exitcode']}",
                  f"  error     : {first['message']}"]
    else:
        lines += [f"  host      : {socket.gethostname()}",
                  f"  exitcode  : {code} (a rank ended without reporting: killed by a signal, or the MPI "
                  "process manager failed; its output above says which)"]
    lines.append(bar)
    print("\n".join(lines), file=sys.stderr, flush=True)


def _run_once(opts: Any, nproc: int, attempt: int, env: dict[str, str]) -> int:
    err_dir = tempfile.mkdtemp(prefix="ember_dist_errors_")
    env = dict(env, EMBER_DIST_ERROR_DIR=err_dir, TORCHELASTIC_RESTART_COUNT=str(attempt))
    files: dict[int, Any] = {}
    if opts.log_dir:
        base = os.path.join(opts.log_dir, f"{opts.rdzv_id}_{uuid.uuid4().hex[:8]}", f"attempt_{attempt}")
        for r in range(nproc):
            d = os.path.join(base, str(r))
            os.makedirs(d, exist_ok=True)
            files[r] = {"stdout": open(os.path.join(d, "stdout.log"), "w"),
                        "stderr": open(os.path.join(d, "stderr.log"), "w")}
    routed = _routed(opts)
    proc = subprocess.Popen(_command(opts, nproc), env=env, stdout=subprocess.PIPE if routed else None,
                            stderr=subprocess.PIPE if routed else None)
    routers = [_Router(proc.stdout, sys.stdout, "stdout", opts, files),
               _Router(proc.stderr, sys.stderr, "stderr", opts, files)] if routed else []

    def forward(sig: int, _frame: Any) -> None:
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass
    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        code = proc.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    for router in routers:
        router.thread.join()
    for f in files.values():
        f["stdout"].close()
        f["stderr"].close()
    first = _failure(err_dir)
    shutil.rmtree(err_dir, ignore_errors=True)
    if code == 0 and first is None:
        return 0
    code = first["exitcode"] if first is not None else (code if code > 0 else 128 - code)
    _report(opts, code, first)
    return code or 1


def main(argv: list[str] | None = None) -> int:
    opts = _parser().parse_args(argv)
    try:
        opts.nnodes = _nnodes(opts.nnodes)
        opts.nproc = nproc = _nproc(opts.nproc_per_node)
    except ValueError as e:
        print(f"python -m ember.distributed.run: error: {e}", file=sys.stderr)
        return 2
    if opts.rdzv_endpoint:
        host, _, port = opts.rdzv_endpoint.rpartition(":") if ":" in opts.rdzv_endpoint else \
            (opts.rdzv_endpoint, "", "")
        opts.master_addr = host or opts.rdzv_endpoint
        if port:
            opts.master_port = int(port)
    if opts.standalone:
        if opts.nnodes != 1:
            print("python -m ember.distributed.run: error: --standalone is a single-node job", file=sys.stderr)
            return 2
        opts.master_addr, opts.master_port = "127.0.0.1", _free_port()
    if not 0 <= opts.node_rank < opts.nnodes:
        print(f"python -m ember.distributed.run: error: --node-rank {opts.node_rank} is not in [0, {opts.nnodes})",
              file=sys.stderr)
        return 2
    env = dict(os.environ)
    if "OMP_NUM_THREADS" not in env and nproc > 1:
        print("*****************************************\nSetting OMP_NUM_THREADS environment variable for each "
              "process to be 1 in default, to avoid your system being overloaded, please further tune the variable "
              "for optimal performance in your application as needed. \n*****************************************",
              file=sys.stderr, flush=True)
        env["OMP_NUM_THREADS"] = "1"
    env.update(MASTER_ADDR=opts.master_addr, MASTER_PORT=str(opts.master_port), EMBER_DIST_NNODES=str(opts.nnodes),
               EMBER_DIST_NODE_RANK=str(opts.node_rank), EMBER_DIST_RUN_ID=opts.rdzv_id, ROLE_NAME=opts.role,
               TORCHELASTIC_MAX_RESTARTS=str(opts.max_restarts))
    nameserver = None
    if opts.nnodes > 1 and opts.node_rank == 0:
        nameserver = subprocess.Popen([_tool("hydra_nameserver"), "-port", str(opts.master_port)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        code = 1
        for attempt in range(opts.max_restarts + 1):
            code = _run_once(opts, nproc, attempt, env)
            if code == 0:
                break
            if attempt < opts.max_restarts:
                print(f"python -m ember.distributed.run: restarting the job ({attempt + 1}/{opts.max_restarts})",
                      file=sys.stderr, flush=True)
        return code
    finally:
        if nameserver is not None:
            nameserver.terminate()
            nameserver.wait()


if __name__ == "__main__":
    sys.exit(main())
