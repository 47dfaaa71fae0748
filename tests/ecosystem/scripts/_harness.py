"""What every ecosystem script imports first: it makes torchvision importable on the oracle's side, and records
results for the test to compare.

The scripts run twice, each in a process of its own: with PyTorch (``python script.py OUT``) and with ember
standing in for torch (``python -m ember script.py OUT``). ``OUT`` is a folder shared by the two runs: the PyTorch
run writes its model weights there (``save_state``) and the ember run loads them (``load_state``), so both compute
with PyTorch's weights; each run writes the values it computed (``record``) to ``OUT/<torch|ember>.npz``.

Note [torchvision on CPU PyTorch]
PyPI's torchvision 0.28.0 wheel is built against the CUDA build of torch: its ``_C.so`` needs ``libc10_cuda.so``,
``libtorch_cuda.so`` and ``libcudart.so.13``, which the CPU torch wheel (the oracle) lacks, so ``import torchvision``
fails there ("operator torchvision::nms does not exist"). Its CPU kernels never call into those libraries; they are
only linked. ``_preload_cuda_stubs`` compiles three small libraries with those names that define every symbol
``_C.so`` takes from them (each function aborts if ever called) and loads them globally before torchvision, so
the real torchvision -- its C++ CPU kernels included -- runs on the CPU oracle. Under ember nothing is preloaded:
ember's ``load_library`` registers its own torchvision operators instead.
"""
from __future__ import annotations

import atexit
import ctypes
import hashlib
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

ON_EMBER = "+ember" in str(torch.__version__)
SIDE = "ember" if ON_EMBER else "torch"
OUT = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
_results: dict[str, np.ndarray] = {}


def _stub_sources(so_path: str) -> tuple[str, str, str]:
    """C sources for the CUDA libraries ``so_path`` links: (libc10_cuda + libtorch_cuda symbols, libcudart, its
    version script)."""
    text = subprocess.run(["readelf", "--dyn-syms", "-W", so_path], capture_output=True, text=True,
                          check=True).stdout
    funcs, objects, runtime = [], [], []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 8 or parts[6] != "UND":
            continue
        name = parts[7]
        if "@libcudart" in name:
            runtime.append(name.split("@")[0])
        elif "cuda" in name and "@" not in name:
            (objects if parts[3] == "OBJECT" else funcs).append(name)
    c10 = "#include <stdlib.h>\n" + "".join(f"void {n}(void) {{ abort(); }}\n" for n in funcs) + \
        "".join(f"void *{n}[4];\n" for n in objects)
    rt = ["#include <stdlib.h>", "static void *fatbin[4];"]
    for n in runtime:     # registering kernels at load time must succeed; anything else aborts
        if n == "__cudaRegisterFatBinary":
            rt.append(f"void **{n}(void *p) {{ return fatbin; }}")
        elif n.startswith("__cudaRegister") or n in ("__cudaUnregisterFatBinary", "__cudaInitModule"):
            rt.append(f"int {n}(void) {{ return 0; }}")
        else:
            rt.append(f"int {n}(void) {{ abort(); }}")
    version_script = "libcudart.so.13 { global: " + " ".join(f"{n};" for n in runtime) + " local: *; };\n"
    return c10, "\n".join(rt) + "\n", version_script


def _preload_cuda_stubs() -> None:
    """Note [torchvision on CPU PyTorch]."""
    import importlib.util
    spec = importlib.util.find_spec("torchvision")
    if spec is None or torch.version.cuda is not None:
        return
    so = os.path.join(spec.submodule_search_locations[0], "_C.so")
    if not os.path.exists(so):
        return
    st = os.stat(so)
    key = hashlib.sha256(f"{so}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16]
    cache = os.path.join(os.environ.get("EMBER_TEST_CACHE", os.path.expanduser("~/.cache/ember-tests")),
                         f"torchvision-cuda-stubs-{key}")
    if not os.path.isdir(cache):
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        build = tempfile.mkdtemp(dir=os.path.dirname(cache))
        c10, rt, vs = _stub_sources(so)
        for name, src in (("c10cuda.c", c10), ("cudart.c", rt), ("cudart.map", vs), ("empty.c", "")):
            with open(os.path.join(build, name), "w") as f:
                f.write(src)
        cc = ["gcc", "-shared", "-fPIC", "-o"]
        for cmd in (cc + ["libc10_cuda.so", "-Wl,-soname,libc10_cuda.so", "c10cuda.c"],
                    cc + ["libtorch_cuda.so", "-Wl,-soname,libtorch_cuda.so", "empty.c"],
                    cc + ["libcudart.so.13", "-Wl,-soname,libcudart.so.13", "-Wl,--version-script=cudart.map",
                          "cudart.c"]):
            subprocess.run(cmd, cwd=build, check=True, capture_output=True)
        try:
            os.replace(build, cache)        # atomic: another process may have finished first
        except OSError:
            pass
    for name in ("libcudart.so.13", "libc10_cuda.so", "libtorch_cuda.so"):
        ctypes.CDLL(os.path.join(cache, name), mode=ctypes.RTLD_GLOBAL)


if not ON_EMBER:
    _preload_cuda_stubs()


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
