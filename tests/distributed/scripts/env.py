"""Prints the environment torchrun gives a worker, and what ``ember.distributed`` makes of it: one line per
backend named on the command line (``default`` for ``init_process_group()`` with none), the process group
made and destroyed for each."""
import json
import os
import sys

import torch
import torch.distributed as dist

keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
        "OMP_NUM_THREADS", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_RUN_ID"]
for asked in sys.argv[1:] or ["default"]:
    dist.init_process_group(backend=None if asked == "default" else asked)
    info = {k: os.environ.get(k) for k in keys}
    info.update(asked=asked, rank=dist.get_rank(), world=dist.get_world_size(), backend=str(dist.get_backend()),
                torch_is_ember="ember" in repr(torch), argv=sys.argv[1:], elastic=dist.is_torchelastic_launched())
    print("ENV " + json.dumps(info), flush=True)
    dist.destroy_process_group()
