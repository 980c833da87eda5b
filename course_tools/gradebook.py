"""`course grade-class SUBMISSIONS_DIR --out grades.csv`: grade a class.

A submission folder holds one sub-folder per student (every notebook in it is graded) or one
notebook per student (the student is the file name without `.ipynb`). The lesson of each
notebook comes from its metadata. Submissions are graded in parallel, each in its own worker
process and its own sandbox, so a hostile submission changes nobody else's grade. The CSV has
one row per student and lesson: score, max, per-item points (JSON), error. A summary (mean,
median, and a histogram of the score fraction as a PNG next to the CSV) is returned and printed.
"""
from __future__ import annotations

import csv
import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .grader import GradeError, grade, lesson_of, read_notebook

COLUMNS = ["student", "lesson", "file", "score", "max", "points", "error"]


def submissions(folder: Path) -> list[tuple[str, Path]]:
    """(student, notebook path) pairs; symlinks are listed (and refused by the grader)."""
    folder = Path(folder)
    pairs = []
    for entry in sorted(folder.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            for nb in sorted(entry.rglob("*.ipynb")):
                if ".ipynb_checkpoints" not in nb.parts:
                    pairs.append((entry.name, nb))
        elif entry.suffix == ".ipynb":
            pairs.append((entry.stem, entry))
    return pairs


def _grade_one(job) -> dict:
    student, path, options = job
    row = {"student": student, "lesson": "", "file": os.path.basename(path), "score": 0, "max": "",
           "points": "{}", "error": ""}
    try:
        row["lesson"] = f"{lesson_of(read_notebook(path), path).number:02d}"
        report = grade(path, **options)
        row.update(score=report["score"], max=report["max_score"],
                   points=json.dumps({i["id"]: i["points"] for i in report["items"]}))
    except GradeError as error:
        row["error"] = f"{error.code}: {error}"
    except Exception as error:  # noqa: BLE001 - one submission never stops the class
        row["error"] = f"internal: {type(error).__name__}"
    return row


def grade_class(folder, out, jobs: int | None = None, **options) -> dict:
    folder, out = Path(folder), Path(out)
    pairs = submissions(folder)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(pairs) or 1))
    # as root the learner processes see an empty folder here: nobody runs a classmate's answer
    options = {**options, "hide": (str(folder.resolve()),)}
    work = [(student, str(path), options) for student, path in pairs]
    if jobs == 1:
        rows = [_grade_one(w) for w in work]
    else:
        with ProcessPoolExecutor(jobs) as pool:
            rows = list(pool.map(_grade_one, work))
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return {"rows": rows, "csv": out, **summary(rows, out.with_suffix(".png"))}


def summary(rows, png: Path) -> dict:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    graded = [r for r in rows if not r["error"] and r["max"]]
    fractions = [r["score"] / r["max"] for r in graded]
    mean = sum(fractions) / len(fractions) if fractions else float("nan")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(fractions, bins=[i / 10 for i in range(11)], edgecolor="black")
    ax.set_xlabel("score / max")
    ax.set_ylabel("submissions")
    ax.set_title(f"{len(graded)} graded, {len(rows) - len(graded)} errors; mean {mean:.2f}")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return {"graded": len(graded), "errors": len(rows) - len(graded), "mean_fraction": mean, "histogram": png}
