"""Running the sweep: every lesson at every run (seed, thread count) in a kernel of its own, in
worker processes when asked, each run recorded in the ledger as it ends; then `collect`."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
from tqdm.std import tqdm

from course_tools.threads import thread_env

from ..manifest import Lesson
from ..runner import BUILD, INTERRUPTED, execute_lesson, lesson_status
from .checked_outputs import checked_cells
from .ledger import CLAIM_FIELDS, DEFAULT_RUNS, RUNS_DIR, Run, code_digest, is_current, record_run
from .results import CLAIMS_CSV, collect


def _read_claims(claims_file: Path) -> list[dict]:
    if not claims_file.exists():
        return []
    return [json.loads(line) for line in claims_file.read_text(encoding="utf-8").splitlines()]


def _run_one(lesson: Lesson, run: Run, out_dir: Path, timeout: int) -> tuple[str, dict | None]:
    """Run `lesson` under `run`; return (code digest, the run's ledger record), the record None
    when the run was interrupted (not a run: `--resume` runs it again)."""
    import nbformat
    output, claims_file = run.files(lesson, out_dir)
    claims_file.unlink(missing_ok=True)
    digest = code_digest(lesson)
    # The kernel inherits these: the claims file, and the thread count for torch and OpenMP.
    # thread_env: OpenMP/MKL/OpenBLAS at the run's count, idle threads sleeping instead of
    # spinning (same results; a 2-thread run on a busy machine no longer slows to a crawl)
    env = {"COURSE_CLAIMS_FILE": str(claims_file), "COURSE_TORCH_THREADS": str(run.threads),
           "TQDM_MININTERVAL": "3600", **thread_env(run.threads)}
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        seconds, status, error = execute_lesson(lesson, output, {"SEED": run.seed}, timeout)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    if status == INTERRUPTED or (output.exists() and lesson_status(output)[0] == INTERRUPTED):
        return digest, None
    claims = [{key: entry.get(key) for key in CLAIM_FIELDS if entry.get(key) is not None}
              for entry in _read_claims(claims_file)]
    checked = (checked_cells(nbformat.read(output, as_version=4)) if output.exists() else {})
    return digest, {"seed": run.seed, "threads": run.threads, "seconds": round(seconds, 1),
                    "claims held": status, "error": error, "claims": claims, "checked": checked}


def sweep(lessons: list[Lesson], runs: list[Run] = DEFAULT_RUNS, jobs: int = 1, timeout: int = 900,
          out_dir: Path = BUILD / "sweep", checked_file: Path | None = None,
          claims_csv: Path | None = CLAIMS_CSV, resume: bool = False,
          ledger_dir: Path = RUNS_DIR) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run every lesson under every run (executed notebooks in `out_dir`), record each run in the
    lesson's ledger as it ends, then `collect`: return (runs table, claims table) and write both
    CSVs, the swept lessons' rows of the committed per-claim summary `claims_csv`
    (`write_claims_csv`) and their checked outputs into `checked_file` (default
    `docs/sweep/checked_outputs.json`; see `write_checked_outputs`).

    Environment variables are process-wide, so parallel jobs would race on them: the kernel is
    started while they are set, so jobs > 1 runs lessons in separate worker processes.

    The work goes run by run (every lesson at the first run, then every lesson at the next), so
    an interrupted sweep has the first runs of every lesson; `resume` skips the runs the ledger
    holds from the lesson's current code (`is_current`), so a sweep can be continued where it
    stopped, on this machine or another (the ledger is committed).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    work = [(lesson, run) for run in runs for lesson in lessons]
    if resume:
        digests = {lesson.stem: code_digest(lesson) for lesson in lessons}
        work = [(lesson, run) for lesson, run in work
                if not is_current(lesson, run, ledger_dir, digests[lesson.stem])]
    bar = tqdm(total=len(work), desc="sweep", unit="run")

    def keep(lesson, run, result):
        digest, record = result
        # a run of code edited while it ran is stale on arrival: recording it would start the
        # ledger afresh and drop the runs already made from the newer code
        if record is not None and digest == code_digest(lesson):
            record_run(lesson, run, digest, record, ledger_dir)
        bar.update()

    if jobs <= 1:
        for lesson, run in work:
            keep(lesson, run, _run_one(lesson, run, out_dir, timeout))
    else:
        from concurrent.futures import ProcessPoolExecutor
        import multiprocessing
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures = [(lesson, run, pool.submit(_run_one, lesson, run, out_dir, timeout)) for lesson, run in work]
            for lesson, run, future in futures:
                keep(lesson, run, future.result())
    bar.close()
    return collect(lessons, runs, ledger_dir, checked_file, claims_csv)
