"""Running torchvision on a CPU build of PyTorch (the test oracle and the benchmarks' PyTorch side).

Note [torchvision on CPU PyTorch]
PyPI's torchvision 0.28.0 wheel is built against the CUDA build of torch: its ``_C.so`` needs ``libc10_cuda.so``,
``libtorch_cuda.so`` and ``libcudart.so.13``, which the CPU torch wheel (the oracle) lacks, so ``import torchvision``
fails there ("operator torchvision::nms does not exist"). Its CPU kernels never call into those libraries; they are
only linked. ``preload_cuda_stubs`` compiles three small libraries with those names that define every symbol
``_C.so`` takes from them (each function aborts if ever called) and loads them globally before torchvision, so
the real torchvision -- its C++ CPU kernels included -- runs on the CPU oracle. Under ember nothing is preloaded:
ember's ``load_library`` registers its own torchvision operators instead.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile


def _stub_sources(so_path: str) -> tuple[str, str, str]:
    """C sources for the CUDA libraries ``so_path`` links: (libc10_cuda + libtorch_cuda symbols, libcudart, its
    version script)."""
    text = subprocess.run(["readelf", "--dyn-syms", "-W", so_path], capture_output=True, text=True,
                          check=True).stdout
    funcs: list[str] = []
    objects: list[str] = []
    runtime: list[str] = []
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


def preload_cuda_stubs() -> None:
    """Load stand-ins for the CUDA libraries torchvision's ``_C.so`` links, before ``import torchvision``, on a
    CPU build of PyTorch (Note [torchvision on CPU PyTorch]); nothing on a CUDA build or without torchvision."""
    import importlib.util
    import torch
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations or torch.version.cuda is not None:
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
            if not os.path.isdir(cache):
                raise
            shutil.rmtree(build, ignore_errors=True)
    for name in ("libcudart.so.13", "libc10_cuda.so", "libtorch_cuda.so"):
        ctypes.CDLL(os.path.join(cache, name), mode=ctypes.RTLD_GLOBAL)


def main(argv: list[str]) -> None:
    """``python -m tools.torchvision_oracle SCRIPT [ARGS...]``: run a PyTorch program as ``python SCRIPT ARGS``
    would, with the stand-ins loaded first, so that its ``import torchvision`` (direct, or through a library such as
    ``transformers`` that imports torchvision when it is installed) works on the CPU oracle."""
    import runpy
    import sys
    if not argv:
        raise SystemExit("usage: python -m tools.torchvision_oracle SCRIPT [ARGS...]")
    preload_cuda_stubs()
    script = os.path.abspath(argv[0])
    sys.argv = [script, *argv[1:]]
    sys.path[0] = os.path.dirname(script)
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
