"""``ember.distributed`` (``torch/distributed``). The collectives, process groups and DistributedDataParallel
over MPI are issue 19; until then ember answers as a PyTorch build without distributed support does:
``is_available()`` is False, so libraries take their single-process paths."""
from __future__ import annotations


def is_available() -> bool:
    """Whether ``ember.distributed`` can run collectives (not yet: issue 19)."""
    return False


def is_initialized() -> bool:
    """Whether a default process group exists (never, while ``is_available()`` is False)."""
    return False
