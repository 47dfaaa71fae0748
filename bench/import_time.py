"""Start-up cost: ``import ember`` against ``import torch``, and ``python -m ember SCRIPT`` against ``python SCRIPT``.

    python -m bench.import_time [--quick] [--rounds 7]

Every measurement is a fresh interpreter (as every script, DataLoader worker and distributed rank is), the two
frameworks alternating which goes first from round to round. ``import`` is timed inside the child around the
import statement alone; ``run`` is the wall time of the whole process running an empty script (interpreter start,
the import, and for ember the ``python -m ember`` launcher that makes ``import torch`` load ember). The table gives
the median seconds over rounds and the ratio PyTorch / ember (> 1: ember starts faster).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench._timing import machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_IMPORT = "import time; t = time.perf_counter(); import {lib}; print(time.perf_counter() - t)"


def _import_seconds(lib: str) -> float:
    r = subprocess.run([sys.executable, "-c", _IMPORT.format(lib=lib)], cwd=ROOT, capture_output=True, text=True,
                       check=True)
    return float(r.stdout.strip().splitlines()[-1])


def _run_seconds(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, capture_output=True, check=True)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one round (CI smoke run)")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    try:
        import torch  # noqa: F401
        sides = ["ember", "torch"]
    except ImportError:
        sides = ["ember"]
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write("import torch\n")
        script = f.name
    runs = {"ember": [sys.executable, "-m", "ember", script], "torch": [sys.executable, script]}
    times: dict[tuple[str, str], list[float]] = {}
    try:
        for r in range(rounds):
            for side in (sides if r % 2 == 0 else sides[::-1]):
                times.setdefault(("import", side), []).append(_import_seconds(side))
                times.setdefault(("run", side), []).append(_run_seconds(runs[side]))
    finally:
        os.unlink(script)
    print(f"machine: {machine()}\n  {rounds} round(s), a fresh process per measurement, median over rounds")
    print(f"{'measurement':<34}{'ember s':>9}{'torch s':>9}  torch/ember")
    for what, label in (("import", "import ember / import torch"), ("run", "python -m ember x.py / python x.py")):
        e = statistics.median(times[(what, "ember")])
        if "torch" in sides:
            t = statistics.median(times[(what, "torch")])
            print(f"{label:<34}{e:>9.3f}{t:>9.3f}  {t / e:.2f}")
        else:
            print(f"{label:<34}{e:>9.3f}{'-':>9}")


if __name__ == "__main__":
    main()
