"""The benchmark harness: each framework in a process of its own, identical model code, alternating order, medians.

A benchmark module describes itself with a ``Bench``: its workloads (``make(lib, quick)`` builds the model and
data with ``lib`` = ``ember`` or ``torch`` and returns the step to time) and the sides it compares (ember and
PyTorch by default). ``python -m bench.<module>`` then starts, for every round, one child process per side
(per workload, or per module when ``Bench.per_workload`` is False), in an order that rotates from round to
round. A child imports its framework first (as a script does), sets the threads, builds the workload, warms it
up, times ``blocks`` blocks of ``number`` calls and reports the median block, its peak RSS and what it runs on
(threads, BLAS library and kernel). The table gives per side the median over rounds, the ratio of each PyTorch
side to the first side (> 1: the first side, ember, is faster) with its range over rounds, and peak RSS.

Running both frameworks in one process measures each under the other's thread pools, allocator settings and
BLAS threads; separate processes measure what a user of each sees.

Options every benchmark takes: ``--quick`` (a tiny smoke run: one round, one block, shrunken workloads),
``--rounds N``, ``--blocks N``, ``--threads N``, ``--only TEXT`` (workloads whose name contains TEXT),
``--markdown`` (the table as Markdown, for README / docs), ``--self-check`` (PyTorch on both sides: the
ratios show the harness's own noise; they should be near 1.0) and ``--under-load [N]`` (N processes, one per
logical CPU by default, each spinning a Python loop, run beside every measured process: how each framework's
threads behave when other jobs share the cores).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Workload:
    """``make(lib, quick)`` returns the function to time; ``number`` calls per block (``quick_number`` in a quick
    run), after ``warm`` untimed calls; ``blocks`` overrides the run's number of blocks (a slow workload: the
    first step of a model being compiled)."""
    make: Callable[[Any, bool], Callable[[], Any]]
    number: int = 1
    warm: int = 1
    quick_number: int = 1
    blocks: int | None = None  # timed blocks for this workload (None: the run's --blocks)


@dataclass
class Side:
    """One column of the table: a framework (``"ember"`` or ``"torch"``), optionally ``prepare(lib)`` run in the
    child after the import (a variant: a switch flipped, a module-level option set)."""
    name: str
    framework: str
    prepare: Callable[[Any], None] | None = None


DEFAULT_SIDES = (Side("ember", "ember"), Side("torch", "torch"))


@dataclass
class Bench:
    module: str
    doc: str
    workloads: dict[str, Workload]
    sides: tuple[Side, ...] = DEFAULT_SIDES
    threads: int = 2
    blocks: int = 5
    rounds: int = 3
    unit: str = "ms"  # "ms" or "us"
    per_workload: bool = True  # a process per workload (peak RSS per workload) or one per module and side
    ratios_to_all: bool = False  # ratios of every other side to the first (not only PyTorch's): variants of ember
    sync: Callable[[Any], None] | None = None  # sync(lib) ends a block: a GPU's queued work finishes inside the clock
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.module == "__main__":  # run with python -m bench.X: the children import it as bench.X
            self.module = sys.modules["__main__"].__spec__.name


# -- the child ------------------------------------------------------------------------------------------------

def time_block(fn: Callable[[], Any], number: int, sync: Callable[[], Any] | None = None) -> float:
    """Seconds per call over ``number`` calls (and, with ``sync``, until the work they queued has finished)."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    if sync is not None:
        sync()
    return (time.perf_counter() - t0) / number


def rss_mb(field: str = "VmRSS") -> float:
    """A memory figure of this process from /proc/self/status in MB: ``VmRSS`` (resident now) or ``VmHWM`` (the
    peak so far); elsewhere than Linux, the peak from ``getrusage``."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024 / (1024 if sys.platform == "darwin" else 1)


def peak_rss_mb() -> float:
    """The process's peak resident set size so far, in MB."""
    return rss_mb("VmHWM")


