"""Which devices have foreach / fused optimizer kernels, and the grouping of tensor lists by device and dtype that
multi-tensor code runs per group (``torch.utils._foreach_utils``). Optimizers written outside PyTorch (timm's,
for instance) ask these to pick their implementation, so they answer as PyTorch does: the foreach kernels are a
GPU path (a CPU tensor takes the single-tensor loop), fused kernels exist on the CPU too."""
from __future__ import annotations

from collections import defaultdict

import ember


def _get_foreach_kernels_supported_devices() -> list[str]:
    """The device types whose tensors the optimizers' foreach implementations take by default."""
    return ["cuda", "xpu", "mtia", ember._C._get_privateuse1_backend_name()]


def _get_fused_kernels_supported_devices() -> list[str]:
    """The device types with fused optimizer kernels."""
    return ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", ember._C._get_privateuse1_backend_name()]


def _group_tensors_by_device_and_dtype(tensorlistlist, with_indices: bool = False):
    """``{(device, dtype): ([sublist of each list], [their indices])}``: position ``i`` of every list goes to the
    group of the first list's tensor at ``i`` (the lists are parallel: parameters, gradients, states), keeping
    their order. The indices are filled in whether or not ``with_indices`` is asked, as in PyTorch."""
    if not tensorlistlist or not tensorlistlist[0]:
        return {}
    n = len(tensorlistlist[0])
    for lst in tensorlistlist:
        if lst and len(lst) != n:
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got {n} and {len(lst)}")
    groups: dict = defaultdict(lambda: ([[] for _ in tensorlistlist], []))
    for i, t in enumerate(tensorlistlist[0]):
        lists, idx = groups[(t.device, t.dtype)]
        for out, lst in zip(lists, tensorlistlist):
            out.append(lst[i] if lst else None)
        idx.append(i)
    return {key: (lists, idx) for key, (lists, idx) in groups.items()}
