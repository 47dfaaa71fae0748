"""Global switches of the operator library (mirrors ``aten/src/ATen/Context.h``, ``at::globalContext()``):
what ``ember.backends`` sets and the kernels read."""
from __future__ import annotations


class Context:
    __slots__ = ("benchmark_cudnn", "deterministic_cudnn")

    def __init__(self) -> None:
        self.benchmark_cudnn = False      # ember.backends.cudnn.benchmark: convolutions time their algorithms
        self.deterministic_cudnn = False  # ember.backends.cudnn.deterministic


global_context = Context()
