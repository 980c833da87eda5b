"""`course progress`: the learner's last score per exercise and the lessons run so far.

The scores come from `build/grades.jsonl`, to which every `course grade PATH` appends one line
(`course_tools.grade_log`; `record`, `last_grades` and the rest are importable from here too).
The lessons run so far come from `course run`: `build/summary.csv` (seconds, whether the claims
held) and the executed notebooks in `build/notebooks/`; the interview column from
`course interview`'s history. Nothing here leaves the project folder.
"""
from __future__ import annotations

import datetime as dt
import re
import textwrap
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


# `course progress` in a terminal: every line at most this wide (`--csv` has every column in full)
WIDTH = 100
# the terminal's columns (renamed); the exercise's file name, the file graded and the full
# timestamps stay in `course progress --csv`
SHOWN = {"lesson": "lesson", "id": "id", "lesson run": "lesson run", "claims held": "claims",
         "last score": "last score", "interview": "interview", "graded at": "graded at"}


def _short_time(when: str) -> str:
    """'2026-12-06 14:05' -> '12-06 14:05' (the year is this year's, or the CSV has it)."""
    return when[5:] if len(when) == 16 and when[4] == "-" else when


def _pipe_table(frame: pd.DataFrame) -> str:
    """A Markdown table as narrow as its cells (pandas' to_markdown pads every column by 2)."""
    cells = [list(map(str, frame.columns))] + [[str(v) for v in row] for row in frame.itertuples(index=False)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(frame.columns))]
    line = lambda row: "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |"
    return "\n".join([line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|",
                      *map(line, cells[1:])])


def render(frame: pd.DataFrame, width: int = WIDTH) -> str:
    """The table, the items left to do per lesson and the footer, no line wider than `width`."""
    shown = frame[list(SHOWN)].rename(columns=SHOWN).copy()
    for column in ("lesson run", "graded at"):
        shown[column] = shown[column].map(_short_time)
    lines = [_pipe_table(shown)]
    todo = frame[frame["to do"].astype(bool)]
    if len(todo):
        lines.append("\nto do (failed items of the last grade):")
        for number, items, graded in zip(todo["lesson"], todo["to do"], todo["file graded"]):
            lines.append(textwrap.fill(f"{number}: {items} (in {graded})", width, initial_indent="  ",
                                       subsequent_indent="      ", break_on_hyphens=False))
    lines.append(footer(frame, width))
    return "\n".join(lines)


def footer(frame: pd.DataFrame, width: int = WIDTH) -> str:
    exercises = frame[frame["exercise"] != "-"]
    graded = exercises[exercises["last score"] != "not graded"]
    full = sum(1 for s in graded["last score"] if s.split(" / ")[0] == s.split(" / ")[1])
    run = (frame["lesson run"] != "not yet").sum()
    scores = grades_file().relative_to(ROOT) if grades_file().is_relative_to(ROOT) else grades_file()
    paragraphs = [f"exercises graded: {len(graded)} / {len(exercises)} (full marks: {full}); "
                  f"lessons run: {run} / {len(frame)}",
                  f"scores: {scores} (from `course grade`); lessons: build/summary.csv, build/notebooks/ "
                  f"(from `course run`); interview: right / asked, each item's latest answer (from "
                  f"`course interview`); every column in full: `course progress --csv`"]
    return "\n" + "\n".join(_fill(p, width) for p in paragraphs)


def _fill(paragraph: str, width: int) -> str:
    """`textwrap.fill`, never breaking inside a `command` (a no-break space holds it together)."""
    held = re.sub(r"`[^`]*`", lambda m: m.group().replace(" ", "\u00a0"), paragraph)
    return textwrap.fill(held, width, break_on_hyphens=False, break_long_words=False).replace("\u00a0", " ")
