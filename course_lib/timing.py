"""Timing statistics of a shared machine: interleaved rounds and the numbers read from them.
Used by lesson 25 and `course bench` alike (one timer, one set of statistics).

    times = time_interleaved({"fp32": run_fp32, "int8": run_int8}, repeats=12, seed=0)
    median(times["int8"])                          # seconds per call
    paired_ratio(times, "fp32", "int8")            # median of per-round speed-ups
    ratio_range(times, "fp32", "int8")             # (slowest, fastest) per-round speed-up
    with busy_cores(2): ...                        # the same, on a busy machine
"""
from __future__ import annotations

import contextlib
import random
import statistics
import subprocess
import sys
import time
from typing import Callable

import torch


def time_interleaved(runs: dict[str, Callable[[], object]], repeats: int = 5, warmup: int = 1,
                     seed: int | None = None, sync: Callable[[], None] | None = None,
                     inference_mode: bool = True) -> dict[str, list[float]]:
    """Seconds per call of every function, measured round-robin: each round calls every
    function once, so a slow spell of a shared machine hits all of them alike. The order of a
    round is rotated by one each round, or shuffled when `seed` is given (then no function
    always follows the same neighbour). Returns {name: [seconds of each round]}: take the
    median, or the median of per-round ratios (`paired_ratio`).

    sync: called after the warm-up and after every call, inside the timed span: on a GPU pass
    `torch.cuda.synchronize`, or the clock stops before the kernels have run (`course bench`).
    inference_mode: run under `torch.inference_mode()` (no autograd bookkeeping); False leaves
    autograd as the caller set it, to time code that needs gradients (a training step)."""
    names = list(runs)
    rng = random.Random(seed)
    sync = sync or (lambda: None)
    with torch.inference_mode() if inference_mode else contextlib.nullcontext():
        for _ in range(warmup):
            for name in names:
                runs[name]()
        sync()
        times = {name: [] for name in names}
        for r in range(repeats):
            if seed is None:
                order = names[r % len(names):] + names[:r % len(names)]
            else:
                order = rng.sample(names, len(names))
            for name in order:
                start = time.perf_counter()
                runs[name]()
                sync()
                times[name].append(time.perf_counter() - start)
    return times


def round_ratios(times: dict[str, list[float]], reference: str, case: str) -> list[float]:
    """reference's time / case's time within each round (above 1: `case` is faster)."""
    if len(times[reference]) != len(times[case]):            # zip would drop rounds
        raise ValueError(f"times[{case!r}]: expected {len(times[reference])} rounds like "
                         f"times[{reference!r}], got {len(times[case])}")
    return [r / c for r, c in zip(times[reference], times[case])]


def paired_ratio(times: dict[str, list[float]], reference: str, case: str) -> float:
    """Median over rounds of (reference's time / case's time) within the same round: a paired
    statistic, so load that slows a whole round cancels out. Above 1: `case` is faster."""
    return statistics.median(round_ratios(times, reference, case))


def ratio_range(times: dict[str, list[float]], reference: str, case: str) -> tuple[float, float]:
    """(min, max) over rounds of the per-round ratio: what `paired_ratio`'s median hides. A
    claim such as "int8 is 2x faster" holds on this machine only if it holds at the min."""
    ratios = round_ratios(times, reference, case)
    return min(ratios), max(ratios)


def spread(values) -> tuple[float, float]:
    """(25th, 75th percentile) of the values: the interquartile range of the rounds."""
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def median(values) -> float:
    return statistics.median(values)


def min_max(values) -> tuple[float, float]:
    """(smallest, largest) of the values: every round, not only the middle ones."""
    values = list(values)
    return min(values), max(values)


# ---------------------------------------------------------------------------------------------
# a busy machine, on purpose (lesson 25, `course bench --busy N`)
# ---------------------------------------------------------------------------------------------

#: A burner: pure Python, one core, exits when its parent is gone or after `limit` seconds (a
#: safety net should the parent be killed without running its clean-up).
_BURNER = """
import os, sys, time
parent, end = os.getppid(), time.monotonic() + float(sys.argv[1])
while os.getppid() == parent and time.monotonic() < end:
    x = 0
    for i in range(200_000):
        x += i * i
"""


@contextlib.contextmanager
def busy_cores(n: int, limit: float = 900.0):
    """Within the block, `n` background processes each burn one core (pure Python loops), as the
    other programs of a busy laptop do. They are stopped on leaving the block, by an exception or
    Ctrl-C too, and each stops by itself when this process is gone or after `limit` seconds.
    Yields the list of their process ids (empty for n=0)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n: expected an int >= 0, got {n!r}")
    procs: list[subprocess.Popen] = []
    try:
        for _ in range(n):
            procs.append(subprocess.Popen(
                [sys.executable, "-c", _BURNER, str(limit)], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        if procs:
            time.sleep(0.05)            # they are running before the first timing
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 5
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
