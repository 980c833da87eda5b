"""Device choice and seeding, shared by every lesson."""
from __future__ import annotations

import os
import random

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
    """Use `threads` torch threads, unless COURSE_TORCH_THREADS overrides it; return the number.

    Tiny models gain nothing from a second thread, and results are bit-identical run to run
    only at a fixed thread count. `course sweep` sets COURSE_TORCH_THREADS=2 for one run, because
    another thread count rounds differently, as another CPU would: a claim must survive that.
    """
    threads = requested_threads(threads)
    torch.set_num_threads(threads)
    return threads


def requested_threads(default: int = 1) -> int:
    """`default`, unless COURSE_TORCH_THREADS asks for another torch thread count."""
    return int(os.environ.get("COURSE_TORCH_THREADS", default))
