"""The thread-local grad and inference modes (``c10/core/GradMode.h``, ``c10/core/InferenceMode.h``): read by the
autograd kernels, and by the op library when it makes a tensor (a tensor made in inference mode is an inference
tensor). The context managers over them are ``ember.autograd.grad_mode``'s."""
from __future__ import annotations

import threading


# Whether any thread has turned inference mode on: until then, making a tensor does not read the thread-local
# mode (a ``threading.local`` read is a tenth of a small result tensor's cost). Set before the mode changes.
inference_used = False


class _GradState(threading.local):
    def __init__(self) -> None:
        self.enabled = True
        self._inference = False
        self.grad_layout_enforced = True  # the gradient layout contract (autograd.enforce_grad_layout_policy)

    @property
    def inference(self) -> bool:
        return self._inference

    @inference.setter
    def inference(self, value: bool) -> None:
        global inference_used
        if value:
            inference_used = True
        self._inference = value


state = _GradState()
