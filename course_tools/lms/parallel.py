"""Grading a class in parallel: one row per entry of the submissions folder, in its order; the
notebooks graded in worker processes, each in its own sandbox, so a hostile submission changes
nobody else's grade and one that kills its worker costs only its own row."""
from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor, as_completed

from ..grader import GradeError, grade, lesson_of, read_notebook
from .discovery import Entry
from .feedback import error_feedback, summarize


def _grade_one(job) -> dict:
    path, options = job
    row = {"lesson": "", "score": 0, "max": "", "points": "{}", "feedback": "", "error": "", "seed": "",
           "written": "[]"}
    try:
        row["lesson"] = f"{lesson_of(read_notebook(path), path).number:02d}"
        report = grade(path, **options)
        row.update(score=report["score"], max=report["max_score"], seed=options.get("seed", ""),
                   points=json.dumps({i["id"]: i["points"] for i in report["items"] if not i.get("manual")}),
                   feedback=summarize(report),
                   written=json.dumps([{k: i.get(k) for k in ("id", "max_points", "answer", "rubric")}
                                       for i in report["items"] if i.get("manual")], ensure_ascii=False))
    except GradeError as error:
        row["error"] = f"{error.code}: {error}"
        row["feedback"] = error_feedback(error.code)
    except Exception as error:  # noqa: BLE001 - one submission never stops the class
        row["error"] = f"internal: {type(error).__name__}"
        row["feedback"] = error_feedback("internal")
    return row


def grade_entries(entries: list[Entry], jobs: int, options: dict) -> list[dict]:
    """One row per entry (same order); notebooks graded in parallel worker processes."""
    rows: list[dict | None] = [None] * len(entries)
    todo = []
    for index, entry in enumerate(entries):
        if entry.problem:
            code = entry.problem.split(":", 1)[0]
            rows[index] = {"lesson": "", "score": 0, "max": "", "points": "{}", "seed": "",
                           "feedback": error_feedback(code), "error": entry.problem}
        else:
            todo.append(index)
    jobs = max(1, min(jobs, len(todo) or 1))
    if jobs == 1:
        for index in todo:
            rows[index] = _grade_one((entries[index].path, options))
    else:
        with ProcessPoolExecutor(jobs) as pool:
            futures = {pool.submit(_grade_one, (entries[i].path, options)): i for i in todo}
            for future in as_completed(futures):
                try:
                    rows[futures[future]] = future.result()
                except Exception as error:  # noqa: BLE001 - a worker that died (memory?)
                    rows[futures[future]] = {"lesson": "", "score": 0, "max": "", "points": "{}", "seed": "",
                                             "feedback": error_feedback("internal"),
                                             "error": f"internal: the grading worker died ({type(error).__name__})"}
    out = []
    for entry, row in zip(entries, rows):
        out.append({"student": entry.student, "name": entry.name, "file": entry.file, **row, "in_roster": "",
                    "lms": entry.lms})
    return out
