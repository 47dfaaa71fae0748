"""DistributedDataParallel and SyncBatchNorm on jobs of 2 and 4 ranks (the checks run inside each rank:
tests/distributed/scripts/ddp.py), and a PyTorch DDP script run unchanged by ``python -m ember.distributed.run``
against PyTorch's own ``torch.distributed.run``."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.distributed.test_launcher import _env, launch, script

pytestmark = pytest.mark.skipif(not __import__("ember").distributed.is_available(),
                                reason="the MPI engine (mpi4py + mpich) is not installed")


@pytest.mark.parametrize("nproc", [2, 4])
def test_ddp_training_matches_the_whole_batch_and_agrees_across_ranks(nproc):
    r = launch("--nproc-per-node", str(nproc), "--no-torch-alias", script("ddp.py"), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(line for line in r.stdout.splitlines() if line.startswith("OK")) == \
        [f"OK rank {i}" for i in range(nproc)]


def _numbers(out: str) -> list[tuple[str, float]]:
    """The printed losses and parameter sums (found anywhere: two ranks' lines may share a line of the pipe)."""
    found = re.findall(r"(epoch \d+ step \d+ loss|rank \d+ local_rank \d+ of \d+: parameter sum) (-?\d+\.\d+)", out)
    return sorted((k, float(v)) for k, v in found)


def test_a_pytorch_ddp_script_runs_unchanged_with_pytorchs_numbers(tmp_path):
    pytest.importorskip("torch")
    ours = launch("--nproc-per-node", "2", script("torch_ddp.py"), str(tmp_path / "ember.pt"), timeout=300)
    assert ours.returncode == 0, ours.stdout + ours.stderr
    theirs = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                             script("torch_ddp.py"), str(tmp_path / "torch.pt")], capture_output=True, text=True,
                            timeout=300, env=_env(), cwd=str(tmp_path))
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    a, b = _numbers(ours.stdout), _numbers(theirs.stdout)
    assert len(a) == len(b) == 2 * 4 + 2 and [k for k, _ in a] == [k for k, _ in b]
    for (k, x), (_, y) in zip(a, b):
        assert abs(x - y) <= 1e-5 * (1 + abs(y)), (k, x, y)


NUMBER = re.compile(r"-?\d+\.\d+")


def test_buffer_broadcast_and_gloo_shape_checks_as_in_pytorch(tmp_path):
    """DDP broadcasts rank 0's buffers before a forward exactly when PyTorch does (after a synced forward: so the
    first forward under no_sync or no_grad still does, the next ones do not), and all_gather_into_tensor on gloo
    refuses the output shapes PyTorch's gloo refuses, in its words."""
    pytest.importorskip("torch")
    name = "torch_ddp_buffers.py"
    ours = launch("--nproc-per-node", "2", script(name), timeout=300)
    assert ours.returncode == 0, ours.stdout + ours.stderr
    theirs = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", script(name)],
                            capture_output=True, text=True, timeout=300, env=_env(), cwd=str(tmp_path))
    # (PyTorch's gloo now and then aborts in its teardown after the refused collectives, once everything is
    # printed: its lines are compared whatever its exit status)
    # (two ranks' lines may share a line of the pipe: split before each "rank N ")
    a, b = ([s.strip() for s in re.split(r"(?=rank \d )", r.stdout) if s.startswith("rank ")] for r in (ours, theirs))
    a, b = sorted(a), sorted(b)
    assert len(a) == len(b) == 2 * 13 and [NUMBER.sub("#", x) for x in a] == [NUMBER.sub("#", y) for y in b]
    for x, y in zip(a, b):
        for u, v in zip(NUMBER.findall(x), NUMBER.findall(y)):
            assert abs(float(u) - float(v)) <= 1e-5 * (1 + abs(float(v))), (x, y)
