"""`course check NN`: the learner's self-check, which is nbval run over an exercise notebook.

`pytest --nbval-lax exercises/NN_*.ipynb` runs every code cell of the notebook in a fresh kernel
and reports each cell that raises as a failing test. An exercise's grading cells call
`check("NN.item", ...)`, which raises when the learner's answer fails its randomized cases, so
nbval gives one pass/fail per check with no extra machinery. `course grade` is the other half: a
score with hidden cases, from the official notebook with only the learner's answer cells.

This module runs that pytest command in a subprocess (the learner could type it too) and reads
the per-cell outcomes back through a tiny pytest plugin (this module, loaded with `-p`), which
writes one JSON line per cell when COURSE_SELFCHECK_OUT names a file.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from course_tools.threads import thread_env

from . import ROOT
from .grader.notebook import GRADE_CALL   # a grading cell, read as the grader reads it

ANSI = re.compile(r"\x1b\[[0-9;]*m")
OUT_ENV = "COURSE_SELFCHECK_OUT"


# ---------------------------------------------------------------- the pytest plugin side

_CURRENT: dict = {}   # the item being run (its notebook's absolute path and nbval's cell number)


def pytest_runtest_setup(item):  # pragma: no cover - runs inside the pytest subprocess
    # a notebook outside the course has a node id without its path ("::Cell 3"): keep the item's
    _CURRENT.update(nodeid=item.nodeid, path=str(getattr(item, "path", "") or getattr(item, "fspath", "")),
                    cell=getattr(item, "cell_num", None))


def pytest_runtest_logreport(report):  # pragma: no cover - runs inside the pytest subprocess
    path = os.environ.get(OUT_ENV)
    if not path or not (report.when == "call" or report.outcome != "passed"):
        return
    text = ANSI.sub("", str(report.longrepr)) if report.failed else ""
    same = _CURRENT.get("nodeid") == report.nodeid
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"nodeid": report.nodeid, "when": report.when,
                                 "path": _CURRENT.get("path") if same else None,
                                 "cell": _CURRENT.get("cell") if same else None,
                                 "outcome": report.outcome, "message": text[-4000:]}) + "\n")


# ---------------------------------------------------------------- the caller's side

@dataclass
class CellResult:
    cell: int                # nbval's number: the index among the notebook's code cells
    outcome: str             # "passed", "failed" or "skipped"
    checks: list[str]        # the exercise ids this cell grades (empty for other cells)
    message: str = ""        # the last line of the error, e.g. "FAILED 01.sdpa-masked (0/2): [case 2] ..."
    position: int = 0        # where the cell is on screen: 1-based among all cells (as Jupyter counts)
    line: int | None = None  # the line of the cell where the error was raised, when known


@dataclass
class NotebookResult:
    path: Path
    cells: list[CellResult] = field(default_factory=list)
    returncode: int = 0      # of the pytest process (shared by the notebooks it ran)
    output: str = ""
    code_cells: int = 0

    @property
    def passed(self) -> bool:
        """Every code cell ran and none failed."""
        ran = {c.cell for c in self.cells if c.outcome == "passed"}
        return len(ran) == self.code_cells > 0 and not self.failed_cells

    @property
    def failed_cells(self) -> list[CellResult]:
        return [c for c in self.cells if c.outcome == "failed"]


def command(paths: list[Path]) -> list[str]:
    """The pytest command a learner could type (plus the reporting plugin)."""
    return [sys.executable, "-m", "pytest", *[str(p) for p in paths], "--rootdir", str(ROOT),
            "-c", str(ROOT / "pyproject.toml"), "-p", "course_tools.selfcheck", "-q",
            "--nbval-lax", "--tb=line", "--color=no"]


def _last_line(message: str) -> str:
    text = message.split("\nTraceback:\n", 1)[-1]   # nbval repeats the cell's input before it
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    errors = [l for l in lines if re.match(r"^\w*(Error|Exception|Failed|Interrupt)\b.*:", l)
              or l.startswith(("CheckFailed", "NotImplementedError", "FAILED "))]
    return (errors or lines or [""])[-1][:300]


def _error_line(message: str) -> int | None:
    """The line of the failing cell in IPython's traceback ("Cell In[3], line 4": the first such
    frame is the cell itself; later ones are functions it called)."""
    match = re.search(r"Cell In\[\d*\], line (\d+)", message.split("\nTraceback:\n", 1)[-1])
    return int(match.group(1)) if match else None


def _code_cells(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


def _positions(path: Path) -> list[int]:
    """The on-screen position (1-based, all cells counted) of each code cell, in order."""
    nb = nbformat.read(path, as_version=4)
    return [i + 1 for i, c in enumerate(nb.cells) if c.cell_type == "code"]


def run(paths: list[Path], timeout: float = 900) -> dict[Path, NotebookResult]:
    """Run nbval over `paths` in one pytest process; the outcome of every code cell of each."""
    paths = [Path(p).resolve() for p in paths]
    results = {p: NotebookResult(p) for p in paths}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cells.jsonl"
        env = {**os.environ, OUT_ENV: str(out), "PYTHONPATH": str(ROOT),
               "TQDM_MININTERVAL": os.environ.get("TQDM_MININTERVAL", "3600"),
               **thread_env(int(os.environ.get("OMP_NUM_THREADS", "1"))), "MPLBACKEND": "Agg"}
        try:
            proc = subprocess.run(command(paths), cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=timeout)
            returncode, output = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired:
            returncode, output = 124, f"pytest stopped after {timeout:.0f} s"
        lines = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
    by_name = {}
    for path in paths:
        try:
            by_name[path.relative_to(ROOT).as_posix()] = path
        except ValueError:
            by_name[path.as_posix()] = path
    for line in lines:
        entry = json.loads(line)
        file_part, _, cell_part = entry["nodeid"].partition("::Cell ")
        path = None
        if entry.get("path"):
            path = next((p for p in paths if p == Path(entry["path"]).resolve()), None)
        path = path or by_name.get(file_part) or by_name.get((ROOT / file_part).resolve().as_posix())
        if path is None and not file_part and len(paths) == 1:
            path = paths[0]
        if path is None or not cell_part.isdigit():
            continue
        results[path].cells.append(CellResult(int(cell_part), entry["outcome"], [],
                                              _last_line(entry["message"]), line=_error_line(entry["message"])))
    for path, result in results.items():
        sources = _code_cells(path)
        positions = _positions(path)
        result.returncode, result.output, result.code_cells = returncode, output, len(sources)
        for cell in result.cells:
            cell.checks = GRADE_CALL.findall(sources[cell.cell]) if 0 <= cell.cell < len(sources) else []
            cell.position = positions[cell.cell] if 0 <= cell.cell < len(positions) else 0
        if returncode not in (0, 1) and len(result.cells) < len(sources):
            result.cells.append(CellResult(-1, "failed", [], _last_line(output)))
    return results


def run_parallel(paths: list[Path], workers: int = 2, timeout: float = 900) -> dict[Path, NotebookResult]:
    """`run` over `workers` pytest processes at once (pytest-xdist is not a course dependency)."""
    paths = [Path(p).resolve() for p in paths]
    groups = [paths[i::workers] for i in range(workers) if paths[i::workers]]
    results: dict[Path, NotebookResult] = {}

    def run_group(numbered):
        # Each worker's first kernel starts 2 s after the previous worker's: jupyter_client picks a
        # kernel's ports by binding port 0 and letting go, so two kernels launched in the same instant
        # can pick the same port, and one dies before it answers ("Kernel died before replying to
        # kernel_info" - seen once in CI on the first notebook of the unprivileged pass).
        i, group = numbered
        time.sleep(2.0 * i)
        return run(group, timeout=timeout)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for part in pool.map(run_group, enumerate(groups)):
            results.update(part)
    # The same race can hit a later kernel too: a notebook whose kernel never started is run once more
    # (its cells never ran, so nothing is counted twice).
    for path in paths:
        if any(KERNEL_NEVER_STARTED in cell.message for cell in results[path].cells):
            results.update(run([path], timeout=timeout))
    return {p: results[p] for p in paths}


KERNEL_NEVER_STARTED = "Kernel died before replying to kernel_info"


def _feedback(cell: CellResult) -> str:
    """A check cell's message without the "FAILED id (0/n): " that the notebook shows before it."""
    return re.sub(r"^FAILED \S+ \(\d+/\d+\): ", "", cell.message)