def describe(lib: Any) -> str:
    """Version, threads, BLAS library and kernel, CPU capability of the framework running in this process."""
    parts = [f"{lib.__name__} {lib.__version__}", f"{lib.get_num_threads()} threads"]
    if lib.__name__ == "torch":
        found = re.search(r"BLAS_INFO=(\w+)", lib.__config__.show())
        blas = found.group(1) if found else "unknown"
        parts.append(f"BLAS {blas} (linked into libtorch)")
    else:
        try:
            import threadpoolctl
            libs = [d for d in threadpoolctl.threadpool_info() if d.get("user_api") == "blas"]
        except ImportError:
            libs = []
        if libs:   # NumPy's own (its wheel's numpy.libs), not one another package loaded (SciPy's)
            import numpy
            home = os.path.dirname(os.path.dirname(numpy.__file__))
            own = [d for d in libs if os.path.basename(os.path.dirname(d["filepath"])) == "numpy.libs"
                   and d["filepath"].startswith(home)]
            d = (own or libs)[0]
            parts.append(f"BLAS {d['internal_api']} {d.get('version')} ({d.get('architecture')} kernel, "
                         f"{d['num_threads']} threads)")
        else:
            parts.append("BLAS: NumPy's (install threadpoolctl to see which)")
    parts.append(f"CPU capability {lib.backends.cpu.get_cpu_capability()}")
    if lib.get_default_device().type == "cuda":
        parts.append(f"GPU {lib.cuda.get_device_name()}")
    return ", ".join(parts)


def _child(spec: dict[str, Any]) -> None:
    framework = spec["framework"]
    lib = importlib.import_module(framework)  # first, as in a script: ember sets up NumPy and malloc here
    lib.set_num_threads(spec["threads"])
    rss_import = peak_rss_mb()
    bench: Bench = importlib.import_module(spec["module"]).BENCH
    if spec["self_check"]:  # both sides are the module's (first) PyTorch side
        side = next(s for s in bench.sides if s.framework == "torch")
    else:
        side = next(s for s in bench.sides if s.name == spec["side"])
    if side.prepare is not None:
        side.prepare(lib)
    quick = spec["quick"]
    sync = (lambda: bench.sync(lib)) if bench.sync is not None else None
    times = {}
    for name in spec["workloads"]:
        w = bench.workloads[name]
        fn = w.make(lib, quick)
        number = w.quick_number if quick else w.number
        for _ in range(w.warm):
            fn()
        if sync is not None:
            sync()
        blocks = spec["blocks"] if w.blocks is None or quick else w.blocks
        times[name] = statistics.median(time_block(fn, number, sync) for _ in range(blocks))
    print(json.dumps({"times": times, "rss_mb": peak_rss_mb(), "rss_import_mb": rss_import,
                      "describe": describe(lib)}))


# -- the parent -----------------------------------------------------------------------------------------------

