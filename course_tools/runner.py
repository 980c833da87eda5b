"""`course run`: execute every lesson with papermill and write a summary.

A lesson's *claims* are its cells tagged `evidence` (the assert cells). The summary says
for each lesson whether it ran, and whether its claims held: "no" when an evidence cell
failed, "error" when the lesson broke before reaching its claims.
"""
from __future__ import annotations

import functools
import os
import re
import statistics
import sys
import time
from pathlib import Path

import nbformat
import pandas as pd
from tqdm.std import tqdm  # text bars: readable in stored notebooks, no widget dependency

from . import ROOT
from .manifest import Lesson

BUILD = ROOT / "build"
#: The page the generated tables live in (run times here, the sweep's and the bench's too), each
#: between its own marker comments; the README links to it and stays one screen long.
RESULTS = ROOT / "docs" / "results.md"
README_BEGIN, README_END = "<!-- timing:begin -->", "<!-- timing:end -->"


@functools.cache
def kernel_manager_class():
    """The kernel manager for running lessons: local IPC sockets instead of TCP on POSIX.

    ipykernel 7 prints a warning about unencrypted TCP on every kernel start, which buried the
    progress bar of `make course` under 19 copies of it; IPC sockets are local files, so the
    warning does not apply. Windows has no IPC transport and keeps the default (TCP).
    """
    import uuid

    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.paths import jupyter_runtime_dir
    from traitlets import default

    class QuietShutdownKernelManager(AsyncKernelManager):
        # jupyter_client interrupts a kernel before every shutdown; when the SIGINT lands while
        # the kernel still answers papermill's last request, ipykernel logs "KeyboardInterrupt
        # caught in kernel" although the lesson finished. A finished lesson has nothing to stop;
        # the interrupt nbclient sends on a cell timeout (not shutting down) is unchanged.
        async def _async_interrupt_kernel(self):
            if self.shutting_down:
                return
            await super()._async_interrupt_kernel()

    if os.name == "nt":
        return QuietShutdownKernelManager

    class IPCKernelManager(QuietShutdownKernelManager):
        @default("transport")
        def _default_transport(self):
            return "ipc"

        @default("ip")
        def _default_ip(self):
            # An absolute socket path: the kernel starts in the lesson's folder, the client
            # here, so a relative path would name two different files.
            runtime = Path(jupyter_runtime_dir())
            runtime.mkdir(parents=True, exist_ok=True)
            return str(runtime / f"course-{uuid.uuid4().hex[:12]}-ipc")

    return IPCKernelManager


#: The status of a run that stopped before its last cell without a failing one: not a run.
INTERRUPTED = "not run (interrupted)"


def lesson_status(output_path: Path) -> tuple[str, str]:
    try:
        nb = nbformat.read(output_path, as_version=4)
    except ValueError as error:   # nbformat's NotJSONError: a run killed while it wrote its notebook
        return INTERRUPTED, f"{type(error).__name__}: {error}"[:200]
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                tags = cell.metadata.get("tags", [])
                where = "no" if "evidence" in tags else "error"
                return where, f"{out.get('ename')}: {out.get('evalue')}"[:200]
    unrun = sum(cell.cell_type == "code" and cell.get("execution_count") is None for cell in nb.cells)
    if unrun:   # no failing cell, yet cells never ran: the run was stopped
        return INTERRUPTED, f"{unrun} code cells never ran"
    if not any("evidence" in c.metadata.get("tags", []) for c in nb.cells):
        return "no claims", ""
    return "yes", ""


def execute_lesson(lesson: Lesson, output: Path, parameters: dict, timeout: int) -> tuple[float, str, str]:
    """Run one lesson with papermill into `output`; return (seconds, claims held, error).

    The kernel inherits this process's environment (thread counts, the claims file of a sweep).
    """
    import papermill as pm
    start = time.perf_counter()
    failure = None
    try:
        pm.execute_notebook(str(lesson.notebook), str(output), parameters=parameters,
                            kernel_name="python3", progress_bar=False, execution_timeout=timeout,
                            cwd=str(lesson.notebook.parent), kernel_manager_class=kernel_manager_class())
    except Exception as raised:  # the status below reads the failing cell from the output notebook
        failure = raised
    seconds = time.perf_counter() - start
    claims, error = lesson_status(output) if output.exists() else ("error", "no output written")
    if failure is not None and claims in ("yes", "no claims"):
        # papermill stopped with no failing cell (the kernel died, the run was killed): the cells after
        # it never ran, so its claims are a partial list
        claims, error = INTERRUPTED, f"{type(failure).__name__}: {failure}"[:200]
    return seconds, claims, error


