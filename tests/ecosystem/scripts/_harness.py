"""What every ecosystem script imports first: it makes torchvision importable on the oracle's side, and records
results for the test to compare.

The scripts run twice, each in a process of its own: with PyTorch (``python script.py OUT``) and with ember
standing in for torch (``python -m ember script.py OUT``). ``OUT`` is a folder shared by the two runs: the PyTorch
run writes its model weights there (``save_state``) and the ember run loads them (``load_state``), so both compute
with PyTorch's weights; each run writes the values it computed (``record``) to ``OUT/<torch|ember>.npz``.

Before torchvision is imported on the PyTorch side, the stand-ins for the CUDA libraries its compiled operators link
are loaded (Note [torchvision on CPU PyTorch] in ``tools/torchvision_oracle.py``); under ember nothing is, and
ember's ``load_library`` registers its own torchvision operators instead.
"""
from __future__ import annotations

import atexit
import os
import sys
import tempfile

import numpy as np
import torch

ON_EMBER = "+ember" in str(torch.__version__)
SIDE = "ember" if ON_EMBER else "torch"
OUT = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
_results: dict[str, np.ndarray] = {}


if not ON_EMBER:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    from tools.torchvision_oracle import preload_cuda_stubs
    preload_cuda_stubs()


def record(name: str, value) -> None:
    """Keep ``value`` (a tensor, array, number or nested list / tuple of them) for comparison."""
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            record(f"{name}.{i}", v)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            record(f"{name}.{k}", v)
        return
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        value = value.float() if value.dtype in (torch.float16, torch.bfloat16) else value
        value = value.numpy()
    _results[name] = np.array(value, copy=True)       # a tensor's numpy() shares its memory: keep what it is now


def record_grads(name: str, module) -> None:
    for pname, p in module.named_parameters():
        if p.grad is not None:
            record(f"{name}.{pname}", p.grad)


def state_path(name: str) -> str:
    return os.path.join(OUT, f"{name}.pt")


def save_state(name: str, module) -> None:
    """The PyTorch run saves the weights the ember run will load."""
    if not ON_EMBER:
        torch.save(module.state_dict(), state_path(name))


def load_state(name: str, module) -> None:
    """The ember run computes with the PyTorch run's weights."""
    if ON_EMBER:
        module.load_state_dict(torch.load(state_path(name), weights_only=True))


def reload_state(name: str, module):
    """Both runs: the weights as saved, buffers included (undoes what running the model changed)."""
    module.load_state_dict(torch.load(state_path(name), weights_only=True))
    return module


def share_weights(name: str, module):
    save_state(name, module)
    load_state(name, module)
    return module


@atexit.register
def _write() -> None:
    np.savez(os.path.join(OUT, f"{SIDE}.npz"), **_results)
