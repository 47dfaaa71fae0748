"""Timing shared by the benchmarks: ember and PyTorch interleaved block by block, medians."""
from __future__ import annotations

import statistics
import time


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
