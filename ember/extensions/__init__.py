"""``ember.extensions``: ember's own definitions of the operators that libraries ship as compiled C++.

Note [Stand-in operator libraries]
A library built on PyTorch may ship operators compiled against libtorch (torchvision's ``_C.so``: ``nms``,
``roi_align``, ``deform_conv2d``, ...) and load them with ``torch.ops.load_library(path)``. ember cannot run such a
binary, so ``ember.ops.load_library`` looks the file up in ``STAND_INS`` -- by the name of the package folder it lies
in and its file name up to the first dot (``torchvision/_C.so`` -> ``("torchvision", "_C")``) -- and imports the
ember module that defines the same operators instead: the same namespace and schemas, registered the way the C++
library registers them (only the kernels its C++ holds: CPU and CUDA), so that the library's own Python
registrations (fake functions, autograd, autocast) run on top of them unmodified. A library ember does not know
fails to load with ``OSError``, as a library PyTorch cannot load does, which libraries treat as "no compiled ops".
"""
from __future__ import annotations

import importlib
import os

# (package folder, file name before the first dot) -> the module that registers ember's definitions
STAND_INS = {
    ("torchvision", "_C"): "ember.extensions.torchvision",
}


def stand_in_for(path: str) -> str | None:
    """The ember module standing in for the compiled library at ``path``, or None."""
    folder = os.path.basename(os.path.dirname(path))
    stem = os.path.basename(path).split(".", 1)[0]
    return STAND_INS.get((folder, stem))


def load_library(path: str) -> str:
    """Register ember's definitions of the operators of the library at ``path``; return the resolved path.

    Raises ``OSError`` when ember has no stand-in for the library, as PyTorch does for a library it cannot load
    (PyTorch's message; the cause says why: the file is missing, or it is a libtorch binary)."""
    path = os.path.realpath(path)
    module = stand_in_for(path)
    if module is None:
        if not os.path.exists(path):
            reason = OSError(f"{path}: cannot open shared object file: No such file or directory")
        else:
            known = ", ".join(f"{pkg}/{stem}" for pkg, stem in STAND_INS)
            reason = OSError(f"{path}: ember cannot load a compiled PyTorch operator library (it is built against "
                             f"libtorch's C++ API); ember defines the operators of these libraries itself: {known}")
        raise OSError(f"Could not load this library: {path}") from reason
    importlib.import_module(module)
    return path
