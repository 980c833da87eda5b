"""Device choice, seeding and torch's thread count, shared by every lesson."""
from __future__ import annotations

import numbers
import os
import random
from contextlib import contextmanager

import numpy as np
import torch


def get_device() -> torch.device:
    """CUDA when present (the lessons run unchanged on a GPU), else the CPU.

    Set COURSE_DEVICE=cpu to force the CPU on a GPU machine.
    """
    wanted = os.environ.get("COURSE_DEVICE")
    if wanted:
        return torch.device(wanted)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python, NumPy and torch; return a fresh CPU generator seeded with `seed`."""
    # NumPy takes 0 .. 2**32 - 1 only; checked first so that nothing is seeded half-way
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2 ** 32:
        raise ValueError(f"seed: expected an int in [0, 2**32 - 1], got {type(seed).__name__} {seed!r}")
    seed = int(seed)              # a numpy integer too (random.seed refuses one)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def environment_report() -> dict[str, str]:
    """What lesson 00 prints: versions, threads and device."""
    import platform

    import matplotlib
    import pandas
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "pandas": pandas.__version__,
        "matplotlib": matplotlib.__version__,
        "torch threads": str(torch.get_num_threads()),
        "device": str(get_device()),
    }


def limit_threads(threads: int = 1) -> int:
    """Use `threads` torch threads from now on, unless COURSE_TORCH_THREADS overrides it; return
    the number. (For one block only, and the caller's count back afterwards: `torch_threads`.)

    Tiny models gain nothing from a second thread, and results are bit-identical run to run
    only at a fixed thread count. `course sweep` sets COURSE_TORCH_THREADS=2 for one run, because
    another thread count rounds differently, as another CPU would: a claim must survive that.
    """
    _require_thread_count("threads", threads)
    threads = requested_threads(threads)
    torch.set_num_threads(threads)
    return threads


def requested_threads(default: int = 1) -> int:
    """`default`, unless COURSE_TORCH_THREADS asks for another torch thread count. The one place
    that reads the variable: `limit_threads`, `torch_threads` and pretraining's cache key agree."""
    _require_thread_count("default", default)
    raw = os.environ.get("COURSE_TORCH_THREADS")
    if raw is None:
        return int(default)
    try:
        count = int(raw)
    except ValueError:
        count = None
    if count is None or count < 1:
        shown = repr(raw) if count is None else count
        raise ValueError(f"COURSE_TORCH_THREADS: expected a positive int, got {shown}")
    return count


def _require_thread_count(name, value) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name}: expected a positive int, got {type(value).__name__} {value!r}")


@contextmanager
def torch_threads(threads: int | None = None):
    """Run the block on `threads` torch threads, then give the caller its own count back.

        with torch_threads():       # 1 thread, or COURSE_TORCH_THREADS (as limit_threads(1))
        with torch_threads(1):      # exactly 1, whatever the environment says

    `threads=None` honours COURSE_TORCH_THREADS (default 1): use it where the thread count
    only changes the last bits of the result, which `course sweep`'s 2-thread run must see.
    A number is taken as it is: for a caller that states its own count (pretraining's
    `num_threads`) or that needs exactly that many (a timer that reads one thread's CPU time).
    Yields the number of threads used.
    """
    count = requested_threads(1) if threads is None else threads
    if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1:
        name = "COURSE_TORCH_THREADS" if threads is None else "threads"
        raise ValueError(f"{name}: expected a positive int, got {count!r}")
    saved = torch.get_num_threads()
    torch.set_num_threads(int(count))
    try:
        yield int(count)
    finally:
        torch.set_num_threads(saved)
