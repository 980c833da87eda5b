"""The learner's desk: `work/`, a git-ignored folder of the learner's own exercise copies.

`course start NN` copies `exercises/NN_some_id.ipynb` into `work/NN_some_id_exercise.ipynb` (once:
an existing copy, and the answers in it, are kept). The copy's name differs from the lesson's
(`notebooks/NN_some_id.ipynb`) because JupyterLab names a tab after the file alone: lesson and
exercise open side by side as two tabs that say which is which. (A copy made before that, named
like the lesson, is still found and used.) `course exercises` never writes there, and `course check NN`,
`course grade NN` and `course progress` use the copy in `work/` when there is one. The folder is
`work/` at the course's root unless COURSE_WORK_DIR names another (the tests use a temporary one).

`resolve` turns what a learner types after `course check` / `course grade` - a lesson number
(`1`, `01`), a lesson id, or a path anywhere (spaces and all) - into a notebook path, and for a
path that does not exist names the nearest notebook of the course ("did you mean ...?").
"""
from __future__ import annotations

import difflib
import os
import shutil
from pathlib import Path

import nbformat

from . import ROOT
from .exercises import HASH_KEY, content_hash
# WORK_ENV and work_dir live in the manifest (the exercise generator backs up there too)
from .manifest import LESSONS, WORK_ENV, Lesson, work_dir  # noqa: F401


class NotebookNotFound(ValueError):
    """What the learner typed names no notebook; the message says what would."""


def lesson_for(item: str) -> Lesson | None:
    """The lesson a learner means by `1`, `01`, `scale-sqrt-dk` or `01_scale_sqrt_dk`; else None."""
    text = str(item).strip()
    for lesson in LESSONS:
        if (text.isdigit() and int(text) == lesson.number) or text in (lesson.id, lesson.stem):
            return lesson
    return None


def lesson_range() -> str:
    return f"{LESSONS[0].number:02d}-{LESSONS[-1].number:02d}"


#: What `course start` appends to the lesson's name: `work/01_scale_sqrt_dk_exercise.ipynb`.
WORK_SUFFIX = "_exercise"


def work_copy(lesson: Lesson) -> Path:
    """Where `course start` puts the learner's copy of the lesson's exercise."""
    return work_dir() / f"{lesson.stem}{WORK_SUFFIX}.ipynb"


def legacy_work_copy(lesson: Lesson) -> Path:
    """The name copies had before: the lesson's own (two JupyterLab tabs of the same name)."""
    return work_dir() / f"{lesson.stem}.ipynb"


def started_copy(lesson: Lesson) -> Path | None:
    """The learner's copy of the lesson's exercise in work/ (either name), or None if not started."""
    for copy in (work_copy(lesson), legacy_work_copy(lesson)):
        if copy.exists():
            return copy
    return None


def untouched_exercise(path, lesson: Lesson) -> bool:
    """Whether `path` is the lesson's generated exercise, as generated (nobody answered in it)."""
    import json

    try:
        if Path(path).resolve() != lesson.exercise.resolve():
            return False
        nb = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return nb.get("metadata", {}).get("course", {}).get(HASH_KEY) == content_hash(nb)


def exercise_for(lesson: Lesson) -> Path:
    """The learner's notebook of a lesson: the copy in work/ if started, else the exercise."""
    return started_copy(lesson) or lesson.exercise


def _display(path: Path) -> str:
    try:
        return Path(path).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def display(path) -> str:
    """A path as the learner would type it from the course's root (absolute when outside)."""
    return _display(Path(path))


def candidates(folders=("work", "exercises", "notebooks")) -> list[Path]:
    out = []
    for folder in folders:
        base = work_dir() if folder == "work" else ROOT / folder
        out += sorted(base.glob("*.ipynb")) if base.is_dir() else []
    return out


def suggest(typed: str, folders=("work", "exercises", "notebooks")) -> Path | None:
    """The course notebook nearest to a mistyped path (by its path from the root, then its name)."""
    options = candidates(folders)
    if not options:
        return None
    typed_path = Path(typed)
    relative = _display(typed_path) if typed_path.is_absolute() else typed_path.as_posix()
    by_path = {display(p): p for p in options}
    match = difflib.get_close_matches(relative, list(by_path), n=1, cutoff=0.6)
    if match:
        return by_path[match[0]]
    by_name: dict[str, Path] = {}
    for p in options:
        by_name.setdefault(p.name, p)   # work/ first: the learner's copy wins a tie
    match = difflib.get_close_matches(typed_path.name, list(by_name), n=1, cutoff=0.6)
    return by_name[match[0]] if match else None


def resolve(item: str, purpose: str = "grade") -> Path:
    """The notebook that `item` names (see the module docstring); NotebookNotFound otherwise."""
    raw = str(item)
    path = Path(raw).expanduser()
    if os.path.lexists(path):
        return path
    lesson = lesson_for(raw)
    if lesson is not None and not raw.endswith(".ipynb"):
        if not lesson.has_exercise:
            raise NotebookNotFound(f"lesson {lesson.number:02d} ({lesson.id}) has no exercise")
        return exercise_for(lesson)
    if raw.strip().isdigit():
        raise NotebookNotFound(f"no lesson {raw!r}: the lessons are {lesson_range()}")
    if not path.is_absolute() and os.path.lexists(ROOT / path):   # typed from the course's root
        return ROOT / path
    near = suggest(raw, ("work", "exercises") if purpose == "grade" else ("work", "exercises", "notebooks"))
    hint = f"; did you mean {display(near)}?" if near is not None else \
        f" (give a lesson number {lesson_range()}, or the path of a notebook)"
    raise NotebookNotFound(f"no such file {raw!r}{hint}")


def start(item: str) -> tuple[Path, bool]:
    """Copy lesson `item`'s exercise into work/; (the copy, whether it was created now).
    An existing copy is never replaced: it holds the learner's answers."""
    lesson = lesson_for(item)
    if lesson is None:
        raise NotebookNotFound(f"no lesson {item!r}: give a lesson number {lesson_range()} or an id "
                               "(course list shows them)")
    if not lesson.has_exercise or not lesson.exercise.exists():
        raise NotebookNotFound(f"lesson {lesson.number:02d} ({lesson.id}) has no exercise")
    existing = started_copy(lesson)
    if existing is not None:
        return existing, False
    copy = work_copy(lesson)
    copy.parent.mkdir(parents=True, exist_ok=True)
    try:   # with the metadata JupyterLab writes on opening it (else it opens marked modified)
        from .nbtidy import jupyterlab_metadata
        notebook = jupyterlab_metadata(nbformat.read(lesson.exercise, as_version=4))
        copy.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")
    except Exception:  # noqa: BLE001 - an exercise nbformat cannot read: copied as it is
        shutil.copyfile(lesson.exercise, copy)
    return copy, True
