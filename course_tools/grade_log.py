"""The log of `course grade` runs: `build/grades.jsonl` (or `$COURSE_GRADES_FILE`).

Every `course grade PATH` appends one JSON line (`record`): when, which lesson (from the notebook's
metadata, so a renamed copy counts for its lesson), which file, the score and which items passed.
Grading the official solutions is not recorded, and a notebook the grader refuses (a lesson
notebook, say) records nothing. `last_grades` reads it back: `course progress` shows the latest
run per lesson, and `course interview` asks about the lessons graded so far. Nothing here leaves
the project folder.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from . import ROOT

GRADES_ENV = "COURSE_GRADES_FILE"


def grades_file() -> Path:
    return Path(os.environ.get(GRADES_ENV) or ROOT / "build" / "grades.jsonl")


def lesson_from_file(path) -> int | None:
    """A notebook's lesson from its metadata (`course.lesson`); None when it has none."""
    try:
        nb = json.loads(Path(path).read_text(encoding="utf-8"))
        number = nb.get("metadata", {}).get("course", {}).get("lesson")
    except (OSError, ValueError, AttributeError):
        return None
    return number if type(number) is int else None


def _lesson_of_entry(entry: dict) -> str | None:
    if entry.get("lesson") is not None:
        return f"{int(entry['lesson']):02d}"
    name = str(entry.get("exercise", ""))        # lines written before the lesson was recorded
    return name[:2] if name[:2].isdigit() and name[2:3] == "_" else None


def _readable(name: str) -> str:
    from .lms.names import readable
    return readable(name)


def record(report: dict, path, lesson: int | None = None) -> Path | None:
    """Append one grading run (a `grade()` report) for the notebook at `path` (an exercise of
    `lesson`, read from its metadata when not given); None when skipped."""
    path = Path(path).resolve()
    if path.parent == (ROOT / "solutions").resolve():
        return None  # the official solution, not the learner's work
    lesson = lesson if lesson is not None else lesson_from_file(path)
    if lesson is None:
        return None  # not an exercise: nothing to remember
    entry = {"when": dt.datetime.now().isoformat(timespec="seconds"), "lesson": f"{lesson:02d}",
             # a name with bytes that are not UTF-8 (a Windows zip) is recorded as readable text
             "exercise": _readable(path.name), "path": _readable(str(path)),
             "score": int(report["score"]), "max_score": int(report["max_score"]),
             "passed": [i["id"] for i in report["items"] if i["passed"]],
             "failed": [i["id"] for i in report["items"] if not i["passed"]]}
    target = grades_file()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    except OSError:  # a read-only checkout still grades; it only cannot remember
        return None
    return target


def last_grades() -> dict[str, dict]:
    """The latest recorded grading run per lesson ("01"), whatever the file was called."""
    last: dict[str, dict] = {}
    target = grades_file()
    if not target.exists():
        return last
    for line in target.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
            lesson = _lesson_of_entry(entry)
        except (json.JSONDecodeError, TypeError, ValueError):
            continue  # a line cut short by an interrupted write
        if lesson is not None:
            last[lesson] = entry  # later lines win
    return last
