"""A job whose rank 1 fails in the way ``sys.argv[1]`` names (tests/distributed/test_launcher.py)."""
import os
import signal
import sys
import time
from datetime import timedelta

import ember
import ember.distributed as dist

mode = sys.argv[1]
if mode == "exit-before-init" and os.environ["RANK"] == "1":
    sys.exit(3)
dist.init_process_group("gloo", timeout=timedelta(seconds=float(os.environ.get("FAULT_TIMEOUT", "30"))))
R = dist.get_rank()
print(f"rank {R} ready", flush=True)
if R == 1:
    if mode == "raise":
        raise ValueError("boom on rank 1")
    if mode == "exit":
        sys.exit(7)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "skip":  # never joins the collective: rank 0 times out
        time.sleep(60)
    if mode == "hang":
        time.sleep(120)
if mode == "skip" and R == 0:
    try:
        dist.all_reduce(ember.ones(2))
    except dist.DistBackendError as e:
        print(f"rank 0 caught: {e}", flush=True)
        raise
dist.all_reduce(ember.ones(2))
print(f"rank {R} finished", flush=True)