def needs_pretraining(lesson: Lesson) -> bool:
    """Whether the lesson loads the tiny BERT (`load_or_pretrain`), which trains once if not cached."""
    return "load_or_pretrain(" in lesson.notebook.read_text(encoding="utf-8")


def pretraining_note(lesson: Lesson, seed: int | None = None) -> str:
    """"pretraining the tiny BERT once (~2 min)" when the lesson will train it (its checkpoint is
    not in build/cache/ yet, for the lesson's seed, this machine's device and thread count), else ""."""
    if not needs_pretraining(lesson):
        return ""
    try:
        from course_lib.device import get_device
        from course_lib.pretraining import PretrainConfig, cache_path
        seed = _lesson_seed(lesson) if seed is None else seed
        if cache_path(PretrainConfig(), seed, device_type=get_device().type).exists():
            return ""
    except Exception:  # noqa: BLE001 - a note only: never stop a run over it
        return ""
    return "pretraining the tiny BERT once (~2 min; later runs load it from build/cache/)"


def _lesson_seed(lesson: Lesson) -> int:
    nb = nbformat.read(lesson.notebook, as_version=4)
    for cell in nb.cells:
        if "parameters" in cell.metadata.get("tags", []):
            match = re.search(r"^SEED\s*=\s*(\d+)", cell.source, re.M)
            if match:
                return int(match.group(1))
    return 0


def use_thread_policy(jobs: int = 1) -> dict[str, str]:
    """Give the lesson kernels started from now on the course's thread policy
    (`course_tools.threads.lesson_env`): 1 OpenMP/MKL/OpenBLAS thread, as in the tests (tiny models,
    reproducible bits; never more than the cores shared by `jobs` kernels), idle threads sleeping
    rather than spinning, so that a busy laptop slows a lesson by its share of the CPU, not
    many-fold. A variable already set (by the learner, or a sweep run) is kept. Returns what was set."""
    from course_tools.threads import lesson_env

    added = {key: value for key, value in lesson_env(jobs).items() if key not in os.environ}
    os.environ.update(added)
    return added


def _row(lesson: Lesson, seconds: float, claims: str, error: str) -> dict:
    return {"lesson": f"{lesson.number:02d}", "id": lesson.id, "seconds": round(seconds, 1),
            "claims held": claims, "error": error}


def _run_group(group: list[Lesson], out_dir: Path, parameters: dict, timeout: int) -> list[dict]:
    """Lessons one after another, in a worker process of `run_lessons(jobs=2)`."""
    return [_row(lesson, *execute_lesson(lesson, out_dir / lesson.notebook.name, parameters, timeout))
            for lesson in group]


