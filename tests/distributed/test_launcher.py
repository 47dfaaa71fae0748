"""``ember.distributed`` end to end: jobs of 2, 3 and 4 ranks (and 2 "nodes") started by
``python -m ember.distributed.run`` or by ``mpiexec`` directly; every collective against NumPy; torchrun's
environment; failing, killed and hanging ranks ending the job with the failing rank named."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import ember.distributed as dist
from ember.distributed.run import _tool

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="the MPI engine (mpi4py + mpich) is not installed")

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")
ROOT = os.path.dirname(os.path.dirname(HERE))


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "PMI_RANK", "PMI_SIZE", "OMP_NUM_THREADS", "PYTHONUNBUFFERED"):
        env.pop(k, None)
    env.update(extra)
    return env


def launch(*args: str, timeout: float = 180, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ember.distributed.run", *args], capture_output=True, text=True,
                          timeout=timeout, env=env or _env())


def script(name: str) -> str:
    return os.path.join(SCRIPTS, name)


def _left_behind(token: str) -> str:
    """The processes still running whose command line holds ``token``."""
    return subprocess.run(["pgrep", "-f", token], capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("nproc", [2, 3, 4])
def test_every_collective_on_every_dtype_matches_numpy(nproc):
    token = f"job-{os.getpid()}-{nproc}-{time.time_ns()}"  # an argument the script ignores: finds its processes
    r = launch("--nproc-per-node", str(nproc), "--no-torch-alias", script("collectives.py"), token)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(line for line in r.stdout.splitlines() if line.startswith("OK")) == \
        [f"OK rank {i}" for i in range(nproc)]
    assert _left_behind(token) == "", "processes left behind after the job"


def test_two_nodes_join_into_one_world():
    """Two launchers (--nnodes 2) on this machine, meeting through MPI's name server at the master port."""
    port = str(29400 + os.getpid() % 500)
    common = ["--nnodes", "2", "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", port,
              "--rdzv-id", f"job{os.getpid()}", "--no-torch-alias", script("collectives.py")]
    node0 = subprocess.Popen([sys.executable, "-m", "ember.distributed.run", "--node-rank", "0", *common],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    time.sleep(1.0)
    r1 = launch("--node-rank", "1", *common)
    out0, err0 = node0.communicate(timeout=180)
    assert node0.returncode == 0 and r1.returncode == 0, out0 + err0 + r1.stdout + r1.stderr
    assert sorted(line for line in (out0 + r1.stdout).splitlines() if line.startswith("OK")) == \
        [f"OK rank {i}" for i in range(4)]


def _envs(stdout: str) -> list[dict]:
    return sorted((json.loads(line[4:]) for line in stdout.splitlines() if line.startswith("ENV ")),
                  key=lambda e: (e["asked"], e["rank"]))


def test_workers_get_torchruns_environment_and_run_pytorch_scripts_with_ember_as_torch():
    r = launch("--nproc-per-node", "2", "--master-port", "29777", "--rdzv-id", "abc", script("env.py"), "gloo")
    assert r.returncode == 0, r.stdout + r.stderr
    envs = _envs(r.stdout)
    assert [(e["RANK"], e["LOCAL_RANK"], e["WORLD_SIZE"], e["LOCAL_WORLD_SIZE"], e["GROUP_RANK"]) for e in envs] == \
        [("0", "0", "2", "2", "0"), ("1", "1", "2", "2", "0")]
    assert all(e["MASTER_ADDR"] == "127.0.0.1" and e["MASTER_PORT"] == "29777" for e in envs)
    assert all(e["OMP_NUM_THREADS"] == "1" and e["TORCHELASTIC_RESTART_COUNT"] == "0" for e in envs)
    assert all(e["TORCHELASTIC_RUN_ID"] == "abc" and e["elastic"] for e in envs)
    assert [e["rank"] for e in envs] == [0, 1] and all(e["world"] == 2 for e in envs)
    assert all(e["backend"] == "gloo" and e["torch_is_ember"] and e["argv"] == ["gloo"] for e in envs)
    assert "Setting OMP_NUM_THREADS environment variable for each process to be 1" in r.stderr


def test_backend_names_are_answered_as_asked_and_groups_can_be_made_again():
    r = launch("--nproc-per-node", "2", script("env.py"), "nccl", "mpi", "GLOO", "default")
    assert r.returncode == 0, r.stdout + r.stderr
    answers = {(e["asked"], e["backend"]) for e in _envs(r.stdout)}
    # with no backend named, PyTorch's get_backend() answers "undefined"
    assert answers == {("nccl", "nccl"), ("mpi", "mpi"), ("GLOO", "gloo"), ("default", "undefined")}
    assert len(_envs(r.stdout)) == 8


def test_mpiexec_starts_a_job_directly():
    r = subprocess.run([_tool("mpiexec"), "-n", "2", sys.executable, script("collectives.py")], capture_output=True,
                       text=True, timeout=180, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(line for line in r.stdout.splitlines() if line.startswith("OK")) == ["OK rank 0", "OK rank 1"]


def test_under_plain_mpiexec_an_uncaught_exception_ends_the_job():
    """Without the launcher's wrapper, init_process_group's exception hook aborts the job."""
    start = time.monotonic()
    r = subprocess.run([_tool("mpiexec"), "-n", "2", sys.executable, script("faults.py"), "raise"],
                       capture_output=True, text=True, timeout=120, env=_env())
    assert r.returncode != 0 and "boom on rank 1" in r.stderr and "ending every rank of the job" in r.stderr
    assert "rank 0 finished" not in r.stdout and time.monotonic() - start < 60


def test_worker_environment_under_one_mpiexec():
    r = subprocess.run([_tool("mpiexec"), "-n", "2", sys.executable, "-m", "ember.distributed._worker", "script-torch",
                        script("env.py"), "gloo"], capture_output=True, text=True, timeout=120, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    envs = _envs(r.stdout)
    assert [(e["RANK"], e["LOCAL_RANK"], e["WORLD_SIZE"], e["LOCAL_WORLD_SIZE"]) for e in envs] == \
        [("0", "0", "2", "2"), ("1", "1", "2", "2")]


def test_tee_prefixes_lines_and_filter_and_log_dir(tmp_path):
    r = launch("--nproc-per-node", "2", "--tee", "3", "--local-ranks-filter", "1", "--log-dir", str(tmp_path),
               script("env.py"))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if "ENV" in ln]
    assert len(lines) == 1 and lines[0].startswith("[default1]:ENV ")
    logs = sorted(str(p.relative_to(tmp_path)).split(os.sep, 1)[1] for p in tmp_path.rglob("stdout.log"))
    assert logs == ["attempt_0/0/stdout.log", "attempt_0/1/stdout.log"]
    for p in tmp_path.rglob("stdout.log"):
        assert json.loads(p.read_text().split("ENV ", 1)[1])["LOCAL_RANK"] == p.parent.name


@pytest.mark.parametrize("mode,code,message", [
    ("raise", 1, "ValueError: boom on rank 1"),
    ("exit", 7, "exited with code 7"),
    ("exit-before-init", 3, "exited with code 3"),
])
def test_a_failing_rank_ends_the_job_and_is_named(mode, code, message):
    start = time.monotonic()
    r = launch("--nproc-per-node", "2", "--no-torch-alias", script("faults.py"), mode, timeout=120)
    assert r.returncode == code, r.stdout + r.stderr
    assert "rank 0 finished" not in r.stdout
    assert "FAILED" in r.stderr and "rank      : 1 (local_rank: 1)" in r.stderr and message in r.stderr
    assert time.monotonic() - start < 60


def test_a_killed_rank_ends_the_job():
    r = launch("--nproc-per-node", "2", "--no-torch-alias", script("faults.py"), "kill", timeout=120)
    assert r.returncode == 9, r.stdout + r.stderr
    assert "rank 0 finished" not in r.stdout and "FAILED" in r.stderr


def test_a_rank_that_never_arrives_times_out_with_the_operation_named():
    start = time.monotonic()
    r = launch("--nproc-per-node", "2", "--no-torch-alias", script("faults.py"), "skip", timeout=120,
               env=_env(FAULT_TIMEOUT="3"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "rank 0 caught: [Rank 0] all_reduce on process group 'default_pg' (size 2) timed out after 3000 ms" \
        in r.stdout
    assert "DistBackendError" in r.stderr and "rank      : 0 (local_rank: 0)" in r.stderr
    assert time.monotonic() - start < 40


def test_sigint_to_the_launcher_ends_every_rank():
    p = subprocess.Popen([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2", "--no-torch-alias",
                          script("faults.py"), "hang"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=_env())
    seen = ""
    deadline = time.monotonic() + 90
    while seen.count("ready") < 2 and time.monotonic() < deadline:
        seen += p.stdout.readline()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode != 0
    assert _left_behind(f"{script('faults.py')} hang") == "", "ranks left behind"


def test_init_without_a_launcher_explains_how_to_start_ranks():
    code = ("import ember.distributed as d\n"
            "try:\n    d.init_process_group('gloo', rank=0, world_size=2)\n"
            "except RuntimeError as e:\n    print('ERR', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_env())
    assert "ERR init_process_group: world_size=2, but this process was started alone" in r.stdout, r.stderr
    assert "python -m ember.distributed.run --nproc-per-node 2" in r.stdout


def test_launcher_arguments_are_checked():
    r = launch("--nnodes", "1:2", "x.py")
    assert r.returncode == 2 and "fixed size" in r.stderr
    r = launch("--nproc-per-node", "zero", "x.py")
    assert r.returncode == 2 and "Unsupported nproc_per_node value: zero" in r.stderr
