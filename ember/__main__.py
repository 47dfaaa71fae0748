"""``python -m ember SCRIPT [ARGS]``: run a PyTorch script with ember standing in for ``torch``."""
from __future__ import annotations

import os
import runpy
import sys

USAGE = """usage: python -m ember SCRIPT [ARGS ...]

Runs SCRIPT (a PyTorch program) with ember standing in for torch: `import torch` and the torch.*
submodules ember provides (nn, nn.functional, optim, utils.data, autograd, linalg, cuda, backends,
serialization, testing, distributions, ...) resolve to ember's. Using something ember lacks stops the
script with an error naming the missing torch attribute or module. In a notebook:
`import ember; ember.install_as_torch()` before `import torch`."""


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    script = argv[0]
    if not os.path.isfile(script):
        print(f"python -m ember: can't open file {script!r}: [Errno 2] No such file or directory", file=sys.stderr)
        return 2
    from ember._torch_shim import install_as_torch
    install_as_torch()
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
