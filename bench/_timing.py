"""Timing shared by the benchmarks: ember and PyTorch interleaved block by block, medians."""
from __future__ import annotations

import argparse
import statistics
import time


def parse_args(doc: str, argv, blocks: int, repeat_name: str = "blocks"):
    """Every benchmark's command line: ``--quick`` (the CI smoke run) and ``--<repeat_name> N`` (interleaved
    blocks, medians); the description is the first line of the module's docstring."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a short smoke run (CI)")
    ap.add_argument(f"--{repeat_name}", type=int, default=blocks, help="interleaved blocks per workload (median)")
    return ap.parse_args(argv)


def import_torch(threads: int):
    """PyTorch (the side-by-side reference) with ``threads`` intra-op threads, or None with a note."""
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: printing ember's numbers only")
        return None
    torch.set_num_threads(threads)
    return torch


def time_block(fn, number: int) -> float:
    """Seconds per call over ``number`` calls."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def interleaved(ember_fn, torch_fn, blocks: int, number: int):
    """Median seconds per call of each (torch's is None without PyTorch), alternating blocks so that
    machine load hits both alike."""
    et, tt = [], []
    for _ in range(blocks):
        et.append(time_block(ember_fn, number))
        if torch_fn is not None:
            tt.append(time_block(torch_fn, number))
    return statistics.median(et), (statistics.median(tt) if tt else None)


def run_table(workloads, make_args, blocks, number, digits=3, torch=None):
    """Print ``workload  ember ms  torch ms  torch/ember`` for each ``name -> make(lib, *make_args)``."""
    import ember
    print(f"{'workload':<36} {'ember ms':>9} {'torch ms':>9} {'torch/ember':>12}")
    for name, make in workloads.items():
        e, t = interleaved(make(ember, *make_args), make(torch, *make_args) if torch else None, blocks, number)
        e, t = e * 1e3, (t * 1e3 if t is not None else None)
        if t is not None:
            print(f"{name:<36} {e:>9.{digits}f} {t:>9.{digits}f} {t / e:>12.2f}")
        else:
            print(f"{name:<36} {e:>9.{digits}f}")
