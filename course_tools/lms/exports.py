"""The gradebook's CSV files, from the long rows (one per file graded or not):

- the long CSV (`COLUMNS`), as the rows are;
- the wide CSV: one row per student, the best graded score per lesson (a pandas pivot; 0 when
  none), an empty by-hand column per written item, the total and a short feedback;
- LMS imports: a Canvas gradebook import and one Moodle grading worksheet per lesson;
- the written answers, one row each, for the person who grades them.

Every cell a spreadsheet would run as a formula is prefixed with a single quote (`cell`).
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd

from .feedback import short
from .lessons import lesson_title, lesson_written

COLUMNS = ["student", "name", "lesson", "file", "score", "max", "points", "feedback", "error", "seed",
           "in_roster", "written"]
# The written answers, one row each, for the person who grades them (`<out>_written.csv`): the
# "points" column is theirs to fill.
WRITTEN_COLUMNS = ["student", "name", "lesson", "file", "item", "points", "max", "answer", "rubric"]
FORMATS = ("canvas", "moodle")


def cell(value):
    """A CSV cell a spreadsheet shows as text: a leading = + - @ (or tab / CR) gets a quote."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def write_csv(path: Path, columns: list[str], rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow([cell(c) for c in columns])
        for row in rows:
            writer.writerow([cell(row.get(c, "")) for c in columns])
    return path


def _best_table(rows: list[dict]) -> pd.DataFrame:
    """Per (student, lesson), the graded row with the best score: columns student, lesson, score
    and `row` (its index in `rows`). Pairs in the order they first appear; on a tie the first file
    (idxmax keeps the first maximum), so a later file must score higher to count."""
    graded = pd.DataFrame([(r["student"], r["lesson"], int(r["score"]), i) for i, r in enumerate(rows)
                           if r["lesson"] and not r["error"]], columns=["student", "lesson", "score", "row"])
    return graded.loc[graded.groupby(["student", "lesson"], sort=False)["score"].idxmax()]


def _best(rows: list[dict]) -> dict[tuple[str, str], dict]:
    """(student, lesson) -> the row with the best score among the graded ones (see `_best_table`)."""
    best = _best_table(rows)
    return {(student, lesson): rows[i] for student, lesson, i in zip(best["student"], best["lesson"], best["row"])}


def _notes(rows: list[dict], student: str) -> list[str]:
    """Why a student's files were not graded, one short note each."""
    notes: dict[str, list[str]] = {}
    for row in rows:
        if row["student"] == student and row["error"]:
            notes.setdefault("no submission" if row["error"].startswith("missing") else row["feedback"],
                             []).append(row["file"])
    out = []
    for feedback, files in notes.items():
        files = [f for f in files if f]
        if not files:
            out.append(feedback)
        elif len(files) == 1:
            out.append(f"{files[0]}: {feedback}")
        else:
            out.append(f"{len(files)} files ({files[0]}, ...): {feedback}")
    return out


def wide_rows(rows: list[dict], lessons: list[str], maxima: dict[str, int | None],
              order: list[str]) -> tuple[list[str], dict[str, str], list[dict]]:
    """One row per student: the best graded score per lesson (0 when none), total, max total and
    a short feedback. Returns (columns, the lesson columns' headers, rows)."""
    headers = {n: f"{lesson_title(n)} (/{maxima[n] if maxima[n] is not None else '?'})" for n in lessons}
    # the written answers' points: empty columns for the instructor (the answers: <out>_written.csv)
    by_hand = {f"{item} (/{points}, by hand)": item for n in lessons for item, points in lesson_written(n)}
    columns = ["student", "name", *headers.values(), *by_hand, "total", "max total", "feedback"]
    best = _best(rows)
    # the pivot: student x lesson -> best score, every student of `order` and every lesson present
    scores = (_best_table(rows).pivot(index="student", columns="lesson", values="score")
              .reindex(index=order, columns=lessons).fillna(0).astype(int))
    names: dict[str, str] = {}
    lms: dict[str, str] = {}
    for row in rows:
        names[row["student"]] = names.get(row["student"]) or row["name"]
        lms[row["student"]] = lms.get(row["student"]) or row.get("lms", "")
    out = []
    for student, lesson_scores in zip(order, scores.to_dict("records")):
        line = {"student": student, "name": names.get(student, ""), "lms": lms.get(student, "")}
        for n in lessons:
            line[headers[n]] = int(lesson_scores[n])
        for header in by_hand:
            line[header] = ""
        line["total"] = sum(int(score) for score in lesson_scores.values())
        line["max total"] = sum(m or 0 for m in maxima.values())
        graded = [f"{n}: {best[(student, n)]['feedback']}" for n in lessons if (student, n) in best]
        line["feedback"] = short("; ".join(graded + _notes(rows, student)))
        out.append(line)
    return columns, headers, out


def written_rows(rows: list[dict]) -> list[dict]:
    """One row per written answer of the best graded file per (student, lesson), for a person to
    grade; the points column stays empty."""
    out = []
    for (student, lesson), row in _best(rows).items():
        for item in json.loads(row.get("written") or "[]"):
            out.append({"student": student, "name": row["name"], "lesson": lesson, "file": row["file"],
                        "item": item["id"], "points": "", "max": item["max_points"],
                        "answer": item.get("answer") or "", "rubric": " | ".join(item.get("rubric") or [])})
    return out


CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_COLUMNS = ["Identifier", "Full name", "Email address", "Grade", "Maximum Grade",
                  "Last modified (grade)", "Feedback comments"]


def canvas_rows(wide: list[dict], headers: dict[str, str], roster_rows: dict) -> tuple[list[str], list[dict]]:
    """Canvas gradebook import: the student columns of a Canvas gradebook export, then one
    assignment column per lesson, "Lesson NN: id" (rename it to an existing assignment's
    "Name (assignment id)" header to fill that assignment; else Canvas offers to create one)."""
    titles = {n: "Lesson " + lesson_title(n).replace(" ", ": ", 1) for n in headers}
    out = []
    for line in wide:
        r = roster_rows.get(line["student"], {})
        student = line["student"]
        row = {"Student": r.get("Student") or line["name"] or student,
               "ID": r.get("ID") or (student if line["lms"] == "canvas" else ""),
               "SIS User ID": r.get("SIS User ID", ""), "SIS Login ID": r.get("SIS Login ID", ""),
               "Section": r.get("Section", "")}
        for n, header in headers.items():
            row[titles[n]] = line[header]
        out.append(row)
    return CANVAS_COLUMNS + list(titles.values()), out


def moodle_rows(rows: list[dict], wide: list[dict], lesson: str, maximum, roster_rows: dict,
                when: str) -> list[dict]:
    """Moodle's assignment grading worksheet (Upload grading worksheet) for one lesson: every
    student, the best score (0 when nothing was graded) and its feedback."""
    best = _best(rows)
    out = []
    for line in wide:
        student = line["student"]
        r = roster_rows.get(student, {})
        graded = best.get((student, lesson))
        feedback = graded["feedback"] if graded else "; ".join(_notes(rows, student)) or "nothing graded"
        identifier = f"Participant {student}" if line["lms"] == "moodle" and student.isdigit() else student
        out.append({"Identifier": r.get("Identifier") or identifier,
                    "Full name": r.get("Full name") or line["name"] or student,
                    "Email address": r.get("Email address", ""),
                    "Grade": int(graded["score"]) if graded else 0,
                    "Maximum Grade": maximum if maximum is not None else "",
                    "Last modified (grade)": when, "Feedback comments": short(feedback)})
    return out
