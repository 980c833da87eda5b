"""`course progress`: the learner's last score per exercise and the lessons run so far.

The scores come from `build/grades.jsonl`, to which every `course grade PATH` appends one line
(`course_tools.grade_log`; `record`, `last_grades` and the rest are importable from here too).
The lessons run so far come from `course run`: `build/summary.csv` (seconds, whether the claims
held) and the executed notebooks in `build/notebooks/`; the interview column from
`course interview`'s history. Nothing here leaves the project folder.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd

from . import ROOT
# the log of `course grade` runs: its names stay importable from here (`progress.record`, ...)
from .grade_log import GRADES_ENV, grades_file, last_grades, lesson_from_file, record  # noqa: F401
from .interview import scores as interview_scores
from .manifest import LESSONS

BUILD = ROOT / "build"


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