def format_result(result: NotebookResult) -> str:
    """One line per graded check (and per other failing cell), then a verdict. Cells are named by
    their place on screen (the 4th cell: "cell 4"), with the line of the error when known."""
    try:
        name = result.path.relative_to(ROOT).as_posix()
    except ValueError:
        name = str(result.path)
    from .grader.authoring import load_all
    registry = load_all()
    lines = [name]
    for cell in sorted(result.cells, key=lambda c: c.cell):
        if cell.checks:
            mark = "PASS" if cell.outcome == "passed" else "FAIL"
            for exercise_id in cell.checks:
                ex = registry.get(exercise_id)
                if ex is not None and ex.manual:   # a written answer: the rubric, once written
                    lines.append(f"  {'WROTE' if cell.outcome == 'passed' else 'TODO'}  {exercise_id}  - "
                                 + ("graded by the instructor, who looks for: " + "; ".join(ex.rubric)
                                    if cell.outcome == "passed" else _feedback(cell)))
                    continue
                lines.append(f"  {mark}  {exercise_id}" + (f"  - {_feedback(cell)}" if cell.outcome == "failed" else ""))
        elif cell.outcome == "failed":
            if cell.cell >= 0:
                where = f"cell {cell.position or cell.cell + 1}" + (f", line {cell.line}" if cell.line else "")
            else:
                where = "pytest"
            lines.append(f"  FAIL  ({where}, not a check)  - {cell.message}")
    checks = [c for c in result.cells if c.checks]
    auto = [[i for i in c.checks if not getattr(registry.get(i), "manual", False)] for c in checks]
    n_pass = sum(len(ids) for c, ids in zip(checks, auto) if c.outcome == "passed")
    n_all = sum(len(ids) for ids in auto)
    verdict = "all cells ran" if result.passed else f"{len(result.failed_cells)} cell(s) failed"
    lines.append(f"  checks passed: {n_pass} / {n_all}; {verdict}")
    return "\n".join(lines)
