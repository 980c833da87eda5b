"""Generate `exercises/` from `solutions/` by stripping marked solution regions.

The markers are nbgrader's, which instructors already know:

    ### BEGIN SOLUTION            ### BEGIN HIDDEN TESTS
    ...                          ...
    ### END SOLUTION              ### END HIDDEN TESTS

A solution region becomes `# YOUR CODE HERE` + `raise NotImplementedError()` at the same
indentation; hidden tests vanish; outputs are cleared; cells that held a solution are
tagged `answer` (the grader takes only those from a learner). A small stripper instead of
nbgrader itself: nbgrader is a heavy dependency for four regular expressions.

A learner's edits are never overwritten or deleted. Each generated exercise records in its
metadata (`course.generated`) a hash of its cells' types and sources as generated; a file in
`exercises/` whose cells no longer match that hash (or, for an exercise generated before the hash
existed, that differs both from the new rendering and from the committed version) holds someone's
edits: `course exercises` keeps it, names it, and replaces it only with `--force`, which first copies
it to `work/backups/`. Notebooks in `exercises/` that the generator did not write are left alone.
Learners work in copies in `work/` (`course start NN`), which the generator never touches.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from . import ROOT
from .manifest import work_dir
from .grader.notebook import ANSWER_TAG

SOLUTION = re.compile(r"^([ \t]*)### BEGIN SOLUTION[^\n]*\n.*?^[ \t]*### END SOLUTION[^\n]*(\n|$)",
                      re.M | re.S)
HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS[^\n]*\n.*?^[ \t]*### END HIDDEN TESTS[^\n]*(\n|$)",
                    re.M | re.S)
PLACEHOLDER = "{indent}# YOUR CODE HERE\n{indent}raise NotImplementedError()\n"
# A written answer's model text sits between these markers inside the solution's string
# (`written_answer = """ ... """`); the exercise keeps the string, empty, for the learner's words.
WRITTEN = re.compile(r"^[ \t]*### BEGIN WRITTEN[^\n]*\n.*?^[ \t]*### END WRITTEN[^\n]*(\n|$)", re.M | re.S)
HASH_KEY = "generated"   # metadata.course.generated: content_hash() of the exercise as generated


def strip_source(source: str) -> tuple[str, bool]:
    """(exercise source, whether a solution region was found)."""
    stripped, found = SOLUTION.subn(lambda m: PLACEHOLDER.format(indent=m.group(1)), source)
    stripped, written = WRITTEN.subn("\n", stripped)
    found += written
    stripped = HIDDEN.sub("", stripped)
    if any(f"### {edge} {kind}" in stripped for edge in ("BEGIN", "END") for kind in ("SOLUTION", "WRITTEN")):
        raise ValueError("source: an unmatched '### BEGIN/END SOLUTION' or '### BEGIN/END WRITTEN' marker")
    return stripped.rstrip("\n"), found > 0


def content_hash(nb) -> str:
    """A hash of what a learner edits: the cells' types and sources (not outputs or metadata, so
    running the cells or opening the file in JupyterLab is not an edit)."""
    digest = hashlib.sha256()
    for cell in nb.get("cells", []):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        digest.update(f"{cell.get('cell_type')}\0{source}\0".encode())
    return "sha256:" + digest.hexdigest()[:16]


def lesson_number(solution_nb, path=None) -> int | None:
    """The lesson of a solution: its metadata (`course.lesson`), else its `NN_` file name."""
    course = solution_nb.get("metadata", {}).get("course")
    if isinstance(course, dict) and type(course.get("lesson")) is int:
        return course["lesson"]
    match = re.match(r"^(\d\d)_", Path(path).name) if path is not None else None
    return int(match.group(1)) if match else None


def make_exercise(solution_nb, lesson: int | None = None):
    exercise_nb = nbformat.from_dict(solution_nb)
    for cell in exercise_nb.cells:
        if cell.cell_type == "code":
            source, had_solution = strip_source(cell.source)
            cell.source = source
            cell.outputs = []
            cell.execution_count = None
            tags = [t for t in cell.metadata.get("tags", []) if t != ANSWER_TAG]
            if had_solution:
                tags.append(ANSWER_TAG)
            if tags:
                cell.metadata["tags"] = tags
            else:
                cell.metadata.pop("tags", None)
        cell.metadata.pop("execution", None)
    exercise_nb.metadata.pop("papermill", None)
    exercise_nb.metadata.pop("course", None)
    if lesson is not None:  # the grader identifies a submission by this, not by its file name
        exercise_nb.metadata["course"] = {"lesson": lesson, HASH_KEY: content_hash(exercise_nb)}
    return exercise_nb


def render(solution_path: Path) -> str:
    nb = nbformat.read(solution_path, as_version=4)
    return nbformat.writes(make_exercise(nb, lesson_number(nb, solution_path))) + "\n"


def _committed(path: Path) -> str | None:
    """The file as committed (git HEAD), or None (not in git, no git, not committed)."""
    try:
        relative = path.resolve().relative_to(ROOT).as_posix()
        proc = subprocess.run(["git", "show", f"HEAD:{relative}"], cwd=ROOT, capture_output=True,
                              timeout=30)
    except (ValueError, OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None


def is_generated(path: Path, text: str | None = None) -> bool:
    """Whether the notebook at `path` is as the generator wrote it (no edits of anyone's)."""
    text = path.read_text(encoding="utf-8") if text is None else text
    try:
        nb = json.loads(text)
        recorded = nb.get("metadata", {}).get("course", {}).get(HASH_KEY)
    except (ValueError, AttributeError):
        return False
    if recorded:
        return content_hash(nb) == recorded
    return _committed(path) == text   # generated before the hash existed: as committed?


@dataclass
class SyncReport:
    stale: list[str] = field(default_factory=list)      # differ from the generator's (written unless kept)
    written: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)       # edited by someone: not overwritten
    backups: list[Path] = field(default_factory=list)   # with --force: where the edited files went
    removed: list[str] = field(default_factory=list)    # generated exercises whose solution is gone
    extra: list[str] = field(default_factory=list)      # other notebooks in exercises/: left alone