def run_lessons(lessons: list[Lesson], seed: int | None = None, timeout: int = 600,
                out_dir: Path = BUILD / "notebooks", jobs: int = 1) -> pd.DataFrame:
    """Execute `lessons` (`jobs` at a time, each kernel with one thread); one row per lesson, in order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    use_thread_policy(jobs)
    parameters = {} if seed is None else {"SEED": seed}
    if jobs > 1:
        return _run_parallel(lessons, seed, timeout, out_dir, jobs, parameters)
    rows = []
    bar = tqdm(lessons, desc="lessons", unit="lesson")
    for lesson in bar:
        note = pretraining_note(lesson, seed)
        if note:
            bar.write(f"lesson {lesson.number:02d} ({lesson.id}): {note}", file=sys.stderr)
        bar.set_postfix_str(f"running {lesson.number:02d} {lesson.id}" + (f" - {note}" if note else ""))
        rows.append(_row(lesson, *execute_lesson(lesson, out_dir / lesson.notebook.name, parameters, timeout)))
    return pd.DataFrame(rows)


def expected_seconds(lesson: Lesson) -> float:
    """How long the lesson ran in the sweep (the median of its ledger's runs; 0 without a ledger).
    Runs of older code count too: an estimate for ordering the jobs, never reported."""
    from .sweep.ledger import read_ledger
    seconds = [float(run["seconds"]) for run in read_ledger(lesson)["runs"].values() if run.get("seconds")]
    return statistics.median(seconds) if seconds else 0.0


def job_groups(lessons: list[Lesson]) -> list[list[Lesson]]:
    """The jobs of a parallel run, in the order they start: the lessons that load the tiny BERT
    together in one job (the first pretrains it, the others read the cache), every other lesson a
    job of its own; the longest first, so that the last job to start is a short one and no core
    sits idle for long while another finishes a long lesson (in numeric order the longest came last)."""
    pretrained = [lesson for lesson in lessons if needs_pretraining(lesson)]
    groups = ([pretrained] if pretrained else []) + [[lesson] for lesson in lessons if lesson not in pretrained]
    return sorted(groups, key=lambda group: -sum(expected_seconds(lesson) for lesson in group))


def _run_parallel(lessons, seed, timeout, out_dir, jobs, parameters) -> pd.DataFrame:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    groups = job_groups(lessons)
    pretrained = next((group for group in groups if needs_pretraining(group[0])), [])
    note = pretraining_note(pretrained[0], seed) if pretrained else ""
    bar = tqdm(total=len(lessons), desc=f"lessons ({jobs} at a time)", unit="lesson")
    if note:
        bar.write(f"lesson {pretrained[0].number:02d} ({pretrained[0].id}): {note}", file=sys.stderr)
    rows = {}
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_run_group, group, out_dir, parameters, timeout) for group in groups]
        for future in as_completed(futures):
            for row in future.result():
                rows[row["lesson"]] = row
                bar.update()
    bar.close()
    return pd.DataFrame([rows[f"{lesson.number:02d}"] for lesson in lessons])


def write_summary(table: pd.DataFrame, seed: int | None, wall_seconds: float | None = None) -> Path:
    BUILD.mkdir(exist_ok=True)
    table.to_csv(BUILD / "summary.csv", index=False)
    total = table["seconds"].sum()
    wall = "" if wall_seconds is None else f" ({wall_seconds:.0f} s from start to end)"
    text = (f"# Course run (SEED={'default' if seed is None else seed})\n\n"
            + table.to_markdown(index=False) + f"\n\nTotal: {total:.0f} s of lessons{wall}, "
            f"median {table['seconds'].median():.1f} s per lesson.\n")
    path = BUILD / "summary.md"
    path.write_text(text, encoding="utf-8")
    return path


def replace_readme_block(begin: str, end: str, body: str, readme: Path = RESULTS) -> None:
    """Replace what lies between the markers `begin` and `end` in `readme` (by default the results
    page, docs/results.md) with `body`."""
    text = readme.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise ValueError(f"readme: no {begin} ... {end} markers in {readme}")
    readme.write_text(pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text), encoding="utf-8")


def update_readme(table: pd.DataFrame, readme: Path = RESULTS) -> None:
    """Replace the timing table of docs/results.md (between markers) with measured numbers."""
    import platform
    threads = __import__("torch").get_num_threads()
    shown = table[["lesson", "id", "seconds", "claims held"]]
    body = (shown.to_markdown(index=False)
            + f"\n\nWhole course: {table['seconds'].sum():.0f} s; median lesson "
            f"{table['seconds'].median():.1f} s (measured by `make timing` on {os.cpu_count()} "
            f"CPU cores, torch threads: {threads}, Python {platform.python_version()}).")
    replace_readme_block(README_BEGIN, README_END, body, readme)


def store(lessons: list[Lesson], timeout: int = 600) -> None:
    """Execute lessons in place (no papermill metadata) so the checked output is stored."""
    from nbclient import NotebookClient
    use_thread_policy()
    os.environ.setdefault("TQDM_MININTERVAL", "3600")  # one bar line per loop in the stored outputs
    for lesson in tqdm(lessons, desc="store", unit="lesson"):
        nb = nbformat.read(lesson.notebook, as_version=4)
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       kernel_manager_class=kernel_manager_class(),
                       resources={"metadata": {"path": str(lesson.notebook.parent)}}).execute()
        tidy_stored(nb)
        # the outputs go into the file as it is now: prose edited while the lesson ran is kept
        current = nbformat.read(lesson.notebook, as_version=4)
        ran = {cell.get("id"): cell for cell in nb.cells}
        if [c.get("id") for c in current.cells if c.cell_type == "code"] == \
                [c.get("id") for c in nb.cells if c.cell_type == "code"] and all(
                ran[c.get("id")].source == c.source for c in current.cells if c.cell_type == "code"):
            for cell in current.cells:
                if cell.cell_type == "code":
                    cell.outputs = ran[cell.get("id")].outputs
                    cell.execution_count = ran[cell.get("id")].execution_count
            current.metadata = nb.metadata
            nb = current
        nbformat.write(nb, lesson.notebook)


def tidy_stored(nb):
    """A freshly executed lesson as JupyterLab would save it (`course_tools.nbtidy`): the course
    kernelspec and the kernel's language_info (nbclient wrote it), so that opening the lesson does not
    mark it modified; each cell's stdout/stderr in its final state (a progress bar's last line, not
    every update); no per-cell execution timings."""
    from .nbtidy import collapse_streams, jupyterlab_metadata
    jupyterlab_metadata(nb)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = collapse_streams(cell.outputs)
    return nb
