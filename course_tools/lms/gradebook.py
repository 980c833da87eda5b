"""`course grade-class SUBMISSIONS --out grades.csv`: grade a class into a gradebook; this module
puts the package's steps together (find, match to the roster, grade, write).

The submissions folder holds one sub-folder per student (every file in it, at any depth, gets a
row) or one file per student. Downloads from an LMS are recognised by their names (`lms_name`):
Canvas (`lastfirst_12345_67890_original.ipynb`, `_late_` too) and Moodle (`Full Name_12345_
assignsubmission_file_original.ipynb`, flat or in per-student folders) map to the LMS's student
ID. Names are read as UTF-8, else as cp1252 (a zip made on Windows), never crashing on bytes.

Every file gets one row: a notebook its score, per-item points and a short feedback; anything
else (a .zip, a .py, an empty file, a symbolic link) an error saying why it was not graded.
With `--roster`, rows carry the roster's student ID and name, and every roster student without a
submission gets a `missing` row. The hidden cases' seed is chosen once per run and recorded per
row: `--seed S` regrades to the same points. Written next to the long CSV (`grades.csv`): the
wide CSV (`grades_wide.csv`: one column per lesson and a total), optional LMS imports
(`--format canvas|moodle`), and `grades.png` with one histogram per lesson. Every CSV cell that
a spreadsheet would run as a formula is prefixed with a single quote.

Submissions are graded in parallel, each in its own worker process and its own sandbox, so a
hostile submission changes nobody else's grade.
"""
from __future__ import annotations

import datetime as dt
import os
import secrets
from pathlib import Path

from .discovery import submissions
from .exports import (COLUMNS, FORMATS, MOODLE_COLUMNS, WRITTEN_COLUMNS, canvas_rows, moodle_rows, wide_rows,
                      write_csv, written_rows)
from .histograms import histograms
from .lessons import lesson_max
from .parallel import grade_entries
from .roster import RosterError, match, read_roster


