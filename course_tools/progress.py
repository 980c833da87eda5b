"""`course progress`: the learner's last score per exercise and the lessons run so far.

Every `course grade PATH` appends one JSON line to `build/grades.jsonl` (`record`): when, which
lesson (from the notebook's metadata, so a renamed copy counts for its lesson), which file, the
score and which items passed. Grading the official solutions is not recorded, and a notebook the
grader refuses (a lesson notebook, say) records nothing.
The lessons run so far come from `course run`: `build/summary.csv` (seconds, whether the claims
held) and the executed notebooks in `build/notebooks/`. Nothing here leaves the project folder.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pandas as pd

from . import ROOT
from .manifest import LESSONS

BUILD = ROOT / "build"
GRADES_ENV = "COURSE_GRADES_FILE"


def grades_file() -> Path:
    return Path(os.environ.get(GRADES_ENV) or BUILD / "grades.jsonl")


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
    from .gradebook import readable
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


def _shown(path: str) -> str:
    try:
        return Path(path).resolve().relative_to(ROOT).as_posix()
    except (ValueError, OSError):
        return path


def lessons_run() -> dict[str, dict]:
    """Per lesson number ("01"): when its executed notebook was written and the last summary row."""
    runs: dict[str, dict] = {}
    summary = BUILD / "summary.csv"
    if summary.exists():
        for row in pd.read_csv(summary, dtype={"lesson": str}).to_dict("records"):
            runs[str(row["lesson"]).zfill(2)] = {"claims held": row.get("claims held"),
                                                 "seconds": row.get("seconds")}
    for lesson in LESSONS:
        executed = BUILD / "notebooks" / lesson.notebook.name
        if executed.exists():
            when = dt.datetime.fromtimestamp(executed.stat().st_mtime).isoformat(sep=" ", timespec="minutes")
            runs.setdefault(f"{lesson.number:02d}", {})["run at"] = when
    return runs


def table() -> pd.DataFrame:
    from .interview import scores as interview_scores
    grades, runs = last_grades(), lessons_run()
    interview = interview_scores()
    rows = []
    for lesson in LESSONS:
        number = f"{lesson.number:02d}"
        run = runs.get(number, {})
        row = {"lesson": number, "id": lesson.id,
               "lesson run": run.get("run at", "not yet"),
               "claims held": run.get("claims held", ""),
               "interview": interview.get(number, "") if lesson.number else "-"}
        if not lesson.has_exercise:
            row.update({"exercise": "-", "last score": "-", "graded at": "", "to do": "", "file graded": ""})
        else:
            entry = grades.get(number)
            if entry is None:
                row.update({"exercise": lesson.exercise.name, "last score": "not graded",
                            "graded at": "", "to do": "", "file graded": ""})
            else:
                row.update({"exercise": lesson.exercise.name,
                            "last score": f"{entry['score']} / {entry['max_score']}",
                            "graded at": entry["when"].replace("T", " ")[:16],
                            "to do": ", ".join(entry["failed"]),
                            "file graded": _shown(entry.get("path") or entry.get("exercise", ""))})
        rows.append(row)
    return pd.DataFrame(rows, columns=["lesson", "id", "lesson run", "claims held", "exercise",
                                       "last score", "interview", "graded at", "to do", "file graded"])


def footer(frame: pd.DataFrame) -> str:
    exercises = frame[frame["exercise"] != "-"]
    graded = exercises[exercises["last score"] != "not graded"]
    full = sum(1 for s in graded["last score"] if s.split(" / ")[0] == s.split(" / ")[1])
    run = (frame["lesson run"] != "not yet").sum()
    return (f"\nexercises graded: {len(graded)} / {len(exercises)} (full marks: {full}); "
            f"lessons run: {run} / {len(frame)}\n"
            f"scores: {grades_file().relative_to(ROOT) if grades_file().is_relative_to(ROOT) else grades_file()} "
            f"(from `course grade`); lessons: build/summary.csv, build/notebooks/ (from `course run`); "
            f"interview: right / asked, each item's latest answer (from `course interview`)")
