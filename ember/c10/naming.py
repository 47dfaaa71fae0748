"""The module name ember's public objects print under (Note [Printed module name]).

Note [Printed module name]
``repr(ember.float32)`` is ``ember.float32``; ``torch.Size``, ``torch.per_tensor_affine``, ``torch.strided`` ... are
printed the same way. Once ember stands in for torch (``python -m ember``, ``install_as_torch()``), a program that
prints ``x.dtype`` must print what it prints on PyTorch, so ``install_as_torch`` sets the prefix to ``torch`` and
every such repr reads it from here when it is called.
"""
from __future__ import annotations

prefix = "ember"


def set_prefix(name: str) -> None:
    global prefix
    prefix = name
