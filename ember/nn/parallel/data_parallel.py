"""``DataParallel`` (``torch/nn/parallel/data_parallel.py``): a module replicated over the GPUs of one process,
each replica running a slice of the batch. Without GPUs (``device_ids`` empty) it runs the module itself, as
PyTorch's does; its state dict names the module ``module.``. Replication over several CuPy devices is not
implemented yet: with more than one GPU listed it refuses rather than run on one silently."""
from __future__ import annotations

from typing import Any

import ember
from ember.nn.modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.dim = dim
        if not ember.cuda.is_available():
            self.device_ids: list[int] = []
            self.output_device = None
            return
        if device_ids is None:
            device_ids = list(range(ember.cuda.device_count()))
        self.device_ids = [d if isinstance(d, int) else ember.device(d).index or 0 for d in device_ids]
        self.output_device = self.device_ids[0] if output_device is None else output_device
        if len(self.device_ids) > 1:
            raise NotImplementedError("DataParallel over several GPUs is not implemented in ember yet; pass one "
                                      "device id")
        self.module.to(f"cuda:{self.device_ids[0]}")

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        dev = f"cuda:{self.device_ids[0]}"
        inputs = tuple(x.to(dev) if isinstance(x, ember.Tensor) else x for x in inputs)
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs: Any, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                  module_kwargs: Any = None) -> Any:
    """The functional form: ``DataParallel(module, device_ids, output_device, dim)(*inputs, **module_kwargs)``."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,)
    return DataParallel(module, device_ids, output_device, dim)(*inputs, **(module_kwargs or {}))
