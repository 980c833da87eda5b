"""`course progress`: the learner's last score per exercise and the lessons run so far.

Every `course grade PATH` appends one JSON line to `build/grades.jsonl` (`record`): when, which
exercise, the score and which items passed. Grading the official solutions is not recorded.
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


def record(report: dict, path) -> Path | None:
    """Append one grading run (a `grade()` report) for the notebook at `path`; None when skipped."""
    path = Path(path).resolve()
    if path.parent == (ROOT / "solutions").resolve():
        return None  # the official solution, not the learner's work
    entry = {"when": dt.datetime.now().isoformat(timespec="seconds"), "exercise": path.name,
             "path": str(path), "score": int(report["score"]), "max_score": int(report["max_score"]),
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
    """The latest recorded grading run per exercise file name."""
    last: dict[str, dict] = {}
    target = grades_file()
    if not target.exists():
        return last
    for line in target.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by an interrupted write
        last[entry["exercise"]] = entry  # later lines win
    return last


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
    rows = []
    for lesson in LESSONS:
        number = f"{lesson.number:02d}"
        run = runs.get(number, {})
        row = {"lesson": number, "id": lesson.id,
               "lesson run": run.get("run at", "not yet"),
               "claims held": run.get("claims held", "")}
        if not lesson.has_exercise:
            row.update({"exercise": "-", "last score": "-", "graded at": "", "to do": ""})
        else:
            entry = grades.get(lesson.exercise.name)
            if entry is None:
                row.update({"exercise": lesson.exercise.name, "last score": "not graded",
                            "graded at": "", "to do": ""})
            else:
                row.update({"exercise": lesson.exercise.name,
                            "last score": f"{entry['score']} / {entry['max_score']}",
                            "graded at": entry["when"].replace("T", " ")[:16],
                            "to do": ", ".join(entry["failed"])})
        rows.append(row)
    return pd.DataFrame(rows, columns=["lesson", "id", "lesson run", "claims held", "exercise",
                                       "last score", "graded at", "to do"])


def footer(frame: pd.DataFrame) -> str:
    exercises = frame[frame["exercise"] != "-"]
    graded = exercises[exercises["last score"] != "not graded"]
    full = sum(1 for s in graded["last score"] if s.split(" / ")[0] == s.split(" / ")[1])
    run = (frame["lesson run"] != "not yet").sum()
    return (f"\nexercises graded: {len(graded)} / {len(exercises)} (full marks: {full}); "
            f"lessons run: {run} / {len(frame)}\n"
            f"scores: {grades_file().relative_to(ROOT) if grades_file().is_relative_to(ROOT) else grades_file()} "
            f"(from `course grade`); lessons: build/summary.csv, build/notebooks/ (from `course run`)")