def grade_class(folder, out, jobs: int | None = None, roster=None, id_column: str | None = None,
                seed: int | None = None, formats=(), **options) -> dict:
    """Grade every file of `folder`; write the long CSV at `out` and the rest next to it."""
    folder, out = Path(folder), Path(out)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ValueError(f"format: {', '.join(map(repr, unknown))} is not one of {', '.join(FORMATS)}")
    seed = secrets.randbelow(2**31) if seed is None else int(seed)
    roster_table = read_roster(roster, id_column) if roster else None   # fails before any grading
    entries = submissions(folder)
    # as root the learner processes see an empty folder here: nobody runs a classmate's answer
    options = {**options, "seed": seed, "hide": (str(folder.resolve()),)}
    rows = grade_entries(entries, jobs or os.cpu_count() or 1, options)

    lessons = sorted({r["lesson"] for r in rows if r["lesson"]})
    maxima = {n: lesson_max(n) for n in lessons}
    for row in rows:                      # an error row of a known lesson shows what it was worth
        if row["lesson"] and row["max"] == "":
            row["max"] = maxima[row["lesson"]] if maxima[row["lesson"]] is not None else ""

    roster_rows: dict[str, dict] = {}     # output student ID -> roster row
    missing, unmatched = [], []
    order = list(dict.fromkeys(r["student"] for r in sorted(rows, key=lambda r: (r["student"], r["file"]))))
    if roster_table is not None:
        found = match(roster_table, entries)
        for row in rows:
            r = found.get(row["student"])
            if r is None:
                row["in_roster"] = "no"
                unmatched.append(row["student"])
                continue
            row["student"] = r[roster_table.id_column]
            row["name"] = roster_table.name_of(r) or row["name"]
            row["in_roster"] = "yes"
            roster_rows[row["student"]] = r
        seen = {row["student"] for row in rows}
        for r in roster_table.rows:
            sid = r[roster_table.id_column]
            roster_rows.setdefault(sid, r)
            if sid in seen:
                continue
            missing.append(sid)
            for lesson in lessons or [""]:
                rows.append({"student": sid, "name": roster_table.name_of(r), "lesson": lesson, "file": "",
                             "score": 0, "max": maxima.get(lesson, "") if lesson else "", "points": "{}",
                             "feedback": "no submission", "error": "missing: no submission in the folder",
                             "seed": "", "in_roster": "yes"})
        roster_order = [r[roster_table.id_column] for r in roster_table.rows]
        extra = sorted({r["student"] for r in rows} - set(roster_order))
        order = list(dict.fromkeys(roster_order + extra))
    position = {s: i for i, s in enumerate(order)}
    rows.sort(key=lambda r: (position.get(r["student"], len(order)), r["lesson"], r["file"]))

    write_csv(out, COLUMNS, rows)
    wide_columns, headers, wide = wide_rows(rows, lessons, maxima, order)
    outputs = {"csv": out, "wide": write_csv(out.with_name(out.stem + "_wide.csv"), wide_columns, wide),
               "written": write_csv(out.with_name(out.stem + "_written.csv"), WRITTEN_COLUMNS, written_rows(rows))}
    for fmt in dict.fromkeys(formats):
        if fmt == "canvas":
            columns, table = canvas_rows(wide, headers, roster_rows)
            outputs["canvas"] = write_csv(out.with_name(out.stem + "_canvas.csv"), columns, table)
        elif fmt == "moodle":
            when = dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
            outputs["moodle"] = [write_csv(out.with_name(f"{out.stem}_moodle_{n}.csv"), MOODLE_COLUMNS,
                                           moodle_rows(rows, wide, n, maxima[n], roster_rows, when))
                                 for n in lessons]
        else:
            raise ValueError(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")
    png = histograms(rows, lessons, maxima, out.with_suffix(".png"))
    graded = [r for r in rows if not r["error"] and r["max"] != ""]
    fractions = [int(r["score"]) / int(r["max"]) for r in graded if int(r["max"])]
    return {"rows": rows, **outputs, "histogram": png, "seed": seed, "graded": len(graded),
            "errors": len(rows) - len(graded) - len([r for r in rows if r["error"].startswith("missing")]),
            "missing": missing, "unmatched": sorted(set(unmatched)), "lessons": lessons,
            "mean_fraction": sum(fractions) / len(fractions) if fractions else float("nan")}


def cli(args) -> int:
    """`course grade-class`: grade, write, and print what was written and what needs a look."""
    import sys
    folder = args.submissions
    if not os.path.isdir(folder):
        print(f"course grade-class: {folder!r} is not a folder", file=sys.stderr)
        return 2
    try:
        result = grade_class(folder, args.out, jobs=args.jobs, roster=args.roster, id_column=args.id_column,
                             seed=args.seed, formats=args.formats, cell_timeout=args.cell_timeout,
                             item_timeout=args.item_timeout)
    except (RosterError, OSError, ValueError) as error:
        print(f"course grade-class: {error}", file=sys.stderr)
        return 2
    rows = result["rows"]
    print(f"{len(rows)} rows: {result['graded']} graded, {result['errors']} not gradable, "
          f"{len(result['missing'])} missing; mean score fraction {result['mean_fraction']:.3f}")
    for row in rows:
        if row["error"] and not row["error"].startswith(("missing", "not-a-notebook", "not-a-file", "empty")):
            print(f"  {row['student']} {row['file']}: {row['error'][:160]}")
    if result["missing"]:
        print(f"no submission from {len(result['missing'])} roster students: {', '.join(result['missing'][:20])}"
              + (" ..." if len(result["missing"]) > 20 else ""))
    if result["unmatched"]:
        print(f"not in the roster ({len(result['unmatched'])}): {', '.join(result['unmatched'][:20])}"
              + (" ..." if len(result["unmatched"]) > 20 else ""))
    print(f"seed {result['seed']} (regrade with --seed {result['seed']} for the same hidden cases)")
    written = [result["csv"], result["wide"], result.get("canvas"), *result.get("moodle", [])]
    print("grades: " + ", ".join(str(p) for p in written if p) + f"; histograms: {result['histogram']}")
    return 0
