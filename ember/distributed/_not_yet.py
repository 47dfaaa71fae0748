"""The parts of ``torch.distributed`` ember does not have yet answer with one clear error when used. Their modules
and names exist -- libraries such as Hugging Face transformers import them whenever ``torch.distributed`` is
available -- but nothing pretends to work."""
from __future__ import annotations

from typing import Any, NoReturn


def refuse(name: str) -> NoReturn:
    raise NotImplementedError(f"{name} is not implemented in ember yet: ember.distributed has process groups, "
                              "collectives, functional collectives, DistributedDataParallel and SyncBatchNorm "
                              "(docs/distributed.md)")


def refusing(name: str) -> Any:
    """A function that refuses with ``name``."""
    def fn(*args: Any, **kwargs: Any) -> NoReturn:
        refuse(name)
    fn.__name__ = name.rsplit(".", 1)[-1]
    return fn


class Refused:
    """A class whose construction refuses (``isinstance`` checks against it answer False, as they should)."""

    _name = "this class"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        refuse(self._name)
