"""The thread-local grad and inference modes (``c10/core/GradMode.h``, ``c10/core/InferenceMode.h``): read by the
autograd kernels, and by the op library when it makes a tensor (a tensor made in inference mode is an inference
tensor). The context managers over them are ``ember.autograd.grad_mode``'s."""
from __future__ import annotations

import threading


class _GradState(threading.local):
    def __init__(self) -> None:
        self.enabled = True
        self.inference = False
        self.grad_layout_enforced = True  # the gradient layout contract (autograd.enforce_grad_layout_policy)


state = _GradState()
