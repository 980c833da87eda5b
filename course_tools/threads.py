"""How many threads the course's own runs use, so that a busy laptop does not collapse them.

PyTorch's CPU kernels split each operation across every thread of its OpenMP pool, statically:
every thread gets its share, and the operation ends only when the last share is done. On a
machine whose cores are also busy with other work (a browser, another Python process, a second
lesson), the scheduler takes one of those threads off its core for a time slice (milliseconds),
and every other thread of the pool waits for it at the end of the operation -- by default
spinning, which burns the very core the late thread needs. A forward pass of a small model is
thousands of short operations, so a few milliseconds lost per operation become a many-fold
slow-down (measured: `course bench --busy 2`, lesson 25). ONNX Runtime's pool hands out work in
small pieces that the calling thread can finish by itself, and its threads sleep rather than
spin (`course_lib.onnx_export.ort_options`), so it loses far less.

The policy (`threads_for`, `jobs_for`, `thread_env`, `lesson_env`, `apply_threads`):

- threads per job x jobs <= cores: `threads_for(jobs)` = max(1, cores // jobs), and a job asks
  for no more (`threads_for(jobs, wanted=...)` caps a count the job states itself);
- torch, OpenMP/MKL (the environment of a kernel or a worker process) and ONNX Runtime
  (`ort_session_options`) get the same count;
- idle OpenMP threads sleep (OMP_WAIT_POLICY=PASSIVE, GOMP_SPINCOUNT=0) instead of spinning:
  results are the same bits, and a pool that waits for a descheduled thread no longer eats the
  core that thread needs. OpenMP reads these when it starts, so they matter for a process started
  afterwards (a lesson's kernel, a sweep job, the grader's sandbox), not for this one.

The busy laptop of `course bench --busy N`, lesson 25 and tests/test_threads.py is
`course_lib.timing.busy_cores(n)`: lesson 25 uses it, so it lives with the timer. This module
imports neither torch nor course_lib, so that what it sets can come before torch loads OpenMP.
"""
from __future__ import annotations

import os

#: The environment variables that set a thread count of the libraries under torch and numpy.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
#: Idle OpenMP threads sleep instead of spinning (libgomp, which PyTorch's Linux wheels use, and
#: Intel's OpenMP read OMP_WAIT_POLICY; GOMP_SPINCOUNT=0 is libgomp's own switch).
PASSIVE_WAIT = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0"}


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS says, else the count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def threads_for(jobs: int = 1, wanted: int | None = None, cores: int | None = None) -> int:
    """Threads for each of `jobs` concurrent jobs: max(1, cores // jobs), so that threads per
    job x jobs <= cores; `wanted` (a job's own count, e.g. a lesson's 1 thread) is capped by it."""
    for name, value in (("jobs", jobs), ("wanted", wanted), ("cores", cores)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{name}: expected a positive int, got {value!r}")
    share = max(1, (cores or available_cores()) // jobs)
    return share if wanted is None else min(wanted, share)


def jobs_for(jobs: int, threads: int = 1, cores: int | None = None) -> int:
    """How many of `jobs` wanted concurrent jobs of `threads` threads each fit the cores:
    max(1, min(jobs, cores // threads)) (a 2-thread job takes two 1-thread jobs' room)."""
    for name, value in (("jobs", jobs), ("threads", threads), ("cores", cores)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{name}: expected a positive int, got {value!r}")
    return max(1, min(jobs, (cores or available_cores()) // threads))


def lesson_env(jobs: int = 1, threads: int = 1) -> dict[str, str]:
    """The environment of a lesson's kernel among `jobs` concurrent ones: the lesson's own
    `threads` (1, as its `limit_threads(1)`: tiny models, reproducible bits), capped by
    `threads_for(jobs)`, for OpenMP, MKL and OpenBLAS alike, idle threads sleeping."""
    return thread_env(threads_for(jobs, wanted=threads))


def thread_env(threads: int, passive: bool = True) -> dict[str, str]:
    """The environment that gives a process started with it `threads` OpenMP/MKL/OpenBLAS threads
    (torch's default count follows OMP_NUM_THREADS) and, with `passive`, sleeping idle threads."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads: expected a positive int, got {threads!r}")
    env = {name: str(threads) for name in THREAD_VARIABLES}
    return {**env, **PASSIVE_WAIT} if passive else env


def apply_threads(threads: int, environ: dict | None = None) -> int:
    """Use `threads` threads here (torch's intra-op pool) and in every process started from now on
    (`thread_env` written into `environ`, default os.environ); return the count. ONNX Runtime
    sessions made afterwards with `course_lib.onnx_export.ort_options()` follow torch's count."""
    import torch

    (os.environ if environ is None else environ).update(thread_env(threads))
    torch.set_num_threads(threads)
    return threads


def ort_session_options(threads: int):
    """ONNX Runtime session options configured as torch is by this policy: `threads` intra-op
    threads, one inter-op thread, no spinning."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return options