def default_backup_dir() -> Path:
    return work_dir() / "backups"


def sync(solutions_dir: Path = ROOT / "solutions", exercises_dir: Path = ROOT / "exercises",
         check_only: bool = False, force: bool = False, backup_dir: Path | None = None) -> SyncReport:
    """Write (or, with check_only, compare) every exercise, keeping edited files unless `force`."""
    report = SyncReport()
    exercises_dir.mkdir(exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")

    def back_up(target: Path) -> None:
        folder = backup_dir if backup_dir is not None else default_backup_dir()
        folder.mkdir(parents=True, exist_ok=True)
        copy = folder / f"{target.stem}.{stamp}{target.suffix}"
        shutil.copy2(target, copy)
        report.backups.append(copy)

    for solution in sorted(solutions_dir.glob("*.ipynb")):
        target = exercises_dir / solution.name
        text = render(solution)
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            continue
        report.stale.append(solution.name)
        edited = current is not None and not is_generated(target, current)
        if edited:
            report.kept.append(solution.name)
        if check_only or (edited and not force):
            continue
        if edited:
            back_up(target)
        target.write_text(text, encoding="utf-8")
        report.written.append(solution.name)
    solutions = {p.name for p in solutions_dir.glob("*.ipynb")}
    for orphan in sorted(p for p in exercises_dir.glob("*.ipynb") if p.name not in solutions):
        if not is_generated(orphan):
            report.extra.append(orphan.name)     # a learner's notebook: never deleted
            continue
        report.stale.append(orphan.name)
        if not check_only:
            orphan.unlink()
            report.removed.append(orphan.name)
    return report


def generate(solutions_dir: Path = ROOT / "solutions", exercises_dir: Path = ROOT / "exercises",
             check_only: bool = False, force: bool = False) -> list[str]:
    """Write (or, with check_only, compare) every exercise; return the stale file names
    (edited ones included: they are stale, though kept unless `force`)."""
    return sync(solutions_dir, exercises_dir, check_only=check_only, force=force).stale