def machine() -> str:
    """CPU model, AVX-512 or not, logical CPUs."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
        cpu = next(ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model name"))
        cpu += ", AVX-512" if "avx512f" in info else ", no AVX-512"
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs"


def _have_torch() -> bool:
    return importlib.util.find_spec("torch") is not None


# The competing load of ``--under-load``: a process that keeps one core busy in Python (no memory traffic, no
# threads of its own), as other jobs on a shared machine do; N of them start before each measured process and
# stop after it.
LOAD = "while True:\n    pass"


def _run_child(bench: Bench, side: Side, names: list[str], args: argparse.Namespace) -> dict[str, Any]:
    spec = {"module": bench.module, "side": side.name, "framework": side.framework, "workloads": names,
            "threads": args.threads, "blocks": args.blocks, "quick": args.quick, "self_check": args.self_check}
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(args.threads)
    cmd = [sys.executable, "-m", "bench._timing", "--child", json.dumps(spec)]
    load = [subprocess.Popen([sys.executable, "-c", LOAD]) for _ in range(args.under_load)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    finally:
        for q in load:
            q.kill()
            q.wait()
    if p.returncode != 0:
        raise RuntimeError(f"benchmark child {side.name} / {names} failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def parse_args(bench: Bench, argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=bench.doc.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a short smoke run (CI)")
    ap.add_argument("--rounds", type=int, default=bench.rounds, help="rounds of processes, order alternating")
    ap.add_argument("--blocks", type=int, default=bench.blocks, help="timed blocks per process (median)")
    ap.add_argument("--threads", type=int, default=bench.threads, help="threads for each side")
    ap.add_argument("--only", default="", help="only the workloads whose name contains this text")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--self-check", action="store_true", help="PyTorch on both sides (ratios should be ~1.0)")
    ap.add_argument("--under-load", type=int, nargs="?", const=os.cpu_count() or 1, default=0, metavar="N",
                    help="run N busy processes beside each measured one (default N: the logical CPUs)")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.blocks = 1, 1
    return args


def run(bench: Bench, argv: list[str] | None = None) -> dict[str, Any]:
    """Measure and print the table; returns {workload: {side: (median seconds, peak MB)}} for callers."""
    args = parse_args(bench, argv)
    if args.self_check:
        sides = [Side("torch A", "torch"), Side("torch B", "torch")]
        if not _have_torch():
            raise SystemExit("--self-check needs PyTorch")
    else:
        sides = [s for s in bench.sides if s.framework != "torch" or _have_torch()]
        if len(sides) < len(bench.sides):
            print("PyTorch is not installed: printing ember's numbers only")
    names = [n for n in bench.workloads if args.only in n]
    per_workload = bench.per_workload and not args.quick  # a quick run: one process per side
    groups = [[n] for n in names] if per_workload else [names]
    times: dict[str, dict[str, list[float]]] = {n: {s.name: [] for s in sides} for n in names}
    rss: dict[str, dict[str, list[float]]] = {n: {s.name: [] for s in sides} for n in names}
    described: dict[str, str] = {}
    for group in groups:
        for r in range(args.rounds):
            k = r % len(sides)
            for side in sides[k:] + sides[:k]:  # the order rotates from round to round
                rep = _run_child(bench, side, group, args)
                described[side.name] = rep["describe"]
                for n in group:
                    times[n][side.name].append(rep["times"][n])
                    rss[n][side.name].append(rep["rss_mb"])
    _print_table(bench, args, sides, names, times, rss, described, per_workload)
    return {n: {s.name: (statistics.median(times[n][s.name]), statistics.median(rss[n][s.name])) for s in sides}
            for n in names}


def _print_table(bench: Bench, args: argparse.Namespace, sides: list[Side], names: list[str],
                 times: dict[str, dict[str, list[float]]], rss: dict[str, dict[str, list[float]]],
                 described: dict[str, str], per_workload: bool) -> None:
    scale = 1e6 if bench.unit == "us" else 1e3
    first = sides[0]
    refs = [s for s in sides[1:] if s.framework == "torch" or bench.ratios_to_all]
    print(f"machine: {machine()}")
    for s in sides:
        print(f"  {s.name}: {described[s.name]}")
    how = "a process per workload and side" if per_workload else "a process per side"
    print(f"  {how}, {args.rounds} round(s) in alternating order, median of {args.blocks} block(s) per process, "
          f"median over rounds")
    if len(sides) > 1:
        print(f"  ratio = {' or '.join(r.name for r in refs)} time / {first.name} time (> 1: {first.name} is "
              f"faster); in brackets, its range over the rounds")
    if args.under_load:
        print(f"  under load: {args.under_load} busy process(es) (a Python spin loop each) beside each measured one")
    for note in bench.notes:
        print(f"  {note}")
    head = ["workload"] + [f"{s.name} {bench.unit}" for s in sides] + [f"{r.name}/{first.name}" for r in refs]
    if per_workload:
        head += [f"{s.name} peak MB" for s in sides]
    rows = []
    for n in names:
        med = {s.name: statistics.median(times[n][s.name]) for s in sides}
        row = [n] + [f"{med[s.name] * scale:.3f}" for s in sides]
        for r in refs:
            per_round = [t / e for t, e in zip(times[n][r.name], times[n][first.name])]
            spread = f" ({min(per_round):.2f}-{max(per_round):.2f})" if len(per_round) > 1 else ""
            row.append(f"{med[r.name] / med[first.name]:.2f}{spread}")
        if per_workload:
            row += [f"{statistics.median(rss[n][s.name]):.0f}" for s in sides]
        rows.append(row)
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    for row in [head] + rows:
        print("  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w) for i, (x, w) in enumerate(zip(row, widths))),
              flush=True)


def print_geomean(results: dict[str, Any]) -> None:
    """The geometric mean over the workloads of the second side's time / the first's (with both sides run)."""
    sides = list(next(iter(results.values())))
    if len(sides) == 2:
        ratios = [r[sides[1]][0] / r[sides[0]][0] for r in results.values()]
        print(f"geometric mean of {sides[1]}/{sides[0]}: {statistics.geometric_mean(ratios):.2f}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _child(json.loads(sys.argv[2]))
    else:
        raise SystemExit("bench._timing is the harness; run a benchmark: python -m bench.suite")

